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
            dst.copy_from_slice(src);
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

/// `max_reconnect_attempts` show: the value as `int` and a newline.
pub fn max_reconnect_attempts_show(buf: &mut [u8], value: i32) -> usize {
    sysfs_emit(buf, format_args!("{}\n", value))
}

/// `max_reconnect_attempts` store: decimal `kstrtoint` (its -EINVAL/-ERANGE
/// pass through), then -EINVAL outside [-1, 9999]. Returns the value to set.
pub fn max_reconnect_attempts_store(buf: &[u8]) -> Result<i32, Errno> {
    let value = kstrtoint(buf, 10)?;
    if !(MIN_MAX_RECONN_ATT..=MAX_MAX_RECONN_ATT).contains(&value) {
        return Err(Errno::EINVAL);
    }
    Ok(value)
}

/// `mpath_policy` show: policy name, short name and number, or "Unknown".
pub fn mpath_policy_show(buf: &mut [u8], mp_policy: i32) -> usize {
    let (name, short) = match mp_policy {
        MP_POLICY_RR => ("round-robin", "RR"),
        MP_POLICY_MIN_INFLIGHT => ("min-inflight", "MI"),
        MP_POLICY_MIN_LATENCY => ("min-latency", "ML"),
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
                    Some(word) => word.copy_from_slice(&(w as u16).to_be_bytes()),
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
                Some(quad) => quad.copy_from_slice(&v4),
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
                o.copy_from_slice(front);
            }
            if let Some(o) = out.get_mut(tail_at..) {
                o.copy_from_slice(tail);
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
mod tests {
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

    #[test]
    fn max_reconnect_attempts_store_accepts() {
        assert_eq!(max_reconnect_attempts_store(b"-1"), Ok(-1));
        assert_eq!(max_reconnect_attempts_store(b"-1\n"), Ok(-1));
        assert_eq!(max_reconnect_attempts_store(b"0"), Ok(0));
        assert_eq!(max_reconnect_attempts_store(b"+5\n"), Ok(5));
        assert_eq!(max_reconnect_attempts_store(b"9999"), Ok(9999));
        assert_eq!(max_reconnect_attempts_store(b"09999\n"), Ok(9999));
        assert_eq!(max_reconnect_attempts_store(&big(b'0')), Ok(0));
    }

    #[test]
    fn max_reconnect_attempts_store_rejects() {
        assert_eq!(max_reconnect_attempts_store(b"10000"), Err(EINV));
        assert_eq!(max_reconnect_attempts_store(b"-2"), Err(EINV));
        assert_eq!(max_reconnect_attempts_store(b"2147483647"), Err(EINV));
        assert_eq!(max_reconnect_attempts_store(b"2147483648"), Err(ERNG));
        assert_eq!(max_reconnect_attempts_store(b"-2147483649"), Err(ERNG));
        assert_eq!(max_reconnect_attempts_store(b""), Err(EINV));
        assert_eq!(max_reconnect_attempts_store(b"\n"), Err(EINV));
        assert_eq!(max_reconnect_attempts_store(b"   "), Err(EINV));
        assert_eq!(max_reconnect_attempts_store(b"\0\n"), Err(EINV));
        assert_eq!(max_reconnect_attempts_store(b"0x10"), Err(EINV));
        assert_eq!(max_reconnect_attempts_store(b"\xff\xfe"), Err(EINV));
        assert_eq!(max_reconnect_attempts_store(&big(b'9')), Err(ERNG));
        assert_eq!(max_reconnect_attempts_store(&big(b'x')), Err(EINV));
    }

    // ----- mpath_policy ---------------------------------------------------

    #[test]
    fn mpath_policy_show_bytes() {
        assert_eq!(show(|b| mpath_policy_show(b, 0)), b"round-robin (RR: 0)\n");
        assert_eq!(show(|b| mpath_policy_show(b, 1)), b"min-inflight (MI: 1)\n");
        assert_eq!(show(|b| mpath_policy_show(b, 2)), b"min-latency (ML: 2)\n");
        assert_eq!(show(|b| mpath_policy_show(b, 3)), b"Unknown (3)\n");
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
        let a =
            add_path_store(b"gid:fe80:0000:0000:0000:0002:c903:0001:0203", 1234, no_dev).unwrap();
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
        let out = show(|b| {
            rtrs_clt_stats_migration_from_cnt_to_str(b, core::iter::repeat_n(i32::MIN, 1000))
        });
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
        let st = |s: &str| max_reconnect_attempts_store(&vm_input(s));
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
}
