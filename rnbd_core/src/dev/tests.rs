// SPDX-License-Identifier: GPL-2.0

use std::vec::Vec;

use super::*;
use crate::proto::MsgOpenRsp;

const ALL: [DevState; 4] = [
    DevState::Init,
    DevState::Mapped,
    DevState::MappedDisconnected,
    DevState::Unmapped,
];

#[test]
fn state_files_and_io() {
    let names: Vec<_> = ALL.iter().map(|s| s.sysfs_str()).collect();
    assert_eq!(names, ["init", "open", "closed", "unmapped"]);
    assert_eq!(ALL.map(|s| s.takes_io()), [false, true, false, false]);
    assert_eq!(ALL.map(|s| s.may_open()), [true, true, true, false]);
    assert_eq!(
        ALL.map(|s| s.remapped_on_reconnect()),
        [false, true, true, true]
    );
}

#[test]
fn disconnect_moves_mapped_devices_only() {
    assert_eq!(
        DevState::Mapped.disconnected(),
        (DevState::MappedDisconnected, true)
    );
    for s in [
        DevState::Init,
        DevState::MappedDisconnected,
        DevState::Unmapped,
    ] {
        assert_eq!(s.disconnected(), (s, false));
    }
}

#[test]
fn unmap_rules() {
    assert_eq!(DevState::Mapped.unmap(false, 0), Ok(true));
    assert_eq!(DevState::MappedDisconnected.unmap(false, 0), Ok(false));
    assert_eq!(DevState::Init.unmap(true, 3), Ok(false));
    assert_eq!(DevState::Mapped.unmap(true, 2), Ok(true));
    let e = DevState::Mapped.unmap(false, 2).unwrap_err();
    assert_eq!(e.errno(), -16);
    assert_eq!(
        std::format!("{e}"),
        "Closing device failed, device is in use, (2 device users)"
    );
    for force in [false, true] {
        assert_eq!(DevState::Unmapped.unmap(force, 0), Err(UnmapError::Already));
    }
    assert_eq!(UnmapError::Already.errno(), -114);
}

#[test]
fn remap_and_resize_rules() {
    assert_eq!(
        ALL.map(|s| s.remap()),
        [Err(-16), Err(-114), Ok(()), Err(-19)]
    );
    assert_eq!(ALL.map(|s| s.resize()), [Err(-2), Ok(()), Err(-2), Err(-2)]);
}

#[test]
fn open_rsp_verdicts() {
    let good = MsgOpenRsp {
        logical_block_size: 512,
        ..Default::default()
    };
    let bad = MsgOpenRsp {
        logical_block_size: 0,
        ..Default::default()
    };
    assert_eq!(
        DevState::Init.open_rsp(&good),
        OpenRspVerdict::Mapped { online: false }
    );
    assert_eq!(
        DevState::Mapped.open_rsp(&good),
        OpenRspVerdict::Mapped { online: false }
    );
    assert_eq!(
        DevState::MappedDisconnected.open_rsp(&good),
        OpenRspVerdict::Mapped { online: true }
    );
    assert_eq!(DevState::Unmapped.open_rsp(&good), OpenRspVerdict::Unmapped);
    assert_eq!(
        DevState::Init.open_rsp(&bad),
        OpenRspVerdict::BadBlockSize { online: false }
    );
    assert_eq!(
        DevState::MappedDisconnected.open_rsp(&bad),
        OpenRspVerdict::BadBlockSize { online: true }
    );
    assert_eq!(DevState::Unmapped.open_rsp(&bad), OpenRspVerdict::Unmapped);
}

#[test]
fn limits_from_the_answer_and_the_session() {
    let rsp = MsgOpenRsp {
        device_id: 3,
        nsectors: 131072,
        max_hw_sectors: 9999,
        max_write_zeroes_sectors: 77,
        max_discard_sectors: 4096,
        discard_granularity: 512,
        discard_alignment: 0,
        physical_block_size: 4096,
        logical_block_size: 512,
        max_segments: 9999,
        secure_discard: 1,
        obsolete_rotational: 1,
        cache_policy: RNBD_WRITEBACK | RNBD_FUA,
    };
    let l = DiskLimits::new(&rsp, 126976, 31);
    // The answer's max_hw_sectors and max_segments are not used.
    assert_eq!(l.max_hw_sectors, 248);
    assert_eq!(l.io_opt, 126976);
    assert_eq!(l.max_segments, 31);
    assert_eq!(l.max_secure_erase_sectors, 4096);
    assert_eq!((l.write_cache, l.fua), (true, true));
    assert_eq!((l.logical_block_size, l.physical_block_size), (512, 4096));
    assert_eq!(
        (l.max_hw_discard_sectors, l.discard_granularity),
        (4096, 512)
    );
    assert_eq!(
        (l.max_write_zeroes_sectors, l.nsectors, l.virt_boundary_mask),
        (77, 131072, 4095)
    );

    // FUA only with a write cache; no secure erase without secure_discard.
    let l = DiskLimits::new(
        &MsgOpenRsp {
            cache_policy: RNBD_FUA,
            secure_discard: 0,
            ..rsp
        },
        4096,
        1,
    );
    assert_eq!(
        (l.write_cache, l.fua, l.max_secure_erase_sectors),
        (false, false, 0)
    );
    let l = DiskLimits::new(
        &MsgOpenRsp {
            cache_policy: RNBD_WRITEBACK,
            ..rsp
        },
        4096,
        1,
    );
    assert_eq!((l.write_cache, l.fua), (true, false));
}

#[test]
fn sysfs_values() {
    assert_eq!(unmap_opt(b"normal\n"), Some(false));
    assert_eq!(unmap_opt(b"  force "), Some(true));
    assert_eq!(unmap_opt(b"Force"), None);
    assert_eq!(unmap_opt(b"normal force"), None);
    assert_eq!(unmap_opt(b""), None);
    assert!(remap_opt(b"1\n"));
    assert!(!remap_opt(b"01"));
    assert!(!remap_opt(b"2"));
}

#[test]
fn resize_is_kstrtoul() {
    assert_eq!(resize_opt(b"2048\n"), Ok(2048));
    assert_eq!(resize_opt(b"+0x800"), Ok(2048));
    assert_eq!(resize_opt(b"04000"), Ok(2048));
    assert_eq!(resize_opt(b"0"), Ok(0));
    assert_eq!(resize_opt(b"18446744073709551615"), Ok(u64::MAX));
    assert_eq!(resize_opt(b"18446744073709551616"), Err(-34));
    // Overflow wins over what follows the digits, as in C.
    assert_eq!(resize_opt(b"99999999999999999999x"), Err(-34));
    for bad in [
        &b""[..],
        b" 1",
        b"1 ",
        b"1\n\n",
        b"-1",
        b"0x",
        b"08",
        b"1k",
        b"\n",
    ] {
        assert_eq!(resize_opt(bad), Err(-22), "{:?}", bad);
    }
    assert_eq!(resize_opt(b"12\0garbage"), Ok(12));
}

#[test]
fn symlink_names() {
    let n = SymlinkName {
        pathname: b"/dev/ram0",
        sessname: b"s1",
    };
    let mut v = Vec::new();
    n.write_bytes(|c| v.push(c));
    assert_eq!(v, b"!dev!ram0@s1");
    assert_eq!(n.byte_len(), v.len());
    // C's clash: two paths that differ only in '/' and '!'.
    let mut w = Vec::new();
    SymlinkName {
        pathname: b"!dev/ram0",
        sessname: b"s1",
    }
    .write_bytes(|c| w.push(c));
    assert_eq!(v, w);
    let n2 = SymlinkName {
        pathname: b"!dev/ram0",
        sessname: b"s1",
    };
    assert!(n.same_as(&n2) && n2.same_as(&n));
    assert!(!n.same_as(&SymlinkName {
        pathname: b"/dev/ram1",
        sessname: b"s1"
    }));
    assert!(!n.same_as(&SymlinkName {
        pathname: b"/dev/ram0",
        sessname: b"s2"
    }));
    // The '@' is where it is: "a@b" + "c" is not "a" + "b@c".
    let x = SymlinkName {
        pathname: b"a@b",
        sessname: b"c",
    };
    let y = SymlinkName {
        pathname: b"a",
        sessname: b"b@c",
    };
    assert!(x.same_as(&y), "C's names are equal strings here too");
}

#[test]
fn usage_texts() {
    assert!(usage::MAP_DEVICE.ends_with("gid:<gid> ]\n"));
    assert!(usage::MAP_DEVICE.contains("\" > map_device\n\naddr ::= "));
}
