// SPDX-License-Identifier: GPL-2.0

//! RTRS wire protocol 2.0 (`rtrs-pri.h`): constants, messages and checks.
//!
//! Every multi-byte field is little-endian. Each message has a plain struct
//! of native values with `encode` / `decode` over byte slices; variable
//! descriptor arrays are read through [`RtrsSgDescs`] without allocation.
//! Nothing from the peer is trusted: decoders bounds-check everything and
//! return a [`WireError`], whose [`WireError::errno`] gives the C errno.

use core::fmt;

use super::imm::{imm_bits, MAX_IMM_PAYL_BITS};

// ---------------------------------------------------------------------------
// Constants
// ---------------------------------------------------------------------------

/// `RTRS_PROTO_VER_MAJOR`; the only part of the version a peer checks.
pub const RTRS_PROTO_VER_MAJOR: u16 = 2;
/// `RTRS_PROTO_VER_MINOR`.
pub const RTRS_PROTO_VER_MINOR: u16 = 0;
/// `RTRS_PROTO_VER`: `(major << 8) | minor`, sent in conn req/rsp.
pub const RTRS_PROTO_VER: u16 = (RTRS_PROTO_VER_MAJOR << 8) | RTRS_PROTO_VER_MINOR;
#[cfg(test)]
/// `RTRS_PROTO_VER_STRING`.
pub const RTRS_PROTO_VER_STRING: &str = "2.0";
/// `RTRS_MAGIC`, first field of conn req/rsp (wire bytes `BD 1B`).
pub const RTRS_MAGIC: u16 = 0x1BBD;

/// `MAX_SESS_QUEUE_DEPTH`: queue_depth travels as le16.
pub const MAX_SESS_QUEUE_DEPTH: u32 = 65535;
/// `SERVICE_CON_QUEUE_DEPTH`: con 0 sizing and signal interval cap.
pub const SERVICE_CON_QUEUE_DEPTH: u32 = 512;
/// `MAX_PATHS_NUM`: max paths per session.
pub const MAX_PATHS_NUM: u32 = 128;
#[cfg(test)]
/// `MIN_CHUNK_SIZE`: lower bound of the server's `max_chunk_size`.
pub const MIN_CHUNK_SIZE: u32 = 8192;
/// `RTRS_HB_INTERVAL_MS`: heartbeat period.
pub const RTRS_HB_INTERVAL_MS: u32 = 5000;
/// `RTRS_HB_MISSED_MAX`: missed heartbeats before error recovery.
pub const RTRS_HB_MISSED_MAX: u32 = 5;

/// `RTRS_CONNECT_TIMEOUT_MS` (rtrs-clt.c): every CM / info / disconnect wait.
pub const RTRS_CONNECT_TIMEOUT_MS: u32 = 30000;
/// `RTRS_RECONNECT_BACKOFF` (rtrs-clt.c): ms slept before a reconnect try.
pub const RTRS_RECONNECT_BACKOFF: u32 = 1000;
/// `RTRS_RECONNECT_SEED` (rtrs-clt.c): extra random delay is 0..SEED-1 ms.
pub const RTRS_RECONNECT_SEED: u32 = 8;
#[cfg(test)]
/// `FIRST_CONN` (rtrs-clt.c): value of the conn req `first_conn` bit.
pub const FIRST_CONN: u8 = 0x01;
/// `RTRS_MAX_SEGMENTS` (rtrs-clt.c): initial max_segments / pages per MR.
pub const RTRS_MAX_SEGMENTS: u32 = 128;

/// `NAME_MAX`: size of the info req pathname array.
pub const NAME_MAX: usize = 255;
#[cfg(test)]
/// Largest `cid_num` the 6.12 server accepts in a conn req.
pub const SRV_MAX_CON_NUM: u16 = 4096;
#[cfg(test)]
/// Server default `max_chunk_size` (rtrs-srv.c).
pub const SRV_DEFAULT_MAX_CHUNK_SIZE: u32 = 128 << 10;
#[cfg(test)]
/// Server default `sess_queue_depth` (rtrs-srv.c).
pub const SRV_DEFAULT_SESS_QUEUE_DEPTH: u32 = 512;
#[cfg(test)]
/// Server `MAX_HDR_SIZE` (PAGE_SIZE on 4K-page hosts).
pub const SRV_MAX_HDR_SIZE: u32 = 4096;

/// `RTRS_MSG_NEED_INVAL_F` (`rtrs_msg_flags`), in `rdma_read.flags`.
pub const RTRS_MSG_NEED_INVAL_F: u16 = 1 << 0;
/// `RTRS_MSG_NEW_RKEY_F` (`rtrs_msg_flags`), in `conn_rsp.flags`.
pub const RTRS_MSG_NEW_RKEY_F: u32 = 1 << 1;

/// Linux errno numbers used by [`WireError::errno`] (positive values).
pub mod errno {
    /// Invalid argument.
    pub const EINVAL: i32 = 22;
    /// Protocol error.
    pub const EPROTO: i32 = 71;
    /// Message too long.
    pub const EMSGSIZE: i32 = 90;
    /// Connection reset by peer.
    pub const ECONNRESET: i32 = 104;
    #[cfg(test)]
    /// Device or resource busy.
    pub const EBUSY: i32 = 16;
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// A malformed or unacceptable message, or an encode that cannot be done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// Input is shorter than the message needs.
    Truncated {
        /// Bytes needed.
        need: usize,
        /// Bytes present.
        have: usize,
    },
    /// Output buffer is too small for the encoding.
    BufferTooSmall {
        /// Bytes needed.
        need: usize,
        /// Bytes present.
        have: usize,
    },
    /// Magic is not [`RTRS_MAGIC`].
    BadMagic {
        /// Magic found.
        magic: u16,
    },
    /// Major version is not [`RTRS_PROTO_VER_MAJOR`].
    BadVersion {
        /// Version field found.
        version: u16,
    },
    /// Message type is unknown or not the expected one.
    BadType {
        /// Type found.
        msg_type: u16,
    },
    /// conn_rsp on ESTABLISHED carries a non-zero errno.
    ConnRspErrno {
        /// The raw le16 errno as a signed value.
        errno: i16,
    },
    /// queue_depth changed across a reconnect of the same path.
    QueueDepthChanged {
        /// Depth the path had.
        old: u32,
        /// Depth the server now sent.
        new: u32,
    },
    /// queue_depth is 0 or above [`MAX_SESS_QUEUE_DEPTH`].
    BadQueueDepth {
        /// Depth given.
        queue_depth: u32,
    },
    /// conn_rsp `max_io_size` is 0: no request with data would fit.
    BadMaxIoSize {
        /// max_io_size of the conn_rsp.
        max_io_size: u32,
    },
    /// conn_rsp `max_hdr_size` cannot hold a READ header with its one
    /// descriptor: no READ with data could be sent.
    BadMaxHdrSize {
        /// max_hdr_size of the conn_rsp.
        max_hdr_size: u32,
        /// The least that holds it.
        min: u32,
    },
    /// `max_io_size + max_hdr_size` overflows u32.
    BadChunkSize {
        /// max_io_size of the conn_rsp.
        max_io_size: u32,
        /// max_hdr_size of the conn_rsp.
        max_hdr_size: u32,
    },
    /// Buffer count and chunk size do not fit the 28-bit IMM payload.
    ImmBudget {
        /// Buffer count (sg_cnt or queue_depth).
        count: u32,
        /// Chunk size.
        chunk_size: u32,
    },
    /// cid / cid_num of a conn req out of range.
    BadCid {
        /// cid.
        cid: u16,
        /// cid_num.
        cid_num: u16,
    },
    /// info_rsp sg_cnt is 0 or does not divide queue_depth.
    BadSgCnt {
        /// sg_cnt of the message.
        sg_cnt: u16,
        /// Path queue_depth.
        queue_depth: u32,
    },
    /// info_rsp descriptor length is 0 or not a multiple of chunk_size.
    BadDescLen {
        /// Descriptor index.
        index: u16,
        /// Its length.
        len: u32,
    },
    /// info_rsp descriptor address range wraps around u64.
    DescAddrOverflow {
        /// Descriptor index.
        index: u16,
    },
    /// info_rsp descriptors do not map exactly queue_depth chunks.
    NotFullyMapped {
        /// Descriptors consumed.
        descs_used: u16,
        /// Chunks mapped.
        chunks: u32,
    },
    /// info_rsp descriptor lengths do not sum to chunk_size * queue_depth.
    BadTotalLen {
        /// Sum of lengths.
        total: u64,
        /// Expected sum.
        expected: u64,
    },
    /// More descriptors than the field or the output can hold.
    TooManyDescs {
        /// Descriptors given.
        count: usize,
        /// Maximum.
        max: usize,
    },
    /// The sg_cnt field does not match the descriptors supplied.
    SgCntMismatch {
        /// sg_cnt field.
        sg_cnt: u16,
        /// Descriptors supplied.
        descs: usize,
    },
    /// Session name empty, too long for NAME_MAX with NUL, or holds a NUL.
    BadPathname {
        /// Length given.
        len: usize,
    },
    /// User header + RTRS header, or message + data, exceed the limit.
    MsgTooBig {
        /// Size needed.
        size: usize,
        /// Allowed maximum.
        max: usize,
    },
    /// `rtrs_clt_request`: user header + RTRS header exceed `max_hdr_size`.
    IoHdrTooBig {
        /// READ (else WRITE).
        read: bool,
        /// The caller's user header length.
        usr_len: usize,
        /// The RTRS header length (`usize::MAX` if it overflows).
        hdr_len: usize,
        /// The path's `max_hdr_size`.
        max: u32,
    },
    /// `rtrs_clt_{read,write}_req`: message, data and user header exceed
    /// the chunk.
    IoChunkTooBig {
        /// READ (else WRITE).
        read: bool,
        /// The size needed (`usize::MAX` if it overflows).
        size: usize,
        /// The path's chunk size.
        chunk_size: u32,
    },
    /// msg_id / buf_id / mem_id is not below queue_depth.
    BadMsgId {
        /// Id found.
        msg_id: u32,
        /// Queue depth.
        queue_depth: u32,
    },
    /// rkey_rsp buf_id differs from the msg_id of its IMM.
    BufIdMismatch {
        /// buf_id of the message.
        buf_id: u16,
        /// msg_id of the IMM.
        msg_id: u32,
    },
}

impl WireError {
    /// Negative C errno for this error.
    ///
    /// - -ECONNRESET: framing and conn_rsp problems (`rtrs_rdma_conn_established`,
    ///   and what `rtrs_send_path_info` returns after a bad INFO_RSP);
    /// - -EINVAL: `process_info_rsp` checks and local encode misuse;
    /// - -EMSGSIZE: IO too big (`rtrs_clt_request`, `rtrs_clt_{read,write}_req`);
    /// - -EPROTO: bad IMM / rkey_rsp ids, where C only WARNs and recovers.
    pub const fn errno(&self) -> i32 {
        use errno::*;
        match self {
            WireError::Truncated { .. }
            | WireError::BadMagic { .. }
            | WireError::BadVersion { .. }
            | WireError::BadType { .. }
            | WireError::ConnRspErrno { .. }
            | WireError::QueueDepthChanged { .. }
            | WireError::BadQueueDepth { .. }
            | WireError::BadMaxIoSize { .. }
            | WireError::BadMaxHdrSize { .. }
            | WireError::BadChunkSize { .. }
            | WireError::BadCid { .. } => -ECONNRESET,
            WireError::BufferTooSmall { .. }
            | WireError::ImmBudget { .. }
            | WireError::BadSgCnt { .. }
            | WireError::BadDescLen { .. }
            | WireError::DescAddrOverflow { .. }
            | WireError::NotFullyMapped { .. }
            | WireError::BadTotalLen { .. }
            | WireError::TooManyDescs { .. }
            | WireError::SgCntMismatch { .. }
            | WireError::BadPathname { .. } => -EINVAL,
            WireError::MsgTooBig { .. }
            | WireError::IoHdrTooBig { .. }
            | WireError::IoChunkTooBig { .. } => -EMSGSIZE,
            WireError::BadMsgId { .. } | WireError::BufIdMismatch { .. } => -EPROTO,
        }
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            WireError::Truncated { need, have } => {
                write!(f, "truncated message: need {need} bytes, have {have}")
            }
            WireError::BufferTooSmall { need, have } => {
                write!(f, "buffer too small: need {need} bytes, have {have}")
            }
            WireError::BadMagic { magic } => write!(f, "invalid RTRS magic {magic:#x}"),
            WireError::BadVersion { version } => write!(
                f,
                "unsupported major RTRS version {}, expected {}",
                version >> 8,
                RTRS_PROTO_VER_MAJOR
            ),
            WireError::BadType { msg_type } => write!(f, "unexpected message type {msg_type}"),
            WireError::ConnRspErrno { errno } => write!(f, "conn rsp carries errno {errno}"),
            WireError::QueueDepthChanged { old, new } => {
                write!(f, "queue depth changed from {old} to {new}")
            }
            WireError::BadQueueDepth { queue_depth } => {
                write!(f, "invalid queue depth {queue_depth}")
            }
            WireError::BadMaxIoSize { max_io_size } => {
                write!(f, "invalid max_io_size {max_io_size}")
            }
            WireError::BadMaxHdrSize { max_hdr_size, min } => write!(
                f,
                "invalid max_hdr_size {max_hdr_size}: a READ header needs {min}"
            ),
            WireError::BadChunkSize {
                max_io_size,
                max_hdr_size,
            } => write!(
                f,
                "invalid chunk size: max_io_size {max_io_size} + max_hdr_size {max_hdr_size}"
            ),
            WireError::ImmBudget { count, chunk_size } => write!(
                f,
                "IMM payload too small for {count} buffers of {chunk_size} bytes"
            ),
            WireError::BadCid { cid, cid_num } => write!(f, "invalid cid {cid} of {cid_num}"),
            WireError::BadSgCnt {
                sg_cnt,
                queue_depth,
            } => write!(
                f,
                "sg_cnt {sg_cnt} does not divide queue depth {queue_depth}"
            ),
            WireError::BadDescLen { index, len } => write!(f, "invalid desc[{index}].len {len}"),
            WireError::DescAddrOverflow { index } => write!(f, "desc[{index}] address overflow"),
            WireError::NotFullyMapped { descs_used, chunks } => write!(
                f,
                "sg vector not fully mapped: {descs_used} descs, {chunks} chunks"
            ),
            WireError::BadTotalLen { total, expected } => {
                write!(f, "total desc length {total}, expected {expected}")
            }
            WireError::TooManyDescs { count, max } => {
                write!(f, "too many descriptors: {count} > {max}")
            }
            WireError::SgCntMismatch { sg_cnt, descs } => {
                write!(f, "sg_cnt {sg_cnt} but {descs} descriptors")
            }
            WireError::BadPathname { len } => write!(f, "invalid pathname of {len} bytes"),
            WireError::MsgTooBig { size, max } => write!(f, "message size {size} > {max}"),
            // C's texts (rtrs_clt_request, rtrs_clt_read_req, rtrs_clt_write_req).
            WireError::IoHdrTooBig {
                read,
                usr_len,
                hdr_len,
                max,
            } => write!(
                f,
                "{} request failed, user message size is {usr_len} and header length {hdr_len}, but max size is {max}",
                if read { "Read" } else { "Write" }
            ),
            WireError::IoChunkTooBig {
                read: true,
                size,
                chunk_size,
            } => write!(
                f,
                "Read request failed, message size is {size}, bigger than CHUNK_SIZE {chunk_size}"
            ),
            WireError::IoChunkTooBig {
                read: false,
                size,
                chunk_size,
            } => write!(f, "Write request failed, size too big {size} > {chunk_size}"),
            WireError::BadMsgId {
                msg_id,
                queue_depth,
            } => write!(f, "msg id {msg_id} >= queue depth {queue_depth}"),
            WireError::BufIdMismatch { buf_id, msg_id } => {
                write!(f, "rkey rsp buf_id {buf_id} != msg_id {msg_id}")
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Byte helpers (never panic)
// ---------------------------------------------------------------------------

fn need_in(buf: &[u8], need: usize) -> Result<(), WireError> {
    if buf.len() < need {
        Err(WireError::Truncated {
            need,
            have: buf.len(),
        })
    } else {
        Ok(())
    }
}

fn need_out(buf: &[u8], need: usize) -> Result<(), WireError> {
    if buf.len() < need {
        Err(WireError::BufferTooSmall {
            need,
            have: buf.len(),
        })
    } else {
        Ok(())
    }
}

fn rd<const N: usize>(buf: &[u8], off: usize) -> Result<[u8; N], WireError> {
    let have = buf.len();
    let end = off.checked_add(N).ok_or(WireError::Truncated {
        need: usize::MAX,
        have,
    })?;
    buf.get(off..end)
        .and_then(|s| <[u8; N]>::try_from(s).ok())
        .ok_or(WireError::Truncated { need: end, have })
}

#[cfg(test)]
fn rd_u8(buf: &[u8], off: usize) -> Result<u8, WireError> {
    rd::<1>(buf, off).map(|b| b[0])
}

fn rd_u16(buf: &[u8], off: usize) -> Result<u16, WireError> {
    rd::<2>(buf, off).map(u16::from_le_bytes)
}

fn rd_u32(buf: &[u8], off: usize) -> Result<u32, WireError> {
    rd::<4>(buf, off).map(u32::from_le_bytes)
}

fn rd_u64(buf: &[u8], off: usize) -> Result<u64, WireError> {
    rd::<8>(buf, off).map(u64::from_le_bytes)
}

/// The lkey and rkey of a fast-registration MR after a registration:
/// `ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey))`, the low byte of both
/// set to the rkey's low byte plus one (wrapping), so that a request never
/// reuses the key of the one before it.
#[inline]
pub const fn fast_reg_keys(lkey: u32, rkey: u32) -> (u32, u32) {
    let key = rkey.wrapping_add(1) & 0xff;
    ((lkey & !0xff) | key, (rkey & !0xff) | key)
}

/// `buf` split at `mid`, if `mid <= buf.len()`: `split_at_mut_checked`,
/// which the kernel's minimum Rust (1.78) does not have yet. The split's
/// own bound check is this one, so no panic is left.
#[inline]
pub fn split_at_mut_checked(buf: &mut [u8], mid: usize) -> Option<(&mut [u8], &mut [u8])> {
    if mid > buf.len() {
        return None;
    }
    Some(buf.split_at_mut(mid))
}

/// Copies the start of `src` into the start of `dst`, as much as both hold:
/// `copy_from_slice` for callers whose lengths already agree, without its
/// length panic, which LLVM keeps where it cannot prove them equal (and
/// which 6.12's objtool does not know as noreturn: "falls through" at -O2).
#[inline]
pub fn copy_bytes(dst: &mut [u8], src: &[u8]) {
    let n = dst.len().min(src.len());
    if let (Some(d), Some(s)) = (dst.get_mut(..n), src.get(..n)) {
        d.copy_from_slice(s);
    }
}

fn wr(buf: &mut [u8], off: usize, bytes: &[u8]) -> Result<(), WireError> {
    let have = buf.len();
    let end = off
        .checked_add(bytes.len())
        .ok_or(WireError::BufferTooSmall {
            need: usize::MAX,
            have,
        })?;
    let dst = buf
        .get_mut(off..end)
        .ok_or(WireError::BufferTooSmall { need: end, have })?;
    copy_bytes(dst, bytes);
    Ok(())
}

/// `wr` of a fixed-size field: a store of `N` bytes, not a `memcpy` call
/// (the IO path writes its message's fields with these).
fn wr_arr<const N: usize>(buf: &mut [u8], off: usize, bytes: [u8; N]) -> Result<(), WireError> {
    let have = buf.len();
    let end = off.checked_add(N).ok_or(WireError::BufferTooSmall {
        need: usize::MAX,
        have,
    })?;
    let dst: &mut [u8; N] = buf
        .get_mut(off..end)
        .and_then(|d| d.try_into().ok())
        .ok_or(WireError::BufferTooSmall { need: end, have })?;
    *dst = bytes;
    Ok(())
}

fn wr_u16(buf: &mut [u8], off: usize, v: u16) -> Result<(), WireError> {
    wr_arr(buf, off, v.to_le_bytes())
}

fn wr_u32(buf: &mut [u8], off: usize, v: u32) -> Result<(), WireError> {
    wr_arr(buf, off, v.to_le_bytes())
}

fn wr_u64(buf: &mut [u8], off: usize, v: u64) -> Result<(), WireError> {
    wr_arr(buf, off, v.to_le_bytes())
}

/// Checks the le16 type at offset 0 against `want`.
fn check_type(buf: &[u8], want: RtrsMsgType) -> Result<(), WireError> {
    let t = rd_u16(buf, 0)?;
    if t != want.as_u16() {
        return Err(WireError::BadType { msg_type: t });
    }
    Ok(())
}

/// `SIZE + n * RtrsSgDesc::SIZE`, or `None` on overflow.
fn with_descs(size: usize, n: usize) -> Option<usize> {
    n.checked_mul(RtrsSgDesc::SIZE)?.checked_add(size)
}

// ---------------------------------------------------------------------------
// Message types
// ---------------------------------------------------------------------------

/// `enum rtrs_msg_types`, the le16 `type` of in-band messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum RtrsMsgType {
    /// `RTRS_MSG_INFO_REQ`: client path info request.
    InfoReq = 0,
    /// `RTRS_MSG_INFO_RSP`: server path info response.
    InfoRsp = 1,
    /// `RTRS_MSG_WRITE`: client RDMA write request.
    Write = 2,
    /// `RTRS_MSG_READ`: client RDMA read request.
    Read = 3,
    /// `RTRS_MSG_RKEY_RSP`: server refreshed rkey.
    RkeyRsp = 4,
}

impl RtrsMsgType {
    /// Wire value.
    pub const fn as_u16(self) -> u16 {
        self as u16
    }

    /// Parses a wire value; unknown values give [`WireError::BadType`].
    pub const fn from_u16(v: u16) -> Result<Self, WireError> {
        match v {
            0 => Ok(RtrsMsgType::InfoReq),
            1 => Ok(RtrsMsgType::InfoRsp),
            2 => Ok(RtrsMsgType::Write),
            3 => Ok(RtrsMsgType::Read),
            4 => Ok(RtrsMsgType::RkeyRsp),
            _ => Err(WireError::BadType { msg_type: v }),
        }
    }
}

impl TryFrom<u16> for RtrsMsgType {
    type Error = WireError;

    fn try_from(v: u16) -> Result<Self, WireError> {
        Self::from_u16(v)
    }
}

// ---------------------------------------------------------------------------
// rtrs_sg_desc
// ---------------------------------------------------------------------------

/// `struct rtrs_sg_desc`: one remote buffer (16 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RtrsSgDesc {
    /// `addr`: remote address (le64 @0).
    pub addr: u64,
    /// `key`: rkey (le32 @8).
    pub key: u32,
    /// `len`: length in bytes (le32 @12).
    pub len: u32,
}

impl RtrsSgDesc {
    /// Wire size.
    pub const SIZE: usize = 16;

    /// Writes the descriptor; returns bytes written.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        need_out(buf, Self::SIZE)?;
        wr_u64(buf, 0, self.addr)?;
        wr_u32(buf, 8, self.key)?;
        wr_u32(buf, 12, self.len)?;
        Ok(Self::SIZE)
    }

    /// Reads a descriptor from the start of `buf`.
    pub fn decode(buf: &[u8]) -> Result<Self, WireError> {
        need_in(buf, Self::SIZE)?;
        Ok(Self {
            addr: rd_u64(buf, 0)?,
            key: rd_u32(buf, 8)?,
            len: rd_u32(buf, 12)?,
        })
    }
}

/// Bounds-checked view of `n` packed [`RtrsSgDesc`] in a received buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtrsSgDescs<'a> {
    raw: &'a [u8],
}

impl<'a> RtrsSgDescs<'a> {
    /// Takes exactly `n` descriptors from the start of `buf`.
    pub fn new(buf: &'a [u8], n: usize) -> Result<Self, WireError> {
        let need = with_descs(0, n).ok_or(WireError::Truncated {
            need: usize::MAX,
            have: buf.len(),
        })?;
        let raw = buf.get(..need).ok_or(WireError::Truncated {
            need,
            have: buf.len(),
        })?;
        Ok(Self { raw })
    }

    #[cfg(test)]
    /// Number of descriptors.
    pub fn len(&self) -> usize {
        self.raw.len() / RtrsSgDesc::SIZE
    }

    #[cfg(test)]
    /// True if there are no descriptors.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    #[cfg(test)]
    /// Descriptor `i`, or `None` if out of range.
    pub fn get(&self, i: usize) -> Option<RtrsSgDesc> {
        let start = i.checked_mul(RtrsSgDesc::SIZE)?;
        let end = start.checked_add(RtrsSgDesc::SIZE)?;
        RtrsSgDesc::decode(self.raw.get(start..end)?).ok()
    }

    /// Iterates over the descriptors.
    pub fn iter(&self) -> RtrsSgDescIter<'a> {
        RtrsSgDescIter {
            chunks: self.raw.chunks_exact(RtrsSgDesc::SIZE),
        }
    }
}

impl<'a> IntoIterator for RtrsSgDescs<'a> {
    type Item = RtrsSgDesc;
    type IntoIter = RtrsSgDescIter<'a>;

    fn into_iter(self) -> RtrsSgDescIter<'a> {
        self.iter()
    }
}

/// Iterator over an [`RtrsSgDescs`] view.
#[derive(Debug, Clone)]
pub struct RtrsSgDescIter<'a> {
    chunks: core::slice::ChunksExact<'a, u8>,
}

impl Iterator for RtrsSgDescIter<'_> {
    type Item = RtrsSgDesc;

    fn next(&mut self) -> Option<RtrsSgDesc> {
        RtrsSgDesc::decode(self.chunks.next()?).ok()
    }
}

/// Writes `descs` packed at `off`; returns the end offset.
fn encode_descs(descs: &[RtrsSgDesc], buf: &mut [u8], off: usize) -> Result<usize, WireError> {
    let have = buf.len();
    let mut pos = off;
    for d in descs {
        let end = pos
            .checked_add(RtrsSgDesc::SIZE)
            .ok_or(WireError::BufferTooSmall {
                need: usize::MAX,
                have,
            })?;
        let dst = buf
            .get_mut(pos..end)
            .ok_or(WireError::BufferTooSmall { need: end, have })?;
        d.encode(dst)?;
        pos = end;
    }
    Ok(pos)
}

#[cfg(test)]
/// Turns a descriptor count into the le16 sg_cnt field.
fn sg_cnt_of(descs: &[RtrsSgDesc]) -> Result<u16, WireError> {
    u16::try_from(descs.len()).map_err(|_| WireError::TooManyDescs {
        count: descs.len(),
        max: usize::from(u16::MAX),
    })
}

// ---------------------------------------------------------------------------
// rtrs_msg_conn_req
// ---------------------------------------------------------------------------

/// `struct rtrs_msg_conn_req`: RDMA CM connect private data (56 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtrsMsgConnReq {
    /// `__cma_version` (@0): must be 0; rdma_cm owns it with AF_IB.
    pub cma_version: u8,
    /// `__ip_version` (@1): must be 0 on send.
    pub ip_version: u8,
    /// `magic` (le16 @2).
    pub magic: u16,
    /// `version` (le16 @4).
    pub version: u16,
    /// `cid` (le16 @6): connection index.
    pub cid: u16,
    /// `cid_num` (le16 @8): connections in this path.
    pub cid_num: u16,
    /// `recon_cnt` (le16 @10): low 16 bits of the path reconnect counter.
    pub recon_cnt: u16,
    /// `sess_uuid` (@12): path UUID.
    pub sess_uuid: [u8; 16],
    /// `paths_uuid` (@28): session UUID.
    pub paths_uuid: [u8; 16],
    /// `first_conn` (bit 0 of byte 44).
    pub first_conn: bool,
    /// `reserved_bits` (bits 1..7 of byte 44); only the low 7 bits are sent.
    pub reserved_bits: u8,
    /// `reserved[11]` (@45).
    pub reserved: [u8; 11],
}

impl RtrsMsgConnReq {
    /// Wire size.
    pub const SIZE: usize = 56;

    /// A request as `rtrs_rdma_route_resolved` builds it (reserved zero).
    pub const fn new(
        cid: u16,
        cid_num: u16,
        recon_cnt: u16,
        sess_uuid: [u8; 16],
        paths_uuid: [u8; 16],
        first_conn: bool,
    ) -> Self {
        Self {
            cma_version: 0,
            ip_version: 0,
            magic: RTRS_MAGIC,
            version: RTRS_PROTO_VER,
            cid,
            cid_num,
            recon_cnt,
            sess_uuid,
            paths_uuid,
            first_conn,
            reserved_bits: 0,
            reserved: [0; 11],
        }
    }

    /// Writes the message; returns bytes written.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        need_out(buf, Self::SIZE)?;
        wr(buf, 0, &[self.cma_version, self.ip_version])?;
        wr_u16(buf, 2, self.magic)?;
        wr_u16(buf, 4, self.version)?;
        wr_u16(buf, 6, self.cid)?;
        wr_u16(buf, 8, self.cid_num)?;
        wr_u16(buf, 10, self.recon_cnt)?;
        wr(buf, 12, &self.sess_uuid)?;
        wr(buf, 28, &self.paths_uuid)?;
        let bits = u8::from(self.first_conn) | ((self.reserved_bits & 0x7f) << 1);
        wr(buf, 44, &[bits])?;
        wr(buf, 45, &self.reserved)?;
        Ok(Self::SIZE)
    }

    #[cfg(test)]
    /// Reads a request; checks length, magic and major version as the server does.
    pub fn decode(buf: &[u8]) -> Result<Self, WireError> {
        need_in(buf, Self::SIZE)?;
        let magic = rd_u16(buf, 2)?;
        if magic != RTRS_MAGIC {
            return Err(WireError::BadMagic { magic });
        }
        let version = rd_u16(buf, 4)?;
        if version >> 8 != RTRS_PROTO_VER_MAJOR {
            return Err(WireError::BadVersion { version });
        }
        let bits = rd_u8(buf, 44)?;
        Ok(Self {
            cma_version: rd_u8(buf, 0)?,
            ip_version: rd_u8(buf, 1)?,
            magic,
            version,
            cid: rd_u16(buf, 6)?,
            cid_num: rd_u16(buf, 8)?,
            recon_cnt: rd_u16(buf, 10)?,
            sess_uuid: rd(buf, 12)?,
            paths_uuid: rd(buf, 28)?,
            first_conn: bits & FIRST_CONN != 0,
            reserved_bits: bits >> 1,
            reserved: rd(buf, 45)?,
        })
    }

    #[cfg(test)]
    /// The 6.12 server's sanity checks: `cid_num <= 4096` and `cid < cid_num`.
    pub const fn check_cids(&self) -> Result<(), WireError> {
        if self.cid_num > SRV_MAX_CON_NUM || self.cid >= self.cid_num {
            return Err(WireError::BadCid {
                cid: self.cid,
                cid_num: self.cid_num,
            });
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// rtrs_msg_conn_rsp
// ---------------------------------------------------------------------------

/// `struct rtrs_msg_conn_rsp`: RDMA CM accept/reject private data (56 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtrsMsgConnRsp {
    /// `magic` (le16 @0).
    pub magic: u16,
    /// `version` (le16 @2).
    pub version: u16,
    /// `errno` (le16 @4): 0 on accept, negative errno on reject.
    pub errno: i16,
    /// `queue_depth` (le16 @6).
    pub queue_depth: u16,
    /// `max_io_size` (le32 @8).
    pub max_io_size: u32,
    /// `max_hdr_size` (le32 @12).
    pub max_hdr_size: u32,
    /// `flags` (le32 @16): [`RTRS_MSG_NEW_RKEY_F`].
    pub flags: u32,
    /// `reserved[36]` (@20).
    pub reserved: [u8; 36],
}

/// Per-path values the client takes from the conn_rsp of cid 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtrsPathParams {
    /// Server queue depth (1..=65535).
    pub queue_depth: u32,
    /// Max data bytes per IO.
    pub max_io_size: u32,
    /// Max user header + RTRS header bytes.
    pub max_hdr_size: u32,
    /// `max_io_size + max_hdr_size`: size of one server chunk.
    pub chunk_size: u32,
    /// conn_rsp flags.
    pub flags: u32,
    /// Signal every n-th send: `min_not_zero(queue_depth, 512)`.
    pub signal_interval: u32,
}

impl RtrsPathParams {
    /// True if the server refreshes rkeys ([`RTRS_MSG_NEW_RKEY_F`]).
    pub const fn new_rkey(&self) -> bool {
        self.flags & RTRS_MSG_NEW_RKEY_F != 0
    }
}

impl RtrsMsgConnRsp {
    /// Wire size.
    pub const SIZE: usize = 56;

    #[cfg(test)]
    /// An accept as the server builds it.
    pub const fn accept(queue_depth: u16, max_io_size: u32, max_hdr_size: u32, flags: u32) -> Self {
        Self {
            magic: RTRS_MAGIC,
            version: RTRS_PROTO_VER,
            errno: 0,
            queue_depth,
            max_io_size,
            max_hdr_size,
            flags,
            reserved: [0; 36],
        }
    }

    #[cfg(test)]
    /// A reject as the server builds it (only magic, version, errno set).
    pub const fn reject(errno: i16) -> Self {
        let mut m = Self::accept(0, 0, 0, 0);
        m.errno = errno;
        m
    }

    #[cfg(test)]
    /// Writes the message; returns bytes written.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        need_out(buf, Self::SIZE)?;
        wr_u16(buf, 0, self.magic)?;
        wr_u16(buf, 2, self.version)?;
        wr(buf, 4, &self.errno.to_le_bytes())?;
        wr_u16(buf, 6, self.queue_depth)?;
        wr_u32(buf, 8, self.max_io_size)?;
        wr_u32(buf, 12, self.max_hdr_size)?;
        wr_u32(buf, 16, self.flags)?;
        wr(buf, 20, &self.reserved)?;
        Ok(Self::SIZE)
    }

    /// Reads a response; checks length, magic and major version (not errno).
    pub fn decode(buf: &[u8]) -> Result<Self, WireError> {
        need_in(buf, Self::SIZE)?;
        let magic = rd_u16(buf, 0)?;
        if magic != RTRS_MAGIC {
            return Err(WireError::BadMagic { magic });
        }
        let version = rd_u16(buf, 2)?;
        if version >> 8 != RTRS_PROTO_VER_MAJOR {
            return Err(WireError::BadVersion { version });
        }
        Ok(Self {
            magic,
            version,
            errno: i16::from_le_bytes(rd(buf, 4)?),
            queue_depth: rd_u16(buf, 6)?,
            max_io_size: rd_u32(buf, 8)?,
            max_hdr_size: rd_u32(buf, 12)?,
            flags: rd_u32(buf, 16)?,
            reserved: rd(buf, 20)?,
        })
    }

    /// ESTABLISHED private data check of `rtrs_rdma_conn_established`:
    /// length, magic, major version, errno == 0 (all -ECONNRESET).
    pub fn decode_established(private_data: &[u8]) -> Result<Self, WireError> {
        let m = Self::decode(private_data)?;
        if m.errno != 0 {
            return Err(WireError::ConnRspErrno { errno: m.errno });
        }
        Ok(m)
    }

    /// Errno of a REJECTED event as `rtrs_rdma_conn_rejected` computes it:
    /// the signed le16 errno if consumer data of >= 56 bytes is present,
    /// else `None` (a malformed reject: C then records -ECONNRESET). Like C,
    /// magic is not checked. Beyond C, errno 0 is malformed too: C records
    /// 0, which is no error, and waits out the connect timeout (30 s) for an
    /// attempt the server has already refused. (IB and RoCE pad a reject's
    /// private data to 148 bytes, so a reject with none reads as errno 0.)
    pub fn reject_errno(private_data: Option<&[u8]>) -> Option<i32> {
        match private_data {
            Some(d) if d.len() >= Self::SIZE => rd::<2>(d, 4)
                .ok()
                .map(|b| i32::from(i16::from_le_bytes(b)))
                .filter(|&e| e != 0),
            _ => None,
        }
    }

    #[cfg(test)]
    /// True if [`RTRS_MSG_NEW_RKEY_F`] is set.
    pub const fn new_rkey(&self) -> bool {
        self.flags & RTRS_MSG_NEW_RKEY_F != 0
    }

    /// Path parameters as cid 0 learns them in `rtrs_rdma_conn_established`.
    ///
    /// `prev_queue_depth` is the path's current depth (0 = never connected);
    /// a change gives [`WireError::QueueDepthChanged`] as in C. Beyond C,
    /// depth 0, max_io_size 0, a max_hdr_size too small for a READ header
    /// with its descriptor, a u32 overflow of the chunk size and a
    /// depth/chunk pair that does not fit the IMM payload are refused (the
    /// 6.12 server never sends them; C would misbehave later: every request
    /// over such a path fails, and the session's other paths are not tried).
    pub fn path_params(&self, prev_queue_depth: u32) -> Result<RtrsPathParams, WireError> {
        let queue_depth = u32::from(self.queue_depth);
        if prev_queue_depth > 0 && queue_depth != prev_queue_depth {
            return Err(WireError::QueueDepthChanged {
                old: prev_queue_depth,
                new: queue_depth,
            });
        }
        if queue_depth == 0 {
            return Err(WireError::BadQueueDepth { queue_depth });
        }
        if self.max_io_size == 0 {
            return Err(WireError::BadMaxIoSize {
                max_io_size: self.max_io_size,
            });
        }
        let min_hdr = RtrsMsgRdmaRead::hdr_len(1)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(u32::MAX);
        if self.max_hdr_size < min_hdr {
            return Err(WireError::BadMaxHdrSize {
                max_hdr_size: self.max_hdr_size,
                min: min_hdr,
            });
        }
        let chunk_size =
            self.max_io_size
                .checked_add(self.max_hdr_size)
                .ok_or(WireError::BadChunkSize {
                    max_io_size: self.max_io_size,
                    max_hdr_size: self.max_hdr_size,
                })?;
        check_imm_budget(queue_depth, chunk_size)?;
        Ok(RtrsPathParams {
            queue_depth,
            max_io_size: self.max_io_size,
            max_hdr_size: self.max_hdr_size,
            chunk_size,
            flags: self.flags,
            signal_interval: if queue_depth < SERVICE_CON_QUEUE_DEPTH {
                queue_depth
            } else {
                SERVICE_CON_QUEUE_DEPTH
            },
        })
    }
}

/// IMM payload budget: `bits(count) + bits(chunk_size) <= 28`, with
/// `bits(n) = ilog2(n - 1) + 1` (u32 arithmetic, as in C).
pub fn check_imm_budget(count: u32, chunk_size: u32) -> Result<(), WireError> {
    match imm_bits(count).checked_add(imm_bits(chunk_size)) {
        Some(b) if b <= MAX_IMM_PAYL_BITS => Ok(()),
        _ => Err(WireError::ImmBudget { count, chunk_size }),
    }
}

// ---------------------------------------------------------------------------
// rtrs_msg_info_req
// ---------------------------------------------------------------------------

/// `struct rtrs_msg_info_req`: type INFO_REQ + session name (272 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtrsMsgInfoReq {
    /// `pathname[NAME_MAX]` (@2): NUL-padded session name.
    pub pathname: [u8; NAME_MAX],
    /// `reserved[15]` (@257).
    pub reserved: [u8; 15],
}

impl RtrsMsgInfoReq {
    /// Wire size.
    pub const SIZE: usize = 272;

    /// Builds the request; `sessname` must be 1..=254 bytes without NUL.
    pub fn new(sessname: &[u8]) -> Result<Self, WireError> {
        let len = sessname.len();
        if len == 0 || len >= NAME_MAX || sessname.contains(&0) {
            return Err(WireError::BadPathname { len });
        }
        let mut pathname = [0u8; NAME_MAX];
        wr(&mut pathname, 0, sessname)?;
        Ok(Self {
            pathname,
            reserved: [0; 15],
        })
    }

    #[cfg(test)]
    /// Session name up to the first NUL.
    pub fn pathname(&self) -> &[u8] {
        let end = self
            .pathname
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(NAME_MAX);
        self.pathname.get(..end).unwrap_or(&[])
    }

    /// Writes the message; returns bytes written.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        need_out(buf, Self::SIZE)?;
        wr_u16(buf, 0, RtrsMsgType::InfoReq.as_u16())?;
        wr(buf, 2, &self.pathname)?;
        wr(buf, 257, &self.reserved)?;
        Ok(Self::SIZE)
    }

    #[cfg(test)]
    /// Reads a request; checks length and type.
    pub fn decode(buf: &[u8]) -> Result<Self, WireError> {
        need_in(buf, Self::SIZE)?;
        check_type(buf, RtrsMsgType::InfoReq)?;
        Ok(Self {
            pathname: rd(buf, 2)?,
            reserved: rd(buf, 257)?,
        })
    }
}

// ---------------------------------------------------------------------------
// rtrs_msg_info_rsp
// ---------------------------------------------------------------------------

/// One server chunk as the client records it (`struct rtrs_rbuf`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RtrsRbuf {
    /// Remote chunk address.
    pub addr: u64,
    /// Remote key.
    pub rkey: u32,
}

/// `struct rtrs_msg_info_rsp` header (8 bytes) followed by `sg_cnt` descs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RtrsMsgInfoRsp {
    /// `sg_cnt` (le16 @2): number of descriptors at @8.
    pub sg_cnt: u16,
    /// `reserved[4]` (@4).
    pub reserved: [u8; 4],
}

impl RtrsMsgInfoRsp {
    /// Header size (`sizeof`); descriptors start here.
    pub const SIZE: usize = 8;

    /// Receive buffer size the client posts: `8 + 16 * queue_depth`.
    pub fn rx_size(queue_depth: usize) -> Option<usize> {
        with_descs(Self::SIZE, queue_depth)
    }

    #[cfg(test)]
    /// Writes the header only; returns bytes written.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        need_out(buf, Self::SIZE)?;
        wr_u16(buf, 0, RtrsMsgType::InfoRsp.as_u16())?;
        wr_u16(buf, 2, self.sg_cnt)?;
        wr(buf, 4, &self.reserved)?;
        Ok(Self::SIZE)
    }

    #[cfg(test)]
    /// Writes header + `descs` (sg_cnt = `descs.len()`); returns bytes written.
    pub fn encode_with_descs(descs: &[RtrsSgDesc], buf: &mut [u8]) -> Result<usize, WireError> {
        let sg_cnt = sg_cnt_of(descs)?;
        let total = with_descs(Self::SIZE, descs.len()).ok_or(WireError::TooManyDescs {
            count: descs.len(),
            max: usize::from(u16::MAX),
        })?;
        need_out(buf, total)?;
        Self {
            sg_cnt,
            reserved: [0; 4],
        }
        .encode(buf)?;
        encode_descs(descs, buf, Self::SIZE)
    }

    /// Reads the header; checks length and type.
    pub fn decode(buf: &[u8]) -> Result<Self, WireError> {
        need_in(buf, Self::SIZE)?;
        check_type(buf, RtrsMsgType::InfoRsp)?;
        Ok(Self {
            sg_cnt: rd_u16(buf, 2)?,
            reserved: rd(buf, 4)?,
        })
    }

    /// Reads header + descriptors; `buf` must hold all `sg_cnt` of them.
    pub fn decode_with_descs(buf: &[u8]) -> Result<(Self, RtrsSgDescs<'_>), WireError> {
        let hdr = Self::decode(buf)?;
        let n = usize::from(hdr.sg_cnt);
        let need = with_descs(Self::SIZE, n).ok_or(WireError::Truncated {
            need: usize::MAX,
            have: buf.len(),
        })?;
        need_in(buf, need)?;
        let rest = buf.get(Self::SIZE..).unwrap_or(&[]);
        Ok((hdr, RtrsSgDescs::new(rest, n)?))
    }

    /// `rtrs_clt_info_rsp_done` + `process_info_rsp`: validates a received
    /// INFO_RSP (`buf` = the `byte_len` bytes received) and fills
    /// `rbufs[..queue_depth]`. `rbufs` is untouched on error.
    pub fn process(
        buf: &[u8],
        queue_depth: u32,
        chunk_size: u32,
        rbufs: &mut [RtrsRbuf],
    ) -> Result<(), WireError> {
        let (hdr, descs) = Self::decode_with_descs(buf)?;
        let qd = u64::from(queue_depth);
        let sg_cnt = hdr.sg_cnt;
        if queue_depth.checked_rem(u32::from(sg_cnt)) != Some(0) {
            return Err(WireError::BadSgCnt {
                sg_cnt,
                queue_depth,
            });
        }
        let have = rbufs.len();
        let need = usize::try_from(queue_depth).unwrap_or(usize::MAX);
        let out = rbufs
            .get_mut(..need)
            .ok_or(WireError::BufferTooSmall { need, have })?;
        check_imm_budget(u32::from(sg_cnt), chunk_size)?;
        // chunk_size >= 1 here: bits(0) == 32 fails the budget above.
        let chunk = u64::from(chunk_size);
        if chunk == 0 {
            return Err(WireError::ImmBudget {
                count: u32::from(sg_cnt),
                chunk_size,
            });
        }

        // Pass 1: validate like the C loop, without writing.
        let mut mapped: u64 = 0;
        let mut total: u64 = 0;
        let mut used: u16 = 0;
        for (i, d) in descs.iter().enumerate() {
            let index = u16::try_from(i).unwrap_or(u16::MAX);
            if mapped >= qd {
                break;
            }
            let len = u64::from(d.len);
            total = total.saturating_add(len);
            if len == 0 || len.checked_rem(chunk) != Some(0) {
                return Err(WireError::BadDescLen { index, len: d.len });
            }
            let take = len
                .checked_div(chunk)
                .unwrap_or(0)
                .min(qd.saturating_sub(mapped));
            // Last chunk address used from this desc must not wrap.
            take.checked_sub(1)
                .and_then(|k| k.checked_mul(chunk))
                .and_then(|o| d.addr.checked_add(o))
                .ok_or(WireError::DescAddrOverflow { index })?;
            mapped = mapped.saturating_add(take);
            used = used.saturating_add(1);
        }
        if used != sg_cnt || mapped != qd {
            return Err(WireError::NotFullyMapped {
                descs_used: used,
                chunks: u32::try_from(mapped).unwrap_or(u32::MAX),
            });
        }
        let expected = chunk.saturating_mul(qd);
        if total != expected {
            return Err(WireError::BadTotalLen { total, expected });
        }

        // Pass 2: fill; all arithmetic was proven in range above.
        let mut slots = out.iter_mut();
        for d in descs.iter() {
            let n = u64::from(d.len).checked_div(chunk).unwrap_or(0);
            let mut addr = d.addr;
            for _ in 0..n {
                let Some(slot) = slots.next() else {
                    return Ok(());
                };
                *slot = RtrsRbuf { addr, rkey: d.key };
                addr = addr.wrapping_add(chunk);
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// rtrs_msg_rkey_rsp
// ---------------------------------------------------------------------------

/// `struct rtrs_msg_rkey_rsp`: new rkey for one server chunk (8 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RtrsMsgRkeyRsp {
    /// `buf_id` (le16 @2): chunk index.
    pub buf_id: u16,
    /// `rkey` (le32 @4): new rkey.
    pub rkey: u32,
}

impl RtrsMsgRkeyRsp {
    /// Wire size.
    pub const SIZE: usize = 8;

    #[cfg(test)]
    /// Writes the message; returns bytes written.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        need_out(buf, Self::SIZE)?;
        wr_u16(buf, 0, RtrsMsgType::RkeyRsp.as_u16())?;
        wr_u16(buf, 2, self.buf_id)?;
        wr_u32(buf, 4, self.rkey)?;
        Ok(Self::SIZE)
    }

    /// Reads the message; checks length and type.
    pub fn decode(buf: &[u8]) -> Result<Self, WireError> {
        need_in(buf, Self::SIZE)?;
        check_type(buf, RtrsMsgType::RkeyRsp)?;
        Ok(Self {
            buf_id: rd_u16(buf, 2)?,
            rkey: rd_u32(buf, 4)?,
        })
    }

    /// `rtrs_clt_rkey_rsp_done` checks: `buf_id < queue_depth` and
    /// `buf_id == msg_id` of the IO response IMM.
    pub fn check(&self, queue_depth: u32, msg_id: u32) -> Result<(), WireError> {
        let buf_id = u32::from(self.buf_id);
        if buf_id >= queue_depth {
            return Err(WireError::BadMsgId {
                msg_id: buf_id,
                queue_depth,
            });
        }
        if buf_id != msg_id {
            return Err(WireError::BufIdMismatch {
                buf_id: self.buf_id,
                msg_id,
            });
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// rtrs_msg_rdma_read / rtrs_msg_rdma_write / rtrs_msg_rdma_hdr
// ---------------------------------------------------------------------------

/// `struct rtrs_msg_rdma_read` header (8 bytes) followed by `sg_cnt` descs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RtrsMsgRdmaRead {
    /// `usr_len` (le16 @2): user header length.
    pub usr_len: u16,
    /// `flags` (le16 @4): [`RTRS_MSG_NEED_INVAL_F`].
    pub flags: u16,
    /// `sg_cnt` (le16 @6): descriptors at @8.
    pub sg_cnt: u16,
}

impl RtrsMsgRdmaRead {
    /// Header size (`sizeof`); descriptors start here.
    pub const SIZE: usize = 8;

    /// Header length `rtrs_clt_request` charges for a READ: `8 + 16 * sg_cnt`.
    pub fn hdr_len(sg_cnt: usize) -> Option<usize> {
        with_descs(Self::SIZE, sg_cnt)
    }

    /// Writes the header only; returns bytes written.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        need_out(buf, Self::SIZE)?;
        wr_u16(buf, 0, RtrsMsgType::Read.as_u16())?;
        wr_u16(buf, 2, self.usr_len)?;
        wr_u16(buf, 4, self.flags)?;
        wr_u16(buf, 6, self.sg_cnt)?;
        Ok(Self::SIZE)
    }

    /// Writes header + `descs`; `sg_cnt` must equal `descs.len()`.
    pub fn encode_with_descs(
        &self,
        descs: &[RtrsSgDesc],
        buf: &mut [u8],
    ) -> Result<usize, WireError> {
        if usize::from(self.sg_cnt) != descs.len() {
            return Err(WireError::SgCntMismatch {
                sg_cnt: self.sg_cnt,
                descs: descs.len(),
            });
        }
        let total = with_descs(Self::SIZE, descs.len()).ok_or(WireError::TooManyDescs {
            count: descs.len(),
            max: usize::from(u16::MAX),
        })?;
        need_out(buf, total)?;
        self.encode(buf)?;
        encode_descs(descs, buf, Self::SIZE)
    }

    /// The message `rtrs_clt_read_req` writes: with data, sg_cnt 1,
    /// NEED_INVAL and the MR as desc[0]; without, sg_cnt 0 and flags 0.
    /// Returns bytes written (8 or 24).
    pub fn encode_client(
        usr_len: u16,
        mr: Option<&RtrsSgDesc>,
        buf: &mut [u8],
    ) -> Result<usize, WireError> {
        match mr {
            Some(d) => Self {
                usr_len,
                flags: RTRS_MSG_NEED_INVAL_F,
                sg_cnt: 1,
            }
            .encode_with_descs(core::slice::from_ref(d), buf),
            None => Self {
                usr_len,
                flags: 0,
                sg_cnt: 0,
            }
            .encode(buf),
        }
    }

    #[cfg(test)]
    /// Reads the header; checks length and type.
    pub fn decode(buf: &[u8]) -> Result<Self, WireError> {
        need_in(buf, Self::SIZE)?;
        check_type(buf, RtrsMsgType::Read)?;
        Ok(Self {
            usr_len: rd_u16(buf, 2)?,
            flags: rd_u16(buf, 4)?,
            sg_cnt: rd_u16(buf, 6)?,
        })
    }

    #[cfg(test)]
    /// Reads header + descriptors; `buf` must hold all `sg_cnt` of them.
    pub fn decode_with_descs(buf: &[u8]) -> Result<(Self, RtrsSgDescs<'_>), WireError> {
        let hdr = Self::decode(buf)?;
        let n = usize::from(hdr.sg_cnt);
        let need = with_descs(Self::SIZE, n).ok_or(WireError::Truncated {
            need: usize::MAX,
            have: buf.len(),
        })?;
        need_in(buf, need)?;
        let rest = buf.get(Self::SIZE..).unwrap_or(&[]);
        Ok((hdr, RtrsSgDescs::new(rest, n)?))
    }
}

/// `struct rtrs_msg_rdma_write`: trailer of a WRITE in the chunk (4 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RtrsMsgRdmaWrite {
    /// `usr_len` (le16 @2): user header length.
    pub usr_len: u16,
}

impl RtrsMsgRdmaWrite {
    /// Wire size.
    pub const SIZE: usize = 4;

    /// Writes the message; returns bytes written.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        need_out(buf, Self::SIZE)?;
        wr_u16(buf, 0, RtrsMsgType::Write.as_u16())?;
        wr_u16(buf, 2, self.usr_len)?;
        Ok(Self::SIZE)
    }

    #[cfg(test)]
    /// Reads the message; checks length and type.
    pub fn decode(buf: &[u8]) -> Result<Self, WireError> {
        need_in(buf, Self::SIZE)?;
        check_type(buf, RtrsMsgType::Write)?;
        Ok(Self {
            usr_len: rd_u16(buf, 2)?,
        })
    }
}

#[cfg(test)]
/// `struct rtrs_msg_rdma_hdr`: the le16 type every in-band message starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtrsMsgRdmaHdr {
    /// `type` (le16 @0).
    pub msg_type: RtrsMsgType,
}

#[cfg(test)]
impl RtrsMsgRdmaHdr {
    #[cfg(test)]
    /// Wire size.
    pub const SIZE: usize = 2;

    #[cfg(test)]
    /// Writes the message; returns bytes written.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        need_out(buf, Self::SIZE)?;
        wr_u16(buf, 0, self.msg_type.as_u16())?;
        Ok(Self::SIZE)
    }

    #[cfg(test)]
    /// Reads the type; unknown values give [`WireError::BadType`].
    pub fn decode(buf: &[u8]) -> Result<Self, WireError> {
        need_in(buf, Self::SIZE)?;
        Ok(Self {
            msg_type: RtrsMsgType::from_u16(rd_u16(buf, 0)?)?,
        })
    }
}

// ---------------------------------------------------------------------------
// Session limits of the client
// ---------------------------------------------------------------------------

/// `SZ_4K`: the page size `rtrs_clt_query` counts segments in.
const SZ_4K: u32 = 4096;

/// What one connected path brings to its session's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtrsCltPathLimits {
    /// The conn_rsp's queue depth.
    pub queue_depth: u32,
    /// The conn_rsp's max_io_size.
    pub max_io_size: u32,
    /// `max_pages_per_mr` (`query_fast_reg_mode`).
    pub max_pages_per_mr: u32,
}

/// The limits of `struct rtrs_clt_sess`, gathered from its paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtrsCltLimits {
    /// `queue_depth`: the last path's.
    pub queue_depth: u32,
    /// `max_io_size`: the smallest non-zero one of the paths (0 if none).
    pub max_io_size: u32,
    /// `max_segments`: [`RTRS_MAX_SEGMENTS`], lowered to each path's
    /// `max_pages_per_mr`.
    pub max_segments: u32,
}

impl Default for RtrsCltLimits {
    fn default() -> Self {
        Self::new()
    }
}

impl RtrsCltLimits {
    /// `alloc_clt`: no path yet.
    pub const fn new() -> Self {
        Self {
            queue_depth: 0,
            max_io_size: 0,
            max_segments: RTRS_MAX_SEGMENTS,
        }
    }

    /// One more path: `rtrs_rdma_conn_established` (queue_depth, and
    /// `min_not_zero` of max_io_size) and `query_fast_reg_mode`
    /// (max_segments).
    pub fn merge(&mut self, path: &RtrsCltPathLimits) {
        self.queue_depth = path.queue_depth;
        if self.max_io_size == 0 || (path.max_io_size != 0 && path.max_io_size < self.max_io_size) {
            self.max_io_size = path.max_io_size;
        }
        self.max_segments = self.max_segments.min(path.max_pages_per_mr);
    }

    /// `rtrs_clt_query`'s max_io_size: `min_t(int, max_io_size,
    /// max_segments * SZ_4K)`. Where C's int would go negative (above
    /// `i32::MAX`, or a product that wraps) this clamps to `i32::MAX`; a
    /// path's chunk fits 2^28 bytes and max_segments is at most 128, so
    /// neither happens on a session that opened.
    pub fn query_max_io_size(&self) -> u32 {
        let seg = self.max_segments.saturating_mul(SZ_4K);
        self.max_io_size.min(seg).min(i32::MAX as u32)
    }
}

/// The queues of a client connection: `create_con_cq_qp`'s QP before the
/// device's limits, and `post_recv_path`'s receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtrsCltConQueues {
    /// Send WRs: a request, its response and a registration or
    /// invalidation per chunk, plus a drain (heartbeats on cid 0).
    pub max_send_wr: u32,
    /// Receive WRs.
    pub max_recv_wr: u32,
    /// SGEs per send: the user header alone on cid 0, and data on the others.
    pub max_send_sge: u32,
    /// Receives posted once the path is up: two per chunk (a response and
    /// a server invalidation).
    pub recv_posted: u32,
}

impl RtrsCltConQueues {
    /// Connection `cid`: cid 0 is sized for [`SERVICE_CON_QUEUE_DEPTH`],
    /// the others for the path's `queue_depth`, which must be non-zero.
    pub fn new(cid: u16, queue_depth: u32) -> Result<Self, WireError> {
        if cid == 0 {
            let wr = SERVICE_CON_QUEUE_DEPTH * 2 + 2;
            return Ok(Self {
                max_send_wr: wr,
                max_recv_wr: wr,
                max_send_sge: 1,
                recv_posted: SERVICE_CON_QUEUE_DEPTH * 2,
            });
        }
        let bad = WireError::BadQueueDepth { queue_depth };
        if queue_depth == 0 {
            return Err(bad);
        }
        let wrs = |n: u32, extra: u32| queue_depth.checked_mul(n)?.checked_add(extra);
        match (wrs(4, 1), wrs(3, 1), wrs(2, 0)) {
            (Some(max_send_wr), Some(max_recv_wr), Some(recv_posted)) => Ok(Self {
                max_send_wr,
                max_recv_wr,
                max_send_sge: 2,
                recv_posted,
            }),
            _ => Err(bad),
        }
    }

    /// `(max_send_wr, max_recv_wr)` of the QP on a device that takes
    /// `max_qp_wr` WRs per queue (`min_t(int, wr_limit, ...)`; a negative
    /// limit counts as 0).
    pub fn qp_wrs(&self, max_qp_wr: i32) -> (u32, u32) {
        let limit = u32::try_from(max_qp_wr).unwrap_or(0);
        (self.max_send_wr.min(limit), self.max_recv_wr.min(limit))
    }

    /// `cq_num`: the QP's send and receive WRs, at most the device's
    /// `max_cqe` (which C leaves to the CQ allocation to refuse).
    pub fn cq_num(&self, max_qp_wr: i32, max_cqe: i32) -> u32 {
        let (send, recv) = self.qp_wrs(max_qp_wr);
        send.saturating_add(recv)
            .min(u32::try_from(max_cqe).unwrap_or(0))
    }
}

// ---------------------------------------------------------------------------
// IO size checks of the client
// ---------------------------------------------------------------------------

/// `rtrs_clt_request` check: `usr_len + hdr_len <= max_hdr_size`, with
/// `hdr_len` = 8 + 16 * sg_cnt for READ (C counts the caller's sg_cnt) or 4
/// for WRITE. Also refuses `usr_len` that does not fit the le16 field.
pub fn check_io_hdr(
    read: bool,
    usr_len: usize,
    sg_cnt: usize,
    max_hdr_size: u32,
) -> Result<(), WireError> {
    let max = usize::try_from(max_hdr_size).unwrap_or(usize::MAX);
    let hdr_len = if read {
        RtrsMsgRdmaRead::hdr_len(sg_cnt)
    } else {
        Some(RtrsMsgRdmaWrite::SIZE)
    };
    let size = hdr_len
        .and_then(|h| h.checked_add(usr_len))
        .unwrap_or(usize::MAX);
    if size > max {
        return Err(WireError::IoHdrTooBig {
            read,
            usr_len,
            hdr_len: hdr_len.unwrap_or(usize::MAX),
            max: max_hdr_size,
        });
    }
    if usr_len > usize::from(u16::MAX) {
        return Err(WireError::MsgTooBig {
            size: usr_len,
            max: usize::from(u16::MAX),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
