// SPDX-License-Identifier: GPL-2.0

//! Host tests of `sysfs_fmt`.

use super::*;

/// Runs a show into a PAGE_SIZE buffer and returns the bytes it stored.
fn show(f: impl FnOnce(&mut [u8]) -> usize) -> Vec<u8> {
    let mut page = vec![0xAAu8; PAGE_SIZE];
    let n = f(&mut page);
    assert!(n < PAGE_SIZE);
    assert_eq!(page[n], 0, "NUL after the text");
    page.truncate(n);
    page
}

fn no_dev(_: &[u8]) -> Option<u32> {
    None
}

fn dev(name: &[u8]) -> Option<u32> {
    match name {
        b"eth0" => Some(7),
        b"ib0" => Some(9),
        _ => None,
    }
}

const EINV: Errno = Errno::EINVAL;
const ERNG: Errno = Errno::ERANGE;
const ENOPROTO: Errno = Errno::EPROTONOSUPPORT;

/// Inputs every store must survive; each test states the C result.
fn big(b: u8) -> Vec<u8> {
    vec![b; PAGE_SIZE]
}

// ----- Writer ---------------------------------------------------------

#[test]
fn writer_truncates_like_scnprintf() {
    let mut b = [0xAAu8; 5];
    let mut w = Writer::new(&mut b);
    w.write_bytes(b"ab");
    let _ = write!(w, "{}", 12345);
    assert_eq!(w.as_bytes(), b"ab12");
    assert_eq!(w.written(), 4);
    w.write_bytes(b"zz");
    assert_eq!(w.written(), 4);
    assert_eq!(b, *b"ab12\0");
}

#[test]
fn writer_tiny_buffers() {
    let mut empty: [u8; 0] = [];
    let mut w = Writer::new(&mut empty);
    w.write_bytes(b"abc");
    assert!(w.is_empty());
    assert_eq!(w.as_bytes(), b"");

    let mut one = [0xAAu8; 1];
    let mut w = Writer::new(&mut one);
    w.write_bytes(b"abc");
    assert_eq!(w.written(), 0);
    assert_eq!(one, [0]);

    let mut two = [0xAAu8; 2];
    assert_eq!(mpath_policy_show(&mut two, 0), 1);
    assert_eq!(two, *b"r\0");
}

#[test]
fn writer_non_utf8() {
    let mut b = [0u8; 8];
    let mut w = Writer::new(&mut b);
    w.write_bytes(b"\xff\xfe");
    assert_eq!(w.as_bytes(), b"\xff\xfe");
}

#[test]
fn sysfs_emit_caps_at_page_minus_one() {
    let long = "x".repeat(2 * PAGE_SIZE);
    let out = show(|b| sysfs_emit(b, format_args!("{}", long)));
    assert_eq!(out.len(), PAGE_SIZE - 1);
}

// ----- kstrto* --------------------------------------------------------

#[test]
fn kstrtoint_base10() {
    assert_eq!(kstrtoint(b"0", 10), Ok(0));
    assert_eq!(kstrtoint(b"42", 10), Ok(42));
    assert_eq!(kstrtoint(b"42\n", 10), Ok(42));
    assert_eq!(kstrtoint(b"+42", 10), Ok(42));
    assert_eq!(kstrtoint(b"-42\n", 10), Ok(-42));
    assert_eq!(kstrtoint(b"-0", 10), Ok(0));
    assert_eq!(kstrtoint(b"007", 10), Ok(7));
    assert_eq!(kstrtoint(b"2147483647", 10), Ok(i32::MAX));
    assert_eq!(kstrtoint(b"-2147483648", 10), Ok(i32::MIN));
    // A NUL ends the C string: what follows is never looked at.
    assert_eq!(kstrtoint(b"5\0junk", 10), Ok(5));
    assert_eq!(kstrtoint(b"5\n\0junk", 10), Ok(5));
}

#[test]
fn kstrtoint_hostile() {
    assert_eq!(kstrtoint(b"", 10), Err(EINV));
    assert_eq!(kstrtoint(b"\n", 10), Err(EINV));
    assert_eq!(kstrtoint(b" ", 10), Err(EINV));
    assert_eq!(kstrtoint(b"\t\n", 10), Err(EINV));
    assert_eq!(kstrtoint(b"\0\n", 10), Err(EINV));
    assert_eq!(kstrtoint(b" 1", 10), Err(EINV));
    assert_eq!(kstrtoint(b"1 ", 10), Err(EINV));
    assert_eq!(kstrtoint(b"1\n\n", 10), Err(EINV));
    assert_eq!(kstrtoint(b"1\r\n", 10), Err(EINV));
    assert_eq!(kstrtoint(b"+", 10), Err(EINV));
    assert_eq!(kstrtoint(b"-", 10), Err(EINV));
    assert_eq!(kstrtoint(b"+-1", 10), Err(EINV));
    assert_eq!(kstrtoint(b"-+1", 10), Err(EINV));
    assert_eq!(kstrtoint(b"--1", 10), Err(EINV));
    assert_eq!(kstrtoint(b"++1", 10), Err(EINV));
    assert_eq!(kstrtoint(b"0x10", 10), Err(EINV));
    assert_eq!(kstrtoint(b"1e3", 10), Err(EINV));
    assert_eq!(kstrtoint(b"\xff", 10), Err(EINV));
    assert_eq!(kstrtoint(b"1\xff", 10), Err(EINV));
    assert_eq!(kstrtoint(b"\xef\xbc\x91", 10), Err(EINV)); // fullwidth '1'
    assert_eq!(kstrtoint(b"2147483648", 10), Err(ERNG));
    assert_eq!(kstrtoint(b"-2147483649", 10), Err(ERNG));
    assert_eq!(kstrtoint(b"4294967296", 10), Err(ERNG));
    assert_eq!(kstrtoint(b"18446744073709551616", 10), Err(ERNG));
    // Overflow is reported before trailing junk is seen.
    assert_eq!(kstrtoint(b"99999999999999999999x", 10), Err(ERNG));
    assert_eq!(kstrtoint(&big(b'9'), 10), Err(ERNG));
    assert_eq!(kstrtoint(&big(b'0'), 10), Ok(0));
    assert_eq!(kstrtoint(&big(b'a'), 10), Err(EINV));
    assert_eq!(kstrtoint(&big(0), 10), Err(EINV));
}

#[test]
fn kstrtoll_edges() {
    assert_eq!(kstrtoll(b"9223372036854775807", 10), Ok(i64::MAX));
    assert_eq!(kstrtoll(b"9223372036854775808", 10), Err(ERNG));
    assert_eq!(kstrtoll(b"-9223372036854775808", 10), Ok(i64::MIN));
    assert_eq!(kstrtoll(b"-9223372036854775809", 10), Err(ERNG));
    assert_eq!(kstrtoll(b"-18446744073709551615", 10), Err(ERNG));
    assert_eq!(kstrtoll(b"-18446744073709551616", 10), Err(ERNG));
}

#[test]
fn kstrto_base0_and_16() {
    assert_eq!(kstrtoint(b"0x10", 0), Ok(16));
    assert_eq!(kstrtoint(b"0X1f\n", 0), Ok(31));
    assert_eq!(kstrtoint(b"-0x10", 0), Ok(-16));
    assert_eq!(kstrtoint(b"+0x10", 0), Ok(16));
    assert_eq!(kstrtoint(b"010", 0), Ok(8));
    assert_eq!(kstrtoint(b"0", 0), Ok(0));
    assert_eq!(kstrtoint(b"08", 0), Err(EINV));
    assert_eq!(kstrtoint(b"0x", 0), Err(EINV));
    assert_eq!(kstrtoint(b"0xg", 0), Err(EINV));
    assert_eq!(kstrtoint(b"0x7fffffff", 0), Ok(i32::MAX));
    assert_eq!(kstrtoint(b"0x80000000", 0), Err(ERNG));
    assert_eq!(kstrtouint(b"0xffffffff", 0), Ok(u32::MAX));
    assert_eq!(kstrtouint(b"4294967295\n", 0), Ok(u32::MAX));
    assert_eq!(kstrtouint(b"4294967296", 0), Err(ERNG));
    assert_eq!(kstrtouint(b"-1", 0), Err(EINV));
    assert_eq!(kstrtouint(b"+7", 0), Ok(7));
    assert_eq!(kstrtou16(b"65535", 0), Ok(u16::MAX));
    assert_eq!(kstrtou16(b"65536", 0), Err(ERNG));
    assert_eq!(kstrtoull(b"ff", 16), Ok(255));
    assert_eq!(kstrtoull(b"0xFF\n", 16), Ok(255));
    assert_eq!(kstrtoull(b"0x", 16), Err(EINV));
    assert_eq!(kstrtoull(b"ffffffffffffffff", 16), Ok(u64::MAX));
    assert_eq!(kstrtoull(b"10000000000000000", 16), Err(ERNG));
    assert_eq!(kstrtoull(b"18446744073709551615", 10), Ok(u64::MAX));
    assert_eq!(kstrtoull(b"18446744073709551616", 10), Err(ERNG));
    assert_eq!(kstrtoll(b"777", 8), Ok(511));
    assert_eq!(kstrtoll(b"8", 8), Err(EINV));
}

// ----- sysfs_streq ----------------------------------------------------

#[test]
fn sysfs_streq_rules() {
    assert!(sysfs_streq(b"1", b"1"));
    assert!(sysfs_streq(b"1\n", b"1"));
    assert!(sysfs_streq(b"1", b"1\n"));
    assert!(sysfs_streq(b"1\0junk", b"1"));
    assert!(sysfs_streq(b"1\n\0junk", b"1"));
    assert!(sysfs_streq(b"", b""));
    assert!(sysfs_streq(b"\n", b""));
    assert!(!sysfs_streq(b"1\n\n", b"1"));
    assert!(!sysfs_streq(b"11", b"1"));
    assert!(!sysfs_streq(b"", b"1"));
    assert!(!sysfs_streq(b"\n", b"1"));
    assert!(!sysfs_streq(b"\0\n", b"1"));
    assert!(!sysfs_streq(b" 1", b"1"));
    assert!(!sysfs_streq(b"1 ", b"1"));
    assert!(!sysfs_streq(b"+1", b"1"));
    assert!(!sysfs_streq(b"01", b"1"));
    assert!(!sysfs_streq(b"\xff", b"1"));
    assert!(!sysfs_streq(&big(b'1'), b"1"));
}

#[test]
fn strncasecmp_latin1_and_nul() {
    assert_eq!(strncasecmp(b"ROUND", b"round", 5), 0);
    assert_ne!(strncasecmp(b"rounx", b"round", 5), 0);
    assert_eq!(strncasecmp(b"abc", b"abd", 2), 0);
    assert_eq!(strncasecmp(b"anything", b"other", 0), 0);
    assert_ne!(strncasecmp(b"ab", b"abc", 3), 0);
    assert_eq!(strncasecmp(b"\xc0", b"\xe0", 1), 0);
    assert_ne!(strncasecmp(b"\xd7", b"\xf7", 1), 0);
}

// ----- max_reconnect_attempts ----------------------------------------

#[test]
fn max_reconnect_attempts_show_bytes() {
    assert_eq!(show(|b| max_reconnect_attempts_show(b, -1)), b"-1\n");
    assert_eq!(show(|b| max_reconnect_attempts_show(b, 0)), b"0\n");
    assert_eq!(show(|b| max_reconnect_attempts_show(b, 9999)), b"9999\n");
    assert_eq!(
        show(|b| max_reconnect_attempts_show(b, i32::MIN)),
        b"-2147483648\n"
    );
}

/// The store's errno, as the file returns it.
fn mra(b: &[u8]) -> Result<i32, Errno> {
    max_reconnect_attempts_store(b).map_err(ReconnAttRefused::errno)
}

#[test]
fn max_reconnect_attempts_store_accepts() {
    assert_eq!(mra(b"-1"), Ok(-1));
    assert_eq!(mra(b"-1\n"), Ok(-1));
    assert_eq!(mra(b"0"), Ok(0));
    assert_eq!(mra(b"+5\n"), Ok(5));
    assert_eq!(mra(b"9999"), Ok(9999));
    assert_eq!(mra(b"09999\n"), Ok(9999));
    assert_eq!(mra(&big(b'0')), Ok(0));
}

#[test]
fn max_reconnect_attempts_store_rejects() {
    assert_eq!(mra(b"10000"), Err(EINV));
    assert_eq!(mra(b"-2"), Err(EINV));
    assert_eq!(mra(b"2147483647"), Err(EINV));
    assert_eq!(mra(b"2147483648"), Err(ERNG));
    assert_eq!(mra(b"-2147483649"), Err(ERNG));
    assert_eq!(mra(b""), Err(EINV));
    assert_eq!(mra(b"\n"), Err(EINV));
    assert_eq!(mra(b"   "), Err(EINV));
    assert_eq!(mra(b"\0\n"), Err(EINV));
    assert_eq!(mra(b"0x10"), Err(EINV));
    assert_eq!(mra(b"\xff\xfe"), Err(EINV));
    assert_eq!(mra(&big(b'9')), Err(ERNG));
    assert_eq!(mra(&big(b'x')), Err(EINV));
}

#[test]
fn max_reconnect_attempts_store_says_why() {
    use ReconnAttRefused::*;
    assert_eq!(max_reconnect_attempts_store(b"10000"), Err(OutOfRange));
    assert_eq!(max_reconnect_attempts_store(b"-2\n"), Err(OutOfRange));
    assert_eq!(max_reconnect_attempts_store(b"x"), Err(NotInt(EINV)));
    assert_eq!(
        max_reconnect_attempts_store(b"2147483648"),
        Err(NotInt(ERNG))
    );
}

// ----- mpath_policy ---------------------------------------------------

#[test]
fn mpath_policy_show_bytes() {
    assert_eq!(show(|b| mpath_policy_show(b, 0)), b"round-robin (RR: 0)\n");
    assert_eq!(show(|b| mpath_policy_show(b, 1)), b"min-inflight (MI: 1)\n");
    assert_eq!(show(|b| mpath_policy_show(b, 2)), b"min-latency (ML: 2)\n");
    assert_eq!(show(|b| mpath_policy_show(b, 3)), b"service-time (ST: 3)\n");
    assert_eq!(show(|b| mpath_policy_show(b, 4)), b"Unknown (4)\n");
    assert_eq!(show(|b| mpath_policy_show(b, -7)), b"Unknown (-7)\n");
}

#[test]
fn mpath_policy_store_numbers() {
    assert_eq!(mpath_policy_store(b"0"), Ok(MP_POLICY_RR));
    assert_eq!(mpath_policy_store(b"1\n"), Ok(MP_POLICY_MIN_INFLIGHT));
    assert_eq!(mpath_policy_store(b"2"), Ok(MP_POLICY_MIN_LATENCY));
    assert_eq!(mpath_policy_store(b"+2\n"), Ok(MP_POLICY_MIN_LATENCY));
    assert_eq!(mpath_policy_store(b"-0"), Ok(MP_POLICY_RR));
    assert_eq!(mpath_policy_store(b"01"), Ok(MP_POLICY_MIN_INFLIGHT));
    assert_eq!(mpath_policy_store(&big(b'0')), Ok(MP_POLICY_RR));
    assert_eq!(mpath_policy_store(b"3"), Err(EINV));
    assert_eq!(mpath_policy_store(b"-1"), Err(EINV));
    assert_eq!(mpath_policy_store(b"0x1"), Err(EINV));
    // kstrtoint's -ERANGE is not passed on.
    assert_eq!(mpath_policy_store(b"2147483648"), Err(EINV));
    assert_eq!(mpath_policy_store(&big(b'1')), Err(EINV));
}

#[test]
fn mpath_policy_store_names() {
    assert_eq!(mpath_policy_store(b"round-robin"), Ok(MP_POLICY_RR));
    assert_eq!(mpath_policy_store(b"round-robin\n"), Ok(MP_POLICY_RR));
    assert_eq!(mpath_policy_store(b"ROUND-Robin"), Ok(MP_POLICY_RR));
    assert_eq!(mpath_policy_store(b"round-robin, please"), Ok(MP_POLICY_RR));
    assert_eq!(
        mpath_policy_store(b"min-inflight"),
        Ok(MP_POLICY_MIN_INFLIGHT)
    );
    assert_eq!(
        mpath_policy_store(b"MIN-INFLIGHT\n"),
        Ok(MP_POLICY_MIN_INFLIGHT)
    );
    assert_eq!(
        mpath_policy_store(b"min-inflightXYZ"),
        Ok(MP_POLICY_MIN_INFLIGHT)
    );
    assert_eq!(
        mpath_policy_store(b"min-latency"),
        Ok(MP_POLICY_MIN_LATENCY)
    );
    assert_eq!(
        mpath_policy_store(b"Min-Latency\n"),
        Ok(MP_POLICY_MIN_LATENCY)
    );
    let mut long = b"round-robin".to_vec();
    long.resize(PAGE_SIZE, b'z');
    assert_eq!(mpath_policy_store(&long), Ok(MP_POLICY_RR));
    assert_eq!(mpath_policy_store(b"round-robi"), Err(EINV));
    assert_eq!(mpath_policy_store(b"min-inflig"), Err(EINV));
    assert_eq!(mpath_policy_store(b"min-latenc\n"), Err(EINV));
    assert_eq!(mpath_policy_store(b"min"), Err(EINV));
    assert_eq!(mpath_policy_store(b" round-robin"), Err(EINV));
    assert_eq!(mpath_policy_store(b"round\xadrobin"), Err(EINV));
    // This module's service-time, by name only.
    assert_eq!(
        mpath_policy_store(b"service-time"),
        Ok(MP_POLICY_SERVICE_TIME)
    );
    assert_eq!(
        mpath_policy_store(b"Service-Time\n"),
        Ok(MP_POLICY_SERVICE_TIME)
    );
    assert_eq!(mpath_policy_store(b"st"), Ok(MP_POLICY_SERVICE_TIME));
    assert_eq!(mpath_policy_store(b"ST\n"), Ok(MP_POLICY_SERVICE_TIME));
    assert_eq!(mpath_policy_store(b"service-tim"), Err(EINV));
    assert_eq!(mpath_policy_store(b"stx"), Err(EINV));
}

#[test]
fn mpath_policy_store_short_names() {
    assert_eq!(mpath_policy_store(b"rr"), Ok(MP_POLICY_RR));
    assert_eq!(mpath_policy_store(b"RR\n"), Ok(MP_POLICY_RR));
    assert_eq!(mpath_policy_store(b"rR"), Ok(MP_POLICY_RR));
    assert_eq!(mpath_policy_store(b"mi"), Ok(MP_POLICY_MIN_INFLIGHT));
    assert_eq!(mpath_policy_store(b"Mi\n"), Ok(MP_POLICY_MIN_INFLIGHT));
    assert_eq!(mpath_policy_store(b"ml"), Ok(MP_POLICY_MIN_LATENCY));
    assert_eq!(mpath_policy_store(b"ML\n"), Ok(MP_POLICY_MIN_LATENCY));
    // The length is taken up to the first NUL.
    assert_eq!(mpath_policy_store(b"mi\0\n"), Ok(MP_POLICY_MIN_INFLIGHT));
    assert_eq!(mpath_policy_store(b"rr\0garbage"), Ok(MP_POLICY_RR));
    assert_eq!(mpath_policy_store(b"rr\n\n"), Err(EINV));
    assert_eq!(mpath_policy_store(b"rrr"), Err(EINV));
    assert_eq!(mpath_policy_store(b"rr "), Err(EINV));
    assert_eq!(mpath_policy_store(b" rr"), Err(EINV));
    assert_eq!(mpath_policy_store(b"r"), Err(EINV));
    assert_eq!(mpath_policy_store(b"r\n"), Err(EINV));
    assert_eq!(mpath_policy_store(b"mx"), Err(EINV));
}

#[test]
fn mpath_policy_store_hostile() {
    assert_eq!(mpath_policy_store(b""), Err(EINV));
    assert_eq!(mpath_policy_store(b"\n"), Err(EINV));
    assert_eq!(mpath_policy_store(b" "), Err(EINV));
    assert_eq!(mpath_policy_store(b" \t\n"), Err(EINV));
    // The case fixed in 2024 (strnlen of 0 must not read buf[-1]).
    assert_eq!(mpath_policy_store(b"\0\n"), Err(EINV));
    assert_eq!(mpath_policy_store(b"\0"), Err(EINV));
    assert_eq!(mpath_policy_store(&big(b'a')), Err(EINV));
    assert_eq!(mpath_policy_store(&big(0)), Err(EINV));
    assert_eq!(mpath_policy_store(b"\xff\xfe"), Err(EINV));
    assert_eq!(mpath_policy_store(b"r\xd2"), Err(EINV));
}

#[test]
fn mpath_policy_show_is_rnbd_parsable() {
    // rnbd reads "<word> (<2 chars>: <int>)".
    for p in 0..3 {
        let out = show(|b| mpath_policy_show(b, p));
        let text = core::str::from_utf8(&out).unwrap();
        let (word, rest) = text.split_once(' ').unwrap();
        assert!(!word.is_empty());
        assert_eq!(&rest[..1], "(");
        assert_eq!(&rest[3..5], ": ");
        assert_eq!(rest[5..].trim_end_matches(")\n").parse::<i32>(), Ok(p));
    }
}

// ----- add_path -------------------------------------------------------

#[test]
fn add_path_show_bytes() {
    assert_eq!(
        show(add_path_show),
        b"Usage: echo [<source addr>@]<destination addr> > add_path\n\n*addr ::= [ ip:<ipv4|ipv6> | gid:<gid> ]\n"
            .to_vec()
    );
}

#[test]
fn add_path_split_forms() {
    assert_eq!(add_path_split(b"ip:1.2.3.4\n"), (None, &b"ip:1.2.3.4"[..]));
    assert_eq!(add_path_split(b"ip:1.2.3.4"), (None, &b"ip:1.2.3.4"[..]));
    assert_eq!(
        add_path_split(b"ip:1.1.1.1@ip:2.2.2.2\n"),
        (Some(&b"ip:1.1.1.1"[..]), &b"ip:2.2.2.2"[..])
    );
    assert_eq!(
        add_path_split(b"ip:1.1.1.1,ip:2.2.2.2"),
        (Some(&b"ip:1.1.1.1"[..]), &b"ip:2.2.2.2"[..])
    );
    // ',' wins over an earlier '@'.
    assert_eq!(add_path_split(b"a@b,c"), (Some(&b"a@b"[..]), &b"c"[..]));
    // A newline before the separator: the source keeps it, the
    // destination runs to the end of the C string.
    assert_eq!(
        add_path_split(b"ip:1.1.1.1\n@ip:2.2.2.2"),
        (Some(&b"ip:1.1.1.1\n"[..]), &b"ip:2.2.2.2"[..])
    );
    // Without a newline the length is count; the NUL still ends the text.
    assert_eq!(
        add_path_split(b"ip:1.2.3.4\0x@y"),
        (None, &b"ip:1.2.3.4"[..])
    );
    assert_eq!(add_path_split(b""), (None, &b""[..]));
    assert_eq!(add_path_split(b"\0\n"), (None, &b""[..]));
    assert_eq!(add_path_split(b"@\n"), (Some(&b""[..]), &b""[..]));
}

#[test]
fn add_path_store_ipv4() {
    let a = add_path_store(b"ip:192.168.1.2\n", 1234, no_dev).unwrap();
    assert_eq!(a.src, None);
    assert_eq!(
        a.dst,
        RtrsSockaddr::Inet {
            addr: [192, 168, 1, 2],
            port: 1234
        }
    );
    assert_eq!(a.dst.family(), AF_INET);

    let a = add_path_store(b"ip:192.168.1.1@ip:192.168.1.2\n", 1234, no_dev).unwrap();
    assert_eq!(
        a.src,
        Some(RtrsSockaddr::Inet {
            addr: [192, 168, 1, 1],
            port: 0
        })
    );
    assert_eq!(
        a.dst,
        RtrsSockaddr::Inet {
            addr: [192, 168, 1, 2],
            port: 1234
        }
    );

    let a = add_path_store(b"ip:10.0.0.1,ip:10.0.0.2", 7, no_dev).unwrap();
    assert_eq!(
        a.src,
        Some(RtrsSockaddr::Inet {
            addr: [10, 0, 0, 1],
            port: 0
        })
    );
    assert_eq!(
        a.dst,
        RtrsSockaddr::Inet {
            addr: [10, 0, 0, 2],
            port: 7
        }
    );
}

#[test]
fn add_path_store_ipv4_quirks() {
    let dst = |s: &[u8]| add_path_store(s, 1234, no_dev).map(|a| a.dst);
    let v4 = |a, b, c, d| {
        Ok(RtrsSockaddr::Inet {
            addr: [a, b, c, d],
            port: 1234,
        })
    };
    assert_eq!(dst(b"ip:01.002.003.4"), v4(1, 2, 3, 4));
    assert_eq!(dst(b"ip:0.0.0.0"), v4(0, 0, 0, 0));
    assert_eq!(dst(b"ip:255.255.255.255"), v4(255, 255, 255, 255));
    // in4_pton stops at ':' too, so a ":port" suffix is ignored.
    assert_eq!(dst(b"ip:1.2.3.4:80"), v4(1, 2, 3, 4));
    // 16 characters is the limit for IPv4 text.
    assert_eq!(dst(b"ip:001.002.003.0004"), v4(1, 2, 3, 4));
    assert_eq!(dst(b"ip:0001.002.003.0004"), Err(EINV));
    assert_eq!(dst(b"ip:256.1.1.1"), Err(EINV));
    assert_eq!(dst(b"ip:1.2.3"), Err(EINV));
    assert_eq!(dst(b"ip:1.2.3.4.5"), Err(EINV));
    assert_eq!(dst(b"ip:1..2.3"), Err(EINV));
    assert_eq!(dst(b"ip:1.2.3.4 "), Err(EINV));
    // Text after a NUL is never seen.
    assert_eq!(dst(b"ip:1.2.3.4\0garbage"), v4(1, 2, 3, 4));
    // A newline before the separator stays in the source, and
    // inet4_pton accepts '\n' as the end of an IPv4 address.
    let a = add_path_store(b"ip:1.1.1.1\n@ip:2.2.2.2", 1234, no_dev).unwrap();
    assert_eq!(
        a.src,
        Some(RtrsSockaddr::Inet {
            addr: [1, 1, 1, 1],
            port: 0
        })
    );
    assert_eq!(
        a.dst,
        RtrsSockaddr::Inet {
            addr: [2, 2, 2, 2],
            port: 1234
        }
    );
}

#[test]
fn add_path_store_ipv6() {
    let dst = |s: &[u8]| add_path_store(s, 1234, dev).map(|a| a.dst);
    let v6 = |addr: [u8; 16], scope_id| {
        Ok(RtrsSockaddr::Inet6 {
            addr,
            port: 1234,
            scope_id,
        })
    };
    let ll1 = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    assert_eq!(dst(b"ip:fe80::1\n"), v6(ll1, 0));
    assert_eq!(dst(b"ip:FE80::1"), v6(ll1, 0));
    assert_eq!(dst(b"ip:fe80:0:0:0:0:0:0:1"), v6(ll1, 0));
    assert_eq!(dst(b"ip:fe80::1%3"), v6(ll1, 3));
    assert_eq!(dst(b"ip:fe80::1%0x10"), v6(ll1, 16));
    assert_eq!(dst(b"ip:fe80::1%eth0"), v6(ll1, 7));
    assert_eq!(dst(b"ip:fe80::1%eth9"), Err(EINV));
    assert_eq!(dst(b"ip:fe80::1%"), Err(EINV));
    // The scope is cut to 15 characters before it is parsed.
    assert_eq!(dst(b"ip:fe80::1%1234567890123456789"), Err(EINV));
    assert_eq!(dst(b"ip:fe80::1%000000000000007"), v6(ll1, 7));
    // Link-local multicast takes a scope too.
    let mc = [0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    assert_eq!(dst(b"ip:ff02::1%ib0"), v6(mc, 9));
    // Other addresses ignore whatever follows '%'.
    let g = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    assert_eq!(dst(b"ip:2001:db8::1%eth0"), v6(g, 0));
    assert_eq!(dst(b"ip:2001:db8::1%junk"), v6(g, 0));
    let mut lo = [0u8; 16];
    lo[15] = 1;
    assert_eq!(dst(b"ip:::1%5"), v6(lo, 0));
    assert_eq!(dst(b"ip:::"), v6([0; 16], 0));
    let mut mapped = [0u8; 16];
    mapped[10..].copy_from_slice(&[0xff, 0xff, 1, 2, 3, 4]);
    assert_eq!(dst(b"ip:::ffff:1.2.3.4"), v6(mapped, 0));
    let mut mid = [0u8; 16];
    for (i, word) in mid.chunks_exact_mut(2).enumerate() {
        word[1] = i as u8;
    }
    mid[3] = 0;
    assert_eq!(dst(b"ip:0:0:2:3:4:5:6:7"), v6(mid, 0));
    assert_eq!(dst(b"ip:::2:3:4:5:6:7"), v6(mid, 0));
}

#[test]
fn add_path_store_ipv6_rejects() {
    let dst = |s: &[u8]| add_path_store(s, 1234, dev).map(|a| a.dst);
    for bad in [
        &b"ip:1:2:3:4:5:6:7"[..],
        b"ip:1:2:3:4:5:6:7:8:9",
        b"ip:1:2:3:4:5:6:7::8",
        b"ip:12345::",
        b"ip:::1::2",
        b"ip::::",
        b"ip:1:::2",
        b"ip:g::",
        b"ip::1",
        b"ip:1:",
        b"ip:fe80::1%eth0%",
        b"ip:",
    ] {
        assert_eq!(dst(bad), Err(EINV), "{:?}", core::str::from_utf8(bad));
    }
    // Leading zeros in a group are not counted.
    assert_eq!(
        dst(b"ip:0000:0000:0000:0000:0000:0000:0000:00000"),
        Ok(RtrsSockaddr::Inet6 {
            addr: [0; 16],
            port: 1234,
            scope_id: 0
        })
    );
    // 48 characters are allowed, 49 are not.
    let mut s = b"ip:fe80:0000:0000:0000:0000:0000:0000:0001%00000007".to_vec();
    assert_eq!(s.len() - 3, 48);
    let mut ll1 = [0u8; 16];
    ll1[..2].copy_from_slice(&[0xfe, 0x80]);
    ll1[15] = 1;
    assert_eq!(
        dst(&s),
        Ok(RtrsSockaddr::Inet6 {
            addr: ll1,
            port: 1234,
            scope_id: 7
        })
    );
    s.insert(3, b'0');
    assert_eq!(dst(&s), Err(EINV));
}

#[test]
fn add_path_store_gid() {
    let gid = [
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0x02, 0xc9, 0x03, 0, 0x01, 0x02, 0x03,
    ];
    let a = add_path_store(b"gid:fe80::2:c903:1:203\n", 1234, no_dev).unwrap();
    assert_eq!(
        a.dst,
        RtrsSockaddr::Ib {
            gid,
            sid: 0x13F_04D2
        }
    );
    assert_eq!(a.dst.family(), AF_IB);
    let a = add_path_store(b"gid:fe80:0000:0000:0000:0002:c903:0001:0203", 1234, no_dev).unwrap();
    assert_eq!(
        a.dst,
        RtrsSockaddr::Ib {
            gid,
            sid: 0x13F_04D2
        }
    );
    // The source gets port 0.
    let a = add_path_store(
        b"gid:fe80::2:c903:1:203@gid:fe80::2:c903:1:203",
        1234,
        no_dev,
    )
    .unwrap();
    assert_eq!(
        a.src,
        Some(RtrsSockaddr::Ib {
            gid,
            sid: 0x13F_0000
        })
    );
    // The port goes through a C `short`: 0x8000 and up sign-extend.
    let a = add_path_store(b"gid:::1", 0x8000, no_dev).unwrap();
    assert!(matches!(
        a.dst,
        RtrsSockaddr::Ib {
            sid: 0xFFFF_FFFF_FFFF_8000,
            ..
        }
    ));
    // No scope for GIDs, and a newline inside is junk.
    assert_eq!(add_path_store(b"gid:fe80::1%eth0", 1234, dev), Err(EINV));
    assert_eq!(
        add_path_store(b"gid:fe80::1\n@ip:2.2.2.2", 1234, no_dev),
        Err(EINV)
    );
    assert_eq!(add_path_store(b"gid:", 1234, no_dev), Err(EINV));
    assert_eq!(add_path_store(b"gid:1.2.3.4", 1234, no_dev), Err(EINV));
    // gid text has no length limit of its own.
    let mut long = b"gid:::".to_vec();
    long.extend(core::iter::repeat_n(b'0', 100));
    long.extend_from_slice(b"1.2.3.4");
    assert_eq!(
        add_path_store(&long, 1, no_dev).map(|a| a.dst),
        Ok(RtrsSockaddr::Ib {
            gid: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4],
            sid: 0x13F_0001
        })
    );
}

#[test]
fn add_path_store_hostile() {
    for bad in [
        &b""[..],
        b"\n",
        b" ",
        b"\0\n",
        b"ip:",
        b"ip:\xff",
        b"\xff\xfe",
        b"foo:1.2.3.4",
        b"IP:1.2.3.4",
        b"ip 1.2.3.4",
        b" ip:1.2.3.4",
        b"ip:1.1.1.1@",
        b"@ip:1.1.1.1",
        b"ip:1.1.1.1@@ip:2.2.2.2",
        b"ip:1.1.1.1,ip:2.2.2.2@ip:3.3.3.3",
        b"ip:1.1.1.1@ip:2.2.2.2,ip:3.3.3.3",
        b"ip:1.1.1.1@foo:2.2.2.2",
        b"-1",
        b"2147483648",
        b"0x10",
    ] {
        assert_eq!(add_path_store(bad, 1234, dev), Err(EINV), "{:?}", bad);
    }
    let mut long = b"ip:".to_vec();
    long.resize(PAGE_SIZE, b'1');
    assert_eq!(add_path_store(&long, 1234, dev), Err(EINV));
    assert_eq!(add_path_store(&big(b'@'), 1234, dev), Err(EINV));
    assert_eq!(add_path_store(&big(0), 1234, dev), Err(EINV));
}

#[test]
fn rtrs_addr_to_sockaddr_errnos() {
    // The destination's own error passes through; the source's is -EINVAL.
    assert_eq!(
        rtrs_addr_to_sockaddr(b"foo:1", 5, 1234, no_dev),
        Err(ENOPROTO)
    );
    assert_eq!(rtrs_addr_to_sockaddr(b"", 0, 1234, no_dev), Err(ENOPROTO));
    assert_eq!(
        rtrs_addr_to_sockaddr(b"ip:1.1.1.1@", 11, 1234, no_dev),
        Err(ENOPROTO)
    );
    assert_eq!(
        rtrs_addr_to_sockaddr(b"foo@ip:1.1.1.1", 14, 1234, no_dev),
        Err(EINV)
    );
    assert_eq!(
        rtrs_addr_to_sockaddr(b"ip:1.1.1.x", 10, 1234, no_dev),
        Err(EINV)
    );
    assert_eq!(rtrs_addr_to_sockaddr(b"gid:x", 5, 1234, no_dev), Err(EINV));
    // len bounds the destination text...
    let a = rtrs_addr_to_sockaddr(b"ip:1.2.3.45", 10, 1, no_dev).unwrap();
    assert_eq!(
        a.dst,
        RtrsSockaddr::Inet {
            addr: [1, 2, 3, 4],
            port: 1
        }
    );
    // ...but a len shorter than the prefix wraps and reads to the NUL.
    let a = rtrs_addr_to_sockaddr(b"gid:::1", 2, 1, no_dev).unwrap();
    assert!(matches!(a.dst, RtrsSockaddr::Ib { .. }));
    assert_eq!(
        rtrs_str_to_sockaddr(b"ip:1.2.3.4", 10, 9, no_dev),
        Ok(RtrsSockaddr::Inet {
            addr: [1, 2, 3, 4],
            port: 9
        })
    );
    assert_eq!(rtrs_str_to_sockaddr(b"ib:1", 4, 9, no_dev), Err(ENOPROTO));
}

#[test]
fn in6_pton_end_and_delims() {
    assert_eq!(in6_pton(b"::1%x", b'%').1, 3);
    assert_eq!(in6_pton(b"::1.2.3.4%x", b'%').1, 9);
    assert!(in6_pton(b"::1%x", 0).0.is_none());
    assert_eq!(in4_pton(b"1.2.3.4\nz", b'\n'), (Some([1, 2, 3, 4]), 7));
    assert_eq!(in4_pton(b"1.2.3.4z", b'\n').0, None);
    assert_eq!(in4_pton(b"", b'\n').0, None);
}

// ----- addresses out --------------------------------------------------

fn v4(addr: [u8; 4]) -> RtrsSockaddr {
    RtrsSockaddr::Inet { addr, port: 1234 }
}

fn v6(addr: [u8; 16]) -> RtrsSockaddr {
    RtrsSockaddr::Inet6 {
        addr,
        port: 1234,
        scope_id: 3,
    }
}

fn words(w: [u16; 8]) -> [u8; 16] {
    let mut a = [0u8; 16];
    for (pair, x) in a.chunks_exact_mut(2).zip(w) {
        pair.copy_from_slice(&x.to_be_bytes());
    }
    a
}

fn addr_str(a: Option<&RtrsSockaddr>) -> String {
    String::from_utf8(show(|b| sockaddr_to_str(b, a))).unwrap()
}

#[test]
fn sockaddr_to_str_ipv4() {
    assert_eq!(addr_str(Some(&v4([192, 168, 1, 1]))), "ip:192.168.1.1");
    assert_eq!(addr_str(Some(&v4([0, 0, 0, 0]))), "ip:0.0.0.0");
    assert_eq!(
        addr_str(Some(&v4([255, 255, 255, 255]))),
        "ip:255.255.255.255"
    );
    assert_eq!(addr_str(Some(&v4([10, 0, 20, 3]))), "ip:10.0.20.3");
}

#[test]
fn sockaddr_to_str_ipv6_compressed() {
    let s = |w| addr_str(Some(&v6(words(w))));
    assert_eq!(
        s([0xfe80, 0, 0, 0, 0x200, 0x5aee, 0xfeaa, 0x20a2]),
        "ip:fe80::200:5aee:feaa:20a2"
    );
    assert_eq!(s([0; 8]), "ip:::");
    assert_eq!(s([0, 0, 0, 0, 0, 0, 0, 1]), "ip:::1");
    assert_eq!(s([1, 0, 0, 0, 0, 0, 0, 0]), "ip:1::");
    assert_eq!(s([0x2001, 0xdb8, 0, 0, 0, 0, 0, 1]), "ip:2001:db8::1");
    // Longest run wins; on a tie the first one.
    assert_eq!(s([1, 0, 0, 1, 0, 0, 0, 1]), "ip:1:0:0:1::1");
    assert_eq!(s([1, 0, 0, 1, 1, 0, 0, 1]), "ip:1::1:1:0:0:1");
    // A single zero group is printed as 0.
    assert_eq!(s([1, 0, 1, 1, 1, 1, 1, 1]), "ip:1:0:1:1:1:1:1:1");
    assert_eq!(
        s([0xabcd, 0x0abc, 0x00ab, 0x000a, 0x0100, 0x1000, 0xffff, 0]),
        "ip:abcd:abc:ab:a:100:1000:ffff:0"
    );
    // v4-mapped and ISATAP end in a dotted quad; v4-compatible does not.
    assert_eq!(
        s([0, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304]),
        "ip:::ffff:1.2.3.4"
    );
    assert_eq!(
        s([0xfe80, 0, 0, 0, 0, 0x5efe, 0x0a00, 0x0001]),
        "ip:fe80::5efe:10.0.0.1"
    );
    assert_eq!(
        s([0xfe80, 0, 0, 0, 0x200, 0x5efe, 0xc0a8, 0x0101]),
        "ip:fe80::200:5efe:192.168.1.1"
    );
    assert_eq!(
        s([0xfe80, 0, 0, 0, 0x300, 0x5efe, 0xc0a8, 0x0101]),
        "ip:fe80::300:5efe:c0a8:101"
    );
    assert_eq!(s([0, 0, 0, 0, 0, 0, 0x0102, 0x0304]), "ip:::102:304");
    assert_eq!(s([0, 0, 0, 0, 0, 0xffff, 0, 0]), "ip:::ffff:0.0.0.0");
}

#[test]
fn sockaddr_to_str_gid_and_invalid() {
    let gid = [
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0x02, 0xc9, 0x03, 0, 0x01, 0x02, 0x03,
    ];
    let ib = RtrsSockaddr::Ib { gid, sid: 0 };
    assert_eq!(
        addr_str(Some(&ib)),
        "gid:fe80:0000:0000:0000:0002:c903:0001:0203"
    );
    let zero = RtrsSockaddr::Ib {
        gid: [0; 16],
        sid: 0,
    };
    assert_eq!(
        addr_str(Some(&zero)),
        "gid:0000:0000:0000:0000:0000:0000:0000:0000"
    );
    assert_eq!(addr_str(None), "<invalid address family>");
}

#[test]
fn src_dst_addr_show_bytes() {
    assert_eq!(
        show(|b| rtrs_clt_src_addr_show(b, Some(&v4([10, 0, 0, 1])))),
        b"ip:10.0.0.1\n"
    );
    assert_eq!(
        show(|b| rtrs_clt_dst_addr_show(b, Some(&v6(words([0xfe80, 0, 0, 0, 0, 0, 0, 1]))))),
        b"ip:fe80::1\n"
    );
    assert_eq!(
        show(|b| rtrs_clt_dst_addr_show(b, None)),
        b"<invalid address family>\n"
    );
}

#[test]
fn path_dir_name() {
    let mut name = [0u8; NAME_MAX];
    let n = rtrs_addr_to_str(
        &mut name,
        Some(&v4([192, 168, 1, 1])),
        Some(&v4([192, 168, 1, 2])),
    );
    assert_eq!(&name[..n], b"ip:192.168.1.1@ip:192.168.1.2");
    let gid = RtrsSockaddr::Ib {
        gid: [0xff; 16],
        sid: 0,
    };
    let n = rtrs_addr_to_str(&mut name, Some(&gid), Some(&gid));
    assert_eq!(n, 2 * 43 + 1);
    assert_eq!(&name[n - 5..n], b":ffff");
    let n = rtrs_addr_to_str(&mut name, None, Some(&v4([1, 2, 3, 4])));
    assert_eq!(&name[..n], b"<invalid address family>@ip:1.2.3.4");
    // Truncation keeps the buffer NUL-terminated.
    let mut small = [0xAAu8; 8];
    assert_eq!(
        rtrs_addr_to_str(&mut small, Some(&v4([1, 2, 3, 4])), None),
        7
    );
    assert_eq!(&small, b"ip:1.2.\0");
}

#[test]
fn parse_then_print_round_trip() {
    let a = add_path_store(
        b"ip:fe80:0:0:0:0:0:0:1%eth0@gid:fe80::2:c903:1:203\n",
        1234,
        dev,
    )
    .unwrap();
    let mut name = [0u8; NAME_MAX];
    let n = rtrs_addr_to_str(&mut name, a.src.as_ref(), Some(&a.dst));
    assert_eq!(
        &name[..n],
        b"ip:fe80::1@gid:fe80:0000:0000:0000:0002:c903:0001:0203"
    );
}

// ----- path attributes ------------------------------------------------

#[test]
fn state_show_every_state() {
    use RtrsCltState::*;
    for (raw, st, name, text) in [
        (0, Connecting, "CONNECTING", &b"disconnected\n"[..]),
        (1, ConnectingErr, "CONNECTING_ERR", b"disconnected\n"),
        (2, Reconnecting, "RECONNECTING", b"disconnected\n"),
        (3, Connected, "CONNECTED", b"connected\n"),
        (4, Closing, "CLOSING", b"disconnected\n"),
        (5, Closed, "CLOSED", b"disconnected\n"),
        (6, Dead, "DEAD", b"disconnected\n"),
    ] {
        assert_eq!(RtrsCltState::from_raw(raw), Some(st));
        assert_eq!(st as u32, raw);
        assert_eq!(st.name(), name);
        assert_eq!(show(|b| rtrs_clt_state_show(b, st)), text);
    }
    assert_eq!(RtrsCltState::from_raw(7), None);
    assert_eq!(RtrsCltState::from_raw(u32::MAX), None);
}

#[test]
fn path_usage_shows() {
    assert_eq!(
        show(rtrs_clt_reconnect_show),
        b"Usage: echo 1 > reconnect\n"
    );
    assert_eq!(
        show(rtrs_clt_disconnect_show),
        b"Usage: echo 1 > disconnect\n"
    );
    assert_eq!(
        show(rtrs_clt_remove_path_show),
        b"Usage: echo 1 > remove_path\n"
    );
}

#[test]
fn path_cmd_stores() {
    type Store = fn(&[u8]) -> Result<(), Errno>;
    let stores: [Store; 4] = [
        rtrs_clt_reconnect_store,
        rtrs_clt_disconnect_store,
        rtrs_clt_remove_path_store,
        rtrs_clt_stats_store,
    ];
    for store in stores {
        assert_eq!(store(b"1"), Ok(()));
        assert_eq!(store(b"1\n"), Ok(()));
        assert_eq!(store(b"1\0junk"), Ok(()));
        for bad in [
            &b""[..],
            b"\n",
            b" ",
            b"\0\n",
            b"0",
            b"0\n",
            b"2",
            b"11",
            b"01",
            b"+1",
            b"-1",
            b" 1",
            b"1 ",
            b"1\n\n",
            b"0x1",
            b"2147483648",
            b"yes",
            b"\xff",
            b"1\xff",
        ] {
            assert_eq!(store(bad), Err(EINV), "{:?}", bad);
        }
        assert_eq!(store(&big(b'1')), Err(EINV));
        assert_eq!(store(&big(0)), Err(EINV));
    }
}

#[test]
fn hca_and_latency_shows() {
    assert_eq!(show(|b| rtrs_clt_hca_port_show(b, 1)), b"1\n");
    assert_eq!(show(|b| rtrs_clt_hca_port_show(b, 255)), b"255\n");
    assert_eq!(show(|b| rtrs_clt_hca_name_show(b, b"mlx5_0")), b"mlx5_0\n");
    let mut fixed = [0u8; 64];
    fixed[..4].copy_from_slice(b"rxe0");
    assert_eq!(show(|b| rtrs_clt_hca_name_show(b, &fixed)), b"rxe0\n");
    assert_eq!(show(|b| rtrs_clt_hca_name_show(b, b"")), b"\n");
    assert_eq!(show(|b| rtrs_clt_cur_latency_show(b, 0)), b"0 ns\n");
    assert_eq!(show(|b| rtrs_clt_cur_latency_show(b, 12345)), b"12345 ns\n");
    assert_eq!(show(|b| rtrs_clt_cur_latency_show(b, -1)), b"-1 ns\n");
    assert_eq!(
        show(|b| rtrs_clt_cur_latency_show(b, i64::MAX)),
        b"9223372036854775807 ns\n"
    );
}

// ----- stats ----------------------------------------------------------

#[test]
fn stats_rdma_bytes() {
    let s = RdmaStats {
        read_cnt: 1,
        read_bytes: 4096,
        write_cnt: 3,
        write_bytes: 12288,
        inflight: 5,
        failover: 6,
    };
    assert_eq!(
        show(|b| rtrs_clt_stats_rdma_to_str(b, &s)),
        b"1 4096 3 12288 5 6\n"
    );
    assert_eq!(
        show(|b| rtrs_clt_stats_rdma_to_str(b, &RdmaStats::default())),
        b"0 0 0 0 0 0\n"
    );
    // inflight is printed unsigned.
    let s = RdmaStats {
        inflight: -1,
        ..RdmaStats::default()
    };
    assert_eq!(
        show(|b| rtrs_clt_stats_rdma_to_str(b, &s)),
        b"0 0 0 0 4294967295 0\n"
    );
    let m = u64::MAX;
    let s = RdmaStats {
        read_cnt: m,
        read_bytes: m,
        write_cnt: m,
        write_bytes: m,
        inflight: i32::MAX,
        failover: m,
    };
    assert_eq!(
        show(|b| rtrs_clt_stats_rdma_to_str(b, &s)),
        b"18446744073709551615 18446744073709551615 18446744073709551615 18446744073709551615 2147483647 18446744073709551615\n"
            .to_vec()
    );
}

#[test]
fn stats_rdma_is_rnbd_parsable() {
    // rnbd takes fields 2, 4 (bytes) and 5 (inflight) of six.
    let s = RdmaStats {
        read_cnt: 1,
        read_bytes: 2,
        write_cnt: 3,
        write_bytes: 4,
        inflight: 5,
        failover: 6,
    };
    let out = show(|b| rtrs_clt_stats_rdma_to_str(b, &s));
    let f: Vec<&str> = core::str::from_utf8(&out)
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(f, ["1", "2", "3", "4", "5", "6"]);
}

#[test]
fn stats_reconnects_bytes() {
    let s = |successful_cnt, fail_cnt| ReconnectStats {
        successful_cnt,
        fail_cnt,
    };
    assert_eq!(
        show(|b| rtrs_clt_stats_reconnects_to_str(b, &s(-1, 0))),
        b"-1 0\n"
    );
    assert_eq!(
        show(|b| rtrs_clt_stats_reconnects_to_str(b, &s(3, 2))),
        b"3 2\n"
    );
    assert_eq!(
        show(|b| rtrs_clt_stats_reconnects_to_str(b, &s(i32::MAX, i32::MIN))),
        b"2147483647 -2147483648\n"
    );
}

#[test]
fn stats_cpu_migration_bytes() {
    assert_eq!(
        show(|b| rtrs_clt_stats_migration_from_cnt_to_str(b, [0, 0, 5, 0])),
        b"0 0 5 0 \n"
    );
    assert_eq!(
        show(|b| rtrs_clt_stats_migration_to_cnt_to_str(b, [7])),
        b"7 \n"
    );
    assert_eq!(
        show(|b| rtrs_clt_stats_migration_to_cnt_to_str(b, [-1, 2])),
        b"-1 2 \n"
    );
    assert_eq!(
        show(|b| rtrs_clt_stats_migration_from_cnt_to_str(b, core::iter::empty())),
        b"\n"
    );
}

#[test]
fn stats_cpu_migration_truncates_at_page() {
    // 1000 CPUs of 12 bytes each: the page keeps 4095 bytes, cut inside
    // a number, and the final newline is lost, as with sysfs_emit_at.
    let out =
        show(|b| rtrs_clt_stats_migration_from_cnt_to_str(b, core::iter::repeat_n(i32::MIN, 1000)));
    assert_eq!(out.len(), PAGE_SIZE - 1);
    assert_eq!(&out[..12], b"-2147483648 ");
    assert_eq!(&out[341 * 12..], b"-21");
    // 8 CPUs fit easily.
    let out = show(|b| rtrs_clt_stats_migration_from_cnt_to_str(b, 0..8));
    assert_eq!(out, b"0 1 2 3 4 5 6 7 \n");
}

#[test]
fn stats_reset_all_help_bytes() {
    assert_eq!(
        show(rtrs_clt_reset_all_help),
        b"echo 1 to reset all statistics\n"
    );
}

#[test]
fn errno_values() {
    assert_eq!(Errno::EINVAL.errno(), -22);
    assert_eq!(Errno::ERANGE.errno(), -34);
    assert_eq!(Errno::EPROTONOSUPPORT.errno(), -93);
}

#[test]
fn shows_never_panic_on_small_buffers() {
    let addr = v6(words([0xfe80, 0, 0, 0, 0, 0x5efe, 0x0a00, 1]));
    for len in 0..64 {
        let mut b = vec![0xAAu8; len];
        let cap = len.saturating_sub(1);
        assert!(mpath_policy_show(&mut b, 9) <= cap);
        assert!(add_path_show(&mut b) <= cap);
        assert!(rtrs_clt_src_addr_show(&mut b, Some(&addr)) <= cap);
        assert!(rtrs_clt_stats_rdma_to_str(&mut b, &RdmaStats::default()) <= cap);
        assert!(rtrs_clt_stats_migration_to_cnt_to_str(&mut b, [1, 2, 3]) <= cap);
        assert!(rtrs_clt_hca_name_show(&mut b, b"mlx5_0") <= cap);
    }
}

#[test]
fn parsers_never_panic_on_noise() {
    // A small deterministic generator over bytes that matter to the parsers.
    let alphabet = b"0123456789abcdefxX+-:.%@,\n\0 gipd\xff";
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..20_000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let len = (seed % 40) as usize;
        let input: Vec<u8> = (0..len)
            .map(|i| alphabet[((seed >> (i % 8)) as usize + i * 7) % alphabet.len()])
            .collect();
        let _ = kstrtoint(&input, 0);
        let _ = mpath_policy_store(&input);
        let _ = max_reconnect_attempts_store(&input);
        let _ = add_path_store(&input, 1234, dev);
        let mut prefixed = b"ip:".to_vec();
        prefixed.extend_from_slice(&input);
        let _ = add_path_store(&prefixed, 1234, dev);
        prefixed[..3].copy_from_slice(b"gi:");
        prefixed.insert(2, b'd');
        let _ = add_path_store(&prefixed, 1234, dev);
    }
}

// ----- Results observed on the C client in the VM -----------------------
//
// tests/wip/60-sysfs-diff.sh and 65-sysfs-hostile.sh over the in-tree
// rtrs-client (6.12.117); see sysfs/ABI.md. Inputs that C rejects
// before any side effect map to the parser's error; the errno the C
// client returned is in the comment where it comes from elsewhere.

/// Input bytes of the VM tests (lib-sysfs.sh INPUTS).
fn vm_input(name: &str) -> Vec<u8> {
    match name {
        "ws" => b" \t  \n".to_vec(),
        "nul-nl" => b"\0\n".to_vec(),
        "nl" => b"\n".to_vec(),
        "4096x1" => vec![b'1'; PAGE_SIZE],
        "4096-1-nulpad" => {
            let mut v = b"1\n".to_vec();
            v.resize(PAGE_SIZE, 0);
            v
        }
        "non-utf8" => b"\xff\xfe\x80".to_vec(),
        "non-utf8-1" => b"1\xff".to_vec(),
        "int-max+1" => b"2147483648".to_vec(),
        "int-min-1" => b"-2147483649".to_vec(),
        "uint-max+1" => b"4294967296".to_vec(),
        "hex" => b"0x1".to_vec(),
        "octal" => b"01".to_vec(),
        "lead-sp" => b" 1".to_vec(),
        "trail-sp" => b"1 ".to_vec(),
        "nl-nl" => b"1\n\n".to_vec(),
        "crlf" => b"1\r\n".to_vec(),
        other => other.as_bytes().to_vec(),
    }
}

#[test]
fn vm_observed_mpath_policy() {
    let ok = |s: &str, v: i32| assert_eq!(mpath_policy_store(&vm_input(s)), Ok(v), "{s:?}");
    let einval = |s: &str| assert_eq!(mpath_policy_store(&vm_input(s)), Err(EINV), "{s:?}");
    ok("0", 0);
    ok("1", 1);
    ok("2", 2);
    ok("1\n", 1);
    ok("2\n", 2);
    ok("+1", 1);
    ok("-0", 0);
    ok("octal", 1);
    ok("4096-1-nulpad", 1);
    ok("rr", 0);
    ok("RR", 0);
    ok("rr\n", 0);
    ok("mi", 1);
    ok("ml", 2);
    ok("Ml\n", 2);
    ok("ML", 2);
    ok("round-robin", 0);
    ok("round-robinX", 0);
    ok("min-inflight", 1);
    ok("min-inflight\n", 1);
    ok("min-latency", 2);
    ok("min-latency-xyz", 2);
    ok("MIN-LATENCY", 2);
    for s in [
        "3",
        "-1",
        "hex",
        "rrx",
        "round",
        "foo",
        "nl",
        "rr\n\n",
        "ws",
        "nul-nl",
        "4096x1",
        "non-utf8",
        "non-utf8-1",
        "int-max+1",
        "int-min-1",
        "uint-max+1",
        "lead-sp",
        "trail-sp",
        "nl-nl",
        "crlf",
    ] {
        einval(s);
    }
    let mut b = [0u8; 64];
    let n = mpath_policy_show(&mut b, 1);
    assert_eq!(&b[..n], b"min-inflight (MI: 1)\n");
}

#[test]
fn vm_observed_max_reconnect_attempts() {
    let st = |s: &str| mra(&vm_input(s));
    for (s, v) in [
        ("5", 5),
        ("5\n", 5),
        ("9999", 9999),
        ("0", 0),
        ("-1", -1),
        ("-1\n", -1),
        ("+1", 1),
        ("-0", 0),
    ] {
        assert_eq!(st(s), Ok(v), "{s:?}");
    }
    assert_eq!(st("octal"), Ok(1));
    assert_eq!(st("4096-1-nulpad"), Ok(1));
    for s in [
        "10000",
        "-2",
        "abc",
        "hex",
        "lead-sp",
        "trail-sp",
        "nl",
        "ws",
        "nul-nl",
        "non-utf8",
        "non-utf8-1",
        "nl-nl",
        "crlf",
    ] {
        assert_eq!(st(s), Err(EINV), "{s:?}");
    }
    for s in ["int-max+1", "int-min-1", "uint-max+1", "4096x1"] {
        assert_eq!(st(s), Err(ERNG), "{s:?}");
    }
}

#[test]
fn vm_observed_echo_1_files() {
    // reconnect, disconnect, remove_path and every stats/ file.
    for s in ["1", "1\n", "4096-1-nulpad"] {
        assert_eq!(rtrs_clt_reconnect_store(&vm_input(s)), Ok(()), "{s:?}");
        assert_eq!(rtrs_clt_stats_store(&vm_input(s)), Ok(()), "{s:?}");
    }
    for s in [
        "0",
        "2",
        "yes",
        "-1",
        "+1",
        "octal",
        "hex",
        "lead-sp",
        "trail-sp",
        "nl-nl",
        "crlf",
        "nl",
        "ws",
        "nul-nl",
        "4096x1",
        "non-utf8",
        "non-utf8-1",
        "int-max+1",
    ] {
        assert_eq!(rtrs_clt_reconnect_store(&vm_input(s)), Err(EINV), "{s:?}");
        assert_eq!(rtrs_clt_disconnect_store(&vm_input(s)), Err(EINV), "{s:?}");
        assert_eq!(rtrs_clt_remove_path_store(&vm_input(s)), Err(EINV), "{s:?}");
        assert_eq!(rtrs_clt_stats_store(&vm_input(s)), Err(EINV), "{s:?}");
    }
}

#[test]
fn vm_observed_add_path_parse() {
    let p = |s: &[u8]| add_path_store(s, 1234, no_dev);
    let v4 = |a: [u8; 4], port: u16| RtrsSockaddr::Inet { addr: a, port };
    // Parsed, then connected (ok) or refused by the network/server.
    assert_eq!(
        p(b"ip:10.0.2.16"),
        Ok(RtrsAddr {
            src: None,
            dst: v4([10, 0, 2, 16], 1234)
        })
    );
    assert_eq!(
        p(b"ip:10.0.2.16\n"),
        Ok(RtrsAddr {
            src: None,
            dst: v4([10, 0, 2, 16], 1234)
        })
    );
    assert_eq!(
        p(b"ip:10.0.2.15,ip:10.0.2.16"),
        Ok(RtrsAddr {
            src: Some(v4([10, 0, 2, 15], 0)),
            dst: v4([10, 0, 2, 16], 1234)
        })
    );
    assert_eq!(
        p(b"ip:10.0.2.15@ip:10.0.2.16"),
        Ok(RtrsAddr {
            src: Some(v4([10, 0, 2, 15], 0)),
            dst: v4([10, 0, 2, 16], 1234)
        })
    );
    // in4_pton stops at ':' (EEXIST from the server in the VM: same path).
    assert_eq!(
        p(b"ip:10.0.2.16:99"),
        Ok(RtrsAddr {
            src: None,
            dst: v4([10, 0, 2, 16], 1234)
        })
    );
    // A NUL ends the text.
    assert_eq!(
        p(b"ip:10.0.2.16\0junk"),
        Ok(RtrsAddr {
            src: None,
            dst: v4([10, 0, 2, 16], 1234)
        })
    );
    assert!(p(b"ip:127.0.0.1").is_ok()); // ENODEV from rdma_cm in the VM
    assert!(p(b"ip:::1").is_ok()); // ENODEV
    assert!(p(b"ip:1.2.3.4").is_ok()); // ENETUNREACH
                                       // -EINVAL before any connect.
    for s in [
        &b"foo"[..],
        b"ip:1.2.3.256",
        b"ip:1.2.3",
        b"10.0.2.15@ip:10.0.2.16",
        b"ip:10.0.2.16@",
        b"@ip:10.0.2.16",
        b"ip:10.0.2.16 ",
        b" ip:10.0.2.16",
        b"IP:10.0.2.16",
        b"gid:zz",
        b"\n",
        b"\0\n",
        b" \t  \n",
        b"\xff\xfe\x80",
        b"-1",
        b"+1",
        b"0x1",
        b"2147483648",
    ] {
        assert_eq!(p(s), Err(EINV), "{s:?}");
    }
    let mut big = b"ip:".to_vec();
    big.resize(PAGE_SIZE, b'1');
    assert_eq!(p(&big), Err(EINV));
    assert_eq!(p(&vm_input("4096x1")), Err(EINV));
    assert_eq!(p(&vm_input("4096-1-nulpad")), Err(EINV));
}

#[test]
fn vm_observed_reads() {
    let s = |f: &dyn Fn(&mut [u8]) -> usize| show(|b| f(b));
    assert_eq!(s(&|b| max_reconnect_attempts_show(b, -1)), b"-1\n");
    assert_eq!(s(&|b| add_path_show(b)), b"Usage: echo [<source addr>@]<destination addr> > add_path\n\n*addr ::= [ ip:<ipv4|ipv6> | gid:<gid> ]\n");
    assert_eq!(
        s(&|b| rtrs_clt_reconnect_show(b)),
        b"Usage: echo 1 > reconnect\n"
    );
    assert_eq!(
        s(&|b| rtrs_clt_disconnect_show(b)),
        b"Usage: echo 1 > disconnect\n"
    );
    assert_eq!(
        s(&|b| rtrs_clt_remove_path_show(b)),
        b"Usage: echo 1 > remove_path\n"
    );
    assert_eq!(
        s(&|b| rtrs_clt_reset_all_help(b)),
        b"echo 1 to reset all statistics\n"
    );
    assert_eq!(
        s(&|b| rtrs_clt_hca_name_show(b, b"rxe_eth0")),
        b"rxe_eth0\n"
    );
    assert_eq!(s(&|b| rtrs_clt_hca_port_show(b, 1)), b"1\n");
    assert_eq!(
        s(&|b| rtrs_clt_cur_latency_show(b, 5_932_915)),
        b"5932915 ns\n"
    );
    let a = RtrsSockaddr::Inet {
        addr: [10, 0, 2, 15],
        port: 0,
    };
    let d = RtrsSockaddr::Inet {
        addr: [10, 0, 2, 16],
        port: 1234,
    };
    assert_eq!(
        s(&|b| rtrs_clt_src_addr_show(b, Some(&a))),
        b"ip:10.0.2.15\n"
    );
    let mut name = [0u8; NAME_MAX];
    let n = rtrs_addr_to_str(&mut name, Some(&a), Some(&d));
    assert_eq!(&name[..n], b"ip:10.0.2.15@ip:10.0.2.16");
    assert_eq!(
        s(&|b| rtrs_clt_stats_migration_from_cnt_to_str(b, [8, 2])),
        b"8 2 \n"
    );
    assert_eq!(
        s(&|b| rtrs_clt_stats_migration_to_cnt_to_str(b, [2, 8])),
        b"2 8 \n"
    );
    assert_eq!(
        s(&|b| rtrs_clt_stats_reconnects_to_str(b, &ReconnectStats::default())),
        b"0 0\n"
    );
    let r = RdmaStats {
        read_cnt: 259,
        read_bytes: 1_061_288,
        write_cnt: 256,
        write_bytes: 1_056_768,
        inflight: 0,
        failover: 0,
    };
    assert_eq!(
        s(&|b| rtrs_clt_stats_rdma_to_str(b, &r)),
        b"259 1061288 256 1056768 0 0\n"
    );
    let neg = RdmaStats {
        inflight: -1,
        ..RdmaStats::default()
    };
    assert_eq!(
        s(&|b| rtrs_clt_stats_rdma_to_str(b, &neg)),
        b"0 0 0 0 4294967295 0\n"
    );
}

// ----- latency_hist (not in C) -------------------------------------------

#[test]
fn latency_hist_show_bytes() {
    let mut h = LatHist::default();
    h.read[0] = 5;
    h.write[1] = 7;
    h.read[7] = 1 << 40;
    h.write[LAT_HIST_BUCKETS - 1] = u64::MAX;
    let out = show(|b| latency_hist_to_str(b, &h));
    let text = core::str::from_utf8(&out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), LAT_HIST_BUCKETS + 1);
    assert_eq!(lines[0], "usecs read write");
    assert_eq!(lines[1], "0-0 5 0");
    assert_eq!(lines[2], "1-1 0 7");
    assert_eq!(lines[3], "2-3 0 0");
    assert_eq!(lines[8], "64-127 1099511627776 0");
    assert_eq!(lines[LAT_HIST_BUCKETS], "4194304- 0 18446744073709551615");
    assert!(text.ends_with('\n'));
    // Buckets are contiguous: each starts one past the previous end.
    let mut next = 0u64;
    for l in &lines[1..LAT_HIST_BUCKETS] {
        let (lo, hi) = l.split(' ').next().unwrap().split_once('-').unwrap();
        assert_eq!(lo.parse::<u64>().unwrap(), next);
        next = hi.parse::<u64>().unwrap() + 1;
    }
    assert!(out.len() < 1024);
}
