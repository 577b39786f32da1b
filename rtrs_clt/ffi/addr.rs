// SPDX-License-Identifier: GPL-2.0

//! Addresses between the parsed form of rtrs_core and `sockaddr_storage`.

use crate::bindings;
use crate::rtrs_core::sysfs_fmt;

/// A `struct sockaddr_storage` held by value: a family, a port and an
/// address, as the CM takes them.
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
pub(crate) struct SockAddr(bindings::__kernel_sockaddr_storage);

// SAFETY: Plain bytes. The union's pointer member (`__align`) only aligns
// the storage; nothing reads it as a pointer.
unsafe impl Send for SockAddr {}
// SAFETY: As above: shared reads of plain bytes.
unsafe impl Sync for SockAddr {}

impl SockAddr {
    /// The address a C struct holds.
    pub(crate) fn from_raw(ss: bindings::__kernel_sockaddr_storage) -> Self {
        Self(ss)
    }

    /// The C struct, for the CM.
    pub(crate) fn as_raw(&self) -> &bindings::__kernel_sockaddr_storage {
        &self.0
    }

    /// `ss_family`.
    pub(crate) fn family(&self) -> u16 {
        family(&self.0)
    }

    /// The parsed form (`None` for a family rtrs does not print).
    pub(crate) fn parsed(&self) -> Option<sysfs_fmt::RtrsSockaddr> {
        to_rtrs_sockaddr(&self.0)
    }

    /// A parsed address, as `rtrs_addr_to_sockaddr` fills it.
    pub(crate) fn from_rtrs(a: &sysfs_fmt::RtrsSockaddr) -> Self {
        Self(from_rtrs_sockaddr(a))
    }
}

/// The bytes of a `sockaddr_storage` (plain data: a family and bytes).
fn bytes(ss: &bindings::__kernel_sockaddr_storage) -> &[u8] {
    let p: *const bindings::__kernel_sockaddr_storage = ss;
    // SAFETY: Plain data without padding, read within its size.
    unsafe {
        core::slice::from_raw_parts(
            p.cast::<u8>(),
            core::mem::size_of::<bindings::__kernel_sockaddr_storage>(),
        )
    }
}

/// `ss_family`.
fn family(ss: &bindings::__kernel_sockaddr_storage) -> u16 {
    let b = bytes(ss);
    u16::from_ne_bytes([
        b.first().copied().unwrap_or(0),
        b.get(1).copied().unwrap_or(0),
    ])
}

/// A parsed address as the `sockaddr_storage` `rtrs_addr_to_sockaddr`
/// fills: `sockaddr_in`, `sockaddr_in6` or `sockaddr_ib` (sid mask all ones).
fn from_rtrs_sockaddr(a: &sysfs_fmt::RtrsSockaddr) -> bindings::__kernel_sockaddr_storage {
    let mut b = [0u8; core::mem::size_of::<bindings::__kernel_sockaddr_storage>()];
    let mut put = |off: usize, v: &[u8]| {
        if let Some(d) = off.checked_add(v.len()).and_then(|end| b.get_mut(off..end)) {
            crate::rtrs_core::proto::copy_bytes(d, v);
        }
    };
    put(0, &a.family().to_ne_bytes());
    match *a {
        sysfs_fmt::RtrsSockaddr::Inet { addr, port } => {
            put(2, &port.to_be_bytes());
            put(4, &addr);
        }
        sysfs_fmt::RtrsSockaddr::Inet6 {
            addr,
            port,
            scope_id,
        } => {
            put(2, &port.to_be_bytes());
            put(8, &addr);
            put(24, &scope_id.to_ne_bytes());
        }
        sysfs_fmt::RtrsSockaddr::Ib { gid, sid } => {
            put(8, &gid);
            put(24, &sid.to_be_bytes());
            put(32, &u64::MAX.to_be_bytes());
        }
    }
    from_bytes(&b)
}

/// A `sockaddr_storage` of these bytes: the family, then the rest.
fn from_bytes(
    b: &[u8; core::mem::size_of::<bindings::__kernel_sockaddr_storage>()],
) -> bindings::__kernel_sockaddr_storage {
    let (fam, rest) = b.split_at(2);
    let mut data = [0; core::mem::size_of::<bindings::__kernel_sockaddr_storage>() - 2];
    for (d, s) in data.iter_mut().zip(rest) {
        *d = kernel::ffi::c_char::from_ne_bytes([*s]);
    }
    bindings::__kernel_sockaddr_storage {
        __bindgen_anon_1: bindings::__kernel_sockaddr_storage__bindgen_ty_1 {
            __bindgen_anon_1: bindings::__kernel_sockaddr_storage__bindgen_ty_1__bindgen_ty_1 {
                ss_family: u16::from_ne_bytes([
                    fam.first().copied().unwrap_or(0),
                    fam.get(1).copied().unwrap_or(0),
                ]),
                __data: data,
            },
        },
    }
}

/// `dev_get_by_name` for an IPv6 "%scope": the interface index.
pub(crate) fn dev_ifindex(name: &[u8]) -> Option<u32> {
    let mut buf = [0u8; 16];
    if name.len() >= buf.len() {
        return None;
    }
    for (d, s) in buf.iter_mut().zip(name) {
        *d = *s;
    }
    let i = bindings::rtrs_rs_dev_ifindex(&buf);
    u32::try_from(i).ok().filter(|&i| i != 0)
}

/// The parts of a `sockaddr_storage` that `rtrs_addr_to_str` prints.
fn to_rtrs_sockaddr(ss: &bindings::__kernel_sockaddr_storage) -> Option<sysfs_fmt::RtrsSockaddr> {
    let b = bytes(ss);
    let fam = u32::from(family(ss));
    let port = u16::from_be_bytes([*b.get(2)?, *b.get(3)?]);
    let arr16 = |o: usize| -> Option<[u8; 16]> { b.get(o..o.checked_add(16)?)?.try_into().ok() };
    match fam {
        kernel::bindings::AF_INET => Some(sysfs_fmt::RtrsSockaddr::Inet {
            addr: b.get(4..8)?.try_into().ok()?,
            port,
        }),
        kernel::bindings::AF_INET6 => Some(sysfs_fmt::RtrsSockaddr::Inet6 {
            addr: arr16(8)?,
            port,
            scope_id: u32::from_ne_bytes(b.get(24..28)?.try_into().ok()?),
        }),
        kernel::bindings::AF_IB => Some(sysfs_fmt::RtrsSockaddr::Ib {
            gid: arr16(8)?,
            sid: u64::from_be_bytes(b.get(24..32)?.try_into().ok()?),
        }),
        _ => None,
    }
}

// ---------------------------------------------------------------------------
// The session
// ---------------------------------------------------------------------------
