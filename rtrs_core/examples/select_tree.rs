// SPDX-License-Identifier: GPL-2.0

//! Min-inflight with a flat pick, measured against the scan the module
//! uses: `cargo run --release --example select_tree`.
//!
//! The flat pick is a tournament tree over the paths: each inner node holds
//! the index of the path with fewer requests in flight among its two
//! children (the earlier on a tie, as C's scan), so the pick is the root.
//! Every change of a path's count (a submit, a completion) walks from its
//! leaf to the root again. Nodes are relaxed atomics without a lock; a race
//! can leave the root stale until the next update, as C's unlocked scan can
//! miss a count that changes meanwhile.
//!
//! What a request costs is the pick plus its two count changes, so that is
//! what is timed: one thread, and two threads issuing on one session (the
//! tree's upper nodes are written by every CPU's requests; the scan writes
//! only the counter of the path it picked). Prints ns per request.

use core::sync::atomic::{AtomicU8, Ordering};

mod common;
#[path = "common/timing.rs"]
mod timing;
use common::{paths, Path, Views};
use timing::{scan_pick, table, time, time2};

/// The tournament tree: `node[k]` for k in 1..leaves holds the winner of
/// node k's subtree; leaf k (leaves..2*leaves) is path k - leaves.
struct Tree<'a> {
    paths: &'a [Box<Path>],
    leaves: usize,
    node: Vec<AtomicU8>,
}

impl<'a> Tree<'a> {
    fn new(paths: &'a [Box<Path>]) -> Self {
        let leaves = paths.len().next_power_of_two();
        let node = (0..leaves).map(|_| AtomicU8::new(0)).collect();
        let t = Self {
            paths,
            leaves,
            node,
        };
        for k in (1..leaves).rev() {
            t.fix(k);
        }
        t
    }

    fn key(&self, i: usize) -> i32 {
        match self.paths.get(i) {
            Some(p) if p.state.load(Ordering::Relaxed) == 1 => p.inflight.load(Ordering::Relaxed),
            _ => i32::MAX,
        }
    }

    fn winner(&self, k: usize) -> usize {
        if k >= self.leaves {
            k - self.leaves
        } else {
            usize::from(self.node[k].load(Ordering::Relaxed))
        }
    }

    fn fix(&self, k: usize) {
        let (l, r) = (self.winner(2 * k), self.winner(2 * k + 1));
        let w = if self.key(r) < self.key(l) { r } else { l };
        // Stores only a change: fewer writes to the shared upper nodes.
        if self.winner(k) != w {
            self.node[k].store(w as u8, Ordering::Relaxed);
        }
    }

    /// Path `i`'s count changed.
    fn update(&self, i: usize) {
        let mut k = (self.leaves + i) / 2;
        while k >= 1 {
            self.fix(k);
            k /= 2;
        }
    }

    fn pick(&self) -> Option<usize> {
        let w = self.winner(1);
        (self.key(w) != i32::MAX).then_some(w)
    }
}

/// One request with the tree: the root, then its submit and completion,
/// each walking the tree.
fn req_tree(t: &Tree<'_>) -> usize {
    let p = t.pick().unwrap_or(0);
    let c = &t.paths[p].inflight;
    c.fetch_add(1, Ordering::Relaxed);
    t.update(p);
    c.fetch_sub(1, Ordering::Relaxed);
    t.update(p);
    p
}

fn main() {
    // The tree picks what the scan picks, from the same counts.
    for n in [1usize, 3, 8, 33, 128] {
        let ps = paths(n);
        let views = Views {
            paths: &ps,
            now: None,
        };
        let t = Tree::new(&ps);
        for step in 0..1000usize {
            let i = (step * 7919) % n;
            if step % 3 == 0 {
                ps[i].inflight.fetch_sub(1, Ordering::Relaxed);
            } else {
                ps[i].inflight.fetch_add(1, Ordering::Relaxed);
            }
            if step % 97 == 0 {
                ps[i]
                    .state
                    .store(u8::from(step % 2 == 0), Ordering::Relaxed);
            }
            t.update(i);
            assert_eq!(t.pick(), scan_pick(&views), "{n} paths, step {step}");
        }
    }
    table("tree", |ps| {
        let t = Tree::new(ps);
        (time(|| req_tree(&t)), time2(|| req_tree(&t)))
    });
}
