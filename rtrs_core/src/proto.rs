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
    /// IMM type is not one of `rtrs_imm_type` (or not valid here).
    BadImmType {
        /// The 4-bit type.
        imm_type: u32,
    },
    /// msg_id / buf_id / mem_id is not below queue_depth.
    BadMsgId {
        /// Id found.
        msg_id: u32,
        /// Queue depth.
        queue_depth: u32,
    },
    /// IO offset is not inside the chunk.
    BadOffset {
        /// Offset found.
        off: u32,
        /// Exclusive limit.
        limit: u32,
    },
    /// errno does not fit the 9-bit IO response field (or is positive).
    BadErrno {
        /// errno given.
        errno: i32,
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
            | WireError::BadPathname { .. }
            | WireError::BadErrno { .. } => -EINVAL,
            WireError::MsgTooBig { .. }
            | WireError::IoHdrTooBig { .. }
            | WireError::IoChunkTooBig { .. } => -EMSGSIZE,
            WireError::BadImmType { .. }
            | WireError::BadMsgId { .. }
            | WireError::BadOffset { .. }
            | WireError::BufIdMismatch { .. } => -EPROTO,
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
            WireError::BadImmType { imm_type } => write!(f, "unknown IMM type {imm_type}"),
            WireError::BadMsgId {
                msg_id,
                queue_depth,
            } => write!(f, "msg id {msg_id} >= queue depth {queue_depth}"),
            WireError::BadOffset { off, limit } => write!(f, "offset {off} >= {limit}"),
            WireError::BadErrno { errno } => write!(f, "errno {errno} does not fit IO rsp"),
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
    dst.copy_from_slice(bytes);
    Ok(())
}

fn wr_u16(buf: &mut [u8], off: usize, v: u16) -> Result<(), WireError> {
    wr(buf, off, &v.to_le_bytes())
}

fn wr_u32(buf: &mut [u8], off: usize, v: u32) -> Result<(), WireError> {
    wr(buf, off, &v.to_le_bytes())
}

fn wr_u64(buf: &mut [u8], off: usize, v: u64) -> Result<(), WireError> {
    wr(buf, off, &v.to_le_bytes())
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
    /// else -ECONNRESET. Like C, magic is not checked and 0 is returned as is.
    pub fn reject_errno(private_data: Option<&[u8]>) -> i32 {
        match private_data {
            Some(d) if d.len() >= Self::SIZE => match rd::<2>(d, 4) {
                Ok(b) => i32::from(i16::from_le_bytes(b)),
                Err(_) => -errno::ECONNRESET,
            },
            _ => -errno::ECONNRESET,
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
    /// depth 0, a u32 overflow of the chunk size and a depth/chunk pair that
    /// does not fit the IMM payload are refused (the 6.12 server never sends
    /// them; C would misbehave later).
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

/// `rtrs_clt_{read,write}_req` check: `sizeof(msg) + data_len + usr_len
/// <= chunk_size` (sizeof is 8 for READ, 4 for WRITE).
pub fn check_io_chunk(
    read: bool,
    data_len: usize,
    usr_len: usize,
    chunk_size: u32,
) -> Result<(), WireError> {
    let max = usize::try_from(chunk_size).unwrap_or(usize::MAX);
    let msg = if read {
        RtrsMsgRdmaRead::SIZE
    } else {
        RtrsMsgRdmaWrite::SIZE
    };
    let size = msg
        .checked_add(data_len)
        .and_then(|s| s.checked_add(usr_len))
        .unwrap_or(usize::MAX);
    if size > max {
        return Err(WireError::IoChunkTooBig {
            read,
            size,
            chunk_size,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    // Golden layout numbers: obtained by compiling copies of the
    // rtrs-pri.h (6.12.117) structs with `clang -target x86_64-linux-gnu`
    // and printing sizeof/offsetof (probe kept outside the repository);
    // they match the digest's tables (sections 2.2 and 2.3).
    const CONN_REQ_OFFS: [(&str, usize); 10] = [
        ("__cma_version", 0),
        ("__ip_version", 1),
        ("magic", 2),
        ("version", 4),
        ("cid", 6),
        ("cid_num", 8),
        ("recon_cnt", 10),
        ("sess_uuid", 12),
        ("paths_uuid", 28),
        ("reserved", 45), // first_conn/reserved_bits share byte 44
    ];
    const CONN_RSP_OFFS: [(&str, usize); 8] = [
        ("magic", 0),
        ("version", 2),
        ("errno", 4),
        ("queue_depth", 6),
        ("max_io_size", 8),
        ("max_hdr_size", 12),
        ("flags", 16),
        ("reserved", 20),
    ];

    use crate::test_rng::Rng;

    fn uuid(seed: u8) -> [u8; 16] {
        core::array::from_fn(|i| seed.wrapping_add(i as u8))
    }

    fn le16(b: &[u8], off: usize) -> u16 {
        u16::from_le_bytes([b[off], b[off + 1]])
    }

    fn le32(b: &[u8], off: usize) -> u32 {
        u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
    }

    fn le64(b: &[u8], off: usize) -> u64 {
        u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
    }

    /// Every strict prefix of a valid encoding must fail with Truncated.
    fn assert_prefixes_truncated<T: core::fmt::Debug>(
        full: &[u8],
        min: usize,
        decode: impl Fn(&[u8]) -> Result<T, WireError>,
    ) {
        for len in 0..min {
            match decode(&full[..len]) {
                Err(WireError::Truncated { need, have }) => {
                    assert_eq!(have, len);
                    assert!(need > len);
                }
                other => panic!("prefix {len}: expected Truncated, got {other:?}"),
            }
        }
    }

    // ---- constants -------------------------------------------------------

    #[test]
    fn constants_match_header() {
        assert_eq!(RTRS_PROTO_VER, 0x0200);
        assert_eq!(RTRS_MAGIC.to_le_bytes(), [0xBD, 0x1B]);
        assert_eq!(RTRS_PROTO_VER_STRING, "2.0");
        assert_eq!(MAX_SESS_QUEUE_DEPTH, 65535);
        assert_eq!(SERVICE_CON_QUEUE_DEPTH, 512);
        assert_eq!(MAX_PATHS_NUM, 128);
        assert_eq!(MIN_CHUNK_SIZE, 8192);
        assert_eq!(RTRS_HB_INTERVAL_MS, 5000);
        assert_eq!(RTRS_HB_MISSED_MAX, 5);
        assert_eq!(RTRS_CONNECT_TIMEOUT_MS, 30000);
        assert_eq!(RTRS_RECONNECT_BACKOFF, 1000);
        assert_eq!(RTRS_RECONNECT_SEED, 8);
        assert_eq!(FIRST_CONN, 1);
        assert_eq!(RTRS_MAX_SEGMENTS, 128);
        assert_eq!(NAME_MAX, 255);
        assert_eq!(RTRS_MSG_NEED_INVAL_F, 1);
        assert_eq!(RTRS_MSG_NEW_RKEY_F, 2);
        assert_eq!(SRV_DEFAULT_MAX_CHUNK_SIZE, 131072);
        assert_eq!(SRV_MAX_CON_NUM, 4096);
    }

    #[test]
    fn msg_types() {
        let all = [
            (RtrsMsgType::InfoReq, 0),
            (RtrsMsgType::InfoRsp, 1),
            (RtrsMsgType::Write, 2),
            (RtrsMsgType::Read, 3),
            (RtrsMsgType::RkeyRsp, 4),
        ];
        for (t, v) in all {
            assert_eq!(t.as_u16(), v);
            assert_eq!(RtrsMsgType::from_u16(v), Ok(t));
            assert_eq!(RtrsMsgType::try_from(v), Ok(t));
        }
        for v in [5u16, 6, 0x100, 0xffff] {
            assert_eq!(
                RtrsMsgType::from_u16(v),
                Err(WireError::BadType { msg_type: v })
            );
        }
    }

    // ---- sizes / offsets -------------------------------------------------

    #[test]
    fn golden_sizes() {
        assert_eq!(RtrsSgDesc::SIZE, 16);
        assert_eq!(RtrsMsgConnReq::SIZE, 56);
        assert_eq!(RtrsMsgConnRsp::SIZE, 56);
        assert_eq!(RtrsMsgInfoReq::SIZE, 272);
        assert_eq!(RtrsMsgInfoRsp::SIZE, 8);
        assert_eq!(RtrsMsgRkeyRsp::SIZE, 8);
        assert_eq!(RtrsMsgRdmaRead::SIZE, 8);
        assert_eq!(RtrsMsgRdmaWrite::SIZE, 4);
        assert_eq!(RtrsMsgRdmaHdr::SIZE, 2);
        assert_eq!(RtrsMsgInfoRsp::rx_size(512), Some(8 + 16 * 512));
        assert_eq!(RtrsMsgRdmaRead::hdr_len(1), Some(24));
        assert_eq!(RtrsMsgRdmaRead::hdr_len(usize::MAX), None);
    }

    #[test]
    fn golden_sg_desc_layout() {
        let d = RtrsSgDesc {
            addr: 0x0102_0304_0506_0708,
            key: 0x1112_1314,
            len: 0x2122_2324,
        };
        let mut b = [0u8; 16];
        assert_eq!(d.encode(&mut b), Ok(16));
        assert_eq!(
            b,
            [
                0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, // addr @0
                0x14, 0x13, 0x12, 0x11, // key @8
                0x24, 0x23, 0x22, 0x21, // len @12
            ]
        );
        assert_eq!(RtrsSgDesc::decode(&b), Ok(d));
        assert_prefixes_truncated(&b, 16, RtrsSgDesc::decode);
        assert_eq!(
            d.encode(&mut [0u8; 15]),
            Err(WireError::BufferTooSmall { need: 16, have: 15 })
        );
    }

    #[test]
    fn golden_conn_req_layout() {
        let m = RtrsMsgConnReq::new(0x0a0b, 0x0c0d, 0x0e0f, uuid(0x40), uuid(0x80), true);
        let mut b = [0xeeu8; 56];
        assert_eq!(m.encode(&mut b), Ok(56));
        let off = |n: &str| CONN_REQ_OFFS.iter().find(|(f, _)| *f == n).unwrap().1;
        assert_eq!(b[off("__cma_version")], 0);
        assert_eq!(b[off("__ip_version")], 0);
        assert_eq!(le16(&b, off("magic")), RTRS_MAGIC);
        assert_eq!(le16(&b, off("version")), 0x0200);
        assert_eq!(le16(&b, off("cid")), 0x0a0b);
        assert_eq!(le16(&b, off("cid_num")), 0x0c0d);
        assert_eq!(le16(&b, off("recon_cnt")), 0x0e0f);
        assert_eq!(b[off("sess_uuid")..off("sess_uuid") + 16], uuid(0x40));
        assert_eq!(b[off("paths_uuid")..off("paths_uuid") + 16], uuid(0x80));
        // Probe: first_conn=1 -> byte 44 = 0x01; plus reserved_bits=0x7f -> 0xff.
        assert_eq!(b[44], 0x01);
        assert_eq!(b[off("reserved")..], [0u8; 11]);
        let mut m2 = m;
        m2.reserved_bits = 0x7f;
        m2.encode(&mut b).unwrap();
        assert_eq!(b[44], 0xff);
        m2.first_conn = false;
        m2.encode(&mut b).unwrap();
        assert_eq!(b[44], 0xfe);
        // reserved_bits is 7 bits wide: bit 7 of the field is dropped.
        m2.reserved_bits = 0xff;
        m2.encode(&mut b).unwrap();
        assert_eq!(RtrsMsgConnReq::decode(&b).unwrap().reserved_bits, 0x7f);
    }

    #[test]
    fn golden_conn_req_bytes() {
        // Full vector of a first connection, cid 1 of 3, recon_cnt 1.
        let m = RtrsMsgConnReq::new(1, 3, 1, [0x11; 16], [0x22; 16], true);
        let mut b = [0u8; 56];
        m.encode(&mut b).unwrap();
        let mut want = [0u8; 56];
        want[..12].copy_from_slice(&[0, 0, 0xBD, 0x1B, 0x00, 0x02, 1, 0, 3, 0, 1, 0]);
        want[12..28].copy_from_slice(&[0x11; 16]);
        want[28..44].copy_from_slice(&[0x22; 16]);
        want[44] = 1;
        assert_eq!(b, want);
    }

    #[test]
    fn golden_conn_rsp_layout() {
        // Server accept with default module parameters.
        let m = RtrsMsgConnRsp::accept(512, 126_976, 4096, RTRS_MSG_NEW_RKEY_F);
        let mut b = [0xeeu8; 56];
        assert_eq!(m.encode(&mut b), Ok(56));
        let off = |n: &str| CONN_RSP_OFFS.iter().find(|(f, _)| *f == n).unwrap().1;
        assert_eq!(le16(&b, off("magic")), RTRS_MAGIC);
        assert_eq!(le16(&b, off("version")), RTRS_PROTO_VER);
        assert_eq!(le16(&b, off("errno")), 0);
        assert_eq!(le16(&b, off("queue_depth")), 512);
        assert_eq!(le32(&b, off("max_io_size")), 126_976);
        assert_eq!(le32(&b, off("max_hdr_size")), 4096);
        assert_eq!(le32(&b, off("flags")), 2);
        assert_eq!(b[off("reserved")..], [0u8; 36]);
        assert_eq!(
            b[..20],
            [
                0xBD, 0x1B, 0x00, 0x02, 0x00, 0x00, 0x00, 0x02, 0x00, 0xF0, 0x01, 0x00, 0x00, 0x10,
                0x00, 0x00, 0x02, 0x00, 0x00, 0x00
            ]
        );
        // Reject: errno as 16-bit two's complement.
        RtrsMsgConnRsp::reject(-104).encode(&mut b).unwrap();
        assert_eq!(b[4..6], [0x98, 0xff]);
        assert_eq!(b[6..20], [0u8; 14]);
    }

    #[test]
    fn golden_info_req_layout() {
        let m = RtrsMsgInfoReq::new(b"blk-sess").unwrap();
        let mut b = [0xeeu8; 272];
        assert_eq!(m.encode(&mut b), Ok(272));
        assert_eq!(le16(&b, 0), 0); // type @0
        assert_eq!(&b[2..10], b"blk-sess"); // pathname @2
        assert!(b[10..257].iter().all(|&x| x == 0));
        assert_eq!(b[257..], [0u8; 15]); // reserved @257
    }

    #[test]
    fn golden_info_rsp_layout() {
        let descs = [
            RtrsSgDesc {
                addr: 0x1000,
                key: 7,
                len: 0x2_0000,
            },
            RtrsSgDesc {
                addr: 0x9000_0000,
                key: 8,
                len: 0x2_0000,
            },
        ];
        let mut b = [0xeeu8; 40];
        assert_eq!(RtrsMsgInfoRsp::encode_with_descs(&descs, &mut b), Ok(40));
        assert_eq!(le16(&b, 0), 1); // type @0
        assert_eq!(le16(&b, 2), 2); // sg_cnt @2
        assert_eq!(b[4..8], [0u8; 4]); // reserved @4
        assert_eq!(le64(&b, 8), 0x1000); // desc[0] @8
        assert_eq!(le32(&b, 16), 7);
        assert_eq!(le32(&b, 20), 0x2_0000);
        assert_eq!(le64(&b, 24), 0x9000_0000); // desc[1] @24
    }

    #[test]
    fn golden_small_msgs_layout() {
        let mut b = [0xeeu8; 24];
        RtrsMsgRkeyRsp {
            buf_id: 0x0102,
            rkey: 0x0a0b_0c0d,
        }
        .encode(&mut b)
        .unwrap();
        assert_eq!(b[..8], [4, 0, 0x02, 0x01, 0x0d, 0x0c, 0x0b, 0x0a]);

        RtrsMsgRdmaWrite { usr_len: 0x0304 }.encode(&mut b).unwrap();
        assert_eq!(b[..4], [2, 0, 0x04, 0x03]);

        RtrsMsgRdmaHdr {
            msg_type: RtrsMsgType::Read,
        }
        .encode(&mut b)
        .unwrap();
        assert_eq!(b[..2], [3, 0]);

        let mr = RtrsSgDesc {
            addr: 0xAABB,
            key: 0x55,
            len: 4096,
        };
        assert_eq!(
            RtrsMsgRdmaRead::encode_client(32, Some(&mr), &mut b),
            Ok(24)
        );
        // type @0, usr_len @2, flags @4, sg_cnt @6, desc @8
        assert_eq!(b[..8], [3, 0, 32, 0, 1, 0, 1, 0]);
        assert_eq!(le64(&b, 8), 0xAABB);
        assert_eq!(le32(&b, 16), 0x55);
        assert_eq!(le32(&b, 20), 4096);
        assert_eq!(RtrsMsgRdmaRead::encode_client(7, None, &mut b), Ok(8));
        assert_eq!(b[..8], [3, 0, 7, 0, 0, 0, 0, 0]);
    }

    // ---- conn req / rsp --------------------------------------------------

    #[test]
    fn conn_req_roundtrip_and_errors() {
        let mut rng = Rng(0x1234_5678);
        for i in 0..200u32 {
            let mut m = RtrsMsgConnReq::new(
                rng.next() as u16,
                rng.next() as u16,
                rng.next() as u16,
                uuid(rng.next() as u8),
                uuid(rng.next() as u8),
                i % 2 == 0,
            );
            m.cma_version = rng.next() as u8;
            m.ip_version = rng.next() as u8;
            m.version = 0x0200 | (rng.next() as u16 & 0xff);
            m.reserved_bits = rng.next() as u8 & 0x7f;
            rng.fill(&mut m.reserved);
            let mut b = [0u8; 64];
            assert_eq!(m.encode(&mut b), Ok(56));
            assert_eq!(RtrsMsgConnReq::decode(&b), Ok(m));
            assert_eq!(RtrsMsgConnReq::decode(&b[..56]), Ok(m));
            assert_prefixes_truncated(&b[..56], 56, RtrsMsgConnReq::decode);
        }
        let mut b = [0u8; 56];
        RtrsMsgConnReq::new(0, 1, 1, [0; 16], [0; 16], true)
            .encode(&mut b)
            .unwrap();
        let mut bad = b;
        bad[2] = 0xBC;
        assert_eq!(
            RtrsMsgConnReq::decode(&bad),
            Err(WireError::BadMagic { magic: 0x1BBC })
        );
        let mut bad = b;
        bad[5] = 3;
        assert_eq!(
            RtrsMsgConnReq::decode(&bad),
            Err(WireError::BadVersion { version: 0x0300 })
        );
        bad[5] = 1;
        assert!(matches!(
            RtrsMsgConnReq::decode(&bad),
            Err(WireError::BadVersion { .. })
        ));
        // Minor version is not checked.
        let mut ok = b;
        ok[4] = 9;
        assert_eq!(RtrsMsgConnReq::decode(&ok).unwrap().version, 0x0209);
        assert_eq!(
            RtrsMsgConnReq::new(0, 1, 0, [0; 16], [0; 16], false).encode(&mut [0u8; 55]),
            Err(WireError::BufferTooSmall { need: 56, have: 55 })
        );
    }

    #[test]
    fn conn_req_cid_checks() {
        let m = |cid, cid_num| RtrsMsgConnReq::new(cid, cid_num, 1, [0; 16], [0; 16], true);
        assert_eq!(m(0, 1).check_cids(), Ok(()));
        assert_eq!(m(4095, 4096).check_cids(), Ok(()));
        assert_eq!(
            m(0, 4097).check_cids(),
            Err(WireError::BadCid {
                cid: 0,
                cid_num: 4097
            })
        );
        assert!(m(1, 1).check_cids().is_err());
        assert!(m(0, 0).check_cids().is_err());
        assert_eq!(m(0, 0).check_cids().unwrap_err().errno(), -104);
    }

    #[test]
    fn conn_rsp_roundtrip_and_errors() {
        let mut rng = Rng(99);
        for _ in 0..200 {
            let mut m = RtrsMsgConnRsp::accept(
                rng.next() as u16,
                rng.next() as u32,
                rng.next() as u32,
                rng.next() as u32,
            );
            m.errno = rng.next() as i16;
            rng.fill(&mut m.reserved);
            let mut b = [0u8; 56];
            assert_eq!(m.encode(&mut b), Ok(56));
            assert_eq!(RtrsMsgConnRsp::decode(&b), Ok(m));
            assert_prefixes_truncated(&b, 56, RtrsMsgConnRsp::decode);
            assert_prefixes_truncated(&b, 56, RtrsMsgConnRsp::decode_established);
        }
        let mut b = [0u8; 56];
        RtrsMsgConnRsp::accept(512, 126_976, 4096, 2)
            .encode(&mut b)
            .unwrap();
        // IB REP private data is longer than 56: extra bytes are ignored.
        let mut long = [0u8; 196];
        long[..56].copy_from_slice(&b);
        assert!(RtrsMsgConnRsp::decode_established(&long).is_ok());
        let mut bad = b;
        bad[0] = 0;
        assert_eq!(
            RtrsMsgConnRsp::decode_established(&bad),
            Err(WireError::BadMagic { magic: 0x1B00 })
        );
        let mut bad = b;
        bad[3] = 1;
        assert_eq!(
            RtrsMsgConnRsp::decode_established(&bad),
            Err(WireError::BadVersion { version: 0x0100 })
        );
        let mut bad = b;
        bad[4] = 0xfb; // -5
        bad[5] = 0xff;
        let e = RtrsMsgConnRsp::decode_established(&bad).unwrap_err();
        assert_eq!(e, WireError::ConnRspErrno { errno: -5 });
        assert_eq!(e.errno(), -errno::ECONNRESET);
        // Positive errno is non-zero too.
        bad[4] = 1;
        bad[5] = 0;
        assert!(RtrsMsgConnRsp::decode_established(&bad).is_err());
        assert!(RtrsMsgConnRsp::decode(&bad).is_ok());
    }

    #[test]
    fn conn_rsp_reject_errno() {
        let mut b = [0u8; 56];
        RtrsMsgConnRsp::reject(-16).encode(&mut b).unwrap();
        assert_eq!(RtrsMsgConnRsp::reject_errno(Some(&b)), -errno::EBUSY);
        RtrsMsgConnRsp::reject(-6).encode(&mut b).unwrap();
        assert_eq!(RtrsMsgConnRsp::reject_errno(Some(&b)), -6);
        assert_eq!(RtrsMsgConnRsp::reject_errno(Some(&b[..55])), -104);
        assert_eq!(RtrsMsgConnRsp::reject_errno(None), -104);
        assert_eq!(RtrsMsgConnRsp::reject_errno(Some(&[])), -104);
        // Like C: magic not checked, errno 0 passed through, positive kept.
        let mut raw = [0u8; 148];
        raw[4] = 0x10;
        assert_eq!(RtrsMsgConnRsp::reject_errno(Some(&raw)), 16);
        raw[4] = 0;
        assert_eq!(RtrsMsgConnRsp::reject_errno(Some(&raw)), 0);
        raw[4] = 0;
        raw[5] = 0x80;
        assert_eq!(RtrsMsgConnRsp::reject_errno(Some(&raw)), -32768);
    }

    #[test]
    fn conn_rsp_path_params() {
        let m = RtrsMsgConnRsp::accept(512, 126_976, 4096, RTRS_MSG_NEW_RKEY_F);
        let p = m.path_params(0).unwrap();
        assert_eq!(
            p,
            RtrsPathParams {
                queue_depth: 512,
                max_io_size: 126_976,
                max_hdr_size: 4096,
                chunk_size: 131_072,
                flags: 2,
                signal_interval: 512,
            }
        );
        assert!(p.new_rkey() && m.new_rkey());
        assert_eq!(m.path_params(512), Ok(p));
        assert_eq!(
            m.path_params(128),
            Err(WireError::QueueDepthChanged { old: 128, new: 512 })
        );
        assert_eq!(m.path_params(128).unwrap_err().errno(), -104);

        let small = RtrsMsgConnRsp::accept(100, 8192 - 4096, 4096, 0);
        let p = small.path_params(0).unwrap();
        assert_eq!(p.signal_interval, 100);
        assert_eq!(p.chunk_size, 8192);
        assert!(!p.new_rkey());
        let big = RtrsMsgConnRsp::accept(4096, 65536 - 4096, 4096, 0);
        assert_eq!(big.path_params(0).unwrap().signal_interval, 512);

        assert_eq!(
            RtrsMsgConnRsp::accept(0, 1, 1, 0).path_params(0),
            Err(WireError::BadQueueDepth { queue_depth: 0 })
        );
        assert_eq!(
            RtrsMsgConnRsp::accept(1, u32::MAX, 1, 0).path_params(0),
            Err(WireError::BadChunkSize {
                max_io_size: u32::MAX,
                max_hdr_size: 1
            })
        );
        // 65535 buffers need 16 bits: chunks up to 4096 fit, 8192 do not.
        assert!(RtrsMsgConnRsp::accept(65535, 0, 4096, 0)
            .path_params(0)
            .is_ok());
        assert_eq!(
            RtrsMsgConnRsp::accept(65535, 4096, 4096, 0).path_params(0),
            Err(WireError::ImmBudget {
                count: 65535,
                chunk_size: 8192
            })
        );
        // max_io_size + max_hdr_size == 0: bits(0) == 32, refused.
        assert!(RtrsMsgConnRsp::accept(1, 0, 0, 0).path_params(0).is_err());
    }

    // ---- info req --------------------------------------------------------

    #[test]
    fn info_req_roundtrip_and_errors() {
        let name = [b'x'; 254];
        for len in 1..=254 {
            let m = RtrsMsgInfoReq::new(&name[..len]).unwrap();
            assert_eq!(m.pathname(), &name[..len]);
            let mut b = [0u8; 272];
            assert_eq!(m.encode(&mut b), Ok(272));
            assert_eq!(b[2 + len], 0, "NUL-terminated");
            let d = RtrsMsgInfoReq::decode(&b).unwrap();
            assert_eq!(d, m);
            assert_eq!(d.pathname(), &name[..len]);
        }
        assert_eq!(
            RtrsMsgInfoReq::new(&[b'x'; 255]),
            Err(WireError::BadPathname { len: 255 })
        );
        assert_eq!(
            RtrsMsgInfoReq::new(b""),
            Err(WireError::BadPathname { len: 0 })
        );
        assert!(RtrsMsgInfoReq::new(b"a\0b").is_err());
        let m = RtrsMsgInfoReq::new(b"s").unwrap();
        let mut b = [0u8; 272];
        m.encode(&mut b).unwrap();
        assert_prefixes_truncated(&b, 272, RtrsMsgInfoReq::decode);
        b[0] = 1;
        assert_eq!(
            RtrsMsgInfoReq::decode(&b),
            Err(WireError::BadType { msg_type: 1 })
        );
        // A peer name without NUL: pathname() stops at the array end.
        let mut m = m;
        m.pathname = [b'z'; NAME_MAX];
        assert_eq!(m.pathname().len(), NAME_MAX);
        assert!(m.encode(&mut [0u8; 271]).is_err());
    }

    // ---- info rsp --------------------------------------------------------

    fn descs_for(lens: &[u32], base: u64) -> Vec<RtrsSgDesc> {
        lens.iter()
            .enumerate()
            .map(|(i, &len)| RtrsSgDesc {
                addr: base + (i as u64) * 0x1000_0000,
                key: 100 + i as u32,
                len,
            })
            .collect()
    }

    fn info_rsp(descs: &[RtrsSgDesc]) -> Vec<u8> {
        let mut b = vec![0u8; 8 + 16 * descs.len()];
        assert_eq!(
            RtrsMsgInfoRsp::encode_with_descs(descs, &mut b),
            Ok(b.len())
        );
        b
    }

    #[test]
    fn info_rsp_roundtrip() {
        let mut rng = Rng(7);
        for n in [0usize, 1, 2, 3, 17, 512] {
            let descs: Vec<RtrsSgDesc> = (0..n)
                .map(|_| RtrsSgDesc {
                    addr: rng.next(),
                    key: rng.next() as u32,
                    len: rng.next() as u32,
                })
                .collect();
            let b = info_rsp(&descs);
            let (hdr, view) = RtrsMsgInfoRsp::decode_with_descs(&b).unwrap();
            assert_eq!(usize::from(hdr.sg_cnt), n);
            assert_eq!(view.len(), n);
            assert_eq!(view.is_empty(), n == 0);
            assert_eq!(view.iter().collect::<Vec<_>>(), descs);
            for (i, d) in descs.iter().enumerate() {
                assert_eq!(view.get(i), Some(*d));
            }
            assert_eq!(view.get(n), None);
            assert_eq!(view.get(usize::MAX), None);
            assert_eq!(RtrsMsgInfoRsp::decode(&b), Ok(hdr));
            // Missing descriptor bytes are Truncated.
            assert_prefixes_truncated(&b, b.len(), |x| {
                RtrsMsgInfoRsp::decode_with_descs(x).map(|(h, v)| (h, v.len()))
            });
            assert_prefixes_truncated(&b, 8, RtrsMsgInfoRsp::decode);
            // Header-only encode matches.
            let mut h = [0u8; 8];
            hdr.encode(&mut h).unwrap();
            assert_eq!(h, b[..8]);
            assert!(
                RtrsMsgInfoRsp::encode_with_descs(&descs, &mut vec![0u8; b.len() - 1]).is_err()
            );
        }
        let mut b = info_rsp(&[]);
        b[0] = 4;
        assert_eq!(
            RtrsMsgInfoRsp::decode_with_descs(&b),
            Err(WireError::BadType { msg_type: 4 })
        );
        // Too many descriptors for the le16 sg_cnt.
        let many = vec![RtrsSgDesc::default(); 65536];
        assert_eq!(
            RtrsMsgInfoRsp::encode_with_descs(&many, &mut [0u8; 8]),
            Err(WireError::TooManyDescs {
                count: 65536,
                max: 65535
            })
        );
    }

    #[test]
    fn info_rsp_process_one_mr_per_chunk() {
        // always_invalidate: sg_cnt == queue_depth, len == chunk_size.
        let chunk = 131_072u32;
        let qd = 512u32;
        let descs = descs_for(&vec![chunk; qd as usize], 0x7f00_0000_0000);
        let b = info_rsp(&descs);
        let mut rbufs = vec![RtrsRbuf::default(); 600];
        assert_eq!(RtrsMsgInfoRsp::process(&b, qd, chunk, &mut rbufs), Ok(()));
        for (i, d) in descs.iter().enumerate() {
            assert_eq!(
                rbufs[i],
                RtrsRbuf {
                    addr: d.addr,
                    rkey: d.key
                }
            );
        }
        assert_eq!(rbufs[512], RtrsRbuf::default());
        // Extra received bytes beyond the descriptors are ignored.
        let mut longer = b.clone();
        longer.extend_from_slice(&[0xff; 64]);
        assert!(RtrsMsgInfoRsp::process(&longer, qd, chunk, &mut rbufs).is_ok());
    }

    #[test]
    fn info_rsp_process_multi_chunk_mrs() {
        let chunk = 8192u32;
        let descs = descs_for(&[4 * chunk, 4 * chunk], 0x1_0000);
        let b = info_rsp(&descs);
        let mut rbufs = [RtrsRbuf::default(); 8];
        RtrsMsgInfoRsp::process(&b, 8, chunk, &mut rbufs).unwrap();
        for i in 0..8usize {
            let d = &descs[i / 4];
            assert_eq!(rbufs[i].addr, d.addr + (i as u64 % 4) * u64::from(chunk));
            assert_eq!(rbufs[i].rkey, d.key);
        }
    }

    #[test]
    fn info_rsp_process_errors() {
        let c = 8192u32;
        let mut rbufs = [RtrsRbuf { addr: 1, rkey: 1 }; 8];
        let untouched = rbufs;
        let mut run = |descs: &[RtrsSgDesc], qd: u32, chunk: u32| {
            RtrsMsgInfoRsp::process(&info_rsp(descs), qd, chunk, &mut rbufs)
        };
        assert_eq!(
            run(&[], 4, c),
            Err(WireError::BadSgCnt {
                sg_cnt: 0,
                queue_depth: 4
            })
        );
        assert_eq!(
            run(&descs_for(&[c; 3], 0), 4, c),
            Err(WireError::BadSgCnt {
                sg_cnt: 3,
                queue_depth: 4
            })
        );
        // sg_cnt above queue_depth cannot divide it.
        assert!(matches!(
            run(&descs_for(&[c; 8], 0), 4, c),
            Err(WireError::BadSgCnt { .. })
        ));
        assert_eq!(
            run(&descs_for(&[c, 0], 0), 4, c),
            Err(WireError::BadDescLen { index: 1, len: 0 })
        );
        assert_eq!(
            run(&descs_for(&[c, c + 1], 0), 2, c),
            Err(WireError::BadDescLen {
                index: 1,
                len: c + 1
            })
        );
        // Too little memory: 2 chunks for depth 4.
        assert_eq!(
            run(&descs_for(&[c, c], 0), 4, c),
            Err(WireError::NotFullyMapped {
                descs_used: 2,
                chunks: 2
            })
        );
        // First desc covers everything, second unused.
        assert_eq!(
            run(&descs_for(&[4 * c, 4 * c], 0), 4, c),
            Err(WireError::NotFullyMapped {
                descs_used: 1,
                chunks: 4
            })
        );
        // Chunks mapped but lengths over-cover.
        assert_eq!(
            run(&descs_for(&[3 * c, 3 * c], 0), 4, c),
            Err(WireError::BadTotalLen {
                total: 6 * u64::from(c),
                expected: 4 * u64::from(c)
            })
        );
        // Address range wraps.
        let mut d = descs_for(&[2 * c], 0);
        d[0].addr = u64::MAX - u64::from(c) + 2;
        assert_eq!(run(&d, 2, c), Err(WireError::DescAddrOverflow { index: 0 }));
        // IMM budget: 2 buffers (1 bit) of 2^28 bytes (28 bits).
        assert_eq!(
            run(&descs_for(&[1 << 28, 1 << 28], 0), 2, 1 << 28),
            Err(WireError::ImmBudget {
                count: 2,
                chunk_size: 1 << 28
            })
        );
        assert!(matches!(
            run(&descs_for(&[c], 0), 1, 0),
            Err(WireError::ImmBudget { .. })
        ));
        // Output too small.
        assert_eq!(
            run(&descs_for(&[c; 16], 0), 16, c),
            Err(WireError::BufferTooSmall { need: 16, have: 8 })
        );
        // queue_depth 0: C reaches the "not fully mapped" check.
        assert!(run(&descs_for(&[c], 0), 0, c).is_err());
        assert_eq!(rbufs, untouched);
        // Truncated receive (fewer bytes than sg_cnt says).
        let b = info_rsp(&descs_for(&[c, c], 0));
        assert_eq!(
            RtrsMsgInfoRsp::process(&b[..30], 2, c, &mut rbufs),
            Err(WireError::Truncated { need: 40, have: 30 })
        );
        // All process_info_rsp content errors map to -EINVAL.
        assert_eq!(
            WireError::NotFullyMapped {
                descs_used: 0,
                chunks: 0
            }
            .errno(),
            -22
        );
    }

    // ---- rkey rsp / rdma msgs -------------------------------------------

    #[test]
    fn rkey_rsp_roundtrip_and_checks() {
        for (buf_id, rkey) in [(0u16, 0u32), (511, 0xdead_beef), (u16::MAX, u32::MAX)] {
            let m = RtrsMsgRkeyRsp { buf_id, rkey };
            let mut b = [0u8; 8];
            assert_eq!(m.encode(&mut b), Ok(8));
            assert_eq!(RtrsMsgRkeyRsp::decode(&b), Ok(m));
            assert_prefixes_truncated(&b, 8, RtrsMsgRkeyRsp::decode);
            b[0] = 1;
            assert_eq!(
                RtrsMsgRkeyRsp::decode(&b),
                Err(WireError::BadType { msg_type: 1 })
            );
        }
        let m = RtrsMsgRkeyRsp { buf_id: 5, rkey: 1 };
        assert_eq!(m.check(6, 5), Ok(()));
        assert_eq!(
            m.check(5, 5),
            Err(WireError::BadMsgId {
                msg_id: 5,
                queue_depth: 5
            })
        );
        assert_eq!(
            m.check(6, 4),
            Err(WireError::BufIdMismatch {
                buf_id: 5,
                msg_id: 4
            })
        );
        assert_eq!(m.check(6, 4).unwrap_err().errno(), -71);
    }

    #[test]
    fn rdma_read_roundtrip_and_errors() {
        let mr = RtrsSgDesc {
            addr: u64::MAX,
            key: u32::MAX,
            len: 1 << 19,
        };
        let mut b = [0u8; 64];
        let n = RtrsMsgRdmaRead::encode_client(u16::MAX, Some(&mr), &mut b).unwrap();
        let (hdr, descs) = RtrsMsgRdmaRead::decode_with_descs(&b[..n]).unwrap();
        assert_eq!(
            hdr,
            RtrsMsgRdmaRead {
                usr_len: u16::MAX,
                flags: RTRS_MSG_NEED_INVAL_F,
                sg_cnt: 1
            }
        );
        assert_eq!(descs.get(0), Some(mr));
        assert_eq!(RtrsMsgRdmaRead::decode(&b[..8]), Ok(hdr));
        assert_prefixes_truncated(&b[..n], n, |x| {
            RtrsMsgRdmaRead::decode_with_descs(x).map(|(h, v)| (h, v.len()))
        });
        assert_prefixes_truncated(&b[..8], 8, RtrsMsgRdmaRead::decode);

        let n = RtrsMsgRdmaRead::encode_client(0, None, &mut b).unwrap();
        let (hdr, descs) = RtrsMsgRdmaRead::decode_with_descs(&b[..n]).unwrap();
        assert_eq!(hdr, RtrsMsgRdmaRead::default());
        assert!(descs.is_empty());

        // Generic encode with several descriptors.
        let ds = [mr, RtrsSgDesc::default(), mr];
        let m = RtrsMsgRdmaRead {
            usr_len: 9,
            flags: 0,
            sg_cnt: 3,
        };
        assert_eq!(m.encode_with_descs(&ds, &mut b), Ok(56));
        let (h, v) = RtrsMsgRdmaRead::decode_with_descs(&b).unwrap();
        assert_eq!(h, m);
        assert_eq!(v.iter().collect::<Vec<_>>(), ds);
        assert_eq!(
            RtrsMsgRdmaRead { sg_cnt: 2, ..m }.encode_with_descs(&ds, &mut b),
            Err(WireError::SgCntMismatch {
                sg_cnt: 2,
                descs: 3
            })
        );
        assert_eq!(
            m.encode_with_descs(&ds, &mut [0u8; 55]),
            Err(WireError::BufferTooSmall { need: 56, have: 55 })
        );
        assert!(RtrsMsgRdmaRead::encode_client(1, Some(&mr), &mut [0u8; 23]).is_err());
        b[0] = 2;
        assert_eq!(
            RtrsMsgRdmaRead::decode(&b),
            Err(WireError::BadType { msg_type: 2 })
        );
        // A huge sg_cnt from the peer is bounds-checked.
        let mut h = [0u8; 8];
        RtrsMsgRdmaRead {
            usr_len: 0,
            flags: 0,
            sg_cnt: u16::MAX,
        }
        .encode(&mut h)
        .unwrap();
        assert_eq!(
            RtrsMsgRdmaRead::decode_with_descs(&h),
            Err(WireError::Truncated {
                need: 8 + 16 * 65535,
                have: 8
            })
        );
    }

    #[test]
    fn rdma_write_and_hdr() {
        for usr_len in [0u16, 1, 4096, u16::MAX] {
            let m = RtrsMsgRdmaWrite { usr_len };
            let mut b = [0u8; 4];
            assert_eq!(m.encode(&mut b), Ok(4));
            assert_eq!(RtrsMsgRdmaWrite::decode(&b), Ok(m));
            assert_prefixes_truncated(&b, 4, RtrsMsgRdmaWrite::decode);
            assert_eq!(
                RtrsMsgRdmaHdr::decode(&b),
                Ok(RtrsMsgRdmaHdr {
                    msg_type: RtrsMsgType::Write
                })
            );
            b[0] = 3;
            assert_eq!(
                RtrsMsgRdmaWrite::decode(&b),
                Err(WireError::BadType { msg_type: 3 })
            );
        }
        for t in 0..5u16 {
            let m = RtrsMsgRdmaHdr {
                msg_type: RtrsMsgType::from_u16(t).unwrap(),
            };
            let mut b = [0u8; 2];
            assert_eq!(m.encode(&mut b), Ok(2));
            assert_eq!(RtrsMsgRdmaHdr::decode(&b), Ok(m));
            assert_prefixes_truncated(&b, 2, RtrsMsgRdmaHdr::decode);
        }
        assert_eq!(
            RtrsMsgRdmaHdr::decode(&[5, 0]),
            Err(WireError::BadType { msg_type: 5 })
        );
        assert!(RtrsMsgRdmaWrite { usr_len: 0 }
            .encode(&mut [0u8; 3])
            .is_err());
        assert!(RtrsMsgRdmaHdr {
            msg_type: RtrsMsgType::Read
        }
        .encode(&mut [0u8; 1])
        .is_err());
    }

    // ---- IO size checks --------------------------------------------------

    #[test]
    fn io_size_checks() {
        // READ header: 8 + 16 * sg_cnt + usr_len <= max_hdr_size.
        assert_eq!(check_io_hdr(true, 4096 - 24, 1, 4096), Ok(()));
        assert_eq!(
            check_io_hdr(true, 4096 - 23, 1, 4096),
            Err(WireError::IoHdrTooBig {
                read: true,
                usr_len: 4073,
                hdr_len: 24,
                max: 4096
            })
        );
        assert_eq!(check_io_hdr(true, 0, 255, 4096), Ok(()));
        assert!(check_io_hdr(true, 0, 256, 4096).is_err());
        assert!(check_io_hdr(true, 0, usize::MAX, u32::MAX).is_err());
        // WRITE header: 4 + usr_len.
        assert_eq!(check_io_hdr(false, 4092, 100, 4096), Ok(()));
        assert!(check_io_hdr(false, 4093, 0, 4096).is_err());
        assert!(check_io_hdr(false, usize::MAX, 0, u32::MAX).is_err());
        // usr_len must fit le16 even if the server allows more.
        assert_eq!(check_io_hdr(false, 65535, 0, u32::MAX), Ok(()));
        assert!(check_io_hdr(false, 65536, 0, u32::MAX).is_err());
        assert_eq!(
            check_io_hdr(false, 65536, 0, u32::MAX).unwrap_err().errno(),
            -90
        );
        // Chunk: sizeof(msg) + data + usr <= chunk_size.
        assert_eq!(check_io_chunk(false, 131_072 - 36, 32, 131_072), Ok(()));
        assert!(check_io_chunk(false, 131_072 - 35, 32, 131_072).is_err());
        assert_eq!(check_io_chunk(true, 131_072 - 40, 32, 131_072), Ok(()));
        assert!(check_io_chunk(true, 131_072 - 39, 32, 131_072).is_err());
        assert!(check_io_chunk(true, usize::MAX, usize::MAX, u32::MAX).is_err());
        assert_eq!(
            check_io_chunk(true, 131_072 - 39, 32, 131_072),
            Err(WireError::IoChunkTooBig {
                read: true,
                size: 131_073,
                chunk_size: 131_072
            })
        );
    }

    #[test]
    fn io_size_errors_print_c_text() {
        use std::string::ToString;
        let e = check_io_hdr(true, 4096 - 23, 1, 4096).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Read request failed, user message size is 4073 and header length 24, but max size is 4096"
        );
        assert_eq!(e.errno(), -90);
        let e = check_io_hdr(false, 4093, 0, 4096).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Write request failed, user message size is 4093 and header length 4, but max size is 4096"
        );
        let e = check_io_chunk(true, 131_072 - 39, 32, 131_072).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Read request failed, message size is 131073, bigger than CHUNK_SIZE 131072"
        );
        let e = check_io_chunk(false, 131_072 - 35, 32, 131_072).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Write request failed, size too big 131073 > 131072"
        );
        assert_eq!(e.errno(), -90);
    }

    // ---- errors ----------------------------------------------------------

    #[test]
    fn errno_mapping_and_display() {
        let all = [
            (WireError::Truncated { need: 1, have: 0 }, -104),
            (WireError::BufferTooSmall { need: 1, have: 0 }, -22),
            (WireError::BadMagic { magic: 0 }, -104),
            (WireError::BadVersion { version: 0 }, -104),
            (WireError::BadType { msg_type: 9 }, -104),
            (WireError::ConnRspErrno { errno: -1 }, -104),
            (WireError::QueueDepthChanged { old: 1, new: 2 }, -104),
            (WireError::BadQueueDepth { queue_depth: 0 }, -104),
            (
                WireError::BadChunkSize {
                    max_io_size: 0,
                    max_hdr_size: 0,
                },
                -104,
            ),
            (
                WireError::ImmBudget {
                    count: 0,
                    chunk_size: 0,
                },
                -22,
            ),
            (WireError::BadCid { cid: 0, cid_num: 0 }, -104),
            (
                WireError::BadSgCnt {
                    sg_cnt: 0,
                    queue_depth: 0,
                },
                -22,
            ),
            (WireError::BadDescLen { index: 0, len: 0 }, -22),
            (WireError::DescAddrOverflow { index: 0 }, -22),
            (
                WireError::NotFullyMapped {
                    descs_used: 0,
                    chunks: 0,
                },
                -22,
            ),
            (
                WireError::BadTotalLen {
                    total: 0,
                    expected: 1,
                },
                -22,
            ),
            (WireError::TooManyDescs { count: 2, max: 1 }, -22),
            (
                WireError::SgCntMismatch {
                    sg_cnt: 0,
                    descs: 1,
                },
                -22,
            ),
            (WireError::BadPathname { len: 0 }, -22),
            (WireError::MsgTooBig { size: 2, max: 1 }, -90),
            (
                WireError::IoHdrTooBig {
                    read: true,
                    usr_len: 1,
                    hdr_len: 24,
                    max: 1,
                },
                -90,
            ),
            (
                WireError::IoChunkTooBig {
                    read: false,
                    size: 2,
                    chunk_size: 1,
                },
                -90,
            ),
            (WireError::BadImmType { imm_type: 3 }, -71),
            (
                WireError::BadMsgId {
                    msg_id: 1,
                    queue_depth: 1,
                },
                -71,
            ),
            (WireError::BadOffset { off: 1, limit: 1 }, -71),
            (WireError::BadErrno { errno: 1 }, -22),
            (
                WireError::BufIdMismatch {
                    buf_id: 0,
                    msg_id: 1,
                },
                -71,
            ),
        ];
        for (e, errno) in all {
            assert_eq!(e.errno(), errno, "{e:?}");
            assert!(!format!("{e}").is_empty());
        }
        assert_eq!(
            format!("{}", WireError::BadVersion { version: 0x0300 }),
            "unsupported major RTRS version 3, expected 2"
        );
    }

    // ---- fuzz-like -------------------------------------------------------

    /// Random bytes of every length into every decoder: no panic, and any
    /// fixed-size message that decodes re-encodes to the same bytes.
    #[test]
    fn fuzz_random_bytes_never_panic() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut buf = vec![0u8; 1200];
        let mut rbufs = [RtrsRbuf::default(); 64];
        let mut decoded = 0u32;
        for round in 0..20_000u32 {
            let len = rng.below(buf.len() as u64 + 1) as usize;
            rng.fill(&mut buf[..len]);
            // Bias towards valid headers so deeper checks run.
            if len >= 6 {
                match round % 3 {
                    0 => {
                        buf[2..4].copy_from_slice(&RTRS_MAGIC.to_le_bytes());
                        buf[4..6].copy_from_slice(&RTRS_PROTO_VER.to_le_bytes());
                    }
                    1 => {
                        buf[0..2].copy_from_slice(&RTRS_MAGIC.to_le_bytes());
                        buf[2..4].copy_from_slice(&RTRS_PROTO_VER.to_le_bytes());
                    }
                    _ => {
                        buf[0] = rng.below(6) as u8;
                        buf[1] = 0;
                        buf[2] = rng.below(4) as u8;
                        buf[3] = 0;
                    }
                }
            }
            let b = &buf[..len];
            let mut out = [0u8; 300];
            if let Ok(m) = RtrsMsgConnReq::decode(b) {
                m.encode(&mut out).unwrap();
                assert_eq!(out[..56], b[..56]);
                let _ = m.check_cids();
            }
            if let Ok(m) = RtrsMsgConnRsp::decode(b) {
                decoded += 1;
                m.encode(&mut out).unwrap();
                assert_eq!(out[..56], b[..56]);
                let _ = m.path_params(rng.below(3) as u32 * 256);
            }
            let _ = RtrsMsgConnRsp::decode_established(b);
            let _ = RtrsMsgConnRsp::reject_errno(Some(b));
            if let Ok(m) = RtrsMsgInfoReq::decode(b) {
                m.encode(&mut out).unwrap();
                assert_eq!(out[..272], b[..272]);
                let _ = m.pathname();
            }
            if let Ok((h, v)) = RtrsMsgInfoRsp::decode_with_descs(b) {
                assert_eq!(v.len(), usize::from(h.sg_cnt));
                assert_eq!(v.iter().count(), v.len());
            }
            for (qd, chunk) in [(64u32, 8192u32), (8, 1), (1, 0), (0, 4096), (64, u32::MAX)] {
                let _ = RtrsMsgInfoRsp::process(b, qd, chunk, &mut rbufs);
            }
            if let Ok(m) = RtrsMsgRkeyRsp::decode(b) {
                m.encode(&mut out).unwrap();
                assert_eq!(out[..8], b[..8]);
                let _ = m.check(rng.next() as u32, rng.next() as u32);
            }
            if let Ok((h, v)) = RtrsMsgRdmaRead::decode_with_descs(b) {
                let n = h.encode_with_descs(&v.iter().collect::<Vec<_>>(), &mut vec![0; len]);
                assert_eq!(n, Ok(8 + 16 * v.len()));
            }
            let _ = RtrsMsgRdmaWrite::decode(b);
            let _ = RtrsMsgRdmaHdr::decode(b);
            let _ = RtrsSgDesc::decode(b);
            let _ = RtrsSgDescs::new(b, rng.below(100) as usize);
            let _ = RtrsSgDescs::new(b, usize::MAX);
        }
        assert!(decoded > 1000, "header bias ineffective: {decoded}");
    }

    /// Mutations of valid INFO_RSPs: process() never panics and, when it
    /// succeeds, every rbuf lies inside a descriptor.
    #[test]
    fn fuzz_info_rsp_mutations() {
        let mut rng = Rng(42);
        let chunk = 8192u32;
        let mut ok = 0u32;
        for _ in 0..5_000 {
            let qd = [1u32, 2, 4, 8, 16, 32][rng.below(6) as usize];
            let sg = [1u32, 2, 4, 8, 16, 32]
                .into_iter()
                .filter(|s| qd.is_multiple_of(*s))
                .nth(rng.below(2) as usize)
                .unwrap_or(1);
            let per = chunk * (qd / sg);
            let descs = descs_for(&vec![per; sg as usize], rng.next() >> 8);
            let mut b = info_rsp(&descs);
            for _ in 0..rng.below(4) {
                let i = rng.below(b.len() as u64) as usize;
                b[i] ^= 1 << rng.below(8);
            }
            let cut = b.len() - rng.below(3) as usize;
            let mut rbufs = vec![RtrsRbuf::default(); qd as usize];
            if RtrsMsgInfoRsp::process(&b[..cut], qd, chunk, &mut rbufs).is_ok() {
                ok += 1;
                let (_, v) = RtrsMsgInfoRsp::decode_with_descs(&b[..cut]).unwrap();
                for r in &rbufs {
                    assert!(v.iter().any(|d| d.key == r.rkey
                        && r.addr >= d.addr
                        && r.addr - d.addr < u64::from(d.len)));
                }
            }
        }
        assert!(ok > 500, "too few valid cases: {ok}");
    }
}
