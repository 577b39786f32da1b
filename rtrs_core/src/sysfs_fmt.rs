// SPDX-License-Identifier: GPL-2.0

//! Parsing and formatting for `/sys/class/rtrs-client`, byte-compatible with
//! the C client (`rtrs-clt-sysfs.c`, `rtrs-clt-stats.c`, and the address
//! helpers of `rtrs.c`).
//!
//! Input model: a sysfs store gets the `count` bytes the user wrote, and the
//! kernel puts a NUL after them. The C code treats that buffer as a C string,
//! so every parser here takes the raw bytes (which may hold anything,
//! including NULs and non-UTF-8) and only looks at the part before the first
//! NUL, see [`c_str`]. A zero-length write never reaches a store in the
//! kernel (`sysfs_kf_write` returns 0 first); the parsers still give the
//! answer C would give for an empty string.
//!
//! Output model: shows fill a PAGE_SIZE page through `sysfs_emit`, which like
//! `scnprintf` stores at most `size - 1` bytes and a NUL. [`Writer`] does the
//! same on any `&mut [u8]`, and every `*_show` / `*_to_str` returns the number
//! of bytes stored, never more than `buf.len() - 1`.

#![forbid(unsafe_code)]

use core::fmt::{self, Write};

use super::latency::{lat_hist_lo_us, LatHist, LAT_HIST_BUCKETS};
use super::names::NAME_MAX;

/// `EINVAL`: invalid argument.
pub const EINVAL: i32 = 22;
/// `ERANGE`: a number does not fit in the target type.
pub const ERANGE: i32 = 34;
/// `EPROTONOSUPPORT`: address prefix other than `ip:` or `gid:`.
pub const EPROTONOSUPPORT: i32 = 93;

#[cfg(test)]
/// Size of the page a sysfs show writes into (x86_64 `PAGE_SIZE`).
pub const PAGE_SIZE: usize = 4096;

/// A positive C errno; [`Errno::errno`] gives the negative value a C store returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Errno(i32);

impl Errno {
    /// `-EINVAL`.
    pub const EINVAL: Errno = Errno(EINVAL);
    /// `-ERANGE`.
    pub const ERANGE: Errno = Errno(ERANGE);
    /// `-EPROTONOSUPPORT`.
    pub const EPROTONOSUPPORT: Errno = Errno(EPROTONOSUPPORT);

    /// From an errno of either sign.
    pub const fn from_errno(e: i32) -> Errno {
        Errno(e.wrapping_abs())
    }

    /// The negative errno, as the C store function returns it.
    pub const fn errno(self) -> i32 {
        self.0.wrapping_neg()
    }
}

// ---------------------------------------------------------------------------
// Output: a truncating writer with scnprintf semantics
// ---------------------------------------------------------------------------

/// Writes into a caller-provided buffer like `scnprintf`/`sysfs_emit`: at most
/// `buf.len() - 1` bytes are kept, the rest is dropped silently, and a NUL
/// always follows the stored bytes (when the buffer is not empty).
pub struct Writer<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> Writer<'a> {
    /// A writer that starts at the beginning of `buf`.
    pub fn new(buf: &'a mut [u8]) -> Self {
        if let Some(first) = buf.first_mut() {
            *first = 0;
        }
        Writer { buf, len: 0 }
    }

    /// Number of bytes stored so far (what a show function returns).
    pub fn written(&self) -> usize {
        self.len
    }

    #[cfg(test)]
    /// True when nothing has been stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[cfg(test)]
    /// The bytes stored so far.
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }

    /// Appends raw bytes (which need not be UTF-8), truncating at the limit.
    pub fn write_bytes(&mut self, bytes: &[u8]) {
        let limit = self.buf.len().saturating_sub(1);
        let room = limit.saturating_sub(self.len);
        let n = bytes.len().min(room);
        let end = self.len.saturating_add(n);
        if let (Some(dst), Some(src)) = (self.buf.get_mut(self.len..end), bytes.get(..n)) {
            super::proto::copy_bytes(dst, src);
            self.len = end;
        }
        if let Some(nul) = self.buf.get_mut(self.len) {
            *nul = 0;
        }
    }
}

impl Write for Writer<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.write_bytes(s.as_bytes());
        Ok(())
    }
}

/// `sysfs_emit`: formats `args` at the start of `buf`; returns the stored length.
pub fn sysfs_emit(buf: &mut [u8], args: fmt::Arguments<'_>) -> usize {
    let mut w = Writer::new(buf);
    // Writer::write_str never fails; truncation is silent.
    let _ = w.write_fmt(args);
    w.written()
}

// ---------------------------------------------------------------------------
// C string helpers
// ---------------------------------------------------------------------------

/// The part of a store buffer that C string functions see: up to the first NUL.
pub fn c_str(buf: &[u8]) -> &[u8] {
    match buf.iter().position(|&b| b == 0) {
        Some(n) => buf.get(..n).unwrap_or(buf),
        None => buf,
    }
}

/// Byte `i` of a C string, or NUL past its end.
fn at(s: &[u8], i: usize) -> u8 {
    s.get(i).copied().unwrap_or(0)
}

/// `s` without its first `n` bytes (empty if shorter).
fn skip(s: &[u8], n: usize) -> &[u8] {
    s.get(n..).unwrap_or(&[])
}

/// `s` cut to at most `n` bytes.
fn head(s: &[u8], n: usize) -> &[u8] {
    s.get(..n).unwrap_or(s)
}

/// Kernel `tolower()`: the ctype table is Latin-1, so 0xC0..=0xDE except
/// 0xD7 are upper case too.
fn kernel_tolower(c: u8) -> u8 {
    let upper = c.is_ascii_uppercase() || ((0xC0..=0xDE).contains(&c) && c != 0xD7);
    if upper {
        c.wrapping_add(b'a' - b'A')
    } else {
        c
    }
}

/// Kernel `strncasecmp` on two C strings; 0 means equal in the first `n` bytes.
fn strncasecmp(s1: &[u8], s2: &[u8], n: usize) -> i32 {
    let (s1, s2) = (c_str(s1), c_str(s2));
    let (mut c1, mut c2) = (0u8, 0u8);
    for i in 0..n {
        c1 = at(s1, i);
        c2 = at(s2, i);
        if c1 == 0 || c2 == 0 {
            break;
        }
        if c1 == c2 {
            continue;
        }
        c1 = kernel_tolower(c1);
        c2 = kernel_tolower(c2);
        if c1 != c2 {
            break;
        }
    }
    i32::from(c1).wrapping_sub(i32::from(c2))
}

/// `sysfs_streq`: equal as C strings, ignoring one trailing newline on either side.
pub fn sysfs_streq(s1: &[u8], s2: &[u8]) -> bool {
    let (a, b) = (c_str(s1), c_str(s2));
    let i = a.iter().zip(b.iter()).take_while(|(x, y)| x == y).count();
    let next = i.saturating_add(1);
    let (x, y) = (at(a, i), at(b, i));
    if x == y {
        return true;
    }
    if x == 0 && y == b'\n' && at(b, next) == 0 {
        return true;
    }
    x == b'\n' && at(a, next) == 0 && y == 0
}

// ---------------------------------------------------------------------------
// kstrto*()
// ---------------------------------------------------------------------------

/// Base autodetection and "0x" skipping of the kernel integer parsers.
fn parse_integer_fixup_radix(s: &[u8], base: u32) -> (&[u8], u32) {
    let mut base = base;
    let hex_prefix = at(s, 0) == b'0' && (at(s, 1) | 0x20) == b'x';
    if base == 0 {
        base = if at(s, 0) != b'0' {
            10
        } else if hex_prefix && at(s, 2).is_ascii_hexdigit() {
            16
        } else {
            8
        };
    }
    if base == 16 && hex_prefix {
        (skip(s, 2), base)
    } else {
        (s, base)
    }
}

/// Reads digits of `base`; returns (digits consumed, overflowed, value).
/// Like C, it keeps consuming digits after an overflow.
fn parse_integer(s: &[u8], base: u32) -> (usize, bool, u64) {
    let base = u64::from(base);
    let mut res: u64 = 0;
    let mut overflow = false;
    let mut used = 0usize;
    for &c in s {
        // '0'-'9', 'a'-'f' and 'A'-'F', as the C loop accepts them.
        let Some(val) = char::from(c).to_digit(16) else {
            break;
        };
        let val = u64::from(val);
        if val >= base {
            break;
        }
        if res & (!0u64 << 60) != 0 {
            if let Some(limit) = u64::MAX.wrapping_sub(val).checked_div(base) {
                if res > limit {
                    overflow = true;
                }
            }
        }
        res = res.wrapping_mul(base).wrapping_add(val);
        used = used.saturating_add(1);
    }
    (used, overflow, res)
}

/// `_kstrtoull`: no sign allowed; one trailing '\n' is allowed.
fn kstrtoull_nosign(s: &[u8], base: u32) -> Result<u64, Errno> {
    let (s, base) = parse_integer_fixup_radix(s, base);
    let (used, overflow, res) = parse_integer(s, base);
    if overflow {
        return Err(Errno::ERANGE);
    }
    if used == 0 {
        return Err(Errno::EINVAL);
    }
    let mut rest = skip(s, used);
    if at(rest, 0) == b'\n' {
        rest = skip(rest, 1);
    }
    if !rest.is_empty() {
        return Err(Errno::EINVAL);
    }
    Ok(res)
}

/// `kstrtoull`: optional '+', base 0 autodetects 0x (hex) and 0 (octal),
/// one trailing '\n'; -ERANGE on overflow (even with junk after it), else
/// -EINVAL on anything unparsable.
pub fn kstrtoull(s: &[u8], base: u32) -> Result<u64, Errno> {
    let s = c_str(s);
    let s = if at(s, 0) == b'+' { skip(s, 1) } else { s };
    kstrtoull_nosign(s, base)
}

/// `kstrtoll`: like [`kstrtoull`] but also takes a leading '-'.
pub fn kstrtoll(s: &[u8], base: u32) -> Result<i64, Errno> {
    let s = c_str(s);
    if at(s, 0) == b'-' {
        let tmp = kstrtoull_nosign(skip(s, 1), base)?;
        let neg = tmp.wrapping_neg() as i64;
        if neg > 0 {
            return Err(Errno::ERANGE);
        }
        Ok(neg)
    } else {
        let tmp = kstrtoull(s, base)?;
        i64::try_from(tmp).map_err(|_| Errno::ERANGE)
    }
}

/// `kstrtoint`: [`kstrtoll`] limited to `i32` (-ERANGE outside).
pub fn kstrtoint(s: &[u8], base: u32) -> Result<i32, Errno> {
    i32::try_from(kstrtoll(s, base)?).map_err(|_| Errno::ERANGE)
}

/// `kstrtouint`: [`kstrtoull`] limited to `u32` (-ERANGE outside).
pub fn kstrtouint(s: &[u8], base: u32) -> Result<u32, Errno> {
    u32::try_from(kstrtoull(s, base)?).map_err(|_| Errno::ERANGE)
}

#[cfg(test)]
/// `kstrtou16`: [`kstrtoull`] limited to `u16` (-ERANGE outside).
pub fn kstrtou16(s: &[u8], base: u32) -> Result<u16, Errno> {
    u16::try_from(kstrtoull(s, base)?).map_err(|_| Errno::ERANGE)
}

// ---------------------------------------------------------------------------
// Session attributes: max_reconnect_attempts, mpath_policy, add_path
// ---------------------------------------------------------------------------

/// Smallest value `max_reconnect_attempts` takes (-1: retry forever).
pub const MIN_MAX_RECONN_ATT: i32 = -1;
/// Largest value `max_reconnect_attempts` takes.
pub const MAX_MAX_RECONN_ATT: i32 = 9999;

/// `mpath_policy` value: round-robin.
pub const MP_POLICY_RR: i32 = 0;
/// `mpath_policy` value: min-inflight.
pub const MP_POLICY_MIN_INFLIGHT: i32 = 1;
/// `mpath_policy` value: min-latency.
pub const MP_POLICY_MIN_LATENCY: i32 = 2;
/// `mpath_policy` value of this module's `service-time` (not in C).
pub const MP_POLICY_SERVICE_TIME: i32 = 3;

/// `max_reconnect_attempts` show: the value as `int` and a newline.
pub fn max_reconnect_attempts_show(buf: &mut [u8], value: i32) -> usize {
    sysfs_emit(buf, format_args!("{}\n", value))
}

/// Why a `max_reconnect_attempts` store was refused (C logs each its own way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReconnAttRefused {
    /// Not a decimal `int`: `kstrtoint`'s -EINVAL or -ERANGE.
    NotInt(Errno),
    /// Outside [`MIN_MAX_RECONN_ATT`, `MAX_MAX_RECONN_ATT`]: -EINVAL.
    OutOfRange,
}

impl ReconnAttRefused {
    /// The errno the store returns.
    pub const fn errno(self) -> Errno {
        match self {
            ReconnAttRefused::NotInt(e) => e,
            ReconnAttRefused::OutOfRange => Errno::EINVAL,
        }
    }
}

/// `max_reconnect_attempts` store: decimal `kstrtoint`, then the range
/// [-1, 9999]. Returns the value to set.
pub fn max_reconnect_attempts_store(buf: &[u8]) -> Result<i32, ReconnAttRefused> {
    let value = kstrtoint(buf, 10).map_err(ReconnAttRefused::NotInt)?;
    if !(MIN_MAX_RECONN_ATT..=MAX_MAX_RECONN_ATT).contains(&value) {
        return Err(ReconnAttRefused::OutOfRange);
    }
    Ok(value)
}

/// `mpath_policy` show: policy name, short name and number, or "Unknown".
pub fn mpath_policy_show(buf: &mut [u8], mp_policy: i32) -> usize {
    let (name, short) = match mp_policy {
        MP_POLICY_RR => ("round-robin", "RR"),
        MP_POLICY_MIN_INFLIGHT => ("min-inflight", "MI"),
        MP_POLICY_MIN_LATENCY => ("min-latency", "ML"),
        MP_POLICY_SERVICE_TIME => ("service-time", "ST"),
        _ => return sysfs_emit(buf, format_args!("Unknown ({})\n", mp_policy)),
    };
    sysfs_emit(buf, format_args!("{} ({}: {})\n", name, short, mp_policy))
}

/// `mpath_policy` store. Accepted, in this order:
/// - decimal 0, 1 or 2 as `kstrtoint` reads it ("+1", "-0", "01\n" too);
/// - case-insensitive prefixes "round-robin", "min-inflight", "min-latency"
///   (anything may follow them);
/// - case-insensitive "rr", "mi", "ml" when the string (up to the first NUL,
///   at most `NAME_MAX` bytes, minus one trailing '\n') is exactly 2 bytes.
///
/// This module's `service-time` is taken by name only ("service-time" as a
/// prefix, or "st" as above): C answers "3" with -EINVAL, and so does this.
/// Everything else, including kstrtoint overflow, is -EINVAL.
pub fn mpath_policy_store(buf: &[u8]) -> Result<i32, Errno> {
    if let Ok(v) = kstrtoint(buf, 10) {
        if matches!(
            v,
            MP_POLICY_RR | MP_POLICY_MIN_INFLIGHT | MP_POLICY_MIN_LATENCY
        ) {
            return Ok(v);
        }
    }
    let s = c_str(buf);
    let mut len = s.len().min(NAME_MAX);
    if head(s, len).last() == Some(&b'\n') {
        len = len.saturating_sub(1);
    }
    let short = |name: &[u8]| len == 2 && strncasecmp(s, name, 2) == 0;
    if strncasecmp(s, b"round-robin", 11) == 0 || short(b"rr") {
        Ok(MP_POLICY_RR)
    } else if strncasecmp(s, b"min-inflight", 12) == 0 || short(b"mi") {
        Ok(MP_POLICY_MIN_INFLIGHT)
    } else if strncasecmp(s, b"min-latency", 11) == 0 || short(b"ml") {
        Ok(MP_POLICY_MIN_LATENCY)
    } else if strncasecmp(s, b"service-time", 12) == 0 || short(b"st") {
        Ok(MP_POLICY_SERVICE_TIME)
    } else {
        Err(Errno::EINVAL)
    }
}

/// `add_path` show: the usage text.
pub fn add_path_show(buf: &mut [u8]) -> usize {
    sysfs_emit(
        buf,
        format_args!(
            "Usage: echo [<source addr>@]<destination addr> > {}\n\n*addr ::= [ ip:<ipv4|ipv6> | gid:<gid> ]\n",
            "add_path"
        ),
    )
}

/// Length `add_path` store hands to `rtrs_addr_to_sockaddr`: up to the first
/// '\n' before the first NUL, else the whole write (`count`, NULs included).
fn add_path_len(buf: &[u8]) -> usize {
    match c_str(buf).iter().position(|&b| b == b'\n') {
        Some(nl) => nl,
        None => buf.len(),
    }
}

/// A C string with a length: the (text, len) pair C passes around.
type CText<'a> = (&'a [u8], usize);
/// Source (whole C string from its start, length up to the separator) and
/// destination (C string after the separator, length).
type SrcDst<'a> = (Option<CText<'a>>, &'a [u8], usize);

/// Splits a C string with length into (source, destination) the way
/// `rtrs_addr_to_sockaddr` does: the first ',' anywhere in the C string, else
/// the first '@', separates them (even past `len`); the destination length is
/// `len` minus the source and separator, wrapping like C's `size_t`.
fn split_src_dst(cs: &[u8], len: usize) -> SrcDst<'_> {
    let sep = cs
        .iter()
        .position(|&b| b == b',')
        .or_else(|| cs.iter().position(|&b| b == b'@'));
    match sep {
        Some(d) => {
            let after = d.saturating_add(1);
            (Some((cs, d)), skip(cs, after), len.wrapping_sub(after))
        }
        None => (None, cs, len),
    }
}

#[cfg(test)]
/// The `[src@|,]dst` split of an `add_path` write, as address strings:
/// `(source, destination)`. The source may hold a '\n' when the newline
/// comes before the separator (C does not cut it there); the destination is
/// cut at the newline, or runs to the NUL when the newline came earlier.
pub fn add_path_split(buf: &[u8]) -> (Option<&[u8]>, &[u8]) {
    let cs = c_str(buf);
    let (src, dst, dst_len) = split_src_dst(cs, add_path_len(buf));
    (src.map(|(s, n)| head(s, n)), head(dst, dst_len))
}

/// `add_path` store, address part: `rtrs_addr_to_sockaddr` on the write with
/// the session's port; every failure becomes -EINVAL as in C.
/// `dev_ifindex` looks up a network device by name (`dev_get_by_name`) for
/// an IPv6 link-local scope such as "%eth0".
pub fn add_path_store<F>(buf: &[u8], port: u16, dev_ifindex: F) -> Result<RtrsAddr, Errno>
where
    F: FnMut(&[u8]) -> Option<u32>,
{
    rtrs_addr_to_sockaddr(buf, add_path_len(buf), port, dev_ifindex).map_err(|_| Errno::EINVAL)
}

// ---------------------------------------------------------------------------
// Addresses: rtrs_addr_to_sockaddr and friends
// ---------------------------------------------------------------------------

/// `AF_INET`.
pub const AF_INET: u16 = 2;
/// `AF_INET6`.
pub const AF_INET6: u16 = 10;
/// `AF_IB`.
pub const AF_IB: u16 = 27;
/// `RDMA_IB_IP_PS_IB`: port space of an IB service ID (`sib_sid`).
pub const RDMA_IB_IP_PS_IB: u64 = 0x0000_0000_013F_0000;
#[cfg(test)]
/// `sib_sid_mask` set for a "gid:" address.
pub const RTRS_IB_SID_MASK: u64 = u64::MAX;
#[cfg(test)]
/// `sib_pkey` set for a "gid:" address.
pub const RTRS_IB_PKEY: u16 = 0xffff;
/// `INET_ADDRSTRLEN`: longest text `inet4_pton` takes.
const INET_ADDRSTRLEN: usize = 16;
/// `INET6_ADDRSTRLEN`: longest text `inet6_pton` takes.
const INET6_ADDRSTRLEN: usize = 48;

/// A parsed RTRS address (the parts of `sockaddr_storage` C fills in).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtrsSockaddr {
    /// `sockaddr_in` from `ip:<ipv4>`.
    Inet {
        /// `sin_addr`, network order.
        addr: [u8; 4],
        /// `sin_port`, host order.
        port: u16,
    },
    /// `sockaddr_in6` from `ip:<ipv6>[%scope]`.
    Inet6 {
        /// `sin6_addr`.
        addr: [u8; 16],
        /// `sin6_port`, host order.
        port: u16,
        /// `sin6_scope_id`; set only for link-local addresses with a "%scope"
        /// (C leaves it unwritten otherwise; 0 here).
        scope_id: u32,
    },
    /// `sockaddr_ib` from `gid:<gid>`.
    Ib {
        /// `sib_addr` (the GID).
        gid: [u8; 16],
        /// `sib_sid`, host order: `RDMA_IB_IP_PS_IB | port`, where C passes
        /// the port through a `short`, so ports >= 0x8000 sign-extend.
        sid: u64,
    },
}

impl RtrsSockaddr {
    /// The address family (`sa_family`).
    pub const fn family(&self) -> u16 {
        match self {
            RtrsSockaddr::Inet { .. } => AF_INET,
            RtrsSockaddr::Inet6 { .. } => AF_INET6,
            RtrsSockaddr::Ib { .. } => AF_IB,
        }
    }
}

/// `struct rtrs_addr` after parsing: the source is optional.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtrsAddr {
    /// Source address, `None` when the string had no ',' or '@'.
    pub src: Option<RtrsSockaddr>,
    /// Destination address.
    pub dst: RtrsSockaddr,
}

const IN6PTON_XDIGIT: u32 = 0x0001_0000;
const IN6PTON_DIGIT: u32 = 0x0002_0000;
const IN6PTON_COLON_MASK: u32 = 0x0070_0000;
const IN6PTON_COLON_1: u32 = 0x0010_0000;
const IN6PTON_COLON_2: u32 = 0x0020_0000;
const IN6PTON_COLON_1_2: u32 = 0x0040_0000;
const IN6PTON_DOT: u32 = 0x0080_0000;
const IN6PTON_DELIM: u32 = 0x1000_0000;
const IN6PTON_NULL: u32 = 0x2000_0000;
const IN6PTON_UNKNOWN: u32 = 0x4000_0000;

/// Classifies one character for the address scanners.
fn xdigit2bin(c: u8, delim: u8) -> u32 {
    if c == delim || c == 0 {
        return IN6PTON_DELIM;
    }
    if c == b':' {
        return IN6PTON_COLON_MASK;
    }
    if c == b'.' {
        return IN6PTON_DOT;
    }
    let Some(val) = char::from(c).to_digit(16) else {
        return IN6PTON_UNKNOWN;
    };
    let digit = if val < 10 { IN6PTON_DIGIT } else { 0 };
    val | IN6PTON_XDIGIT | digit
}

/// `in4_pton`: dotted quad of decimal bytes (leading zeros fine) ended by
/// `delim`, NUL/end of `src`, or ':'. Returns the address and the index
/// where scanning stopped.
fn in4_pton(src: &[u8], delim: u8) -> (Option<[u8; 4]>, usize) {
    let mut dbuf = [0u8; 4];
    let mut s = 0usize;
    let mut i = 0usize;
    // C keeps the class bits of each digit in here; only the low 16 bits
    // hold the octet value, and "w != 0" means "saw a digit".
    let mut w: i32 = 0;
    loop {
        let c = xdigit2bin(at(src, s), delim);
        if c & (IN6PTON_DIGIT | IN6PTON_DOT | IN6PTON_DELIM | IN6PTON_COLON_MASK) == 0 {
            return (None, s);
        }
        if c & (IN6PTON_DOT | IN6PTON_DELIM | IN6PTON_COLON_MASK) != 0 {
            if w == 0 {
                return (None, s);
            }
            match dbuf.get_mut(i) {
                Some(b) => *b = (w & 0xff) as u8,
                None => return (None, s),
            }
            w = 0;
            i = i.saturating_add(1);
            if c & (IN6PTON_DELIM | IN6PTON_COLON_MASK) != 0 {
                if i != 4 {
                    return (None, s);
                }
                break;
            }
        } else {
            w = w.wrapping_mul(10).wrapping_add(c as i32);
            if (w & 0xffff) > 255 {
                return (None, s);
            }
        }
        if i >= 4 {
            return (None, s);
        }
        s = s.saturating_add(1);
    }
    (Some(dbuf), s)
}

/// `in6_pton`: IPv6 text (with "::" and a trailing dotted quad) ended by
/// `delim` or NUL/end of `src`. Returns the address and the index where
/// scanning stopped.
fn in6_pton(src: &[u8], delim: u8) -> (Option<[u8; 16]>, usize) {
    let mut dbuf = [0u8; 16];
    let mut state = IN6PTON_COLON_1_2 | IN6PTON_XDIGIT | IN6PTON_NULL;
    let mut s = 0usize;
    let mut d = 0usize;
    let mut dc: Option<usize> = None;
    let mut tok: Option<usize> = None;
    let mut w: u32 = 0;
    loop {
        let c = xdigit2bin(at(src, s), delim);
        if c & state == 0 {
            return (None, s);
        }
        if c & (IN6PTON_DELIM | IN6PTON_COLON_MASK) != 0 {
            if state & IN6PTON_NULL == 0 {
                match dbuf.get_mut(d..d.saturating_add(2)) {
                    Some(word) => super::proto::copy_bytes(word, &(w as u16).to_be_bytes()),
                    None => return (None, s),
                }
                d = d.saturating_add(2);
            }
            w = 0;
            if c & IN6PTON_DELIM != 0 {
                break;
            }
            state = match state & IN6PTON_COLON_MASK {
                IN6PTON_COLON_2 => {
                    dc = Some(d);
                    if d >= dbuf.len() {
                        IN6PTON_XDIGIT | IN6PTON_DELIM | IN6PTON_NULL
                    } else {
                        IN6PTON_XDIGIT | IN6PTON_DELIM
                    }
                }
                x if x == IN6PTON_COLON_1 | IN6PTON_COLON_1_2 => IN6PTON_XDIGIT | IN6PTON_COLON_2,
                IN6PTON_COLON_1 => IN6PTON_XDIGIT,
                IN6PTON_COLON_1_2 => IN6PTON_COLON_2,
                _ => 0,
            };
            tok = Some(s.saturating_add(1));
        } else if c & IN6PTON_DOT != 0 {
            let start = tok.unwrap_or(s);
            let (v4, end) = in4_pton(skip(src, start), delim);
            let end = start.saturating_add(end);
            let Some(v4) = v4 else {
                return (None, end);
            };
            match dbuf.get_mut(d..d.saturating_add(4)) {
                Some(quad) => super::proto::copy_bytes(quad, &v4),
                None => return (None, end),
            }
            d = d.saturating_add(4);
            s = end;
            break;
        } else {
            w = (w << 4) | (c & 0xff);
            state = IN6PTON_COLON_1 | IN6PTON_DELIM;
            if w & 0xf000 == 0 {
                state |= IN6PTON_XDIGIT;
            }
            if dc.is_none() && d.saturating_add(2) < dbuf.len() {
                state |= IN6PTON_COLON_1_2;
                state &= !IN6PTON_DELIM;
            }
            if d.saturating_add(2) >= dbuf.len() {
                state &= !(IN6PTON_COLON_1 | IN6PTON_COLON_1_2);
            }
        }
        let d4 = d.saturating_add(4);
        if (dc.is_some() && d4 < dbuf.len()) || d4 == dbuf.len() {
            state |= IN6PTON_DOT;
        }
        if d >= dbuf.len() {
            state &= !(IN6PTON_XDIGIT | IN6PTON_COLON_MASK);
        }
        s = s.saturating_add(1);
    }
    let mut out = [0u8; 16];
    match dc {
        None => out = dbuf,
        Some(dc) => {
            // Words before "::" stay in front, words after it go to the end.
            let front = dbuf.get(..dc).unwrap_or(&[]);
            let tail = dbuf.get(dc..d).unwrap_or(&[]);
            let tail_at = out.len().saturating_sub(tail.len());
            if let Some(o) = out.get_mut(..front.len()) {
                super::proto::copy_bytes(o, front);
            }
            if let Some(o) = out.get_mut(tail_at..) {
                super::proto::copy_bytes(o, tail);
            }
        }
    }
    (Some(out), s)
}

/// `ipv6_addr_type(addr) & IPV6_ADDR_LINKLOCAL`: fe80::/10 unicast or
/// link-scope multicast (ffx2::/16).
fn ipv6_is_linklocal(addr: &[u8; 16]) -> bool {
    let (b0, b1) = (addr[0], addr[1]);
    let top3 = b0 & 0xE0;
    if top3 != 0 && top3 != 0xE0 {
        return false;
    }
    if b0 == 0xFF {
        return b1 & 0x0f == 0x02;
    }
    b0 == 0xFE && b1 & 0xC0 == 0x80
}

/// `inet_pton_with_scope(AF_UNSPEC, ...)` on the text after "ip:".
fn inet_pton_with_scope<F>(
    src: &[u8],
    port: u16,
    dev_ifindex: &mut F,
) -> Result<RtrsSockaddr, Errno>
where
    F: FnMut(&[u8]) -> Option<u32>,
{
    if src.len() <= INET_ADDRSTRLEN {
        if let (Some(addr), _) = in4_pton(src, b'\n') {
            return Ok(RtrsSockaddr::Inet { addr, port });
        }
    }
    if src.len() > INET6_ADDRSTRLEN {
        return Err(Errno::EINVAL);
    }
    let (addr, end) = in6_pton(src, b'%');
    let addr = addr.ok_or(Errno::EINVAL)?;
    let mut scope_id = 0;
    if ipv6_is_linklocal(&addr) && end != src.len() && at(src, end) == b'%' {
        // The scope text is copied into a 16-byte buffer: 15 bytes at most.
        let scope = head(skip(src, end.saturating_add(1)), 15);
        scope_id = match dev_ifindex(scope) {
            Some(ifindex) => ifindex,
            None => kstrtouint(scope, 0).map_err(|_| Errno::EINVAL)?,
        };
    }
    Ok(RtrsSockaddr::Inet6 {
        addr,
        port,
        scope_id,
    })
}

#[cfg(test)]
/// `rtrs_str_to_sockaddr`: one address `gid:<gid>` or `ip:<ipv4|ipv6>`.
/// `addr` is read as a C string; `len` bounds the text after the prefix (as
/// in C, a `len` shorter than the prefix wraps and reads to the NUL).
/// Errors: -EPROTONOSUPPORT for an unknown prefix, -EINVAL for bad text.
pub fn rtrs_str_to_sockaddr<F>(
    addr: &[u8],
    len: usize,
    port: u16,
    mut dev_ifindex: F,
) -> Result<RtrsSockaddr, Errno>
where
    F: FnMut(&[u8]) -> Option<u32>,
{
    str_to_sockaddr(c_str(addr), len, port, &mut dev_ifindex)
}

fn str_to_sockaddr<F>(
    cs: &[u8],
    len: usize,
    port: u16,
    dev_ifindex: &mut F,
) -> Result<RtrsSockaddr, Errno>
where
    F: FnMut(&[u8]) -> Option<u32>,
{
    if let Some(rest) = cs.strip_prefix(b"gid:") {
        // in6_pton takes an int length: a negative one means "to the NUL".
        let n = len.wrapping_sub(4) as i32;
        let text = match usize::try_from(n) {
            Ok(n) => head(rest, n),
            Err(_) => rest,
        };
        let (gid, _) = in6_pton(text, 0);
        let gid = gid.ok_or(Errno::EINVAL)?;
        let sid = RDMA_IB_IP_PS_IB | (port as i16 as i64 as u64);
        Ok(RtrsSockaddr::Ib { gid, sid })
    } else if let Some(rest) = cs.strip_prefix(b"ip:") {
        // kstrndup: at most len - 3 bytes, and never past the NUL.
        inet_pton_with_scope(head(rest, len.wrapping_sub(3)), port, dev_ifindex)
    } else {
        Err(Errno::EPROTONOSUPPORT)
    }
}

/// `rtrs_addr_to_sockaddr`: `[src,]dst` or `[src@]dst`. The first ',' (else
/// the first '@') of the C string separates source and destination; the
/// source gets port 0 and any failure of it is -EINVAL; the destination gets
/// `port` and its error passes through (-EINVAL or -EPROTONOSUPPORT).
pub fn rtrs_addr_to_sockaddr<F>(
    s: &[u8],
    len: usize,
    port: u16,
    mut dev_ifindex: F,
) -> Result<RtrsAddr, Errno>
where
    F: FnMut(&[u8]) -> Option<u32>,
{
    let cs = c_str(s);
    let (src, dst, dst_len) = split_src_dst(cs, len);
    let src = match src {
        Some((text, n)) => {
            Some(str_to_sockaddr(text, n, 0, &mut dev_ifindex).map_err(|_| Errno::EINVAL)?)
        }
        None => None,
    };
    let dst = str_to_sockaddr(dst, dst_len, port, &mut dev_ifindex)?;
    Ok(RtrsAddr { src, dst })
}

/// `%pI4`: dotted decimal without leading zeros.
fn write_ip4(w: &mut Writer<'_>, a: &[u8; 4]) {
    let _ = write!(w, "{}.{}.{}.{}", a[0], a[1], a[2], a[3]);
}

/// `%pI6`: eight 4-digit lower-case hex groups.
fn write_ip6_full(w: &mut Writer<'_>, a: &[u8; 16]) {
    for (i, pair) in a.chunks_exact(2).enumerate() {
        if i != 0 {
            w.write_bytes(b":");
        }
        if let [hi, lo] = *pair {
            let _ = write!(w, "{:02x}{:02x}", hi, lo);
        }
    }
}

/// `%pI6c`: the kernel's compressed form. The longest run (first one on a
/// tie) of two or more zero groups becomes "::"; v4-mapped and ISATAP
/// addresses end in a dotted quad.
fn write_ip6_compressed(w: &mut Writer<'_>, a: &[u8; 16]) {
    let mut words = [0u16; 8];
    // Indexing instead of zip(chunks_exact): no division in the kernel
    // build (objtool does not know the division panics as noreturn).
    for (i, word) in words.iter_mut().enumerate() {
        if let (Some(&hi), Some(&lo)) = (a.get(i << 1), a.get((i << 1) | 1)) {
            *word = u16::from_be_bytes([hi, lo]);
        }
    }
    let [w0, w1, w2, w3, w4, w5, _, _] = words;
    let v4mapped = (w0 | w1 | w2 | w3 | w4) == 0 && w5 == 0xffff;
    let isatap = (w4 & !0x0200) == 0 && w5 == 0x5efe;
    let use_ipv4 = v4mapped || isatap;
    let groups = if use_ipv4 {
        words.get(..6).unwrap_or(&words)
    } else {
        words.as_slice()
    };

    // Longest run of zero groups; a single zero group is not compressed.
    let mut longest = 1usize;
    let mut colonpos: Option<usize> = None;
    for i in 0..groups.len() {
        let run = skip16(groups, i).iter().take_while(|&&x| x == 0).count();
        if run > longest {
            longest = run;
            colonpos = Some(i);
        }
    }

    let mut needcolon = false;
    let mut i = 0usize;
    while let Some(&group) = groups.get(i) {
        if colonpos == Some(i) {
            if needcolon || i == 0 {
                w.write_bytes(b":");
            }
            w.write_bytes(b":");
            needcolon = false;
            i = i.saturating_add(longest);
            continue;
        }
        if needcolon {
            w.write_bytes(b":");
        }
        let _ = write!(w, "{:x}", group);
        needcolon = true;
        i = i.saturating_add(1);
    }
    if use_ipv4 {
        if needcolon {
            w.write_bytes(b":");
        }
        write_ip4(w, &[a[12], a[13], a[14], a[15]]);
    }
}

/// `s` without its first `n` groups.
fn skip16(s: &[u16], n: usize) -> &[u16] {
    s.get(n..).unwrap_or(&[])
}

fn write_sockaddr(w: &mut Writer<'_>, addr: Option<&RtrsSockaddr>) {
    match addr {
        Some(RtrsSockaddr::Ib { gid, .. }) => {
            w.write_bytes(b"gid:");
            write_ip6_full(w, gid);
        }
        Some(RtrsSockaddr::Inet { addr, .. }) => {
            w.write_bytes(b"ip:");
            write_ip4(w, addr);
        }
        Some(RtrsSockaddr::Inet6 { addr, .. }) => {
            w.write_bytes(b"ip:");
            write_ip6_compressed(w, addr);
        }
        None => w.write_bytes(b"<invalid address family>"),
    }
}

#[cfg(test)]
/// `sockaddr_to_str`: `gid:<full GID>`, `ip:<ipv4>`, `ip:<compressed ipv6>`
/// (no port, no scope); `None` stands for any other family and prints
/// `<invalid address family>`.
pub fn sockaddr_to_str(buf: &mut [u8], addr: Option<&RtrsSockaddr>) -> usize {
    let mut w = Writer::new(buf);
    write_sockaddr(&mut w, addr);
    w.written()
}

/// `rtrs_addr_to_str`: "src@dst", the name of a path directory. C uses a
/// `NAME_MAX`-byte buffer for it, so pass `[0u8; NAME_MAX]` to get the same
/// truncation.
pub fn rtrs_addr_to_str(
    buf: &mut [u8],
    src: Option<&RtrsSockaddr>,
    dst: Option<&RtrsSockaddr>,
) -> usize {
    let mut w = Writer::new(buf);
    write_sockaddr(&mut w, src);
    w.write_bytes(b"@");
    write_sockaddr(&mut w, dst);
    w.written()
}

// ---------------------------------------------------------------------------
// Path attributes
// ---------------------------------------------------------------------------

/// The path state, defined with its transition table in `path_state`.
pub use super::path_state::RtrsCltState;

/// Path `state` show: "connected" for CONNECTED, "disconnected" for every
/// other state.
pub fn rtrs_clt_state_show(buf: &mut [u8], state: RtrsCltState) -> usize {
    let text: &[u8] = if state == RtrsCltState::Connected {
        b"connected\n"
    } else {
        b"disconnected\n"
    };
    let mut w = Writer::new(buf);
    w.write_bytes(text);
    w.written()
}

fn usage_echo_1(buf: &mut [u8], attr_name: &str) -> usize {
    sysfs_emit(buf, format_args!("Usage: echo 1 > {}\n", attr_name))
}

/// Path `reconnect` show: its usage line.
pub fn rtrs_clt_reconnect_show(buf: &mut [u8]) -> usize {
    usage_echo_1(buf, "reconnect")
}

/// Path `disconnect` show: its usage line.
pub fn rtrs_clt_disconnect_show(buf: &mut [u8]) -> usize {
    usage_echo_1(buf, "disconnect")
}

/// Path `remove_path` show: its usage line.
pub fn rtrs_clt_remove_path_show(buf: &mut [u8]) -> usize {
    usage_echo_1(buf, "remove_path")
}

/// Common check of the `reconnect`, `disconnect` and `remove_path` stores:
/// only "1" (`sysfs_streq`, so "1\n" too) passes, anything else is -EINVAL.
fn path_cmd_store(buf: &[u8]) -> Result<(), Errno> {
    if sysfs_streq(buf, b"1") {
        Ok(())
    } else {
        Err(Errno::EINVAL)
    }
}

/// Path `reconnect` store: Ok means "reconnect now" (the reconnect itself may
/// still fail with -EBUSY or -ENOTCONN); otherwise -EINVAL.
pub fn rtrs_clt_reconnect_store(buf: &[u8]) -> Result<(), Errno> {
    path_cmd_store(buf)
}

/// Path `disconnect` store: Ok means "close the connections"; otherwise -EINVAL.
pub fn rtrs_clt_disconnect_store(buf: &[u8]) -> Result<(), Errno> {
    path_cmd_store(buf)
}

/// Path `remove_path` store: Ok means "remove the path"; otherwise -EINVAL.
pub fn rtrs_clt_remove_path_store(buf: &[u8]) -> Result<(), Errno> {
    path_cmd_store(buf)
}

/// Path `hca_port` show: the port number and a newline.
pub fn rtrs_clt_hca_port_show(buf: &mut [u8], hca_port: u8) -> usize {
    sysfs_emit(buf, format_args!("{}\n", hca_port))
}

/// Path `hca_name` show: the cached name up to its NUL, and a newline.
pub fn rtrs_clt_hca_name_show(buf: &mut [u8], hca_name: &[u8]) -> usize {
    let mut w = Writer::new(buf);
    w.write_bytes(c_str(hca_name));
    w.write_bytes(b"\n");
    w.written()
}

/// Path `cur_latency` show: the heartbeat round trip in ns, then " ns\n".
pub fn rtrs_clt_cur_latency_show(buf: &mut [u8], latency_ns: i64) -> usize {
    sysfs_emit(buf, format_args!("{} ns\n", latency_ns))
}

/// Path `src_addr` show: [`sockaddr_to_str`] and a newline.
pub fn rtrs_clt_src_addr_show(buf: &mut [u8], addr: Option<&RtrsSockaddr>) -> usize {
    let mut w = Writer::new(buf);
    write_sockaddr(&mut w, addr);
    w.write_bytes(b"\n");
    w.written()
}

/// Path `dst_addr` show: [`sockaddr_to_str`] and a newline.
pub fn rtrs_clt_dst_addr_show(buf: &mut [u8], addr: Option<&RtrsSockaddr>) -> usize {
    rtrs_clt_src_addr_show(buf, addr)
}

// ---------------------------------------------------------------------------
// stats/
// ---------------------------------------------------------------------------

/// Totals behind `stats/rdma` (per-CPU counters summed, plus `inflight`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RdmaStats {
    /// Read requests submitted.
    pub read_cnt: u64,
    /// Bytes of read requests.
    pub read_bytes: u64,
    /// Write requests submitted.
    pub write_cnt: u64,
    /// Bytes of write requests.
    pub write_bytes: u64,
    /// The `atomic_t inflight` counter; C prints it as unsigned.
    pub inflight: i32,
    /// Requests failed over to this path.
    pub failover: u64,
}

/// Counters behind `stats/reconnects`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReconnectStats {
    /// `successful_cnt` (-1 until the path first connects).
    pub successful_cnt: i32,
    /// `fail_cnt`.
    pub fail_cnt: i32,
}

/// `stats/rdma` show: "read_cnt read_bytes write_cnt write_bytes inflight
/// failover\n", inflight as `u32`.
pub fn rtrs_clt_stats_rdma_to_str(buf: &mut [u8], s: &RdmaStats) -> usize {
    sysfs_emit(
        buf,
        format_args!(
            "{} {} {} {} {} {}\n",
            s.read_cnt, s.read_bytes, s.write_cnt, s.write_bytes, s.inflight as u32, s.failover
        ),
    )
}

/// `stats/latency_hist` show (not in C): a header, then per bucket its
/// bounds in µs ("lo-hi", the last "lo-"), the reads and the writes that
/// completed in it.
pub fn latency_hist_to_str(buf: &mut [u8], h: &LatHist) -> usize {
    let mut w = Writer::new(buf);
    let _ = w.write_str("usecs read write\n");
    for i in 0..LAT_HIST_BUCKETS {
        let (r, wr) = (
            h.read.get(i).copied().unwrap_or(0),
            h.write.get(i).copied().unwrap_or(0),
        );
        let lo = lat_hist_lo_us(i);
        let _ = if i + 1 < LAT_HIST_BUCKETS {
            let hi = lat_hist_lo_us(i + 1).saturating_sub(1);
            writeln!(w, "{}-{} {} {}", lo, hi, r, wr)
        } else {
            writeln!(w, "{}- {} {}", lo, r, wr)
        };
    }
    w.written()
}

/// `stats/reconnects` show: "successful failed\n".
pub fn rtrs_clt_stats_reconnects_to_str(buf: &mut [u8], s: &ReconnectStats) -> usize {
    sysfs_emit(buf, format_args!("{} {}\n", s.successful_cnt, s.fail_cnt))
}

fn migration_cnt_to_str<I: IntoIterator<Item = i32>>(buf: &mut [u8], per_cpu: I) -> usize {
    let mut w = Writer::new(buf);
    for v in per_cpu {
        let _ = write!(w, "{} ", v);
    }
    w.write_bytes(b"\n");
    w.written()
}

/// `stats/cpu_migration_from` show: one "N " per possible CPU, in CPU order
/// (no header), then "\n". The iterator yields `cpu_migr.from` of each CPU.
pub fn rtrs_clt_stats_migration_from_cnt_to_str<I: IntoIterator<Item = i32>>(
    buf: &mut [u8],
    per_cpu: I,
) -> usize {
    migration_cnt_to_str(buf, per_cpu)
}

/// `stats/cpu_migration_to` show: same layout as `cpu_migration_from`, with
/// `cpu_migr.to` of each possible CPU.
pub fn rtrs_clt_stats_migration_to_cnt_to_str<I: IntoIterator<Item = i32>>(
    buf: &mut [u8],
    per_cpu: I,
) -> usize {
    migration_cnt_to_str(buf, per_cpu)
}

/// `stats/reset_all` show: its help line.
pub fn rtrs_clt_reset_all_help(buf: &mut [u8]) -> usize {
    let mut w = Writer::new(buf);
    w.write_bytes(b"echo 1 to reset all statistics\n");
    w.written()
}

/// Store of every `stats/` file (`cpu_migration_from`, `cpu_migration_to`,
/// `reconnects`, `rdma`, `reset_all`): Ok means "reset" and comes only for
/// "1" (`sysfs_streq`). "0" asks C for a disabled reset, which every client
/// reset refuses, so it is -EINVAL like any other input.
pub fn rtrs_clt_stats_store(buf: &[u8]) -> Result<(), Errno> {
    if sysfs_streq(buf, b"1") {
        Ok(())
    } else {
        Err(Errno::EINVAL)
    }
}

#[cfg(test)]
mod tests;
