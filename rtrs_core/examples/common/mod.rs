// SPDX-License-Identifier: GPL-2.0

//! What the selection examples share: paths as the module keeps them, each
//! in its own allocation of cache-line-aligned atomics, read one at a time
//! as the module's `LiveViews` reads them.

use core::sync::atomic::{AtomicI32, AtomicI64, AtomicU64, AtomicU8, Ordering};

use rtrs_core::latency::svc_effective_ns;
use rtrs_core::path_state::RtrsCltState;
use rtrs_core::policy::{PathView, PathViews};

/// One path's fields that the policies read; `state` 1 is CONNECTED.
#[repr(align(128))]
pub struct Path {
    pub state: AtomicU8,
    pub inflight: AtomicI32,
    pub cur_latency_ns: AtomicI64,
    pub ewma_ns: AtomicU64,
    pub last_ns: AtomicI64,
}

/// `n` connected paths with assorted counts, latencies and estimates.
// One allocation per path, as the module's paths are.
#[allow(clippy::vec_box)]
pub fn paths(n: usize) -> Vec<Box<Path>> {
    (0..n)
        .map(|i| {
            Box::new(Path {
                state: AtomicU8::new(1),
                inflight: AtomicI32::new((i % 7) as i32),
                cur_latency_ns: AtomicI64::new(100_000 + (i as i64 * 7919) % 50_000),
                ewma_ns: AtomicU64::new(50_000 + (i as u64 * 104_729) % 30_000),
                last_ns: AtomicI64::new(0),
            })
        })
        .collect()
}

/// The paths as the policies see them; `now` for service-time's estimate.
pub struct Views<'a> {
    pub paths: &'a [Box<Path>],
    pub now: Option<i64>,
}

impl PathViews for Views<'_> {
    type Path = ();
    fn paths_num(&self) -> usize {
        self.paths.len()
    }
    fn connected(&self, i: usize) -> Option<()> {
        self.view(i).filter(PathView::is_connected).map(|_| ())
    }
    fn view(&self, i: usize) -> Option<PathView> {
        let p = self.paths.get(i)?;
        let state = if p.state.load(Ordering::Relaxed) == 1 {
            RtrsCltState::Connected
        } else {
            RtrsCltState::Reconnecting
        };
        let v = PathView::new(
            state,
            p.inflight.load(Ordering::Relaxed),
            p.cur_latency_ns.load(Ordering::Relaxed),
        );
        Some(match self.now {
            Some(now) => v.with_svc_ns(svc_effective_ns(
                p.ewma_ns.load(Ordering::Relaxed),
                p.last_ns.load(Ordering::Relaxed),
                now,
            )),
            None => v,
        })
    }
}
