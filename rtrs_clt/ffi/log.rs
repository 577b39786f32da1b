// SPDX-License-Identifier: GPL-2.0

//! Rate-limited logging for completion context (C's `rtrs_err_rl`,
//! `rtrs_wrn_rl`): `pr_err_rl!` and `pr_warn_rl!` print at most 10 lines per
//! 5 s per call site, and say how many they held back. The decision is
//! rtrs_core's `ratelimit`; the state is one atomic per call site, so the
//! macros may be used in any context.

use core::sync::atomic::{AtomicU64, Ordering};

use crate::rtrs_core::ratelimit::{
    ratelimit, RateLimitState, RateLimitVerdict, RATELIMIT_BURST, RATELIMIT_INTERVAL_MS,
};

/// The `ratelimit_state` of one call site.
pub(crate) struct RateLimit(AtomicU64);

impl RateLimit {
    pub(crate) const fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    /// Whether to print a line now: `Some(n)` with the lines held back
    /// before it, `None` to hold it back.
    pub(crate) fn check(&self) -> Option<u16> {
        // A wrapping millisecond clock is all the window needs.
        let now_ms = (crate::ffi::misc::ktime_get_ns() / 1_000_000) as u32;
        let mut verdict = RateLimitVerdict::Suppress;
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
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

/// `$pr!` (`pr_err`, `pr_warn`), at most 10 lines per 5 s from this call site.
macro_rules! pr_rl {
    ($pr:ident, $($arg:tt)*) => {{
        static RL: $crate::ffi::log::RateLimit = $crate::ffi::log::RateLimit::new();
        if let Some(held) = RL.check() {
            if held > 0 {
                ::kernel::pr_warn!("{} messages suppressed\n", held);
            }
            ::kernel::$pr!($($arg)*);
        }
    }};
}

/// `pr_err!`, at most 10 lines per 5 s from this call site.
macro_rules! pr_err_rl {
    ($($arg:tt)*) => { $crate::ffi::log::pr_rl!(pr_err, $($arg)*) };
}

/// `pr_warn!`, at most 10 lines per 5 s from this call site.
macro_rules! pr_warn_rl {
    ($($arg:tt)*) => { $crate::ffi::log::pr_rl!(pr_warn, $($arg)*) };
}

pub(crate) use pr_err_rl;
pub(crate) use pr_rl;
pub(crate) use pr_warn_rl;
