// SPDX-License-Identifier: GPL-2.0

//! The cost of one path selection (a request's first pick) per policy at
//! 1, 8, 32 and 128 paths, on the host: `cargo run --release --example
//! select_cost`. Each path's fields sit in their own cache-line-aligned
//! struct of atomics, read as the module reads its paths (`LiveViews`);
//! min-latency uses its cached pick, as it does while no path's state or
//! heartbeat latency changed. Prints one line per policy and path count.

use core::sync::atomic::{AtomicI32, AtomicI64, AtomicU64, AtomicU8, Ordering};
use std::hint::black_box;
use std::time::Instant;

use rtrs_core::latency::svc_effective_ns;
use rtrs_core::path_state::RtrsCltState;
use rtrs_core::policy::{failover_req, LatencyHint, MpPolicy, Offer, PathView, PathViews};

#[repr(align(128))]
struct Path {
    state: AtomicU8,
    inflight: AtomicI32,
    cur_latency_ns: AtomicI64,
    ewma_ns: AtomicU64,
    last_ns: AtomicI64,
}

struct Views<'a> {
    paths: &'a [Box<Path>],
    now: Option<i64>,
}

impl PathViews for Views<'_> {
    fn paths_num(&self) -> usize {
        self.paths.len()
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

fn main() {
    const ROUNDS: u32 = 200_000;
    println!("policy         paths  ns/selection");
    for policy in [
        MpPolicy::Rr,
        MpPolicy::MinInflight,
        MpPolicy::MinLatency,
        MpPolicy::ServiceTime,
    ] {
        for n in [1usize, 8, 32, 128] {
            let paths: Vec<Box<Path>> = (0..n)
                .map(|i| {
                    Box::new(Path {
                        state: AtomicU8::new(1),
                        inflight: AtomicI32::new((i % 7) as i32),
                        cur_latency_ns: AtomicI64::new(100_000 + (i as i64 * 7919) % 50_000),
                        ewma_ns: AtomicU64::new(50_000 + (i as u64 * 104_729) % 30_000),
                        last_ns: AtomicI64::new(0),
                    })
                })
                .collect();
            let views = Views {
                paths: &paths,
                now: (policy == MpPolicy::ServiceTime).then_some(1),
            };
            let mut cursor = None;
            // The cached min-latency pick, as the first full scan leaves it.
            let mut hint = LatencyHint::default();
            let _ = failover_req(policy, &views, n, &mut cursor, &mut hint, |_| Offer::Posted);
            let cached = hint.scanned;
            let t = Instant::now();
            let mut sum = 0usize;
            for _ in 0..ROUNDS {
                let mut h = LatencyHint::new(cached);
                let p = failover_req(policy, &views, n, &mut cursor, &mut h, |_| Offer::Posted);
                sum = sum.wrapping_add(black_box(p).unwrap_or(0));
            }
            let ns = t.elapsed().as_nanos() as f64 / f64::from(ROUNDS);
            black_box(sum);
            println!("{:<14} {:>5}  {:>8.1}", policy.name(), n, ns);
        }
    }
}
