// SPDX-License-Identifier: GPL-2.0

//! How fast `service-time` and `min-latency` move IO off a path that turns
//! slow under load, on a model of two paths run by the same policy code,
//! estimate and heartbeat round trip the module uses (`failover_req`,
//! `svc_ewma_update`, `svc_effective_ns`, `hb_cur_latency`).
//!
//! The VM cannot show this on a loaded path: under TCG any queueing
//! qdisc on a loaded soft-RoCE path (netem, even pfifo) makes the
//! server's RC queue pair fail within seconds, with the C client as with
//! this one, so the tests there set the delay before IO starts.
//!
//! The model: `QD` requests always outstanding (closed loop); a request
//! posted at `t` on path `p` completes at `t + lat(p, t)`; each path sends
//! a heartbeat every `HB_NS` (phases apart) whose round trip is the path's
//! latency when sent, and which sets its `cur_latency` when it returns.
//! Min-latency's pick is cached as the module caches it: until a
//! heartbeat answer bumps the generation.

use super::super::latency::{svc_effective_ns, svc_ewma_update};
use super::super::path_state::hb_cur_latency;
use super::*;

const MS: i64 = 1_000_000;
const QD: usize = 16;
/// C's heartbeat interval.
const HB_NS: i64 = 5_000 * MS;
/// Path 1 turns slow here.
const SHIFT_NS: i64 = 3_000 * MS;
const END_NS: i64 = 12_000 * MS;
/// The window in which shares are counted.
const WIN: i64 = 10 * MS;

/// Per-path latency: path 0 is the faster one until the shift, then 20
/// times slower than path 1.
fn lat(p: usize, t: i64) -> i64 {
    match (p, t >= SHIFT_NS) {
        (0, false) => 2 * MS,
        (0, true) => 80 * MS,
        _ => 4 * MS,
    }
}

#[derive(Clone, Copy, Default)]
struct Path {
    inflight: i32,
    cur_latency_ns: i64,
    ewma_ns: u64,
    last_ns: i64,
    hb_sent_ns: i64,
    hb_next_ns: i64,
}

struct Views<'a> {
    paths: &'a [Path; 2],
    now: i64,
}

impl PathViews for Views<'_> {
    type Path = ();
    fn paths_num(&self) -> usize {
        2
    }
    fn connected(&self, i: usize) -> Option<()> {
        self.paths.get(i).map(|_| ())
    }
    fn view(&self, i: usize) -> Option<PathView> {
        let p = self.paths.get(i)?;
        Some(
            PathView::new(RtrsCltState::Connected, p.inflight, p.cur_latency_ns)
                .with_svc_ns(svc_effective_ns(p.ewma_ns, p.last_ns, self.now)),
        )
    }
}

/// Runs the model under `policy` with path 0's first heartbeat at
/// `hb_phase_ns`; returns the time after the shift until path 0 got under
/// 10% of the requests posted in every 10 ms window from then on to the
/// end, and path 0's share in the second before the shift.
fn reaction(policy: MpPolicy, hb_phase_ns: i64) -> (i64, f64) {
    let mut paths = [Path::default(); 2];
    // Both paths are connected and each answered a heartbeat already.
    paths[0].cur_latency_ns = lat(0, 0);
    paths[1].cur_latency_ns = lat(1, 0);
    paths[0].hb_next_ns = hb_phase_ns;
    paths[1].hb_next_ns = hb_phase_ns + HB_NS / 2;
    // (completion time, path, post time); a request is re-posted when it completes.
    let mut pending: Vec<(i64, usize, i64)> = Vec::new();
    // Requests posted per 10 ms window: (path 0, all).
    let windows = (END_NS / WIN) as usize + 1;
    let mut posted = vec![(0u32, 0u32); windows];
    let mut rr = None;
    let (mut gen, mut hint_word) = (0u64, HINT_NONE);
    let mut post = |t: i64, gen: u64, paths: &mut [Path; 2], pending: &mut Vec<_>| {
        let views = Views { paths, now: t };
        let mut hint = LatencyHint::new(unpack_hint(hint_word, gen));
        let p = failover_req(policy, &views, 2, &mut rr, &mut hint, |_, _| Offer::Posted);
        if let Some(i) = hint.scanned {
            hint_word = pack_hint(gen, i);
        }
        let p = p.unwrap_or(1);
        paths[p].inflight += 1;
        pending.push((t + lat(p, t), p, t));
        let w = &mut posted[(t / WIN) as usize];
        w.1 += 1;
        if p == 0 {
            w.0 += 1;
        }
    };
    for _ in 0..QD {
        post(0, gen, &mut paths, &mut pending);
    }
    loop {
        // The next event: a completion, or a heartbeat sent or answered.
        let (ci, &(tc, p, tp)) = pending
            .iter()
            .enumerate()
            .min_by_key(|(_, e)| e.0)
            .expect("QD requests are always pending");
        // A heartbeat is sent every HB_NS (as hb_work rearms itself) and
        // answered after the path's latency.
        let hb = (0..2)
            .flat_map(|i| {
                let h = &paths[i];
                let back =
                    (h.hb_sent_ns != 0).then(|| (h.hb_sent_ns + lat(i, h.hb_sent_ns), i, true));
                [Some((h.hb_next_ns, i, false)), back]
            })
            .flatten()
            .min_by_key(|e| e.0)
            .expect("two paths");
        if tc.min(hb.0) >= END_NS {
            break;
        }
        if hb.0 < tc {
            let (t, i, back) = hb;
            let h = &mut paths[i];
            if back {
                h.cur_latency_ns = hb_cur_latency(t, h.hb_sent_ns);
                h.hb_sent_ns = 0;
                gen += 1;
            } else {
                h.hb_sent_ns = t;
                h.hb_next_ns = t + HB_NS;
            }
            continue;
        }
        pending.swap_remove(ci);
        let path = &mut paths[p];
        path.inflight -= 1;
        if policy == MpPolicy::ServiceTime {
            path.ewma_ns = svc_ewma_update(path.ewma_ns, path.last_ns, tc, (tc - tp) as u64);
            path.last_ns = tc;
        }
        post(tc, gen, &mut paths, &mut pending);
    }
    // The second before the shift.
    let before: (u32, u32) = posted[(SHIFT_NS / WIN) as usize - 100..(SHIFT_NS / WIN) as usize]
        .iter()
        .fold((0, 0), |a, w| (a.0 + w.0, a.1 + w.1));
    // The first window after which every window holds under 10% for path 0.
    let first = (SHIFT_NS / WIN) as usize;
    let last = windows - 1;
    let mut moved = last;
    for w in (first..last).rev() {
        let (a, n) = posted[w];
        if n > 0 && a * 10 >= n {
            break;
        }
        moved = w;
    }
    (
        (moved as i64) * WIN - SHIFT_NS,
        f64::from(before.0) / f64::from(before.1.max(1)),
    )
}

#[test]
fn service_time_moves_io_off_a_slowed_path_within_a_second() {
    for phase in [100 * MS, 1_000 * MS, 2_900 * MS, 3_100 * MS, 4_900 * MS] {
        let (st, st_share) = reaction(MpPolicy::ServiceTime, phase);
        let (ml, ml_share) = reaction(MpPolicy::MinLatency, phase);
        // Before the shift both use the faster path (service-time also
        // spreads to the other as its queue grows).
        assert!(st_share > 0.5, "service-time share before {st_share}");
        assert!(ml_share > 0.99, "min-latency share before {ml_share}");
        // service-time: within a second, whatever the heartbeat's phase.
        assert!(
            st < 1_000 * MS,
            "service-time took {} ms (phase {})",
            st / MS,
            phase / MS
        );
        // min-latency: at path 0's next heartbeat after the shift, and
        // its round trip: up to one heartbeat period.
        let next_hb = (phase..)
            .step_by(HB_NS as usize)
            .find(|t| *t >= SHIFT_NS)
            .unwrap();
        let expect = next_hb + lat(0, next_hb) - SHIFT_NS;
        assert!(
            (ml - expect).abs() <= 100 * MS,
            "min-latency took {} ms, its heartbeat answered {} ms after the shift",
            ml / MS,
            expect / MS
        );
        assert!(ml <= HB_NS + 100 * MS, "min-latency took {} ms", ml / MS);
        std::println!(
            "hb phase {:>4} ms: service-time {:>3} ms, min-latency {:>4} ms",
            phase / MS,
            st / MS,
            ml / MS
        );
    }
}
