// SPDX-License-Identifier: GPL-2.0

//! Rate limiting of the log lines printed from completion context, as the
//! kernel's `___ratelimit` (lib/ratelimit.c) with the defaults of
//! `pr_err_ratelimited`, which C's `rtrs_err_rl`/`rtrs_wrn_rl` use: at most
//! [`RATELIMIT_BURST`] lines per [`RATELIMIT_INTERVAL_MS`]; the lines held
//! back are counted and reported with the first line of a later interval.
//!
//! The state is one `u64` ([`RateLimitState`]), so that the module keeps it
//! in an atomic and applies [`ratelimit`] in a compare-and-swap loop: no
//! lock, usable from any context.

/// `DEFAULT_RATELIMIT_INTERVAL` (5 * HZ), in ms.
pub const RATELIMIT_INTERVAL_MS: u32 = 5000;
/// `DEFAULT_RATELIMIT_BURST`.
pub const RATELIMIT_BURST: u16 = 10;

const STARTED: u64 = 1 << 63;
const MISSED_MAX: u16 = 0x7fff;

/// Packed `ratelimit_state`: bits 0-31 the interval's start (ms, wrapping),
/// 32-47 the lines printed in it, 48-62 the lines held back, 63 set once an
/// interval has started. `Default` is the state before the first line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateLimitState(pub u64);

impl RateLimitState {
    fn unpack(self) -> Option<(u32, u16, u16)> {
        let v = self.0;
        (v & STARTED != 0).then_some((v as u32, (v >> 32) as u16, ((v >> 48) as u16) & MISSED_MAX))
    }

    fn pack(begin: u32, printed: u16, missed: u16) -> Self {
        Self(
            STARTED
                | u64::from(begin)
                | (u64::from(printed) << 32)
                | (u64::from(missed.min(MISSED_MAX)) << 48),
        )
    }
}

/// What to do with one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateLimitVerdict {
    /// Print it; first report `suppressed` lines held back, if any.
    Print {
        /// Lines held back in earlier intervals (saturates at 32767).
        suppressed: u16,
    },
    /// Hold it back (counted).
    Suppress,
}

/// One line at `now_ms` (a wrapping millisecond clock): the new state and
/// the verdict.
pub fn ratelimit(
    st: RateLimitState,
    now_ms: u32,
    interval_ms: u32,
    burst: u16,
) -> (RateLimitState, RateLimitVerdict) {
    let (mut begin, mut printed, mut missed) = st.unpack().unwrap_or((now_ms, 0, 0));
    let mut suppressed = 0;
    if now_ms.wrapping_sub(begin) >= interval_ms {
        suppressed = missed;
        begin = now_ms;
        printed = 0;
        missed = 0;
    }
    if printed < burst {
        let st = RateLimitState::pack(begin, printed.saturating_add(1), missed);
        (st, RateLimitVerdict::Print { suppressed })
    } else {
        // The count held back in an older interval is kept for the report.
        let missed = missed.saturating_add(1).saturating_add(suppressed);
        (
            RateLimitState::pack(begin, printed, missed),
            RateLimitVerdict::Suppress,
        )
    }
}

/// One call site's state in an atomic, for any context: [`ratelimit`] in
/// a compare-and-swap loop with the defaults of `pr_err_ratelimited`.
#[derive(Debug, Default)]
pub struct AtomicRateLimit(core::sync::atomic::AtomicU64);

impl AtomicRateLimit {
    /// The state before the first line.
    pub const fn new() -> Self {
        Self(core::sync::atomic::AtomicU64::new(0))
    }

    /// A line at `now_ms`: `Some(lines held back before it)` to print it,
    /// `None` to hold it back.
    pub fn check(&self, now_ms: u32) -> Option<u16> {
        use core::sync::atomic::Ordering::Relaxed;
        let mut verdict = RateLimitVerdict::Suppress;
        let _ = self.0.fetch_update(Relaxed, Relaxed, |v| {
            let (st, d) = ratelimit(
                RateLimitState(v),
                now_ms,
                RATELIMIT_INTERVAL_MS,
                RATELIMIT_BURST,
            );
            verdict = d;
            Some(st.0)
        });
        match verdict {
            RateLimitVerdict::Print { suppressed } => Some(suppressed),
            RateLimitVerdict::Suppress => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use RateLimitVerdict::*;

    fn run(st: &mut RateLimitState, now: u32) -> RateLimitVerdict {
        let (s, v) = ratelimit(*st, now, RATELIMIT_INTERVAL_MS, RATELIMIT_BURST);
        *st = s;
        v
    }

    #[test]
    fn burst_then_held_back_then_reported() {
        let mut st = RateLimitState::default();
        for i in 0..10 {
            assert_eq!(run(&mut st, 100 + i), Print { suppressed: 0 });
        }
        for i in 0..25 {
            assert_eq!(run(&mut st, 200 + i), Suppress);
        }
        // Still inside the interval.
        assert_eq!(run(&mut st, 100 + 4999), Suppress);
        // The next interval prints again and reports the 26 held back.
        assert_eq!(run(&mut st, 100 + 5000), Print { suppressed: 26 });
        assert_eq!(run(&mut st, 100 + 5001), Print { suppressed: 0 });
    }

    #[test]
    fn first_line_at_time_zero_and_a_wrapping_clock() {
        let mut st = RateLimitState::default();
        assert_eq!(run(&mut st, 0), Print { suppressed: 0 });
        let mut st = RateLimitState::default();
        let t = u32::MAX - 10;
        for _ in 0..10 {
            assert_eq!(run(&mut st, t), Print { suppressed: 0 });
        }
        // Across the wrap of the ms clock: still the same interval at
        // t + 4999, the next one at t + 5000.
        assert_eq!(run(&mut st, t.wrapping_add(4999)), Suppress);
        assert_eq!(run(&mut st, t.wrapping_add(5000)), Print { suppressed: 1 });
    }

    #[test]
    fn a_quiet_clock_keeps_counting_and_saturates() {
        let mut st = RateLimitState::default();
        for _ in 0..10 {
            run(&mut st, 7);
        }
        for _ in 0..40_000 {
            assert_eq!(run(&mut st, 7), Suppress);
        }
        assert_eq!(run(&mut st, 5007), Print { suppressed: 0x7fff });
    }

    #[test]
    fn the_atomic_form_decides_as_the_function() {
        let rl = AtomicRateLimit::new();
        let printed = (0..15).filter(|_| rl.check(7).is_some()).count();
        assert_eq!(printed, usize::from(RATELIMIT_BURST));
        assert_eq!(rl.check(7 + RATELIMIT_INTERVAL_MS), Some(5));
    }

    #[test]
    fn a_burst_of_zero_holds_everything_back() {
        let (st, v) = ratelimit(RateLimitState::default(), 1, 5000, 0);
        assert_eq!(v, Suppress);
        // Reported nowhere, but counted across intervals.
        let (_, v) = ratelimit(st, 6000, 5000, 0);
        assert_eq!(v, Suppress);
    }
}
