// SPDX-License-Identifier: GPL-2.0

//! A path's statistics (`struct rtrs_clt_stats`): per-CPU counters summed
//! over the possible CPUs when read, as rtrs-clt-stats.c does, plus the
//! shared `inflight` and reconnect counts.
//!
//! Counters are relaxed atomics in the per-CPU area: a writer updates the
//! slot of the CPU it runs on (or, for `cpu_migration_from`, the
//! connection's CPU), so preemption never loses an update, and readers and
//! resets from sysfs need no lock.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicI32, AtomicU64, Ordering};

use kernel::ffi::c_void;
use kernel::prelude::*;

use crate::bindings;
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
    /// `cpu_migr.to`: completions seen on this CPU for other CPUs' connections.
    migr_to: AtomicI32,
}

/// The possible CPUs, as `for_each_possible_cpu`.
fn possible_cpus() -> impl Iterator<Item = u32> {
    let mut prev: i32 = -1;
    core::iter::from_fn(move || {
        // SAFETY: No preconditions; -1 starts the walk.
        let cpu = unsafe { bindings::rtrs_rs_next_possible_cpu(prev) };
        let nr = crate::misc::nr_cpu_ids();
        if cpu >= nr {
            return None;
        }
        prev = i32::try_from(cpu).ok()?;
        Some(cpu)
    })
}

/// `struct rtrs_clt_stats`.
///
/// # Invariants
///
/// `pcpu` is a zeroed per-CPU area of one `PcpuStats` per possible CPU from
/// `rtrs_rs_alloc_percpu`, freed only in `drop`.
pub(crate) struct PathStats {
    pcpu: NonNull<c_void>,
    /// `inflight`: requests posted and not yet completed (MIN_INFLIGHT).
    inflight: AtomicI32,
    reconnects_ok: AtomicI32,
    reconnects_fail: AtomicI32,
}

// SAFETY: The per-CPU area is only accessed through atomics.
unsafe impl Send for PathStats {}
// SAFETY: As above.
unsafe impl Sync for PathStats {}

impl Drop for PathStats {
    fn drop(&mut self) {
        // SAFETY: By the type invariant; nobody uses the area any more.
        unsafe { bindings::rtrs_rs_free_percpu(self.pcpu.as_ptr()) };
    }
}

impl PathStats {
    /// `rtrs_clt_init_stats`.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: No preconditions; the area is zeroed, a valid `PcpuStats`.
        let p = unsafe {
            bindings::rtrs_rs_alloc_percpu(
                core::mem::size_of::<PcpuStats>(),
                core::mem::align_of::<PcpuStats>(),
            )
        };
        Ok(Self {
            pcpu: NonNull::new(p).ok_or(ENOMEM)?,
            inflight: AtomicI32::new(0),
            // 0 once the path first connects.
            reconnects_ok: AtomicI32::new(-1),
            reconnects_fail: AtomicI32::new(0),
        })
    }

    fn cpu(&self, cpu: u32) -> &PcpuStats {
        let cpu = i32::try_from(cpu).unwrap_or(0);
        // SAFETY: By the type invariant the area holds a `PcpuStats` for
        // every possible CPU; callers pass possible CPUs (the current one,
        // a connection's, or from `possible_cpus`).
        unsafe { &*bindings::rtrs_rs_per_cpu_ptr(self.pcpu.as_ptr(), cpu).cast::<PcpuStats>() }
    }

    fn this_cpu(&self) -> &PcpuStats {
        // SAFETY: No preconditions.
        self.cpu(unsafe { bindings::rtrs_rs_raw_smp_processor_id() })
    }

    /// `rtrs_clt_update_all_stats`: one request of `len` bytes posted;
    /// `inflight` counts it only if it was sent under MIN_INFLIGHT (the
    /// request remembers that, see `dec_inflight`).
    pub(crate) fn update_all(&self, read: bool, len: u64, min_inflight: bool) {
        let s = self.this_cpu();
        let (cnt, bytes) = if read {
            (&s.read_cnt, &s.read_bytes)
        } else {
            (&s.write_cnt, &s.write_bytes)
        };
        cnt.fetch_add(1, Ordering::Relaxed);
        bytes.fetch_add(len, Ordering::Relaxed);
        if min_inflight {
            self.inflight.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A request counted by `update_all(.., true)` completed (or its post
    /// failed).
    pub(crate) fn dec_inflight(&self) {
        self.inflight.fetch_sub(1, Ordering::Relaxed);
    }

    /// `stats->inflight`.
    pub(crate) fn inflight(&self) -> i32 {
        self.inflight.load(Ordering::Relaxed)
    }

    /// `rtrs_clt_inc_failover_cnt`: a request failed over to this path.
    pub(crate) fn inc_failover(&self) {
        self.this_cpu().failover_cnt.fetch_add(1, Ordering::Relaxed);
    }

    /// `rtrs_clt_update_wc_stats`: a completion for the connection of
    /// `con_cpu` arrived on this CPU.
    pub(crate) fn update_wc(&self, con_cpu: u32) {
        // SAFETY: No preconditions.
        let cpu = unsafe { bindings::rtrs_rs_raw_smp_processor_id() };
        if cpu != con_cpu {
            self.cpu(cpu).migr_to.fetch_add(1, Ordering::Relaxed);
            self.cpu(con_cpu).migr_from.fetch_add(1, Ordering::Relaxed);
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
        for cpu in possible_cpus() {
            let s = self.cpu(cpu);
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
        possible_cpus().map(|c| self.cpu(c).migr_from.load(Ordering::Relaxed))
    }

    /// `cpu_migration_to` per possible CPU.
    pub(crate) fn migr_to(&self) -> impl Iterator<Item = i32> + '_ {
        possible_cpus().map(|c| self.cpu(c).migr_to.load(Ordering::Relaxed))
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
        for cpu in possible_cpus() {
            let s = self.cpu(cpu);
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
        for cpu in possible_cpus() {
            let s = self.cpu(cpu);
            s.migr_from.store(0, Ordering::Relaxed);
            s.migr_to.store(0, Ordering::Relaxed);
        }
    }

    /// `rtrs_clt_reset_reconnects_stat(stats, true)`.
    pub(crate) fn reset_reconnects(&self) {
        self.reconnects_ok.store(0, Ordering::Relaxed);
        self.reconnects_fail.store(0, Ordering::Relaxed);
    }

    /// `rtrs_clt_reset_all_stats(stats, true)`: `inflight` too, as C does
    /// (it goes negative if requests were in flight).
    pub(crate) fn reset_all(&self) {
        self.reset_rdma();
        self.reset_cpu_migr();
        self.reset_reconnects();
        self.inflight.store(0, Ordering::Relaxed);
    }
}
