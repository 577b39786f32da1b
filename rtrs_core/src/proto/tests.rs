// SPDX-License-Identifier: GPL-2.0

//! Host tests of `proto`.

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
    assert_eq!(RtrsMsgConnRsp::reject_errno(Some(&b)), Some(-errno::EBUSY));
    RtrsMsgConnRsp::reject(-6).encode(&mut b).unwrap();
    assert_eq!(RtrsMsgConnRsp::reject_errno(Some(&b)), Some(-6));
    assert_eq!(RtrsMsgConnRsp::reject_errno(Some(&b[..55])), None);
    assert_eq!(RtrsMsgConnRsp::reject_errno(None), None);
    assert_eq!(RtrsMsgConnRsp::reject_errno(Some(&[])), None);
    // Like C: magic not checked, a positive errno kept.
    let mut raw = [0u8; 148];
    raw[4] = 0x10;
    assert_eq!(RtrsMsgConnRsp::reject_errno(Some(&raw)), Some(16));
    raw[4] = 0;
    // errno 0 would be no error: malformed (C waits 30 s for nothing).
    assert_eq!(RtrsMsgConnRsp::reject_errno(Some(&raw)), None);
    raw[4] = 0;
    raw[5] = 0x80;
    assert_eq!(RtrsMsgConnRsp::reject_errno(Some(&raw)), Some(-32768));
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
        RtrsMsgConnRsp::accept(1, u32::MAX, 24, 0).path_params(0),
        Err(WireError::BadChunkSize {
            max_io_size: u32::MAX,
            max_hdr_size: 24
        })
    );
    // No request with data fits: refused (C takes them).
    assert_eq!(
        RtrsMsgConnRsp::accept(16, 0, 4096, 0).path_params(0),
        Err(WireError::BadMaxIoSize { max_io_size: 0 })
    );
    assert_eq!(
        RtrsMsgConnRsp::accept(16, 4096, 23, 0).path_params(0),
        Err(WireError::BadMaxHdrSize {
            max_hdr_size: 23,
            min: 24
        })
    );
    assert_eq!(
        RtrsMsgConnRsp::accept(16, 4096, 0, 0)
            .path_params(0)
            .unwrap_err()
            .errno(),
        -104
    );
    assert!(RtrsMsgConnRsp::accept(16, 1, 24, 0).path_params(0).is_ok());
    // 65535 buffers need 16 bits: chunks up to 4096 fit, 8192 do not.
    assert!(RtrsMsgConnRsp::accept(65535, 4072, 24, 0)
        .path_params(0)
        .is_ok());
    assert_eq!(
        RtrsMsgConnRsp::accept(65535, 4096, 4096, 0).path_params(0),
        Err(WireError::ImmBudget {
            count: 65535,
            chunk_size: 8192
        })
    );
    // max_io_size + max_hdr_size == 0: refused.
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
        assert!(RtrsMsgInfoRsp::encode_with_descs(&descs, &mut vec![0u8; b.len() - 1]).is_err());
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
    assert!(check_io_chunk(false, 131_072 - 36, 32, 131_072).is_ok());
    assert!(check_io_chunk(false, 131_072 - 35, 32, 131_072).is_err());
    assert!(check_io_chunk(true, 131_072 - 40, 32, 131_072).is_ok());
    assert!(check_io_chunk(true, 131_072 - 39, 32, 131_072).is_err());
    assert!(check_io_chunk(true, usize::MAX, usize::MAX, 131_072).is_err());
    assert_eq!(
        check_io_chunk(true, 131_072 - 39, 32, 131_072).map(|_| ()),
        Err(WireError::IoChunkTooBig {
            read: true,
            size: 131_073,
            chunk_size: 131_072
        })
    );
}

/// The chunk size check as the module runs it: `plan_io_req` on chunk 0
/// of a one-slot layout of `chunk_size`.
fn check_io_chunk(
    read: bool,
    data_len: usize,
    usr_len: usize,
    chunk_size: u32,
) -> Result<crate::imm::IoReqPlan, WireError> {
    crate::imm::RtrsChunkLayout::new(1, chunk_size)
        .and_then(|l| l.chunk(0))
        .and_then(|c| c.plan_io_req(read, data_len, usr_len))
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
        (
            WireError::BadMsgId {
                msg_id: 1,
                queue_depth: 1,
            },
            -71,
        ),
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

fn path_limits(queue_depth: u32, max_io_size: u32, max_pages_per_mr: u32) -> RtrsCltPathLimits {
    RtrsCltPathLimits {
        queue_depth,
        max_io_size,
        max_pages_per_mr,
    }
}

fn limits(queue_depth: u32, max_io_size: u32, max_segments: u32) -> RtrsCltLimits {
    RtrsCltLimits {
        queue_depth,
        max_io_size,
        max_segments,
    }
}

#[test]
fn clt_limits_merge() {
    let mut l = RtrsCltLimits::new();
    assert_eq!(l, limits(0, 0, RTRS_MAX_SEGMENTS));
    assert_eq!(RtrsCltLimits::default(), l);
    // The server's defaults over rxe: 512 chunks of 128 KiB.
    l.merge(&path_limits(512, 128 << 10, 0x7fff_ffff));
    assert_eq!(l, limits(512, 128 << 10, 128));
    // A path without max_io_size leaves it; the queue depth is the last
    // path's, max_segments the smallest.
    l.merge(&path_limits(256, 0, 64));
    assert_eq!(l, limits(256, 128 << 10, 64));
    // A larger one leaves it, a smaller non-zero one lowers it.
    l.merge(&path_limits(512, 1 << 20, 100));
    assert_eq!(l, limits(512, 128 << 10, 64));
    l.merge(&path_limits(512, 4096, 0));
    assert_eq!(l, limits(512, 4096, 0));
    // All paths without max_io_size: 0; the first non-zero one sets it.
    let mut z = RtrsCltLimits::new();
    z.merge(&path_limits(1, 0, 128));
    z.merge(&path_limits(2, 0, 256));
    assert_eq!(z, limits(2, 0, 128));
    z.merge(&path_limits(3, u32::MAX, 128));
    assert_eq!(z, limits(3, u32::MAX, 128));
}

/// `min_t(int, max_io_size, max_segments * SZ_4K)` as C computes it.
fn c_query_max_io_size(max_io_size: u32, max_segments: u32) -> u32 {
    (max_io_size as i32).min(max_segments.wrapping_mul(4096) as i32) as u32
}

#[test]
fn clt_limits_query_max_io_size() {
    for (mis, seg, want) in [
        (128 << 10, 128, 128 << 10),
        (1 << 20, 128, 512 << 10),
        (512 << 10, 128, 512 << 10),
        // No path gave a max_io_size, or no MR page.
        (0, 128, 0),
        (128 << 10, 0, 0),
        (4095, 1, 4095),
        // The product saturates where C's wraps.
        (u32::MAX, u32::MAX, i32::MAX as u32),
        (1 << 20, 1 << 20, 1 << 20),
        (1 << 30, (1 << 20) + 1, 1 << 30),
        // Above i32::MAX: clamped where C's int goes negative.
        (0x8000_0000, 1 << 20, 0x7fff_ffff),
        (u32::MAX, 0x7ffff, 0x7ffff000),
    ] {
        assert_eq!(
            limits(1, mis, seg).query_max_io_size(),
            want,
            "{mis:#x} {seg:#x}"
        );
    }
    // Where C's int stays positive, the same result.
    let mut rng = Rng(0x5eed_1eaf);
    for _ in 0..100_000 {
        let mis = (rng.next() as u32) & 0x7fff_ffff;
        let seg = (rng.next() as u32) % 0x8_0000;
        let seg = if rng.below(2) == 0 { seg % 257 } else { seg };
        assert_eq!(
            limits(1, mis, seg).query_max_io_size(),
            c_query_max_io_size(mis, seg),
            "{mis:#x} {seg:#x}"
        );
    }
}

#[test]
fn clt_con_queues() {
    // cid 0: the service connection, whatever the path's depth.
    for qd in [0u32, 1, 512, 65535, u32::MAX] {
        assert_eq!(
            RtrsCltConQueues::new(0, qd),
            Ok(RtrsCltConQueues {
                max_send_wr: 1026,
                max_recv_wr: 1026,
                max_send_sge: 1,
                recv_posted: 1024,
            })
        );
    }
    for (cid, qd, send, recv) in [
        (1u16, 1u32, 5u32, 4u32),
        (1, 128, 513, 385),
        (7, 512, 2049, 1537),
        (u16::MAX, 65535, 262_141, 196_606),
    ] {
        assert_eq!(
            RtrsCltConQueues::new(cid, qd),
            Ok(RtrsCltConQueues {
                max_send_wr: send,
                max_recv_wr: recv,
                max_send_sge: 2,
                recv_posted: 2 * qd,
            })
        );
    }
    // An IO connection needs a depth, and one whose WRs fit u32.
    for qd in [0u32, 0x4000_0000, u32::MAX] {
        assert_eq!(
            RtrsCltConQueues::new(1, qd),
            Err(WireError::BadQueueDepth { queue_depth: qd })
        );
    }
    let top = (u32::MAX - 1) / 4;
    assert_eq!(
        RtrsCltConQueues::new(1, top).map(|q| q.max_send_wr),
        Ok(u32::MAX - 2)
    );
}

#[test]
fn clt_con_queues_device_limits() {
    let io = RtrsCltConQueues::new(1, 512).unwrap();
    let svc = RtrsCltConQueues::new(0, 512).unwrap();
    // rxe: max_qp_wr 1048576, max_cqe 1048575.
    assert_eq!(io.qp_wrs(1 << 20), (2049, 1537));
    assert_eq!(io.cq_num(1 << 20, (1 << 20) - 1), 3586);
    assert_eq!(svc.qp_wrs(1 << 20), (1026, 1026));
    assert_eq!(svc.cq_num(1 << 20, (1 << 20) - 1), 2052);
    // A smaller device caps each queue, then the CQ.
    assert_eq!(io.qp_wrs(1024), (1024, 1024));
    assert_eq!(io.cq_num(1024, 4096), 2048);
    assert_eq!(io.cq_num(1024, 1500), 1500);
    assert_eq!(svc.qp_wrs(2000), (1026, 1026));
    // Negative limits count as 0.
    assert_eq!(io.qp_wrs(-1), (0, 0));
    assert_eq!(io.cq_num(1 << 20, -1), 0);
    // The largest sizes under i32::MAX do not overflow the CQ size.
    let big = RtrsCltConQueues::new(1, (u32::MAX - 1) / 4).unwrap();
    assert_eq!(big.qp_wrs(i32::MAX), (i32::MAX as u32, i32::MAX as u32));
    assert_eq!(big.cq_num(i32::MAX, i32::MAX), i32::MAX as u32);
}

#[test]
fn copy_bytes_copies_what_both_hold() {
    let mut d = [0u8; 4];
    copy_bytes(&mut d, &[1, 2, 3, 4]);
    assert_eq!(d, [1, 2, 3, 4]);
    let mut d = [9u8; 4];
    copy_bytes(&mut d, &[1, 2]);
    assert_eq!(d, [1, 2, 9, 9]);
    let mut d = [9u8; 2];
    copy_bytes(&mut d, &[1, 2, 3]);
    assert_eq!(d, [1, 2]);
    copy_bytes(&mut [], &[1]);
}

#[test]
fn split_at_mut_checked_splits_within_bounds() {
    let mut b = [1u8, 2, 3];
    for mid in 0..=3 {
        let (l, r) = split_at_mut_checked(&mut b, mid).unwrap();
        assert_eq!((l.len(), r.len()), (mid, 3 - mid));
        assert_eq!(l.first().or(r.first()), Some(&1));
    }
    assert!(split_at_mut_checked(&mut b, 4).is_none());
    assert!(split_at_mut_checked(&mut b, usize::MAX).is_none());
    assert_eq!(
        split_at_mut_checked(&mut [], 0).map(|(l, r)| l.len() + r.len()),
        Some(0)
    );
}

/// `ib_inc_rkey` then `ib_update_fast_reg_key`, as ib_verbs.h writes them.
#[test]
fn fast_reg_keys_as_ib_verbs() {
    fn c(lkey: u32, rkey: u32) -> (u32, u32) {
        let inc = (rkey.wrapping_add(1) & 0xff) | (rkey & !0xff);
        let newkey = inc as u8;
        (
            (lkey & 0xffff_ff00) | u32::from(newkey),
            (rkey & 0xffff_ff00) | u32::from(newkey),
        )
    }
    assert_eq!(
        fast_reg_keys(0x1234_5600, 0x1234_5600),
        (0x1234_5601, 0x1234_5601)
    );
    assert_eq!(
        fast_reg_keys(0xaaaa_aa07, 0x0000_12ff),
        (0xaaaa_aa00, 0x0000_1200)
    );
    let mut rng = crate::test_rng::Rng(0xfa57);
    for _ in 0..100_000 {
        let (l, r) = (rng.next() as u32, rng.next() as u32);
        assert_eq!(fast_reg_keys(l, r), c(l, r));
    }
}
