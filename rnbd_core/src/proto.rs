// SPDX-License-Identifier: GPL-2.0

//! RNBD protocol 2.0 (`rnbd-proto.h`): the messages a client sends and reads.
//!
//! Every multi-byte field is little-endian; the structs are C's natural
//! layout (not packed), so `rnbd_msg_io` ends in 6 bytes of padding. Each
//! message is a struct of native values: requests `encode` into a fixed
//! array, responses `decode` from the bytes the server wrote, checking their
//! length and type (C reads them unchecked).

use core::fmt;

/// `RNBD_PROTO_VER_MAJOR`: what SESS_INFO offers; the session keeps the
/// smaller of it and the server's.
pub const RNBD_PROTO_VER_MAJOR: u8 = 2;
/// `RNBD_PROTO_VER_MINOR` (not sent: only the major is).
#[cfg(test)]
pub const RNBD_PROTO_VER_MINOR: u8 = 0;
/// `RTRS_PORT`: the port of a `path=` without `dest_port=`.
pub const RTRS_PORT: u16 = 1234;
/// `NAME_MAX`: the size of `rnbd_msg_open.dev_name`.
pub const NAME_MAX: usize = 255;

/// Linux errno numbers (positive) of [`RnbdWireError::errno`].
pub mod errno {
    /// Invalid argument.
    pub const EINVAL: i32 = 22;
    /// Protocol error.
    pub const EPROTO: i32 = 71;
}

/// A response that cannot be read, or a request that cannot be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RnbdWireError {
    /// The response is shorter than its message.
    Truncated {
        /// Bytes needed.
        need: usize,
        /// Bytes present.
        have: usize,
    },
    /// The header's type is not the expected response's.
    BadType {
        /// Type expected.
        expected: u16,
        /// Type found.
        found: u16,
    },
    /// A device name that does not fit `dev_name` with its NUL, or is empty.
    BadDevName {
        /// Its length.
        len: usize,
    },
}

impl RnbdWireError {
    /// Negative errno: -EPROTO for what the server sent, -EINVAL for a
    /// request that cannot be built.
    pub const fn errno(&self) -> i32 {
        match self {
            RnbdWireError::Truncated { .. } | RnbdWireError::BadType { .. } => -errno::EPROTO,
            RnbdWireError::BadDevName { .. } => -errno::EINVAL,
        }
    }
}

impl fmt::Display for RnbdWireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RnbdWireError::Truncated { need, have } => {
                write!(f, "truncated response: need {need} bytes, have {have}")
            }
            RnbdWireError::BadType { expected, found } => {
                write!(f, "unexpected message type {found} (expected {expected})")
            }
            RnbdWireError::BadDevName { len } => write!(f, "bad device name length {len}"),
        }
    }
}

/// `enum rnbd_msg_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum MsgType {
    /// `RNBD_MSG_SESS_INFO`.
    SessInfo = 0,
    /// `RNBD_MSG_SESS_INFO_RSP`.
    SessInfoRsp = 1,
    /// `RNBD_MSG_OPEN`.
    Open = 2,
    /// `RNBD_MSG_OPEN_RSP`.
    OpenRsp = 3,
    /// `RNBD_MSG_IO`.
    Io = 4,
    /// `RNBD_MSG_CLOSE`.
    Close = 5,
}

/// `enum rnbd_access_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum AccessMode {
    /// `RNBD_ACCESS_RO`.
    Ro = 0,
    /// `RNBD_ACCESS_RW`, the default of a map.
    Rw = 1,
    /// `RNBD_ACCESS_MIGRATION`: a second writer for a live migration.
    Migration = 2,
}

impl AccessMode {
    /// The name in `access_mode=` and in the device's `access_mode` file.
    pub const fn as_str(self) -> &'static str {
        match self {
            AccessMode::Ro => "ro",
            AccessMode::Rw => "rw",
            AccessMode::Migration => "migration",
        }
    }

    /// The mode named exactly `s`.
    pub fn from_name(s: &[u8]) -> Option<Self> {
        match s {
            b"ro" => Some(AccessMode::Ro),
            b"rw" => Some(AccessMode::Rw),
            b"migration" => Some(AccessMode::Migration),
            _ => None,
        }
    }
}

/// `enum rnbd_cache_policy`, in `open_rsp.cache_policy`.
pub const RNBD_FUA: u8 = 1 << 0;
/// The server's device has a volatile write cache.
pub const RNBD_WRITEBACK: u8 = 1 << 1;

fn hdr(buf: &mut [u8], t: MsgType) {
    buf[0..2].copy_from_slice(&(t as u16).to_le_bytes());
}

fn check(buf: &[u8], need: usize, t: MsgType) -> Result<(), RnbdWireError> {
    if buf.len() < need {
        return Err(RnbdWireError::Truncated {
            need,
            have: buf.len(),
        });
    }
    let found = u16::from_le_bytes([buf[0], buf[1]]);
    if found != t as u16 {
        return Err(RnbdWireError::BadType {
            expected: t as u16,
            found,
        });
    }
    Ok(())
}

fn le16(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
fn le32(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}
fn le64(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(a)
}

/// `rnbd_msg_sess_info` (the client's) and `rnbd_msg_sess_info_rsp` (the
/// server's): the protocol major version each side speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsgSessInfo {
    /// `ver`.
    pub ver: u8,
}

impl MsgSessInfo {
    /// Bytes on the wire, request and response alike.
    pub const LEN: usize = 36;

    /// The request, offering [`RNBD_PROTO_VER_MAJOR`].
    pub const fn new() -> Self {
        MsgSessInfo {
            ver: RNBD_PROTO_VER_MAJOR,
        }
    }

    /// The request's bytes.
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        hdr(&mut b, MsgType::SessInfo);
        b[4] = self.ver;
        b
    }

    /// Reads the server's SESS_INFO_RSP.
    pub fn decode_rsp(buf: &[u8]) -> Result<Self, RnbdWireError> {
        check(buf, Self::LEN, MsgType::SessInfoRsp)?;
        Ok(MsgSessInfo { ver: buf[4] })
    }

    /// The version the session keeps: the smaller of the server's and ours.
    pub fn negotiated(&self) -> u8 {
        self.ver.min(RNBD_PROTO_VER_MAJOR)
    }
}

impl Default for MsgSessInfo {
    fn default() -> Self {
        Self::new()
    }
}

/// `rnbd_msg_open`: open a device of the server by its path there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsgOpen {
    /// `access_mode`.
    pub access_mode: AccessMode,
    dev_name: [u8; NAME_MAX],
    len: usize,
}

impl MsgOpen {
    /// Bytes on the wire.
    pub const LEN: usize = 264;

    /// The request for `dev_name`, which must be 1..NAME_MAX bytes (it
    /// travels NUL-terminated in `NAME_MAX` bytes).
    pub fn new(access_mode: AccessMode, dev_name: &[u8]) -> Result<Self, RnbdWireError> {
        let len = dev_name.len();
        if len == 0 || len >= NAME_MAX || dev_name.contains(&0) {
            return Err(RnbdWireError::BadDevName { len });
        }
        let mut n = [0u8; NAME_MAX];
        n[..len].copy_from_slice(dev_name);
        Ok(MsgOpen {
            access_mode,
            dev_name: n,
            len,
        })
    }

    /// The device's name.
    #[cfg(test)]
    pub fn dev_name(&self) -> &[u8] {
        &self.dev_name[..self.len]
    }

    /// The request's bytes.
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        hdr(&mut b, MsgType::Open);
        b[4] = self.access_mode as u8;
        b[6..6 + NAME_MAX].copy_from_slice(&self.dev_name);
        b
    }
}

/// `rnbd_msg_close`: close a device the server opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsgClose {
    /// `device_id`, from the OPEN_RSP.
    pub device_id: u32,
}

impl MsgClose {
    /// Bytes on the wire.
    pub const LEN: usize = 8;

    /// The request's bytes.
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        hdr(&mut b, MsgType::Close);
        b[4..8].copy_from_slice(&self.device_id.to_le_bytes());
        b
    }
}

/// `rnbd_msg_open_rsp`: the opened device's id and its limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MsgOpenRsp {
    /// `device_id`: names the device in IO and CLOSE.
    pub device_id: u32,
    /// `nsectors`: the size in 512-byte sectors.
    pub nsectors: u64,
    /// `max_hw_sectors`.
    pub max_hw_sectors: u32,
    /// `max_write_zeroes_sectors`.
    pub max_write_zeroes_sectors: u32,
    /// `max_discard_sectors`.
    pub max_discard_sectors: u32,
    /// `discard_granularity`.
    pub discard_granularity: u32,
    /// `discard_alignment`.
    pub discard_alignment: u32,
    /// `physical_block_size`.
    pub physical_block_size: u16,
    /// `logical_block_size`.
    pub logical_block_size: u16,
    /// `max_segments`.
    pub max_segments: u16,
    /// `secure_discard`.
    pub secure_discard: u16,
    /// `obsolete_rotational`: no longer read.
    pub obsolete_rotational: u8,
    /// `cache_policy`: [`RNBD_FUA`] and [`RNBD_WRITEBACK`].
    pub cache_policy: u8,
}

impl MsgOpenRsp {
    /// Bytes on the wire.
    pub const LEN: usize = 56;

    /// Reads the server's OPEN_RSP.
    pub fn decode(b: &[u8]) -> Result<Self, RnbdWireError> {
        check(b, Self::LEN, MsgType::OpenRsp)?;
        Ok(MsgOpenRsp {
            device_id: le32(b, 4),
            nsectors: le64(b, 8),
            max_hw_sectors: le32(b, 16),
            max_write_zeroes_sectors: le32(b, 20),
            max_discard_sectors: le32(b, 24),
            discard_granularity: le32(b, 28),
            discard_alignment: le32(b, 32),
            physical_block_size: le16(b, 36),
            logical_block_size: le16(b, 38),
            max_segments: le16(b, 40),
            secure_discard: le16(b, 42),
            obsolete_rotational: b[44],
            cache_policy: b[45],
        })
    }

    /// The bytes a server sends (for tests).
    #[cfg(test)]
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        hdr(&mut b, MsgType::OpenRsp);
        b[4..8].copy_from_slice(&self.device_id.to_le_bytes());
        b[8..16].copy_from_slice(&self.nsectors.to_le_bytes());
        b[16..20].copy_from_slice(&self.max_hw_sectors.to_le_bytes());
        b[20..24].copy_from_slice(&self.max_write_zeroes_sectors.to_le_bytes());
        b[24..28].copy_from_slice(&self.max_discard_sectors.to_le_bytes());
        b[28..32].copy_from_slice(&self.discard_granularity.to_le_bytes());
        b[32..36].copy_from_slice(&self.discard_alignment.to_le_bytes());
        b[36..38].copy_from_slice(&self.physical_block_size.to_le_bytes());
        b[38..40].copy_from_slice(&self.logical_block_size.to_le_bytes());
        b[40..42].copy_from_slice(&self.max_segments.to_le_bytes());
        b[42..44].copy_from_slice(&self.secure_discard.to_le_bytes());
        b[44] = self.obsolete_rotational;
        b[45] = self.cache_policy;
        b
    }
}

/// `RNBD_OP_BITS`: the low bits of `rw` hold the operation.
pub const RNBD_OP_BITS: u32 = 8;
/// `RNBD_OP_MASK`.
#[cfg(test)]
pub const RNBD_OP_MASK: u32 = (1 << RNBD_OP_BITS) - 1;
/// `RNBD_F_SYNC`.
pub const RNBD_F_SYNC: u32 = 1 << RNBD_OP_BITS;
/// `RNBD_F_FUA`.
pub const RNBD_F_FUA: u32 = 1 << (RNBD_OP_BITS + 1);

/// `enum rnbd_io_flags`' operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum RnbdOp {
    /// `RNBD_OP_READ`.
    Read = 0,
    /// `RNBD_OP_WRITE`.
    Write = 1,
    /// `RNBD_OP_FLUSH`.
    Flush = 2,
    /// `RNBD_OP_DISCARD`.
    Discard = 3,
    /// `RNBD_OP_SECURE_ERASE`.
    SecureErase = 4,
    /// `RNBD_OP_WRITE_ZEROES`.
    WriteZeroes = 5,
}

/// A block request's operation, as the module reads it (`req_op`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlkOp {
    /// `REQ_OP_READ`.
    Read,
    /// `REQ_OP_WRITE`.
    Write,
    /// `REQ_OP_FLUSH`.
    Flush,
    /// `REQ_OP_DISCARD`.
    Discard,
    /// `REQ_OP_SECURE_ERASE`.
    SecureErase,
    /// `REQ_OP_WRITE_ZEROES`.
    WriteZeroes,
    /// Any other operation (zone management, driver-private).
    Other,
}

impl BlkOp {
    /// The RNBD operation that carries it; `None` for [`BlkOp::Other`],
    /// which the device does not advertise (C sends it as a read after a
    /// WARN; here the request fails).
    pub const fn rnbd_op(self) -> Option<RnbdOp> {
        Some(match self {
            BlkOp::Read => RnbdOp::Read,
            BlkOp::Write => RnbdOp::Write,
            BlkOp::Flush => RnbdOp::Flush,
            BlkOp::Discard => RnbdOp::Discard,
            BlkOp::SecureErase => RnbdOp::SecureErase,
            BlkOp::WriteZeroes => RnbdOp::WriteZeroes,
            BlkOp::Other => return None,
        })
    }

    /// Whether the request carries data segments: the others send none
    /// (`sg_cnt` 0), discard and write-zeroes only a length.
    pub const fn has_segments(self) -> bool {
        matches!(self, BlkOp::Read | BlkOp::Write)
    }
}

/// `rq_to_rnbd_flags`: the `rw` field of a request whose operation is `op`,
/// with `sync` = `op_is_sync(cmd_flags)` and `flush` =
/// `op_is_flush(cmd_flags)` (a FUA or preflush write, sent as FUA).
pub const fn rnbd_rw(op: BlkOp, sync: bool, flush: bool) -> Option<u32> {
    let Some(o) = op.rnbd_op() else {
        return None;
    };
    let mut rw = o as u32;
    if sync {
        rw |= RNBD_F_SYNC;
    }
    if flush {
        rw |= RNBD_F_FUA;
    }
    Some(rw)
}

/// `rnbd_msg_io`: the header of one block request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsgIo {
    /// `device_id`.
    pub device_id: u32,
    /// `sector`: the request's first 512-byte sector.
    pub sector: u64,
    /// `rw`: from [`rnbd_rw`].
    pub rw: u32,
    /// `bi_size`: the request's length in bytes.
    pub bi_size: u32,
    /// `prio`: the request's I/O priority.
    pub prio: u16,
}

impl MsgIo {
    /// Bytes on the wire (26 of fields, 6 of padding).
    pub const LEN: usize = 32;

    /// Writes the header into `b`, the request's buffer.
    pub fn encode_into(&self, b: &mut [u8; Self::LEN]) {
        b.fill(0);
        hdr(b, MsgType::Io);
        b[4..8].copy_from_slice(&self.device_id.to_le_bytes());
        b[8..16].copy_from_slice(&self.sector.to_le_bytes());
        b[16..20].copy_from_slice(&self.rw.to_le_bytes());
        b[20..24].copy_from_slice(&self.bi_size.to_le_bytes());
        b[24..26].copy_from_slice(&self.prio.to_le_bytes());
    }

    /// The header's bytes.
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        self.encode_into(&mut b);
        b
    }

    /// Reads a header (for tests).
    #[cfg(test)]
    pub fn decode(b: &[u8]) -> Result<Self, RnbdWireError> {
        check(b, Self::LEN, MsgType::Io)?;
        Ok(MsgIo {
            device_id: le32(b, 4),
            sector: le64(b, 8),
            rw: le32(b, 16),
            bi_size: le32(b, 20),
            prio: le16(b, 24),
        })
    }
}

#[cfg(test)]
mod tests;
