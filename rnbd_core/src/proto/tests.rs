// SPDX-License-Identifier: GPL-2.0

use super::*;

#[test]
fn sizes_are_the_c_structs() {
    // BUILD_BUG_ONs of rnbd-srv.c, and rnbd_msg_io's 8-byte alignment.
    assert_eq!(MsgSessInfo::LEN, 36);
    assert_eq!(MsgOpen::LEN, 264);
    assert_eq!(MsgClose::LEN, 8);
    assert_eq!(MsgOpenRsp::LEN, 56);
    assert_eq!(MsgIo::LEN, 32);
}

#[test]
fn sess_info_bytes_and_negotiation() {
    let b = MsgSessInfo::new().encode();
    assert_eq!(&b[..5], &[0, 0, 0, 0, 2]);
    assert!(b[5..].iter().all(|&x| x == 0));

    let mut rsp = [0u8; 36];
    rsp[0] = MsgType::SessInfoRsp as u8;
    rsp[4] = 7;
    assert_eq!(MsgSessInfo::decode_rsp(&rsp).unwrap().negotiated(), 2);
    rsp[4] = 1;
    assert_eq!(MsgSessInfo::decode_rsp(&rsp).unwrap().negotiated(), 1);
    assert_eq!(
        MsgSessInfo::decode_rsp(&rsp[..35]),
        Err(RnbdWireError::Truncated { need: 36, have: 35 })
    );
    rsp[0] = MsgType::OpenRsp as u8;
    let e = MsgSessInfo::decode_rsp(&rsp).unwrap_err();
    assert_eq!(
        e,
        RnbdWireError::BadType {
            expected: 1,
            found: 3
        }
    );
    assert_eq!(e.errno(), -71);
}

#[test]
fn open_bytes() {
    let m = MsgOpen::new(AccessMode::Ro, b"/dev/ram0").unwrap();
    let b = m.encode();
    assert_eq!(&b[..4], &[2, 0, 0, 0]);
    assert_eq!(b[4], 0);
    assert_eq!(b[5], 0);
    assert_eq!(&b[6..15], b"/dev/ram0");
    assert!(b[15..].iter().all(|&x| x == 0));
    assert_eq!(m.dev_name(), b"/dev/ram0");
    assert_eq!(
        MsgOpen::new(AccessMode::Migration, b"x").unwrap().encode()[4],
        2
    );

    // 254 bytes and a NUL fill dev_name; 255 do not fit.
    assert!(MsgOpen::new(AccessMode::Rw, &[b'a'; 254]).is_ok());
    let e = MsgOpen::new(AccessMode::Rw, &[b'a'; 255]).unwrap_err();
    assert_eq!(e, RnbdWireError::BadDevName { len: 255 });
    assert_eq!(e.errno(), -22);
    assert!(MsgOpen::new(AccessMode::Rw, b"").is_err());
    assert!(MsgOpen::new(AccessMode::Rw, b"a\0b").is_err());
}

#[test]
fn close_bytes() {
    assert_eq!(
        MsgClose {
            device_id: 0x01020304
        }
        .encode(),
        [5, 0, 0, 0, 4, 3, 2, 1]
    );
}

#[test]
fn open_rsp_fields_at_their_offsets() {
    let r = MsgOpenRsp {
        device_id: 0x11223344,
        nsectors: 0x0102030405060708,
        max_hw_sectors: 0x21,
        max_write_zeroes_sectors: 0x22,
        max_discard_sectors: 0x23,
        discard_granularity: 0x24,
        discard_alignment: 0x25,
        physical_block_size: 0x31,
        logical_block_size: 0x32,
        max_segments: 0x33,
        secure_discard: 0x34,
        obsolete_rotational: 0x41,
        cache_policy: RNBD_FUA | RNBD_WRITEBACK,
    };
    let b = r.encode();
    assert_eq!(&b[..4], &[3, 0, 0, 0]);
    assert_eq!(&b[4..8], &[0x44, 0x33, 0x22, 0x11]);
    assert_eq!(&b[8..16], &[8, 7, 6, 5, 4, 3, 2, 1]);
    assert_eq!(b[16], 0x21);
    assert_eq!(b[32], 0x25);
    assert_eq!(b[36], 0x31);
    assert_eq!(b[42], 0x34);
    assert_eq!(b[44], 0x41);
    assert_eq!(b[45], 3);
    assert!(b[46..].iter().all(|&x| x == 0));
    assert_eq!(MsgOpenRsp::decode(&b), Ok(r));
    assert_eq!(
        MsgOpenRsp::decode(&b[..55]),
        Err(RnbdWireError::Truncated { need: 56, have: 55 })
    );
    let mut bad = b;
    bad[0] = 1;
    assert!(matches!(
        MsgOpenRsp::decode(&bad),
        Err(RnbdWireError::BadType { .. })
    ));
}

#[test]
fn io_bytes() {
    let m = MsgIo {
        device_id: 7,
        sector: 1 << 40,
        rw: RNBD_F_FUA | 1,
        bi_size: 4096,
        prio: 0x4003,
    };
    let b = m.encode();
    assert_eq!(&b[..4], &[4, 0, 0, 0]);
    assert_eq!(&b[4..8], &[7, 0, 0, 0]);
    assert_eq!(&b[8..16], &[0, 0, 0, 0, 0, 1, 0, 0]);
    assert_eq!(&b[16..20], &[1, 2, 0, 0]);
    assert_eq!(&b[20..24], &[0, 0x10, 0, 0]);
    assert_eq!(&b[24..26], &[3, 0x40]);
    assert_eq!(&b[26..], &[0; 6]);
    assert_eq!(MsgIo::decode(&b), Ok(m));
    // encode_into clears what a previous request left.
    let mut buf = [0xffu8; 32];
    m.encode_into(&mut buf);
    assert_eq!(buf, b);
}

#[test]
fn rw_flags_are_rq_to_rnbd_flags() {
    assert_eq!(rnbd_rw(BlkOp::Read, true, false), Some(RNBD_F_SYNC));
    assert_eq!(rnbd_rw(BlkOp::Write, false, false), Some(1));
    assert_eq!(
        rnbd_rw(BlkOp::Write, true, true),
        Some(1 | RNBD_F_SYNC | RNBD_F_FUA)
    );
    assert_eq!(rnbd_rw(BlkOp::Flush, true, true), Some(2 | (3 << 8)));
    assert_eq!(rnbd_rw(BlkOp::Discard, false, false), Some(3));
    assert_eq!(rnbd_rw(BlkOp::SecureErase, false, false), Some(4));
    assert_eq!(rnbd_rw(BlkOp::WriteZeroes, false, false), Some(5));
    assert_eq!(rnbd_rw(BlkOp::Other, true, true), None);
    assert!(BlkOp::Read.has_segments() && BlkOp::Write.has_segments());
    assert!(!BlkOp::Flush.has_segments() && !BlkOp::Discard.has_segments());
    assert!(!BlkOp::WriteZeroes.has_segments() && !BlkOp::SecureErase.has_segments());
}

#[test]
fn access_mode_names() {
    for m in [AccessMode::Ro, AccessMode::Rw, AccessMode::Migration] {
        assert_eq!(AccessMode::from_name(m.as_str().as_bytes()), Some(m));
    }
    assert_eq!(AccessMode::from_name(b"RW"), None);
    assert_eq!(AccessMode::from_name(b"rw "), None);
}
