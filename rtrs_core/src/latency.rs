// SPDX-License-Identifier: GPL-2.0

//! Per-IO completion latency, which the C client does not measure: the
//! log2 buckets of `stats/latency_hist` and the service-time estimate of the
//! `service-time` policy (dm-multipath's historical-service-time selector
//! is the model).
//!
//! A request's latency runs from its post to its completion as rnbd sees
//! it (after a local invalidation, if one was needed).

/// Buckets of `latency_hist`: bucket 0 is below 1 µs, bucket `k` in
/// `1..LAT_HIST_BUCKETS - 1` holds `[2^(k-1), 2^k)` µs, and the last one
/// everything from `2^(LAT_HIST_BUCKETS - 2)` µs (about 4.2 s) on.
pub const LAT_HIST_BUCKETS: usize = 24;

/// The bucket of a latency of `ns` nanoseconds.
pub const fn lat_hist_bucket(ns: u64) -> usize {
    let us = ns / 1000;
    if us == 0 {
        return 0;
    }
    // us is in [2^(k-1), 2^k) for k = its bit length.
    let k = (u64::BITS - us.leading_zeros()) as usize;
    if k < LAT_HIST_BUCKETS - 1 {
        k
    } else {
        LAT_HIST_BUCKETS - 1
    }
}

/// The lowest latency in µs that bucket `i` holds.
pub const fn lat_hist_lo_us(i: usize) -> u64 {
    if i == 0 {
        0
    } else if i < 64 {
        1u64 << (i - 1)
    } else {
        u64::MAX
    }
}

/// Completion counts per bucket, reads and writes apart, summed over CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LatHist {
    pub read: [u64; LAT_HIST_BUCKETS],
    pub write: [u64; LAT_HIST_BUCKETS],
}

impl Default for LatHist {
    fn default() -> Self {
        Self {
            read: [0; LAT_HIST_BUCKETS],
            write: [0; LAT_HIST_BUCKETS],
        }
    }
}

/// A new sample weighs 1/2^`SVC_EWMA_SHIFT` in the estimate (1/8, as TCP's
/// smoothed RTT).
pub const SVC_EWMA_SHIFT: u32 = 3;

/// An estimate that no completion refreshed for this long counts half as
/// much, and half again for each further period: a path left alone after
/// it was slow gets IO again (one request first, since the estimate is
/// multiplied by the requests in flight), and its next sample tells.
pub const SVC_DECAY_NS: u64 = 1_000_000_000;

/// The estimate `ewma_ns`, last refreshed at `last_ns`, seen at `now_ns`.
/// 0 means no sample yet (the path is then preferred, so it gets one).
pub const fn svc_effective_ns(ewma_ns: u64, last_ns: i64, now_ns: i64) -> u64 {
    let age = now_ns.saturating_sub(last_ns);
    // (Most paths completed a request within the period: no division.)
    if age < SVC_DECAY_NS as i64 {
        return ewma_ns;
    }
    let halvings = age as u64 / SVC_DECAY_NS;
    if halvings >= u64::BITS as u64 {
        0
    } else {
        ewma_ns >> halvings
    }
}

/// The estimate after a completion of `sample_ns` at `now_ns`: the decayed
/// old estimate moved 1/8 of the way to the sample; the first sample (or
/// one after a full decay) is taken as it is. Never 0 after a sample.
pub const fn svc_ewma_update(ewma_ns: u64, last_ns: i64, now_ns: i64, sample_ns: u64) -> u64 {
    let old = svc_effective_ns(ewma_ns, last_ns, now_ns);
    let new = if old == 0 {
        sample_ns
    } else if sample_ns >= old {
        old.saturating_add((sample_ns - old) >> SVC_EWMA_SHIFT)
    } else {
        old - ((old - sample_ns) >> SVC_EWMA_SHIFT)
    };
    if new == 0 {
        1
    } else {
        new
    }
}

/// The expected service time of one more request on a path with
/// `inflight` requests outstanding: the per-request estimate times
/// `inflight + 1` (dm-multipath's historical-service-time).
pub const fn svc_time_score(effective_ns: u64, inflight: i32) -> u64 {
    let waiting = if inflight > 0 { inflight as u64 } else { 0 };
    effective_ns.saturating_mul(waiting + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_log2_microseconds() {
        assert_eq!(lat_hist_bucket(0), 0);
        assert_eq!(lat_hist_bucket(999), 0);
        assert_eq!(lat_hist_bucket(1_000), 1);
        assert_eq!(lat_hist_bucket(1_999), 1);
        assert_eq!(lat_hist_bucket(2_000), 2);
        assert_eq!(lat_hist_bucket(3_999), 2);
        assert_eq!(lat_hist_bucket(4_000), 3);
        assert_eq!(lat_hist_bucket(100_000), 7); // 100 µs in [64, 128)
        assert_eq!(lat_hist_bucket(u64::MAX), LAT_HIST_BUCKETS - 1);
        // Every bucket's lower bound falls in it, and one below it in the
        // previous one.
        for i in 1..LAT_HIST_BUCKETS {
            let lo_ns = lat_hist_lo_us(i) * 1000;
            assert_eq!(lat_hist_bucket(lo_ns), i, "bucket {i}");
            assert_eq!(lat_hist_bucket(lo_ns - 1), i - 1, "below bucket {i}");
        }
        assert_eq!(lat_hist_lo_us(LAT_HIST_BUCKETS - 1), 1 << 22);
    }

    #[test]
    fn ewma_moves_an_eighth_towards_the_sample() {
        // First sample seeds the estimate.
        assert_eq!(svc_ewma_update(0, 0, 5, 8_000), 8_000);
        // Up and down by an eighth of the difference.
        assert_eq!(svc_ewma_update(8_000, 0, 5, 16_000), 9_000);
        assert_eq!(svc_ewma_update(16_000, 0, 5, 8_000), 15_000);
        // Steady samples keep it.
        assert_eq!(svc_ewma_update(8_000, 0, 5, 8_000), 8_000);
        // Never 0 once sampled, and no overflow.
        assert_eq!(svc_ewma_update(0, 0, 5, 0), 1);
        assert_eq!(svc_ewma_update(1, 0, 5, 0), 1);
        assert!(svc_ewma_update(u64::MAX, 0, 5, u64::MAX) == u64::MAX);
        assert!(svc_ewma_update(u64::MAX - 7, 0, 5, 0) > 0);
        // Converges on a new level in a few dozen samples.
        let mut e = 1_000_000;
        for _ in 0..40 {
            e = svc_ewma_update(e, 0, 0, 100_000);
        }
        assert!(e < 110_000, "{e}");
    }

    #[test]
    fn stale_estimates_decay_by_halves() {
        let s = SVC_DECAY_NS as i64;
        assert_eq!(svc_effective_ns(8_000, 100, 100), 8_000);
        assert_eq!(svc_effective_ns(8_000, 100, 50), 8_000); // clock skew: as is
        assert_eq!(svc_effective_ns(8_000, 0, s - 1), 8_000);
        assert_eq!(svc_effective_ns(8_000, 0, s), 4_000);
        assert_eq!(svc_effective_ns(8_000, 0, 3 * s), 1_000);
        assert_eq!(svc_effective_ns(8_000, 0, 64 * s), 0);
        assert_eq!(svc_effective_ns(8_000, i64::MIN, i64::MAX), 0);
        // A sample after a long pause starts afresh.
        assert_eq!(svc_ewma_update(8_000, 0, 100 * s, 500), 500);
        // After a shorter one it moves from the decayed value.
        assert_eq!(svc_ewma_update(16_000, 0, s, 4_000), 8_000 - 500);
    }

    #[test]
    fn score_weighs_the_queue() {
        assert_eq!(svc_time_score(0, 10), 0);
        assert_eq!(svc_time_score(100, 0), 100);
        assert_eq!(svc_time_score(100, -3), 100);
        assert_eq!(svc_time_score(100, 9), 1_000);
        assert_eq!(svc_time_score(u64::MAX, 1), u64::MAX);
    }
}
