// SPDX-License-Identifier: GPL-2.0

//! Rate-limited logging for completion context (C's `rtrs_err_rl`,
//! `rtrs_wrn_rl`): `pr_err_rl!` and `pr_warn_rl!` print at most 10 lines per
//! 5 s per call site, and say how many they held back. The decision is
//! rtrs_core's `ratelimit`; the state is one atomic per call site, so the
//! macros may be used in any context.

use crate::rtrs_core::ratelimit::AtomicRateLimit;

/// The `ratelimit_state` of one call site.
pub(crate) struct RateLimit(AtomicRateLimit);

impl RateLimit {
    pub(crate) const fn new() -> Self {
        Self(AtomicRateLimit::new())
    }

    /// Whether to print a line now: `Some(n)` with the lines held back
    /// before it, `None` to hold it back.
    pub(crate) fn check(&self) -> Option<u16> {
        // A wrapping millisecond clock is all the window needs.
        self.0
            .check((crate::ffi::misc::ktime_get_ns() / 1_000_000) as u32)
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
