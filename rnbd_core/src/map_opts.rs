// SPDX-License-Identifier: GPL-2.0

//! The options of a write to `/sys/class/rnbd-client/ctl/map_device`, read
//! as C's `rnbd_clt_parse_map_options` reads them: the same tokens, the
//! same numbers (`match_int`), the same errnos and log lines.
//!
//! The text is cut at its first NUL, stripped of surrounding white space
//! and split on single spaces (empty pieces are skipped). Each piece is one
//! of `sessname=`, `path=`, `device_path=`, `dest_port=`, `access_mode=`,
//! `nr_poll_queues=`, with a non-empty value; a later one overrides an
//! earlier one, except `path=`, which adds a path with the `dest_port` in
//! force at that point. `sessname` and `device_path` are mandatory.

use core::fmt;

use super::proto::{AccessMode, NAME_MAX, RTRS_PORT};

/// The paths one map may name (`struct rtrs_addr paths[6]` in C).
pub const MAX_MAP_PATHS: usize = 6;

/// `-EINVAL`.
const EINVAL: i32 = -22;
/// `-ENOMEM`: C's answer to a seventh `path=`.
const ENOMEM: i32 = -12;

/// A name kept as C keeps it: `strscpy` into `NAME_MAX` bytes, so at most
/// `NAME_MAX - 1` of them.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Name {
    buf: [u8; NAME_MAX - 1],
    len: usize,
}

impl Name {
    const fn empty() -> Self {
        Name {
            buf: [0; NAME_MAX - 1],
            len: 0,
        }
    }

    fn set(&mut self, s: &[u8]) {
        self.len = s.len().min(self.buf.len());
        self.buf[..self.len].copy_from_slice(&s[..self.len]);
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", Lossy(self.as_bytes()))
    }
}

/// Bytes shown as text, as `%s` shows them (each byte that is not UTF-8
/// as U+FFFD).
pub struct Lossy<'a>(pub &'a [u8]);

impl fmt::Display for Lossy<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        loop {
            match core::str::from_utf8(rest) {
                Ok(s) => return f.write_str(s),
                Err(e) => {
                    let (good, bad) = rest.split_at(e.valid_up_to());
                    f.write_str(core::str::from_utf8(good).unwrap_or_default())?;
                    f.write_str("\u{fffd}")?;
                    rest = &bad[e.error_len().unwrap_or(bad.len())..];
                }
            }
        }
    }
}

impl fmt::Debug for Lossy<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

/// What a map asks for. `A` is a parsed path (the module's pair of socket
/// addresses).
#[derive(Debug)]
pub struct MapOpts<A> {
    /// `sessname=`.
    pub sessname: Name,
    /// `device_path=`: the device's path on the server.
    pub pathname: Name,
    /// `path=`, in order; the first `path_cnt` are set.
    pub paths: [Option<A>; MAX_MAP_PATHS],
    /// How many `path=` there were.
    pub path_cnt: usize,
    /// `dest_port=`, the last one ([`RTRS_PORT`] without one).
    pub port: u16,
    /// `access_mode=` ([`AccessMode::Rw`] without one).
    pub access_mode: AccessMode,
    /// `nr_poll_queues=`, -1 made the CPU count (0 without one).
    pub nr_poll_queues: u32,
}

impl<A> MapOpts<A> {
    /// The paths given, in order.
    pub fn paths(&self) -> impl Iterator<Item = &A> {
        self.paths[..self.path_cnt].iter().flatten()
    }
}

/// Why a map's options were refused; `Display` is C's log line (without
/// the module's prefix) and [`MapOptsError::errno`] its errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapOptsError<'a> {
    /// `sessname=` longer than `NAME_MAX`.
    SessnameTooLong,
    /// A `path=` beyond [`MAX_MAP_PATHS`] (-ENOMEM, as in C).
    TooManyPaths,
    /// The address parser refused a path: its text and errno.
    BadPath(&'a [u8], i32),
    /// `device_path=` longer than `NAME_MAX`.
    DevPathTooLong,
    /// `dest_port=` not a number in 0..=65535; C prints the last port
    /// that parsed (0 if none).
    BadPort(i32),
    /// `access_mode=` none of ro, rw, migration.
    BadAccessMode(&'a [u8]),
    /// `nr_poll_queues=` not a number in -1..=CPUs; C prints the last
    /// value that parsed (0 if none).
    BadPollQueues(i32),
    /// A piece that is no option, or an option without its value.
    Unknown(&'a [u8]),
    /// No `sessname=` or no `device_path=`.
    Missing,
}

impl MapOptsError<'_> {
    /// The negative errno the write returns.
    pub const fn errno(&self) -> i32 {
        match *self {
            MapOptsError::TooManyPaths => ENOMEM,
            MapOptsError::BadPath(_, e) => e,
            _ => EINVAL,
        }
    }
}

impl fmt::Display for MapOptsError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MapOptsError::SessnameTooLong => f.write_str("map_device: sessname too long"),
            MapOptsError::TooManyPaths => {
                write!(f, "map_device: too many (> {MAX_MAP_PATHS}) paths provided")
            }
            MapOptsError::BadPath(p, e) => write!(f, "Can't parse path {}: {e}", Lossy(p)),
            MapOptsError::DevPathTooLong => f.write_str("map_device: Device path too long"),
            MapOptsError::BadPort(v) => write!(f, "bad destination port number parameter '{v}'"),
            MapOptsError::BadAccessMode(s) => {
                write!(f, "map_device: Invalid access_mode: '{}'", Lossy(s))
            }
            MapOptsError::BadPollQueues(v) => write!(f, "bad nr_poll_queues parameter '{v}'"),
            MapOptsError::Unknown(s) => {
                write!(
                    f,
                    "map_device: Unknown parameter or missing value '{}'",
                    Lossy(s)
                )
            }
            MapOptsError::Missing => f.write_str("map_device: Parameters missing"),
        }
    }
}

/// The option a piece names.
#[derive(Clone, Copy)]
enum Opt {
    Path,
    DevPath,
    DestPort,
    AccessMode,
    Sessname,
    PollQueues,
}

/// `match_token` over C's table, in its order: the option and its value.
/// A `%s` value is the rest of the piece and not empty; a `%d` value is
/// what `simple_strtol` reads, all of the rest and at least one byte.
fn match_opt(p: &[u8]) -> Option<(Opt, &[u8])> {
    const TABLE: [(&[u8], bool, Opt); 6] = [
        (b"path=", false, Opt::Path),
        (b"device_path=", false, Opt::DevPath),
        (b"dest_port=", true, Opt::DestPort),
        (b"access_mode=", false, Opt::AccessMode),
        (b"sessname=", false, Opt::Sessname),
        (b"nr_poll_queues=", true, Opt::PollQueues),
    ];
    TABLE.iter().find_map(|&(prefix, num, opt)| {
        let v = p.strip_prefix(prefix)?;
        let ok = !v.is_empty() && (!num || strtol_len(v) == v.len());
        ok.then_some((opt, v))
    })
}

/// `_parse_integer_fixup_radix` for base 0: the base, and the digits
/// after a `0x` prefix.
fn radix(s: &[u8]) -> (u32, &[u8]) {
    match s {
        [b'0', x, d, ..] if x.eq_ignore_ascii_case(&b'x') && d.is_ascii_hexdigit() => (16, &s[2..]),
        [b'0', ..] => (8, s),
        _ => (10, s),
    }
}

/// The digits of `s` in `base` before the first byte that is not one
/// (`_parse_integer_limit`'s count).
fn digits(s: &[u8], base: u32) -> usize {
    s.iter()
        .take_while(|&&c| (c as char).to_digit(16).is_some_and(|v| v < base))
        .count()
}

/// How many bytes `simple_strtol(s, &end, 0)` reads (a `-` counts even
/// with no digit after it).
fn strtol_len(s: &[u8]) -> usize {
    let (neg, rest) = match s.strip_prefix(b"-") {
        Some(r) => (1, r),
        None => (0, s),
    };
    let (base, d) = radix(rest);
    neg + (rest.len() - d.len()) + digits(d, base)
}

/// `match_int`: `kstrtoll(s, 0)` within `int`, else `None`.
fn match_int(s: &[u8]) -> Option<i32> {
    let (neg, s) = match s.strip_prefix(b"-") {
        Some(r) => (true, r),
        None => (false, s.strip_prefix(b"+").unwrap_or(s)),
    };
    let (base, d) = radix(s);
    let n = digits(d, base);
    if n == 0 || n != d.len() {
        return None;
    }
    let mut v: u64 = 0;
    for &c in d {
        let x = (c as char).to_digit(16)? as u64;
        v = v.checked_mul(base as u64)?.checked_add(x)?;
    }
    let v = if neg { -i128::from(v) } else { i128::from(v) };
    i32::try_from(v).ok()
}

/// Reads a map's options. `cpus` is `nr_cpu_ids` (the bound of
/// `nr_poll_queues`); `parse_path(text, port)` reads one `path=` as
/// `rtrs_addr_to_sockaddr` does, returning its negative errno on failure.
pub fn parse_map_options<'a, A>(
    buf: &'a [u8],
    cpus: u32,
    mut parse_path: impl FnMut(&'a [u8], u16) -> Result<A, i32>,
) -> Result<MapOpts<A>, MapOptsError<'a>> {
    let buf = buf.split(|&c| c == 0).next().unwrap_or(&[]);
    let mut o = MapOpts {
        sessname: Name::empty(),
        pathname: Name::empty(),
        paths: core::array::from_fn(|_| None),
        path_cnt: 0,
        port: RTRS_PORT,
        access_mode: AccessMode::Rw,
        nr_poll_queues: 0,
    };
    // The last values that parsed, which C's messages print.
    let (mut port_seen, mut pq_seen) = (0i32, 0i32);
    let (mut have_sess, mut have_dev) = (false, false);
    for p in strip(buf).split(|&c| c == b' ').filter(|p| !p.is_empty()) {
        let (opt, v) = match_opt(p).ok_or(MapOptsError::Unknown(p))?;
        match opt {
            Opt::Sessname => {
                have_sess = true;
                if v.len() > NAME_MAX {
                    return Err(MapOptsError::SessnameTooLong);
                }
                o.sessname.set(v);
            }
            Opt::Path => {
                if o.path_cnt >= MAX_MAP_PATHS {
                    return Err(MapOptsError::TooManyPaths);
                }
                let a = parse_path(v, o.port).map_err(|e| MapOptsError::BadPath(v, e))?;
                o.paths[o.path_cnt] = Some(a);
                o.path_cnt += 1;
            }
            Opt::DevPath => {
                have_dev = true;
                if v.len() > NAME_MAX {
                    return Err(MapOptsError::DevPathTooLong);
                }
                o.pathname.set(v);
            }
            Opt::DestPort => {
                let n = match_int(v);
                if let Some(n) = n {
                    port_seen = n;
                }
                match n.map(u16::try_from) {
                    Some(Ok(port)) => o.port = port,
                    _ => return Err(MapOptsError::BadPort(port_seen)),
                }
            }
            Opt::AccessMode => {
                o.access_mode = AccessMode::from_name(v).ok_or(MapOptsError::BadAccessMode(v))?;
            }
            Opt::PollQueues => {
                let n = match_int(v);
                if let Some(n) = n {
                    pq_seen = n;
                }
                match n {
                    Some(-1) => {
                        // (C's variable then holds the CPU count.)
                        pq_seen = cpus as i32;
                        o.nr_poll_queues = cpus;
                    }
                    Some(n) if n >= 0 && n as u32 <= cpus => o.nr_poll_queues = n as u32,
                    _ => return Err(MapOptsError::BadPollQueues(pq_seen)),
                }
            }
        }
    }
    if !(have_sess && have_dev) {
        return Err(MapOptsError::Missing);
    }
    Ok(o)
}

/// `strstrip`: without the white space at both ends (the kernel's
/// `isspace`, which takes Latin-1's no-break space too).
pub(crate) fn strip(s: &[u8]) -> &[u8] {
    let sp = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | 0xa0);
    let start = s.iter().position(|c| !sp(c)).unwrap_or(s.len());
    let end = s.iter().rposition(|c| !sp(c)).map_or(start, |e| e + 1);
    &s[start..end]
}

#[cfg(test)]
mod tests;
