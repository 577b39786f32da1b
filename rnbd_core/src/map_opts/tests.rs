// SPDX-License-Identifier: GPL-2.0

use std::string::{String, ToString};
use std::vec::Vec;

use super::*;

/// A path as the fake address parser keeps it: its text and port.
type P = (String, u16);

fn fake_path(s: &[u8], port: u16) -> Result<P, i32> {
    let s = core::str::from_utf8(s).map_err(|_| -22)?;
    if s.starts_with("ip:") || s.starts_with("gid:") {
        Ok((s.to_string(), port))
    } else {
        Err(-22)
    }
}

fn parse(s: &str) -> Result<MapOpts<P>, (i32, String)> {
    parse_map_options(s.as_bytes(), 4, fake_path).map_err(|e| (e.errno(), e.to_string()))
}

fn err(s: &str) -> (i32, String) {
    parse(s).unwrap_err()
}

#[test]
fn a_plain_map() {
    let o = parse("sessname=s1 path=ip:10.0.0.1 device_path=/dev/ram0\n").unwrap();
    assert_eq!(o.sessname.as_bytes(), b"s1");
    assert_eq!(o.pathname.as_bytes(), b"/dev/ram0");
    assert_eq!(
        o.paths().cloned().collect::<Vec<_>>(),
        [("ip:10.0.0.1".to_string(), 1234)]
    );
    assert_eq!(o.port, RTRS_PORT);
    assert_eq!(o.access_mode, AccessMode::Rw);
    assert_eq!(o.nr_poll_queues, 0);
}

#[test]
fn spacing_order_and_overrides() {
    // Surrounding white space goes; runs of spaces are empty pieces.
    let o = parse(" \t sessname=a   sessname=b device_path=x path=ip:1.1.1.1 access_mode=ro \n")
        .unwrap();
    assert_eq!(o.sessname.as_bytes(), b"b");
    assert_eq!(o.access_mode, AccessMode::Ro);
    // A tab inside is no separator: it is part of the value.
    assert_eq!(
        parse("sessname=a\tb device_path=x")
            .unwrap()
            .sessname
            .as_bytes(),
        b"a\tb"
    );
    // Everything after a NUL is ignored, as C's string is.
    assert!(parse("sessname=a device_path=x\0 bogus").is_ok());
    // No path is not the parser's concern.
    assert_eq!(parse("device_path=x sessname=a").unwrap().path_cnt, 0);
}

#[test]
fn dest_port_applies_to_the_paths_after_it() {
    let o = parse("path=ip:1.1.1.1 dest_port=0x10 path=ip:2.2.2.2 dest_port=010 path=gid:x sessname=s device_path=d").unwrap();
    let ports: Vec<u16> = o.paths().map(|p| p.1).collect();
    assert_eq!(ports, [1234, 16, 8]);
    assert_eq!(o.port, 8);
    assert_eq!(
        parse("dest_port=65535 sessname=s device_path=d")
            .unwrap()
            .port,
        65535
    );
    assert_eq!(
        parse("dest_port=0 sessname=s device_path=d").unwrap().port,
        0
    );
}

#[test]
fn bad_ports_print_the_last_number_read() {
    assert_eq!(
        err("dest_port=65536"),
        (-22, "bad destination port number parameter '65536'".into())
    );
    assert_eq!(
        err("dest_port=-16"),
        (-22, "bad destination port number parameter '-16'".into())
    );
    assert_eq!(
        err("dest_port=-0x10"),
        (-22, "bad destination port number parameter '-16'".into())
    );
    // A lone '-' passes match_token (simple_strtol reads it) and fails
    // match_int, so C prints the port read before: none, 0; else that one.
    assert_eq!(
        err("dest_port=-"),
        (-22, "bad destination port number parameter '0'".into())
    );
    assert_eq!(
        err("dest_port=99 dest_port=-"),
        (-22, "bad destination port number parameter '99'".into())
    );
    // Beyond int: match_int's -ERANGE.
    assert_eq!(
        err("dest_port=4294967296"),
        (-22, "bad destination port number parameter '0'".into())
    );
    // Not a whole number: no token matched.
    for s in [
        "dest_port=",
        "dest_port=+5",
        "dest_port=5x",
        "dest_port=08",
        "dest_port=0x",
        "dest_port=--5",
    ] {
        let (e, m) = err(s);
        assert_eq!(e, -22, "{s}");
        assert_eq!(
            m,
            std::format!("map_device: Unknown parameter or missing value '{s}'")
        );
    }
}

#[test]
fn names_keep_254_bytes_and_refuse_256() {
    let n254 = "a".repeat(254);
    let n255 = "b".repeat(255);
    let n256 = "c".repeat(256);
    let o = parse(&std::format!("sessname={n255} device_path={n254}")).unwrap();
    // strscpy into NAME_MAX bytes: 255 characters are cut to 254.
    assert_eq!(o.sessname.as_bytes(), &n255.as_bytes()[..254]);
    assert_eq!(o.pathname.as_bytes(), n254.as_bytes());
    assert_eq!(
        err(&std::format!("sessname={n256} device_path=d")),
        (-22, "map_device: sessname too long".into())
    );
    assert_eq!(
        err(&std::format!("sessname=s device_path={n256}")),
        (-22, "map_device: Device path too long".into())
    );
}

#[test]
fn paths() {
    let six = "path=ip:1.1.1.1 ".repeat(6);
    assert_eq!(
        parse(&std::format!("{six}sessname=s device_path=d"))
            .unwrap()
            .path_cnt,
        6
    );
    assert_eq!(
        err(&std::format!(
            "{six}path=ip:1.1.1.1 sessname=s device_path=d"
        )),
        (-12, "map_device: too many (> 6) paths provided".into())
    );
    assert_eq!(
        err("path=bogus sessname=s"),
        (-22, "Can't parse path bogus: -22".into())
    );
    assert_eq!(
        err("path= sessname=s").1,
        "map_device: Unknown parameter or missing value 'path='"
    );
}

#[test]
fn access_modes_and_poll_queues() {
    assert_eq!(
        parse("access_mode=migration sessname=s device_path=d")
            .unwrap()
            .access_mode,
        AccessMode::Migration
    );
    assert_eq!(
        err("access_mode=RW"),
        (-22, "map_device: Invalid access_mode: 'RW'".into())
    );
    assert_eq!(
        parse("nr_poll_queues=-1 sessname=s device_path=d")
            .unwrap()
            .nr_poll_queues,
        4
    );
    assert_eq!(
        parse("nr_poll_queues=4 sessname=s device_path=d")
            .unwrap()
            .nr_poll_queues,
        4
    );
    assert_eq!(
        err("nr_poll_queues=5"),
        (-22, "bad nr_poll_queues parameter '5'".into())
    );
    assert_eq!(
        err("nr_poll_queues=-2"),
        (-22, "bad nr_poll_queues parameter '-2'".into())
    );
    // After -1, C's variable holds the CPU count, which a later bad value prints.
    assert_eq!(
        err("nr_poll_queues=-1 nr_poll_queues=-"),
        (-22, "bad nr_poll_queues parameter '4'".into())
    );
}

#[test]
fn unknown_and_missing() {
    assert_eq!(
        err("sessname=s device_path=d foo=1"),
        (
            -22,
            "map_device: Unknown parameter or missing value 'foo=1'".into()
        )
    );
    assert_eq!(err("sessname=s device_path=d Sessname=x").0, -22);
    assert_eq!(
        err("sessname=s"),
        (-22, "map_device: Parameters missing".into())
    );
    assert_eq!(
        err("device_path=d"),
        (-22, "map_device: Parameters missing".into())
    );
    assert_eq!(err(""), (-22, "map_device: Parameters missing".into()));
    assert_eq!(err(" \n"), (-22, "map_device: Parameters missing".into()));
    // The first bad piece wins, before the mandatory check.
    assert_eq!(
        err("x y").1,
        "map_device: Unknown parameter or missing value 'x'"
    );
    // Bytes that are not UTF-8 print as U+FFFD.
    let e = parse_map_options(b"a\xffb", 4, fake_path).unwrap_err();
    assert_eq!(
        e.to_string(),
        "map_device: Unknown parameter or missing value 'a\u{fffd}b'"
    );
}

#[test]
fn numbers_are_read_as_the_kernel_reads_them() {
    for (s, n) in [
        ("0", 0),
        ("10", 10),
        ("0x1f", 31),
        ("0X1F", 31),
        ("017", 15),
        ("-0", 0),
        ("2147483647", i32::MAX),
        ("-2147483648", i32::MIN),
    ] {
        assert_eq!(strtol_len(s.as_bytes()), s.len(), "{s}");
        assert_eq!(match_int(s.as_bytes()), Some(n), "{s}");
    }
    for s in ["2147483648", "-2147483649", "18446744073709551616", "-", ""] {
        assert_eq!(match_int(s.as_bytes()), None, "{s}");
    }
    assert_eq!(strtol_len(b"0x"), 1);
    assert_eq!(strtol_len(b"-"), 1);
    assert_eq!(strtol_len(b"09"), 1);
    assert_eq!(strtol_len(b"12ab"), 2);
}
