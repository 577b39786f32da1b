// SPDX-License-Identifier: GPL-2.0

//! The C types of rtrs.h that the exported API takes and gives, with C's
//! layout (`bindings/rtrs_export.c` checks the prototypes against rtrs.h).

use core::sync::atomic::AtomicU32;

use kernel::ffi::{c_int, c_void};

use crate::bindings;
use crate::ffi::addr::SockAddr;
use crate::rtrs_core::proto::{copy_bytes, split_at_mut_checked};

/// rnbd's confirmation callback (`rtrs_clt_req_ops.conf_fn`).
pub(crate) type ConfFn = Option<unsafe extern "C" fn(*mut c_void, c_int)>;

/// `struct rtrs_clt_ops`.
#[repr(C)]
pub(crate) struct RtrsCltOps {
    pub(crate) priv_: *mut c_void,
    pub(crate) link_ev: Option<unsafe extern "C" fn(*mut c_void, c_int)>,
}

/// `struct rtrs_addr`.
#[repr(C)]
pub(crate) struct RtrsAddr {
    pub(crate) src: *mut bindings::__kernel_sockaddr_storage,
    pub(crate) dst: *mut bindings::__kernel_sockaddr_storage,
}

/// `struct rtrs_clt_req_ops`.
#[repr(C)]
pub(crate) struct RtrsCltReqOps {
    pub(crate) priv_: *mut c_void,
    pub(crate) conf_fn: ConfFn,
}

/// `struct rtrs_attrs`.
#[repr(C)]
pub(crate) struct RtrsAttrs {
    pub(crate) queue_depth: u32,
    pub(crate) max_io_size: u32,
    pub(crate) max_segments: u32,
}

/// `struct kvec`.
#[repr(C)]
pub(crate) struct Kvec {
    pub(crate) iov_base: *mut c_void,
    pub(crate) iov_len: usize,
}

/// `struct rtrs_permit`, same layout as C (an `AtomicU32` has the size and
/// alignment of a `u32`); `pdu_sz` bytes follow it, which only the permit's
/// holder uses. The fields are atomics so that the permit pool can hand out
/// shared references to its permits; the holder writes `con_type` and
/// `cpu_id` (see `Permits::try_get`), the rest is set once.
#[repr(C)]
pub(crate) struct RtrsPermit {
    pub(crate) con_type: AtomicU32,
    pub(crate) cpu_id: AtomicU32,
    pub(crate) mem_id: AtomicU32,
    pub(crate) mem_off: AtomicU32,
}

/// rnbd's `link_ev` callback with its private pointer, from
/// `rtrs_clt_open`'s ops.
///
/// # Invariants
///
/// `link_ev`, when set, may be called with `priv_` from process context
/// until the session is closed (rtrs.h's contract).
pub(crate) struct LinkEvCb(RtrsCltOps);

// SAFETY: rnbd's callback may be called from any thread (type invariant).
unsafe impl Send for LinkEvCb {}
// SAFETY: As above; it is only read.
unsafe impl Sync for LinkEvCb {}

impl LinkEvCb {
    /// # Safety
    ///
    /// `ops` is what `rtrs_clt_open` was given, and the copy is used only
    /// until the session is closed.
    pub(crate) unsafe fn new(ops: &RtrsCltOps) -> Self {
        Self(RtrsCltOps {
            priv_: ops.priv_,
            link_ev: ops.link_ev,
        })
    }

    /// `clt->link_ev(clt->priv, ev)`.
    pub(crate) fn call(&self, ev: c_int) {
        let ops: *const RtrsCltOps = &self.0;
        // SAFETY: By the type invariant; the C helper calls `link_ev` if it
        // is set.
        unsafe { bindings::rtrs_rs_call_link_ev(ops.cast(), ev) };
    }
}

/// rnbd's `conf` callback with its private pointer, for one request.
///
/// # Invariants
///
/// `f`, when set, may be called with `priv_` from any context, once per
/// request that `rtrs_clt_request` accepted (rtrs.h's contract). There is
/// one `Confirm` per request: calling it consumes it.
pub(crate) struct Confirm {
    f: ConfFn,
    priv_: *mut c_void,
}

// SAFETY: rnbd's callback may be called from any context (type invariant).
unsafe impl Send for Confirm {}

impl Confirm {
    /// # Safety
    ///
    /// `ops` is what `rtrs_clt_request` was given for the request this
    /// confirms.
    pub(crate) unsafe fn new(ops: &RtrsCltReqOps) -> Self {
        Self {
            f: ops.conf_fn,
            priv_: ops.priv_,
        }
    }

    /// `req->conf(req->priv, errno)`: the request is over.
    pub(crate) fn call(self, errno: c_int) {
        if let Some(f) = self.f {
            // SAFETY: By the type invariant. Directly, but through the C
            // helper under kCFI, where a Rust indirect call would need the
            // type hash of C's `conf`.
            unsafe {
                #[cfg(not(CONFIG_CFI_CLANG))]
                f(self.priv_, errno);
                #[cfg(CONFIG_CFI_CLANG)]
                bindings::rtrs_rs_call_conf(Some(f), self.priv_, errno);
            }
        }
    }
}

/// The kvecs of a request's user header.
///
/// # Invariants
///
/// Each kvec points to `iov_len` readable bytes for `'a`.
#[derive(Clone, Copy)]
pub(crate) struct Kvecs<'a>(&'a [Kvec]);

impl<'a> Kvecs<'a> {
    /// # Safety
    ///
    /// Each kvec of `v` points to `iov_len` readable bytes for `'a`.
    pub(crate) unsafe fn new(v: &'a [Kvec]) -> Self {
        Self(v)
    }

    /// Each kvec's bytes.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.0.iter().map(|v| {
            if v.iov_len == 0 || v.iov_base.is_null() {
                return &[][..];
            }
            // SAFETY: By the type invariant.
            unsafe { core::slice::from_raw_parts(v.iov_base.cast_const().cast::<u8>(), v.iov_len) }
        })
    }

    /// The bytes of the only kvec, if there is exactly one (rnbd's case).
    fn single(&self) -> Option<&'a [u8]> {
        match self.0 {
            [_] => self.iter().next(),
            _ => None,
        }
    }
}

/// A request's user header: the caller's kvecs, or on failover the bytes
/// kept in the failed slot's IU; with its length, summed once.
#[derive(Clone, Copy)]
pub(crate) struct UsrHdr<'a> {
    src: UsrSrc<'a>,
    len: usize,
}

#[derive(Clone, Copy)]
enum UsrSrc<'a> {
    Kvecs(Kvecs<'a>),
    Bytes(&'a [u8]),
}

impl<'a> UsrHdr<'a> {
    /// The caller's kvecs; `None` if their length overflows.
    pub(crate) fn kvecs(k: Kvecs<'a>) -> Option<Self> {
        // One kvec is one slice: no sum, and a copy without the loop.
        if let Some(b) = k.single() {
            return Some(Self::bytes(b));
        }
        let len = k.iter().try_fold(0usize, |n, b| n.checked_add(b.len()))?;
        Some(Self {
            src: UsrSrc::Kvecs(k),
            len,
        })
    }

    /// Bytes kept from an earlier try.
    pub(crate) fn bytes(b: &'a [u8]) -> Self {
        Self {
            src: UsrSrc::Bytes(b),
            len: b.len(),
        }
    }

    /// Its length (`usr_len`).
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Copies it to `dst`, which is `len()` bytes long (the parts fill it
    /// exactly, as `len()` is their sum).
    pub(crate) fn copy_to(&self, dst: &mut [u8]) {
        match self.src {
            UsrSrc::Kvecs(k) => {
                let mut rest = dst;
                for b in k.iter() {
                    let Some((d, r)) = split_at_mut_checked(rest, b.len()) else {
                        return;
                    };
                    copy_bytes(d, b);
                    rest = r;
                }
            }
            UsrSrc::Bytes(b) => copy_bytes(dst, b),
        }
    }
}

/// One path's addresses: `struct rtrs_addr` as Rust sees it, the same
/// layout as [`RtrsAddr`] (an `Option<&T>` is a nullable pointer), so an
/// array of `struct rtrs_addr` whose pointers are null or valid for `'a`
/// is an array of these.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct PathAddr<'a> {
    pub(crate) src: Option<&'a SockAddr>,
    pub(crate) dst: Option<&'a SockAddr>,
}

const _: () = {
    assert!(core::mem::size_of::<PathAddr<'_>>() == core::mem::size_of::<RtrsAddr>());
    assert!(core::mem::align_of::<PathAddr<'_>>() == core::mem::align_of::<RtrsAddr>());
};
