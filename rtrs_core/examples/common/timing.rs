// SPDX-License-Identifier: GPL-2.0

//! What the flat min-inflight examples share (`#[path]`-included next to
//! `mod common`): the module's scan as one request, and the timing of
//! requests on one thread and on two threads issuing on one session.

use core::sync::atomic::Ordering;
use std::hint::black_box;
use std::sync::Barrier;
use std::time::Instant;

use rtrs_core::policy::{failover_req, LatencyHint, MpPolicy, Offer};

use crate::common::{paths, Path, Views};

/// One min-inflight request as the module makes it: the scan's pick, then
/// the picked path's submit and completion.
fn req_scan(views: &Views<'_>) -> usize {
    let p = scan_pick(views).unwrap_or(0);
    let c = &views.paths[p].inflight;
    c.fetch_add(1, Ordering::Relaxed);
    c.fetch_sub(1, Ordering::Relaxed);
    p
}

/// The module's min-inflight pick (a full scan).
pub fn scan_pick(views: &Views<'_>) -> Option<usize> {
    failover_req(
        MpPolicy::MinInflight,
        views,
        views.paths.len(),
        &mut None,
        &mut LatencyHint::default(),
        |_, _| Offer::Posted,
    )
    .ok()
}

const ROUNDS: u32 = 200_000;

/// Mean ns of `f` (one request) on this thread.
pub fn time(mut f: impl FnMut() -> usize) -> f64 {
    let t = Instant::now();
    let mut sum = 0usize;
    for _ in 0..ROUNDS {
        sum = sum.wrapping_add(black_box(f()));
    }
    black_box(sum);
    t.elapsed().as_nanos() as f64 / f64::from(ROUNDS)
}

/// Mean ns of `f` with two threads issuing requests on one session at once.
pub fn time2(f: impl Fn() -> usize + Sync) -> f64 {
    let b = Barrier::new(2);
    let ns: Vec<f64> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    b.wait();
                    time(&f)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap_or(0.0)).collect()
    });
    ns.iter().sum::<f64>() / ns.len() as f64
}

/// Prints ns per request at 1, 8, 32 and 128 paths: the scan and `name`
/// on one thread, then on two. `run` builds the flat pick over the paths
/// and returns its one- and two-thread times.
pub fn table(name: &str, run: impl Fn(&[Box<Path>]) -> (f64, f64)) {
    println!("ns per request (pick + submit + completion), min-inflight");
    println!("paths  scan 1 thread  {name} 1 thread  scan 2 threads  {name} 2 threads");
    for n in [1usize, 8, 32, 128] {
        let ps = paths(n);
        let views = Views {
            paths: &ps,
            now: None,
        };
        let s1 = time(|| req_scan(&views));
        let s2 = time2(|| req_scan(&views));
        let (f1, f2) = run(&ps);
        println!("{n:>5}  {s1:>13.1}  {f1:>13.1}  {s2:>14.1}  {f2:>14.1}");
    }
}
