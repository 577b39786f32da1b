// SPDX-License-Identifier: GPL-2.0

//! A mapped device's rules, as C's rnbd-client applies them: its states and
//! what each operation may do in which, how an OPEN_RSP becomes the disk's
//! limits, and the text of its sysfs files.

use core::fmt;

use super::map_opts::strip;
use super::proto::{MsgOpenRsp, RNBD_FUA, RNBD_WRITEBACK};

/// Errnos (negative) of the device's operations.
pub mod errno {
    /// No such device: remap of an unmapped device.
    pub const ENODEV: i32 = -19;
    /// Busy: a normal unmap of a device in use, a remap while mapping.
    pub const EBUSY: i32 = -16;
    /// Already: unmap of an unmapping device, remap of a mapped one.
    pub const EALREADY: i32 = -114;
    /// No such entry: resize of a device that is not mapped, an answer
    /// for an unmapped one.
    pub const ENOENT: i32 = -2;
    /// Invalid argument.
    pub const EINVAL: i32 = -22;
    /// Out of range.
    pub const ERANGE: i32 = -34;
}

/// `enum rnbd_clt_dev_state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DevState {
    /// Being mapped: not yet answered by the server.
    Init,
    /// Open on the server, taking IO.
    Mapped,
    /// The session lost its paths: IO fails until a remap.
    MappedDisconnected,
    /// Being unmapped (final).
    Unmapped,
}

impl DevState {
    /// The `state` file's text (without its newline).
    pub const fn sysfs_str(self) -> &'static str {
        match self {
            DevState::Init => "init",
            DevState::Mapped => "open",
            DevState::MappedDisconnected => "closed",
            DevState::Unmapped => "unmapped",
        }
    }

    /// Whether a block request is sent (else it fails with an IO error).
    pub const fn takes_io(self) -> bool {
        matches!(self, DevState::Mapped)
    }

    /// Whether the block device may be opened (else EIO).
    pub const fn may_open(self) -> bool {
        !matches!(self, DevState::Unmapped)
    }

    /// The session's paths are gone: the new state, and whether the disk
    /// goes offline (only a mapped device changes).
    pub const fn disconnected(self) -> (DevState, bool) {
        match self {
            DevState::Mapped => (DevState::MappedDisconnected, true),
            s => (s, false),
        }
    }

    /// Whether the session's reconnect sends this device an OPEN again
    /// (all but those still being mapped).
    pub const fn remapped_on_reconnect(self) -> bool {
        !matches!(self, DevState::Init)
    }

    /// `unmap_device`: from a device with `users` openers (besides the
    /// mapping itself, in-flight control messages included), with `force`
    /// or not. Ok(whether it was mapped: a CLOSE is then sent), and the
    /// state becomes [`DevState::Unmapped`].
    pub const fn unmap(self, force: bool, users: u32) -> Result<bool, UnmapError> {
        match self {
            DevState::Unmapped => Err(UnmapError::Already),
            _ if !force && users > 0 => Err(UnmapError::InUse(users)),
            s => Ok(matches!(s, DevState::Mapped)),
        }
    }

    /// `remap_device`: allowed from a disconnected device only; the errno
    /// otherwise (C does not log these).
    pub const fn remap(self) -> Result<(), i32> {
        match self {
            DevState::MappedDisconnected => Ok(()),
            DevState::Unmapped => Err(errno::ENODEV),
            DevState::Mapped => Err(errno::EALREADY),
            DevState::Init => Err(errno::EBUSY),
        }
    }

    /// `resize`: a mapped device only (ENOENT, logged without the
    /// device's prefix: [`RESIZE_NOT_OPEN`]).
    pub const fn resize(self) -> Result<(), i32> {
        match self {
            DevState::Mapped => Ok(()),
            _ => Err(errno::ENOENT),
        }
    }

    /// What an OPEN_RSP does to a device in this state.
    pub fn open_rsp(self, rsp: &MsgOpenRsp) -> OpenRspVerdict {
        if self == DevState::Unmapped {
            return OpenRspVerdict::Unmapped;
        }
        // A disconnected device comes back online (size, uevent, log)
        // before the block size is checked, as in C.
        let online = self == DevState::MappedDisconnected;
        if rsp.logical_block_size == 0 {
            return OpenRspVerdict::BadBlockSize { online };
        }
        OpenRspVerdict::Mapped { online }
    }
}

/// Why `unmap_device` was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnmapError {
    /// Already being unmapped: -EALREADY, logged as [`UNMAP_ALREADY`] and
    /// not as a failure.
    Already,
    /// In use by this many (a normal unmap): -EBUSY.
    InUse(u32),
}

impl UnmapError {
    /// The negative errno.
    pub const fn errno(self) -> i32 {
        match self {
            UnmapError::Already => errno::EALREADY,
            UnmapError::InUse(_) => errno::EBUSY,
        }
    }
}

impl fmt::Display for UnmapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            UnmapError::Already => f.write_str(UNMAP_ALREADY),
            UnmapError::InUse(n) => {
                write!(
                    f,
                    "Closing device failed, device is in use, ({n} device users)"
                )
            }
        }
    }
}

/// The log line of an unmap of an unmapping device.
pub const UNMAP_ALREADY: &str = "Device is already being unmapped";
/// The log line of a resize of a device that is not mapped.
pub const RESIZE_NOT_OPEN: &str = "Failed to set new size of the device, device is not opened";

/// What to do with an OPEN_RSP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenRspVerdict {
    /// The device is unmapped: ignore the answer (ENOENT, logged) and
    /// close it on the server (C sends CLOSE with the answer's id).
    Unmapped,
    /// A zero logical block size: EINVAL, close it on the server (with
    /// the answer's id); the state stays. `online`: first bring a
    /// disconnected device online, as C does.
    BadBlockSize {
        /// As in [`OpenRspVerdict::Mapped`].
        online: bool,
    },
    /// Take the answer's device id; the state becomes mapped. `online`:
    /// it was disconnected, so set the answer's size, send the online
    /// uevent and log the remap.
    Mapped {
        /// The device was disconnected.
        online: bool,
    },
}

/// The disk's properties from an OPEN_RSP and the session's limits (C
/// takes the maximum IO size and segments from the session, not from
/// the answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskLimits {
    /// `logical_block_size`.
    pub logical_block_size: u32,
    /// `physical_block_size`.
    pub physical_block_size: u32,
    /// `max_hw_sectors`: the session's max_io_size in sectors.
    pub max_hw_sectors: u32,
    /// `io_opt`: the session's max_io_size.
    pub io_opt: u32,
    /// `max_segments`: the session's.
    pub max_segments: u32,
    /// `virt_boundary_mask`: 4 KiB pages.
    pub virt_boundary_mask: u64,
    /// `max_hw_discard_sectors`.
    pub max_hw_discard_sectors: u32,
    /// `discard_granularity`.
    pub discard_granularity: u32,
    /// `discard_alignment`.
    pub discard_alignment: u32,
    /// `max_write_zeroes_sectors`.
    pub max_write_zeroes_sectors: u32,
    /// `max_secure_erase_sectors`: the discard maximum if the server
    /// erases securely, else 0.
    pub max_secure_erase_sectors: u32,
    /// `BLK_FEAT_WRITE_CACHE`.
    pub write_cache: bool,
    /// `BLK_FEAT_FUA`: only with a write cache.
    pub fua: bool,
    /// The capacity in 512-byte sectors.
    pub nsectors: u64,
}

impl DiskLimits {
    /// The limits of a device the server described in `rsp`, on a session
    /// with these limits.
    pub const fn new(rsp: &MsgOpenRsp, sess_max_io_size: u32, sess_max_segments: u32) -> Self {
        let wc = rsp.cache_policy & RNBD_WRITEBACK != 0;
        DiskLimits {
            logical_block_size: rsp.logical_block_size as u32,
            physical_block_size: rsp.physical_block_size as u32,
            max_hw_sectors: sess_max_io_size / 512,
            io_opt: sess_max_io_size,
            max_segments: sess_max_segments,
            virt_boundary_mask: 4095,
            max_hw_discard_sectors: rsp.max_discard_sectors,
            discard_granularity: rsp.discard_granularity,
            discard_alignment: rsp.discard_alignment,
            max_write_zeroes_sectors: rsp.max_write_zeroes_sectors,
            max_secure_erase_sectors: if rsp.secure_discard != 0 {
                rsp.max_discard_sectors
            } else {
                0
            },
            write_cache: wc,
            fua: wc && rsp.cache_policy & RNBD_FUA != 0,
            nsectors: rsp.nsectors,
        }
    }
}

/// `unmap_device`'s value: `force` or not; `None` for anything but
/// `normal` and `force` (with surrounding white space).
pub fn unmap_opt(buf: &[u8]) -> Option<bool> {
    match strip(buf) {
        b"normal" => Some(false),
        b"force" => Some(true),
        _ => None,
    }
}

/// `remap_device`'s value: only `1` (with surrounding white space).
pub fn remap_opt(buf: &[u8]) -> bool {
    strip(buf) == b"1"
}

/// `resize`'s value, as `kstrtoul(buf, 0)` reads it: digits in base 10,
/// 8 (a leading 0) or 16 (0x), an optional leading `+`, one optional
/// trailing newline, nothing else (EINVAL); ERANGE past 64 bits.
pub fn resize_opt(buf: &[u8]) -> Result<u64, i32> {
    let buf = buf.split(|&c| c == 0).next().unwrap_or(&[]);
    let s = buf.strip_prefix(b"+").unwrap_or(buf);
    let (base, d) = match s {
        [b'0', x, h, ..] if x.eq_ignore_ascii_case(&b'x') && h.is_ascii_hexdigit() => (16, &s[2..]),
        [b'0', ..] => (8, s),
        _ => (10, s),
    };
    let n = d
        .iter()
        .take_while(|&&c| (c as char).to_digit(16).is_some_and(|v| v < base))
        .count();
    // (An overflow is ERANGE before anything after the digits is seen.)
    let mut v: u64 = 0;
    for &c in &d[..n] {
        let x = u64::from((c as char).to_digit(16).unwrap_or(0));
        v = v
            .checked_mul(u64::from(base))
            .and_then(|v| v.checked_add(x))
            .ok_or(errno::ERANGE)?;
    }
    let rest = &d[n..];
    if n == 0 || !(rest.is_empty() || rest == b"\n") {
        return Err(errno::EINVAL);
    }
    Ok(v)
}

/// The name of a device's link in `/sys/class/rnbd-client/ctl/devices/`:
/// its path on the server with each `/` made `!`, `@`, the session.
pub struct SymlinkName<'a> {
    /// The device's path on the server.
    pub pathname: &'a [u8],
    /// The session's name.
    pub sessname: &'a [u8],
}

impl SymlinkName<'_> {
    /// Writes the name's bytes through `out` (which sees every byte once).
    pub fn write_bytes(&self, mut out: impl FnMut(u8)) {
        self.pathname
            .iter()
            .for_each(|&c| out(if c == b'/' { b'!' } else { c }));
        out(b'@');
        self.sessname.iter().for_each(|&c| out(c));
    }

    /// Whether `other` has the same name (C's link names clash for two
    /// paths that differ only in `/` and `!`).
    pub fn same_as(&self, other: &SymlinkName<'_>) -> bool {
        let map = |c: &u8| if *c == b'/' { b'!' } else { *c };
        let a = self
            .pathname
            .iter()
            .map(map)
            .chain([b'@'])
            .chain(self.sessname.iter().copied());
        let b = other
            .pathname
            .iter()
            .map(map)
            .chain([b'@'])
            .chain(other.sessname.iter().copied());
        self.byte_len() == other.byte_len() && a.eq(b)
    }

    /// Its length in bytes (never 0: it has its `@`).
    pub fn byte_len(&self) -> usize {
        self.pathname.len() + 1 + self.sessname.len()
    }
}

/// The usage texts the device's writable files show when read (each with
/// its newline), C's byte for byte.
pub mod usage {
    /// `unmap_device`.
    pub const UNMAP_DEVICE: &str = "Usage: echo <normal|force> > unmap_device\n";
    /// `resize`.
    pub const RESIZE: &str = "Usage: echo <new size in sectors> > resize\n";
    /// `remap_device`.
    pub const REMAP_DEVICE: &str = "Usage: echo <1> > remap_device\n";
    /// `/sys/class/rnbd-client/ctl/map_device`.
    pub const MAP_DEVICE: &str = "Usage: echo \"[dest_port=server port number] sessname=<name of the rtrs session> path=<[srcaddr@]dstaddr> [path=<[srcaddr@]dstaddr>] device_path=<full path on remote side> [access_mode=<ro|rw|migration>] [nr_poll_queues=<number of queues>]\" > map_device\n\naddr ::= [ ip:<ipv4> | ip:<ipv6> | gid:<gid> ]\n";
}

#[cfg(test)]
mod tests;
