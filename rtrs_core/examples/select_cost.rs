// SPDX-License-Identifier: GPL-2.0

//! The cost of one path selection (a request's first pick) per policy at
//! 1, 8, 32 and 128 paths, on the host: `cargo run --release --example
//! select_cost`. Each path's fields sit in their own cache-line-aligned
//! struct of atomics, read as the module reads its paths (`LiveViews`);
//! min-latency uses its cached pick, as it does while no path's state or
//! heartbeat latency changed. Prints one line per policy and path count.

use std::hint::black_box;
use std::time::Instant;

use rtrs_core::policy::{failover_req, LatencyHint, MpPolicy, Offer};

mod common;
use common::{paths, Views};

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
            let paths = paths(n);
            let views = Views {
                paths: &paths,
                now: (policy == MpPolicy::ServiceTime).then_some(1),
            };
            let mut cursor = None;
            // The cached min-latency pick, as the first full scan leaves it.
            let mut hint = LatencyHint::default();
            let _ = failover_req(policy, &views, n, &mut cursor, &mut hint, |_, _| {
                Offer::Posted
            });
            let cached = hint.scanned;
            let t = Instant::now();
            let mut sum = 0usize;
            for _ in 0..ROUNDS {
                let mut h = LatencyHint::new(cached);
                let p = failover_req(policy, &views, n, &mut cursor, &mut h, |_, _| Offer::Posted);
                sum = sum.wrapping_add(black_box(p).unwrap_or(0));
            }
            let ns = t.elapsed().as_nanos() as f64 / f64::from(ROUNDS);
            black_box(sum);
            println!("{:<14} {:>5}  {:>8.1}", policy.name(), n, ns);
        }
    }
}
