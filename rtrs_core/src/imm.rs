// SPDX-License-Identifier: GPL-2.0

//! RTRS immediate data (IMM) encoding (`rtrs-pri.h`).
//!
//! An IMM is 32 bits: a 4-bit type on top of a 28-bit payload. Verbs carry
//! it big-endian (`cpu_to_be32`); the values here are host-order `u32`.
//! IO requests split the payload into chunk id and offset by the queue
//! depth ([`RtrsChunkLayout`]); IO responses pack a 9-bit errno and a
//! 19-bit msg id.

use super::proto::{RtrsMsgRdmaRead, RtrsMsgRdmaWrite, WireError, MAX_SESS_QUEUE_DEPTH};

/// `MAX_IMM_TYPE_BITS`.
pub const MAX_IMM_TYPE_BITS: u32 = 4;
/// `MAX_IMM_TYPE_MASK`.
pub const MAX_IMM_TYPE_MASK: u32 = (1 << MAX_IMM_TYPE_BITS) - 1;
/// `MAX_IMM_PAYL_BITS`.
pub const MAX_IMM_PAYL_BITS: u32 = 28;
/// `MAX_IMM_PAYL_MASK`.
pub const MAX_IMM_PAYL_MASK: u32 = (1 << MAX_IMM_PAYL_BITS) - 1;

/// `RTRS_IO_REQ_IMM`: client to server IO request.
pub const RTRS_IO_REQ_IMM: u32 = 0;
/// `RTRS_IO_RSP_IMM`: server to client IO response.
pub const RTRS_IO_RSP_IMM: u32 = 1;
/// `RTRS_IO_RSP_W_INV_IMM`: IO response after a SEND_WITH_INV.
pub const RTRS_IO_RSP_W_INV_IMM: u32 = 2;
/// `RTRS_HB_MSG_IMM`: heartbeat.
pub const RTRS_HB_MSG_IMM: u32 = 8;
/// `RTRS_HB_ACK_IMM`: heartbeat acknowledgement.
pub const RTRS_HB_ACK_IMM: u32 = 9;
/// `RTRS_LAST_IMM`: one past the last type.
pub const RTRS_LAST_IMM: u32 = 10;

const _: () = assert!(MAX_IMM_PAYL_BITS + MAX_IMM_TYPE_BITS == 32);
const _: () = assert!(RTRS_LAST_IMM <= 1 << MAX_IMM_TYPE_BITS);

/// Bits of the errno in an IO response payload.
pub const IO_RSP_ERRNO_BITS: u32 = 9;
/// Mask of the errno magnitude (`0x1ff`).
pub const IO_RSP_ERRNO_MASK: u32 = (1 << IO_RSP_ERRNO_BITS) - 1;
/// Bits of the msg id in an IO response payload.
pub const IO_RSP_MSG_ID_BITS: u32 = 19;
/// Mask of the msg id (`0x7ffff`).
pub const IO_RSP_MSG_ID_MASK: u32 = (1 << IO_RSP_MSG_ID_BITS) - 1;

/// Largest errno magnitude an IO response can carry (511).
pub const RTRS_IO_RSP_MAX_ERRNO: i32 = 511;

const _: () = assert!(IO_RSP_ERRNO_BITS + IO_RSP_MSG_ID_BITS == MAX_IMM_PAYL_BITS);
const _: () = assert!(RTRS_IO_RSP_MAX_ERRNO == IO_RSP_ERRNO_MASK as i32);

/// Complete heartbeat IMM (`0x80000000`).
pub const RTRS_HB_MSG_IMM_VAL: u32 = rtrs_to_imm(RTRS_HB_MSG_IMM, 0);
/// Complete heartbeat-ack IMM (`0x90000000`).
pub const RTRS_HB_ACK_IMM_VAL: u32 = rtrs_to_imm(RTRS_HB_ACK_IMM, 0);

/// `rtrs_to_imm`: type in the top 4 bits, payload in the low 28 (both masked).
pub const fn rtrs_to_imm(imm_type: u32, payload: u32) -> u32 {
    ((imm_type & MAX_IMM_TYPE_MASK) << MAX_IMM_PAYL_BITS) | (payload & MAX_IMM_PAYL_MASK)
}

/// `rtrs_from_imm`: returns `(type, payload)`.
pub const fn rtrs_from_imm(imm: u32) -> (u32, u32) {
    (imm >> MAX_IMM_PAYL_BITS, imm & MAX_IMM_PAYL_MASK)
}

/// `rtrs_to_io_req_imm`: IO request IMM with payload `addr` (masked to 28 bits).
pub const fn rtrs_to_io_req_imm(addr: u32) -> u32 {
    rtrs_to_imm(RTRS_IO_REQ_IMM, addr)
}

/// `rtrs_from_io_rsp_imm`: returns `(msg_id, errno)`, errno in -511..=0.
pub const fn rtrs_from_io_rsp_imm(payload: u32) -> (u32, i32) {
    let msg_id = payload & IO_RSP_MSG_ID_MASK;
    let mag = (payload >> IO_RSP_MSG_ID_BITS) & IO_RSP_ERRNO_MASK;
    // mag <= 511: exact.
    (msg_id, 0i32.saturating_sub_unsigned(mag))
}

/// `ilog2(n - 1) + 1` in u32 arithmetic as the C code computes it:
/// bits needed for `n` values (0 for n = 1, 32 for n = 0 by wrap-around).
pub const fn imm_bits(n: u32) -> u32 {
    u32::BITS.saturating_sub(n.wrapping_sub(1).leading_zeros())
}

/// `chunk_bits` of `alloc_permits`: `imm_bits(queue_depth)`, for depths
/// 1..=[`MAX_SESS_QUEUE_DEPTH`].
pub const fn chunk_bits(queue_depth: u32) -> Result<u32, WireError> {
    if queue_depth == 0 || queue_depth > MAX_SESS_QUEUE_DEPTH {
        return Err(WireError::BadQueueDepth { queue_depth });
    }
    Ok(imm_bits(queue_depth))
}

/// `permit->mem_off` of `alloc_permits`: `mem_id << (28 - chunk_bits)`.
pub const fn rtrs_permit_mem_off(queue_depth: u32, mem_id: u32) -> Result<u32, WireError> {
    let bits = match chunk_bits(queue_depth) {
        Ok(b) => b,
        Err(e) => return Err(e),
    };
    if mem_id >= queue_depth {
        return Err(WireError::BadMsgId {
            msg_id: mem_id,
            queue_depth,
        });
    }
    // bits <= 16 and mem_id < 2^bits: the result stays below 2^28.
    match mem_id.checked_shl(MAX_IMM_PAYL_BITS.saturating_sub(bits)) {
        Some(v) => Ok(v),
        None => Err(WireError::BadQueueDepth { queue_depth }),
    }
}

/// Split of the IO request payload into chunk id and offset for one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtrsChunkLayout {
    queue_depth: u32,
    chunk_size: u32,
    mem_bits: u32,
}

impl RtrsChunkLayout {
    /// Layout for `queue_depth` chunks of `chunk_size` bytes. Refuses depth
    /// 0 or > 65535 and pairs that overflow the IMM payload
    /// (`imm_bits(qd) + imm_bits(chunk_size) > 28`, the server's own check).
    pub const fn new(queue_depth: u32, chunk_size: u32) -> Result<Self, WireError> {
        let cb = match chunk_bits(queue_depth) {
            Ok(b) => b,
            Err(e) => return Err(e),
        };
        if cb.saturating_add(imm_bits(chunk_size)) > MAX_IMM_PAYL_BITS {
            return Err(WireError::ImmBudget {
                count: queue_depth,
                chunk_size,
            });
        }
        Ok(Self {
            queue_depth,
            chunk_size,
            mem_bits: MAX_IMM_PAYL_BITS.saturating_sub(cb),
        })
    }

    /// Queue depth (number of chunks).
    pub const fn queue_depth(&self) -> u32 {
        self.queue_depth
    }

    /// Chunk size in bytes.
    #[cfg(test)]
    pub const fn chunk_size(&self) -> u32 {
        self.chunk_size
    }

    /// `mem_off` of permit `mem_id`: `mem_id << mem_bits`.
    pub const fn mem_off(&self, mem_id: u32) -> Result<u32, WireError> {
        if mem_id >= self.queue_depth {
            return Err(WireError::BadMsgId {
                msg_id: mem_id,
                queue_depth: self.queue_depth,
            });
        }
        match mem_id.checked_shl(self.mem_bits) {
            Some(v) => Ok(v),
            None => Err(WireError::BadMsgId {
                msg_id: mem_id,
                queue_depth: self.queue_depth,
            }),
        }
    }
}

/// Chunk `mem_id` of a layout, from [`RtrsChunkLayout::chunk`]: its
/// `mem_off` and the layout's chunk size, so `mem_id < queue_depth` and
/// `chunk_size <= 2^mem_bits` hold by construction (set up once per request
/// slot, not checked per request).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtrsChunk {
    mem_off: u32,
    chunk_size: u32,
}

/// What a READ or WRITE request is on the wire, from
/// [`RtrsChunk::plan_io_req`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoReqPlan {
    /// The request's IMM (host order).
    pub imm: u32,
    /// `data_len`: where a READ's user header lands in the chunk.
    pub data_off: u32,
    /// `data_len + usr_len`: where the message lands in the chunk, and
    /// the bytes `rtrs_clt_update_all_stats` counts.
    pub msg_off: u32,
}

impl RtrsChunkLayout {
    /// Chunk `mem_id`, if below the queue depth.
    pub const fn chunk(&self, mem_id: u32) -> Result<RtrsChunk, WireError> {
        match self.mem_off(mem_id) {
            Ok(mem_off) => Ok(RtrsChunk {
                mem_off,
                chunk_size: self.chunk_size,
            }),
            Err(e) => Err(e),
        }
    }
}

impl RtrsChunk {
    /// `rtrs_clt_{read,write}_req`: the size check (`sizeof(msg) +
    /// data_len + usr_len <= chunk_size`, else `IoChunkTooBig`) and the IMM
    /// (`mem_off + data_len + usr_len`) in one pass.
    pub fn plan_io_req(
        self,
        read: bool,
        data_len: usize,
        usr_len: usize,
    ) -> Result<IoReqPlan, WireError> {
        let msg = if read {
            RtrsMsgRdmaRead::SIZE
        } else {
            RtrsMsgRdmaWrite::SIZE
        };
        let off = data_len.checked_add(usr_len);
        let size = off.and_then(|o| o.checked_add(msg));
        let (Some(off), Some(size)) = (off, size) else {
            return Err(self.too_big(read, usize::MAX));
        };
        // chunk_size is a u32: what passes fits one, and so do its parts.
        if size > self.chunk_size as usize {
            return Err(self.too_big(read, size));
        }
        // off < chunk_size <= 2^mem_bits, and mem_off is a multiple of
        // 2^mem_bits below 2^28 (`chunk`): C's sum is an OR in 28 bits.
        Ok(IoReqPlan {
            imm: rtrs_to_io_req_imm(self.mem_off | off as u32),
            data_off: data_len as u32,
            msg_off: off as u32,
        })
    }

    fn too_big(self, read: bool, size: usize) -> WireError {
        WireError::IoChunkTooBig {
            read,
            size,
            chunk_size: self.chunk_size,
        }
    }
}

/// An IMM the client received, as `rtrs_clt_rdma_done` tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtrsImm {
    /// `RTRS_IO_RSP_IMM` / `RTRS_IO_RSP_W_INV_IMM`: the response to request
    /// (chunk) `msg_id`, below the path's queue depth.
    IoRsp {
        /// Request (chunk) id.
        msg_id: u32,
        /// 0 or a negative errno (-511..=-1).
        errno: i32,
        /// The server already invalidated the client MR (SEND_WITH_INV).
        w_inval: bool,
    },
    /// `RTRS_HB_MSG_IMM`.
    HbMsg,
    /// `RTRS_HB_ACK_IMM`.
    HbAck,
}

/// An IMM [`RtrsImm::decode`] refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImmError {
    /// A type the client does not receive (`RTRS_IO_REQ_IMM` included).
    BadType {
        /// The 4-bit type.
        imm_type: u32,
    },
    /// An IO response for no request: `msg_id` is not below the queue
    /// depth (`process_io_rsp`'s WARN in C).
    BadMsgId {
        /// Id found.
        msg_id: u32,
        /// The response came after a SEND_WITH_INV, whose receive it used.
        w_inval: bool,
    },
}

impl RtrsImm {
    /// Decodes a host-order IMM received by the client on a path with
    /// `queue_depth` request slots (0 before they exist: then every IO
    /// response is refused). Heartbeat payloads are ignored, as in C.
    pub const fn decode(imm: u32, queue_depth: u32) -> Result<Self, ImmError> {
        let (imm_type, payload) = rtrs_from_imm(imm);
        match imm_type {
            RTRS_IO_RSP_IMM | RTRS_IO_RSP_W_INV_IMM => {
                let (msg_id, errno) = rtrs_from_io_rsp_imm(payload);
                let w_inval = imm_type == RTRS_IO_RSP_W_INV_IMM;
                if msg_id >= queue_depth {
                    return Err(ImmError::BadMsgId { msg_id, w_inval });
                }
                Ok(RtrsImm::IoRsp {
                    msg_id,
                    errno,
                    w_inval,
                })
            }
            RTRS_HB_MSG_IMM => Ok(RtrsImm::HbMsg),
            RTRS_HB_ACK_IMM => Ok(RtrsImm::HbAck),
            _ => Err(ImmError::BadType { imm_type }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Golden values below come from compiling the rtrs-pri.h IMM helpers
    // and the kernel's ilog2 (fls - 1) with `clang -target x86_64-linux-gnu`
    // and printing the results (probe kept outside the repository); the
    // worked examples are the digest's (section 2.4).

    use crate::test_rng::Rng;

    fn layout(qd: u32, chunk: u32) -> RtrsChunkLayout {
        RtrsChunkLayout::new(qd, chunk).unwrap()
    }

    /// `rtrs_to_io_rsp_imm` (the server's), bit-exact with C: `|errno|` and
    /// `msg_id` are masked (so e.g. -512 reads back as 0).
    fn rtrs_to_io_rsp_imm(msg_id: u32, errno: i32, w_inval: bool) -> u32 {
        let payload = ((errno.unsigned_abs() & IO_RSP_ERRNO_MASK) << IO_RSP_MSG_ID_BITS)
            | (msg_id & IO_RSP_MSG_ID_MASK);
        let imm_type = if w_inval {
            RTRS_IO_RSP_W_INV_IMM
        } else {
            RTRS_IO_RSP_IMM
        };
        rtrs_to_imm(imm_type, payload)
    }

    /// What the server sends for `v`.
    fn encode(v: RtrsImm) -> u32 {
        match v {
            RtrsImm::IoRsp {
                msg_id,
                errno,
                w_inval,
            } => rtrs_to_io_rsp_imm(msg_id, errno, w_inval),
            RtrsImm::HbMsg => RTRS_HB_MSG_IMM_VAL,
            RtrsImm::HbAck => RTRS_HB_ACK_IMM_VAL,
        }
    }

    /// The server's split of an IO request payload: `(msg_id, off)`.
    fn split_io_req(l: &RtrsChunkLayout, payload: u32) -> (u32, u32) {
        let payload = payload & MAX_IMM_PAYL_MASK;
        (payload >> l.mem_bits, payload & ((1u32 << l.mem_bits) - 1))
    }

    #[test]
    fn constants() {
        assert_eq!(MAX_IMM_TYPE_MASK, 0xF);
        assert_eq!(MAX_IMM_PAYL_MASK, 0x0FFF_FFFF);
        assert_eq!(IO_RSP_ERRNO_MASK, 0x1ff);
        assert_eq!(IO_RSP_MSG_ID_MASK, 0x7ffff);
        assert_eq!(RTRS_HB_MSG_IMM_VAL, 0x8000_0000);
        assert_eq!(RTRS_HB_ACK_IMM_VAL, 0x9000_0000);
        assert_eq!(
            [
                RTRS_IO_REQ_IMM,
                RTRS_IO_RSP_IMM,
                RTRS_IO_RSP_W_INV_IMM,
                RTRS_HB_MSG_IMM,
                RTRS_HB_ACK_IMM,
                RTRS_LAST_IMM
            ],
            [0, 1, 2, 8, 9, 10]
        );
    }

    #[test]
    fn golden_raw_imm() {
        assert_eq!(rtrs_to_io_req_imm(0x0018_1020), 0x0018_1020);
        assert_eq!(rtrs_to_io_req_imm(0xffff_ffff), 0x0fff_ffff);
        assert_eq!(rtrs_to_imm(0x1f, 0xffff_ffff), 0xffff_ffff);
        assert_eq!(rtrs_to_imm(8, 0), 0x8000_0000);
        assert_eq!(rtrs_from_imm(0x9000_0001), (9, 1));
        assert_eq!(rtrs_from_imm(0xffff_ffff), (0xf, 0x0fff_ffff));
        assert_eq!(rtrs_from_imm(0), (0, 0));
        // Big-endian on the wire (cpu_to_be32): digest's "00 18 10 20".
        assert_eq!(0x0018_1020u32.to_be_bytes(), [0x00, 0x18, 0x10, 0x20]);
    }

    #[test]
    fn golden_io_rsp() {
        // (msg_id, errno, w_inval) -> imm -> (msg_id, errno), from the probe.
        let table: [(u32, i32, bool, u32, u32, i32); 16] = [
            (0, 0, false, 0x1000_0000, 0, 0),
            (0, 0, true, 0x2000_0000, 0, 0),
            (3, -5, false, 0x1028_0003, 3, -5),
            (3, -5, true, 0x2028_0003, 3, -5),
            (0x7ffff, -5, false, 0x102f_ffff, 0x7ffff, -5),
            (0x80000, -5, false, 0x1028_0000, 0, -5),
            (0xffff_ffff, -22, true, 0x20b7_ffff, 0x7ffff, -22),
            (3, -104, false, 0x1340_0003, 3, -104),
            (0x7ffff, -511, true, 0x2fff_ffff, 0x7ffff, -511),
            (3, -512, false, 0x1000_0003, 3, 0),
            (3, -513, false, 0x1008_0003, 3, -1),
            (3, 5, false, 0x1028_0003, 3, -5),
            (0, -2_147_483_647, false, 0x1ff8_0000, 0, -511),
            (0x7ffff, -2_147_483_647, true, 0x2fff_ffff, 0x7ffff, -511),
            (0, -22, false, 0x10b0_0000, 0, -22),
            // abs(INT_MIN) is UB in C; here it masks to 0.
            (1, i32::MIN, false, 0x1000_0001, 1, 0),
        ];
        for (id, e, w, imm, rid, re) in table {
            assert_eq!(rtrs_to_io_rsp_imm(id, e, w), imm, "{id:#x} {e} {w}");
            let (t, p) = rtrs_from_imm(imm);
            assert_eq!(t, if w { 2 } else { 1 });
            assert_eq!(rtrs_from_io_rsp_imm(p), (rid, re));
        }
    }

    #[test]
    fn golden_bits_and_mem_off() {
        for (n, bits) in [
            (0u32, 32u32),
            (1, 0),
            (2, 1),
            (3, 2),
            (4, 2),
            (5, 3),
            (4096, 12),
            (8192, 13),
            (131_072, 17),
            (131_073, 18),
            (1 << 28, 28),
            ((1 << 28) + 1, 29),
            (u32::MAX, 32),
        ] {
            assert_eq!(imm_bits(n), bits, "bits({n})");
        }
        // qd -> (chunk_bits, mem_bits, mem_off(qd - 1)), from the probe.
        for (qd, cb, mb, off) in [
            (1u32, 0u32, 28u32, 0u32),
            (2, 1, 27, 0x0800_0000),
            (3, 2, 26, 0x0800_0000),
            (4, 2, 26, 0x0c00_0000),
            (5, 3, 25, 0x0800_0000),
            (511, 9, 19, 0x0ff0_0000),
            (512, 9, 19, 0x0ff8_0000),
            (513, 10, 18, 0x0800_0000),
            (1024, 10, 18, 0x0ffc_0000),
            (65535, 16, 12, 0x0fff_e000),
        ] {
            assert_eq!(chunk_bits(qd), Ok(cb));
            assert_eq!(rtrs_permit_mem_off(qd, qd - 1), Ok(off));
            assert_eq!(rtrs_permit_mem_off(qd, 0), Ok(0));
            let l = layout(qd, 1 << mb);
            assert_eq!((MAX_IMM_PAYL_BITS - l.mem_bits, l.mem_bits), (cb, mb));
            assert_eq!(l.mem_off(qd - 1), Ok(off));
            assert_eq!(l.queue_depth(), qd);
            assert_eq!(l.chunk_size(), 1 << mb);
            // One byte more per chunk no longer fits.
            assert_eq!(
                RtrsChunkLayout::new(qd, (1 << mb) + 1),
                Err(WireError::ImmBudget {
                    count: qd,
                    chunk_size: (1 << mb) + 1
                })
            );
        }
        assert_eq!(
            chunk_bits(0),
            Err(WireError::BadQueueDepth { queue_depth: 0 })
        );
        assert!(chunk_bits(65536).is_err());
        assert_eq!(
            rtrs_permit_mem_off(4, 4),
            Err(WireError::BadMsgId {
                msg_id: 4,
                queue_depth: 4
            })
        );
        assert!(rtrs_permit_mem_off(0, 0).is_err());
    }

    #[test]
    fn digest_examples() {
        // qd 512: WRITE on permit 3, data 4096, usr_len 32.
        let l = layout(512, 131_072);
        assert_eq!(l.mem_off(3), Ok(3 << 19));
        let p = l.chunk(3).and_then(|c| c.plan_io_req(false, 4096, 32));
        assert_eq!(p.map(|p| p.imm), Ok(0x0018_1020));
        assert_eq!(split_io_req(&l, 0x0018_1020), (3, 4128));
        // A request IMM coming back to the client is of no known type.
        assert_eq!(
            RtrsImm::decode(0x0018_1020, 512),
            Err(ImmError::BadType { imm_type: 0 })
        );
        // Error response to msg 3 with -EIO, without and with invalidation.
        assert_eq!(
            RtrsImm::decode(0x1028_0003, 512),
            Ok(RtrsImm::IoRsp {
                msg_id: 3,
                errno: -5,
                w_inval: false
            })
        );
        assert_eq!(
            RtrsImm::decode(0x2028_0003, 512),
            Ok(RtrsImm::IoRsp {
                msg_id: 3,
                errno: -5,
                w_inval: true
            })
        );
    }

    #[test]
    fn layout_bounds() {
        let l = layout(512, 131_072);
        assert_eq!(
            l.chunk(512),
            Err(WireError::BadMsgId {
                msg_id: 512,
                queue_depth: 512
            })
        );
        assert_eq!(split_io_req(&l, 0x0018_1020), (3, 4128));
        assert_eq!(split_io_req(&l, 0xffff_ffff), (511, (1 << 19) - 1));
        // qd 1 uses the whole payload for the offset.
        let l1 = layout(1, 1 << 28);
        assert_eq!(split_io_req(&l1, 0x0fff_ffff), (0, 0x0fff_ffff));
        // Server limits: 65535 x 4096 fits exactly.
        let lmax = layout(65535, 4096);
        assert!(lmax.chunk(65534).is_ok());
        // Chunk size 0 never fits (bits(0) == 32).
        assert!(RtrsChunkLayout::new(1, 0).is_err());
        assert!(RtrsChunkLayout::new(0, 4096).is_err());
        assert!(RtrsChunkLayout::new(65536, 1).is_err());
        assert!(RtrsChunkLayout::new(1, u32::MAX).is_err());
    }

    #[test]
    fn decode_io_rsp_bounds() {
        for qd in [1u32, 2, 3, 4, 100, 512, 513, 4096, 65535] {
            for id in [0, qd / 2, qd - 1] {
                for errno in [0, -1, -5, -104, -511] {
                    for w_inval in [false, true] {
                        let v = RtrsImm::IoRsp {
                            msg_id: id,
                            errno,
                            w_inval,
                        };
                        assert_eq!(RtrsImm::decode(encode(v), qd), Ok(v), "qd {qd}");
                    }
                }
            }
            // The first id past the depth, and the largest the field holds.
            for id in [qd, IO_RSP_MSG_ID_MASK] {
                for w_inval in [false, true] {
                    assert_eq!(
                        RtrsImm::decode(rtrs_to_io_rsp_imm(id, -5, w_inval), qd),
                        Err(ImmError::BadMsgId {
                            msg_id: id,
                            w_inval
                        })
                    );
                }
            }
        }
    }

    /// Before the request slots exist (depth 0) no IO response is taken;
    /// heartbeats are.
    #[test]
    fn decode_without_slots() {
        for w_inval in [false, true] {
            assert_eq!(
                RtrsImm::decode(rtrs_to_io_rsp_imm(0, 0, w_inval), 0),
                Err(ImmError::BadMsgId { msg_id: 0, w_inval })
            );
        }
        assert_eq!(RtrsImm::decode(RTRS_HB_MSG_IMM_VAL, 0), Ok(RtrsImm::HbMsg));
        assert_eq!(RtrsImm::decode(RTRS_HB_ACK_IMM_VAL, 0), Ok(RtrsImm::HbAck));
        assert_eq!(
            RtrsImm::decode(0x3000_0000, 0),
            Err(ImmError::BadType { imm_type: 3 })
        );
    }

    #[test]
    fn decode_bad_types() {
        for t in [0u32, 3, 4, 5, 6, 7, 10, 11, 12, 13, 14, 15] {
            for payload in [0, 0x123, MAX_IMM_PAYL_MASK] {
                assert_eq!(
                    RtrsImm::decode(rtrs_to_imm(t, payload), 512),
                    Err(ImmError::BadType { imm_type: t })
                );
            }
        }
        // Heartbeats ignore their payload, as in C.
        assert_eq!(RtrsImm::decode(0x8000_0001, 512), Ok(RtrsImm::HbMsg));
        assert_eq!(RtrsImm::decode(0x9fff_ffff, 512), Ok(RtrsImm::HbAck));
    }

    /// Every 32-bit pattern class decodes without panic to the verdict its
    /// type and id call for; accepted IMMs re-encode to themselves
    /// (heartbeats to the canonical value).
    #[test]
    fn fuzz_decode_reencode() {
        let mut rng = Rng(0xdead_beef_cafe_f00d);
        let layouts = [
            layout(1, 1),
            layout(1, 1 << 28),
            layout(3, 8192),
            layout(512, 131_072),
            layout(512, 8192),
            layout(65535, 4096),
        ];
        // Accepted, bad id, bad type.
        let mut seen = [0u32; 3];
        for i in 0..200_000u32 {
            let imm = match i % 4 {
                0 => rng.next() as u32,
                1 => (rng.next() as u32) & 0x2fff_ffff,
                2 => (rng.next() as u32) & 0x0000_ffff,
                _ => i.wrapping_mul(0x0100_0193),
            };
            for qd in [0u32, 1, 3, 512, 65535] {
                let res = RtrsImm::decode(imm, qd);
                let (t, payload) = rtrs_from_imm(imm);
                let id = payload & IO_RSP_MSG_ID_MASK;
                match res {
                    Ok(v) => {
                        seen[0] += 1;
                        match v {
                            RtrsImm::HbMsg => assert_eq!(t, RTRS_HB_MSG_IMM),
                            RtrsImm::HbAck => assert_eq!(t, RTRS_HB_ACK_IMM),
                            RtrsImm::IoRsp { msg_id, .. } => {
                                assert!(msg_id < qd);
                                assert_eq!(encode(v), imm);
                            }
                        }
                    }
                    Err(ImmError::BadMsgId { msg_id, w_inval }) => {
                        seen[1] += 1;
                        assert!(t == RTRS_IO_RSP_IMM || t == RTRS_IO_RSP_W_INV_IMM);
                        assert_eq!((msg_id, w_inval), (id, t == RTRS_IO_RSP_W_INV_IMM));
                        assert!(msg_id >= qd);
                    }
                    Err(ImmError::BadType { imm_type }) => {
                        seen[2] += 1;
                        assert_eq!(imm_type, t);
                        assert!(![1, 2, 8, 9].contains(&t));
                    }
                }
            }
            for l in &layouts {
                let plan = l
                    .chunk(imm >> 16)
                    .and_then(|c| c.plan_io_req(false, (imm & 0xffff) as usize, 0));
                if let Ok(p) = plan {
                    assert_eq!(split_io_req(l, p.imm), (imm >> 16, imm & 0xffff));
                }
            }
            let _ = rtrs_from_io_rsp_imm(imm);
            let _ = RtrsChunkLayout::new(imm >> 8, imm);
            let _ = rtrs_permit_mem_off(imm >> 16, imm & 0xffff);
            assert_eq!(
                imm_bits(imm),
                if imm == 0 {
                    32
                } else {
                    32 - (imm - 1).leading_zeros()
                }
            );
        }
        assert!(seen.iter().all(|&n| n > 50_000), "{seen:?}");
    }

    /// `plan_io_req` against C: IMMs printed by a probe (built with gcc)
    /// of `rtrs_clt_{read,write}_req`'s arithmetic: `chunk_bits =
    /// ilog2(qd - 1) + 1`, `mem_off = id << (28 - chunk_bits)` and
    /// `rtrs_to_io_req_imm(mem_off + data_len + usr_len)`, at the layouts'
    /// edges; the size check at its bound for both directions.
    #[test]
    fn plan_io_req_golden() {
        let plan = |qd, chunk, id, read, data, usr| {
            layout(qd, chunk)
                .chunk(id)
                .and_then(|c| c.plan_io_req(read, data, usr))
        };
        let imm =
            |qd, chunk, id, read, data, usr| plan(qd, chunk, id, read, data, usr).map(|p| p.imm);
        // (qd, chunk_size, id, read, data_len, usr_len) -> IMM
        assert_eq!(imm(512, 128 << 10, 3, false, 4096, 32), Ok(0x0018_1020));
        assert_eq!(
            imm(512, 128 << 10, 511, false, 131_036, 32),
            Ok(0x0ff9_fffc)
        );
        assert_eq!(imm(512, 128 << 10, 511, true, 131_032, 32), Ok(0x0ff9_fff8));
        assert_eq!(imm(1, 1 << 28, 0, false, (1 << 28) - 4, 0), Ok(0x0fff_fffc));
        assert_eq!(imm(65535, 4096, 65534, false, 4092, 0), Ok(0x0fff_effc));
        assert_eq!(imm(65535, 4096, 65534, true, 4088, 0), Ok(0x0fff_eff8));
        assert_eq!(imm(3, 100_003, 2, false, 99_999, 0), Ok(0x0801_869f));
        assert_eq!(
            plan(512, 128 << 10, 3, false, 4096, 32),
            Ok(IoReqPlan {
                imm: 0x0018_1020,
                data_off: 4096,
                msg_off: 4096 + 32,
            })
        );
        // One byte over: sizeof(msg) + data_len + usr_len > chunk_size.
        let too_big = |read, size, chunk_size| {
            Err(WireError::IoChunkTooBig {
                read,
                size,
                chunk_size,
            })
        };
        assert_eq!(
            imm(512, 128 << 10, 511, false, 131_037, 32),
            too_big(false, 131_073, 131_072)
        );
        assert_eq!(
            imm(512, 128 << 10, 511, true, 131_033, 32),
            too_big(true, 131_073, 131_072)
        );
        assert_eq!(
            imm(3, 100_003, 2, false, 100_000, 0),
            too_big(false, 100_004, 100_003)
        );
        assert_eq!(
            imm(1, 4096, 0, true, usize::MAX, 1),
            too_big(true, usize::MAX, 4096)
        );
        assert_eq!(
            imm(1, 4096, 0, true, usize::MAX - 4, 0),
            too_big(true, usize::MAX, 4096)
        );
        // An id at the queue depth has no chunk.
        assert_eq!(
            imm(512, 128 << 10, 512, false, 0, 0),
            Err(WireError::BadMsgId {
                msg_id: 512,
                queue_depth: 512
            })
        );
    }

    /// `plan_io_req` over random requests and layouts at the IMM budget's
    /// edge: what passes fits its chunk and the server's split of its IMM
    /// gives back (id, `data_len + usr_len`); what is refused is too big.
    #[test]
    fn plan_io_req_splits_back() {
        let mut rng = Rng(0x10_7e9);
        let layouts = [
            layout(128, 128 << 10),
            layout(512, 64 << 10),
            layout(1, 4096),
            layout(65535, 4096),
            layout(512, 1 << 19),
            layout(1, 1 << 28),
            layout(3, 100_003),
            layout(4096, 1 << 16),
            layout(4097, 4095),
        ];
        let mut seen = [0u32; 2];
        for _ in 0..400_000 {
            let l = layouts[rng.index(layouts.len())];
            let read = rng.below(2) == 0;
            let id = rng.below(u64::from(l.queue_depth())) as u32;
            let cs = l.chunk_size() as usize;
            let (data_len, usr_len) = match rng.below(4) {
                0 => (rng.index(cs + 64), rng.index(512)),
                1 => (cs - 48 + rng.index(16), rng.index(40)),
                2 => (cs - 40 + rng.index(40), 0),
                _ => (usize::MAX - rng.index(4), rng.index(4)),
            };
            let msg = if read { 8 } else { 4 };
            let size = data_len
                .checked_add(usr_len)
                .and_then(|s| s.checked_add(msg));
            match l.chunk(id).unwrap().plan_io_req(read, data_len, usr_len) {
                Ok(p) => {
                    seen[0] += 1;
                    assert!(size.is_some_and(|s| s <= cs));
                    let off = (data_len + usr_len) as u32;
                    assert_eq!(p.imm >> MAX_IMM_PAYL_BITS, RTRS_IO_REQ_IMM);
                    assert_eq!(split_io_req(&l, p.imm), (id, off));
                    assert_eq!((p.data_off, p.msg_off), (data_len as u32, off));
                }
                Err(e) => {
                    seen[1] += 1;
                    let size = size.unwrap_or(usize::MAX);
                    assert!(size > cs);
                    assert_eq!(
                        e,
                        WireError::IoChunkTooBig {
                            read,
                            size,
                            chunk_size: l.chunk_size()
                        }
                    );
                }
            }
        }
        assert!(seen.iter().all(|&n| n > 1000), "{seen:?}");
    }
}
