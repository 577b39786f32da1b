// SPDX-License-Identifier: GPL-2.0

//! A path's statistics (`struct rtrs_clt_stats`): per-CPU counters summed
//! over the possible CPUs when read, as rtrs-clt-stats.c does, plus the
//! shared `inflight` and reconnect counts; and, not in C, the per-CPU
//! completion-latency histogram and the `service-time` estimate.
//!
//! Counters are atomics in the per-CPU area: a writer updates the slot of
//! the CPU it runs on, with an unlocked per-CPU add as C's `this_cpu_add`
//! (`PerCpu::this_cpu_add`), or, for `cpu_migration_from` (the
//! connection's CPU's slot, changed from others), a relaxed `fetch_add`, so
//! preemption never loses an update, and readers need no lock. A reset from
//! sysfs stores zeros unlocked, and may lose to a concurrent add, as C's.

use core::sync::atomic::{AtomicI32, AtomicI64, AtomicU64, Ordering};

use kernel::prelude::*;

use crate::ffi::percpu::{PerCpu, Zeroed};
use crate::rtrs_core::latency::{
    lat_hist_bucket, svc_effective_ns, svc_ewma_update, LatHist, LAT_HIST_BUCKETS,
};
use crate::rtrs_core::sysfs_fmt::{RdmaStats, ReconnectStats};

/// `struct rtrs_clt_stats_pcpu`.
#[repr(C)]
struct PcpuStats {
    read_cnt: AtomicU64,
    read_bytes: AtomicU64,
    write_cnt: AtomicU64,
    write_bytes: AtomicU64,
    failover_cnt: AtomicU64,
    /// `cpu_migr.from`: completions of this CPU's connections seen elsewhere.
    migr_from: AtomicI32,
    /// `cpu_migr.to`: completions seen on this CPU for other CPUs'
    /// connections (C's `int`, incremented on the running CPU's slot; shown
    /// as one).
    migr_to: AtomicU64,
    /// `latency_hist` (not in C): completions per log2-µs bucket, reads
    /// then writes.
    lat: [[AtomicU64; LAT_HIST_BUCKETS]; 2],
}

// SAFETY: All fields are atomics, valid when zero.
unsafe impl Zeroed for PcpuStats {}

/// `struct rtrs_clt_stats`.
pub(crate) struct PathStats {
    pcpu: PerCpu<PcpuStats>,
    /// `inflight`: requests posted and not yet completed (MIN_INFLIGHT).
    inflight: AtomicI32,
    reconnects_ok: AtomicI32,
    reconnects_fail: AtomicI32,
    /// The `service-time` estimate (`latency::svc_ewma_update`) and when a
    /// completion last refreshed it (ktime ns). Lossy updates from
    /// concurrent completions are fine for an estimate.
    svc_ewma_ns: AtomicU64,
    svc_last_ns: AtomicI64,
}

impl PathStats {
    /// `rtrs_clt_init_stats`.
    pub(crate) fn new() -> Result<Self> {
        Ok(Self {
            pcpu: PerCpu::new()?,
            inflight: AtomicI32::new(0),
            // 0 once the path first connects.
            reconnects_ok: AtomicI32::new(-1),
            reconnects_fail: AtomicI32::new(0),
            svc_ewma_ns: AtomicU64::new(0),
            svc_last_ns: AtomicI64::new(0),
        })
    }

    /// `rtrs_clt_update_all_stats`: one request of `len` bytes posted;
    /// `inflight` counts it only if it was sent under MIN_INFLIGHT (the
    /// request remembers that, see `dec_inflight`).
    pub(crate) fn update_all(&self, read: bool, len: u64, min_inflight: bool) {
        if read {
            self.pcpu.this_cpu_add(|s| &s.read_cnt, 1);
            self.pcpu.this_cpu_add(|s| &s.read_bytes, len);
        } else {
            self.pcpu.this_cpu_add(|s| &s.write_cnt, 1);
            self.pcpu.this_cpu_add(|s| &s.write_bytes, len);
        }
        if min_inflight {
            self.inflight.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A request counted by `update_all(.., true)` completed (or its post
    /// failed).
    pub(crate) fn dec_inflight(&self) {
        self.inflight.fetch_sub(1, Ordering::Relaxed);
    }

    /// A request posted at `start_ns` completed without error at `now_ns`:
    /// counted in this CPU's latency histogram and, with `svc` (posted
    /// under service-time), in the service-time estimate. CQ context.
    pub(crate) fn record_completion(&self, read: bool, svc: bool, start_ns: i64, now_ns: i64) {
        // Both are ktime (never negative): the difference cannot overflow.
        let lat = u64::try_from(now_ns.wrapping_sub(start_ns)).unwrap_or(0);
        let dir = usize::from(!read);
        let b = lat_hist_bucket(lat).min(LAT_HIST_BUCKETS - 1);
        self.pcpu.this_cpu_add(|s| &s.lat[dir][b], 1);
        if !svc {
            return;
        }
        let old = self.svc_ewma_ns.load(Ordering::Relaxed);
        let last = self.svc_last_ns.load(Ordering::Relaxed);
        self.svc_ewma_ns
            .store(svc_ewma_update(old, last, now_ns, lat), Ordering::Relaxed);
        self.svc_last_ns.store(now_ns, Ordering::Relaxed);
    }

    /// The service-time estimate as of `now_ns`.
    pub(crate) fn svc_ns(&self, now_ns: i64) -> u64 {
        svc_effective_ns(
            self.svc_ewma_ns.load(Ordering::Relaxed),
            self.svc_last_ns.load(Ordering::Relaxed),
            now_ns,
        )
    }

    /// The `latency_hist` sums.
    pub(crate) fn latency_hist(&self) -> LatHist {
        let mut h = LatHist::default();
        for (_, s) in self.pcpu.iter() {
            for (sum, b) in h.read.iter_mut().zip(s.lat[0].iter()) {
                *sum = sum.wrapping_add(b.load(Ordering::Relaxed));
            }
            for (sum, b) in h.write.iter_mut().zip(s.lat[1].iter()) {
                *sum = sum.wrapping_add(b.load(Ordering::Relaxed));
            }
        }
        h
    }

    /// `stats->inflight`.
    pub(crate) fn inflight(&self) -> i32 {
        self.inflight.load(Ordering::Relaxed)
    }

    /// `rtrs_clt_inc_failover_cnt`: a request failed over to this path.
    pub(crate) fn inc_failover(&self) {
        self.pcpu.this_cpu_add(|s| &s.failover_cnt, 1);
    }

    /// `rtrs_clt_update_wc_stats`: a completion for the connection of
    /// `con_cpu` arrived on this CPU.
    pub(crate) fn update_wc(&self, con_cpu: u32) {
        if crate::ffi::misc::this_cpu_id() != con_cpu {
            if let Some(from) = self.pcpu.get(con_cpu) {
                self.pcpu.this_cpu_add(|s| &s.migr_to, 1);
                from.migr_from.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// `reconnects`: the path came up (`ok`, the first time included), or
    /// a reconnect attempt failed.
    pub(crate) fn inc_reconnect(&self, ok: bool) {
        let c = if ok {
            &self.reconnects_ok
        } else {
            &self.reconnects_fail
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// The `stats/rdma` sums.
    pub(crate) fn rdma(&self) -> RdmaStats {
        let mut r = RdmaStats {
            inflight: self.inflight(),
            ..Default::default()
        };
        for (_, s) in self.pcpu.iter() {
            r.read_cnt = r.read_cnt.wrapping_add(s.read_cnt.load(Ordering::Relaxed));
            r.read_bytes = r
                .read_bytes
                .wrapping_add(s.read_bytes.load(Ordering::Relaxed));
            r.write_cnt = r
                .write_cnt
                .wrapping_add(s.write_cnt.load(Ordering::Relaxed));
            r.write_bytes = r
                .write_bytes
                .wrapping_add(s.write_bytes.load(Ordering::Relaxed));
            r.failover = r
                .failover
                .wrapping_add(s.failover_cnt.load(Ordering::Relaxed));
        }
        r
    }

    /// `cpu_migration_from` per possible CPU.
    pub(crate) fn migr_from(&self) -> impl Iterator<Item = i32> + '_ {
        self.pcpu
            .iter()
            .map(|(_, s)| s.migr_from.load(Ordering::Relaxed))
    }

    /// `cpu_migration_to` per possible CPU.
    pub(crate) fn migr_to(&self) -> impl Iterator<Item = i32> + '_ {
        self.pcpu
            .iter()
            .map(|(_, s)| s.migr_to.load(Ordering::Relaxed) as i32)
    }

    /// `reconnects`.
    pub(crate) fn reconnects(&self) -> ReconnectStats {
        ReconnectStats {
            successful_cnt: self.reconnects_ok.load(Ordering::Relaxed),
            fail_cnt: self.reconnects_fail.load(Ordering::Relaxed),
        }
    }

    /// `rtrs_clt_reset_rdma_stats(stats, true)`.
    pub(crate) fn reset_rdma(&self) {
        for (_, s) in self.pcpu.iter() {
            for c in [
                &s.read_cnt,
                &s.read_bytes,
                &s.write_cnt,
                &s.write_bytes,
                &s.failover_cnt,
            ] {
                c.store(0, Ordering::Relaxed);
            }
        }
    }

    /// `rtrs_clt_reset_cpu_migr_stats(stats, true)`.
    pub(crate) fn reset_cpu_migr(&self) {
        for (_, s) in self.pcpu.iter() {
            s.migr_from.store(0, Ordering::Relaxed);
            s.migr_to.store(0, Ordering::Relaxed);
        }
    }

    /// `rtrs_clt_reset_reconnects_stat(stats, true)`.
    pub(crate) fn reset_reconnects(&self) {
        self.reconnects_ok.store(0, Ordering::Relaxed);
        self.reconnects_fail.store(0, Ordering::Relaxed);
    }

    /// `latency_hist` reset (not in C).
    pub(crate) fn reset_latency_hist(&self) {
        for (_, s) in self.pcpu.iter() {
            for b in s.lat.iter().flatten() {
                b.store(0, Ordering::Relaxed);
            }
        }
    }

    /// `rtrs_clt_reset_all_stats(stats, true)`: `inflight` too, as C does
    /// (it goes negative if requests were in flight), and the latency
    /// histogram.
    pub(crate) fn reset_all(&self) {
        self.reset_rdma();
        self.reset_cpu_migr();
        self.reset_reconnects();
        self.reset_latency_hist();
        self.inflight.store(0, Ordering::Relaxed);
    }
}
