// SPDX-License-Identifier: GPL-2.0

//! Min-inflight with a flat pick under a session lock, measured against the
//! scan the module uses: `cargo run --release --example select_lock`.
//!
//! The index keeps, for a window of `LEVELS` counts from the least one up,
//! a bitmap of the paths with exactly that many requests in flight, and a
//! bitmap of the paths above the window. A submit or a completion moves
//! its path's bit one level, so the pick is the lowest connected bit of the
//! lowest non-empty level: C's pick (the fewest in flight, ties to the
//! earliest path), exact and in O(1) while the counts spread over less
//! than the window. The window slides when its lowest level empties or a
//! completion goes below it; only then are the paths above it read. The
//! bitmaps change together, so every submit and completion takes the
//! session's lock (a spinning lock here, as a spinlock_t in the module).
//!
//! Prints ns per request (pick + submit + completion) on one thread and on
//! two threads issuing on one session, as `select_tree` does.

use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

mod common;
#[path = "common/timing.rs"]
mod timing;
use common::{paths, Path, Views};
use timing::{scan_pick, table, time, time2};

/// Counts the window holds one bitmap for each.
const LEVELS: usize = 8;
/// Words of a bitmap over the paths (`MAX_PATHS` 128).
const WORDS: usize = 2;

type Bitmap = [AtomicU64; WORDS];

fn bm_new() -> Bitmap {
    [AtomicU64::new(0), AtomicU64::new(0)]
}

fn bm_get(b: &Bitmap) -> [u64; WORDS] {
    [b[0].load(Ordering::Relaxed), b[1].load(Ordering::Relaxed)]
}

fn bm_set(b: &Bitmap, v: [u64; WORDS]) {
    b[0].store(v[0], Ordering::Relaxed);
    b[1].store(v[1], Ordering::Relaxed);
}

/// Flips bit `i`; under the lock, so a plain load and store.
fn bm_flip(b: &Bitmap, i: usize) {
    let w = &b[i / 64];
    w.store(
        w.load(Ordering::Relaxed) ^ (1 << (i % 64)),
        Ordering::Relaxed,
    );
}

/// The lowest bit set in both, if any.
fn first_of(a: [u64; WORDS], m: [u64; WORDS]) -> Option<usize> {
    (0..WORDS).find_map(|w| {
        let v = a[w] & m[w];
        (v != 0).then(|| w * 64 + v.trailing_zeros() as usize)
    })
}

/// The index; its fields are atomics only to be shared, and change only
/// with `lock` held.
struct Index<'a> {
    paths: &'a [Box<Path>],
    lock: AtomicBool,
    /// The count of `level[0]`.
    min: AtomicI32,
    level: [Bitmap; LEVELS],
    /// Paths counting `min + LEVELS` or more.
    above: Bitmap,
    /// CONNECTED paths.
    connected: Bitmap,
}

struct Guard<'i>(&'i AtomicBool);

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl<'a> Index<'a> {
    fn new(paths: &'a [Box<Path>]) -> Self {
        let ix = Self {
            paths,
            lock: AtomicBool::new(false),
            min: AtomicI32::new(0),
            level: core::array::from_fn(|_| bm_new()),
            above: bm_new(),
            connected: bm_new(),
        };
        ix.rebuild();
        ix
    }

    fn lock(&self) -> Guard<'_> {
        while self
            .lock
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            while self.lock.load(Ordering::Relaxed) {
                core::hint::spin_loop();
            }
        }
        Guard(&self.lock)
    }

    fn count(&self, i: usize) -> i32 {
        self.paths[i].inflight.load(Ordering::Relaxed)
    }

    /// The bitmap that holds a path counting `c`.
    fn slot(&self, c: i32) -> &Bitmap {
        let l = i64::from(c) - i64::from(self.min.load(Ordering::Relaxed));
        match usize::try_from(l) {
            Ok(l) if l < LEVELS => &self.level[l],
            _ => &self.above,
        }
    }

    /// All bitmaps from the counts and states (a path added, removed, or
    /// changing state; not per request). Caller holds the lock.
    fn rebuild(&self) {
        let min = (0..self.paths.len()).map(|i| self.count(i)).min();
        self.min.store(min.unwrap_or(0), Ordering::Relaxed);
        for b in self.level.iter().chain([&self.above, &self.connected]) {
            bm_set(b, [0; WORDS]);
        }
        for (i, p) in self.paths.iter().enumerate() {
            bm_flip(self.slot(self.count(i)), i);
            if p.state.load(Ordering::Relaxed) == 1 {
                bm_flip(&self.connected, i);
            }
        }
    }

    /// The window moves up one count: its lowest level is empty.
    fn slide_up(&self) {
        let min = self.min.load(Ordering::Relaxed) + 1;
        self.min.store(min, Ordering::Relaxed);
        for l in 0..LEVELS - 1 {
            bm_set(&self.level[l], bm_get(&self.level[l + 1]));
        }
        // The paths above that now fit the top level.
        let top = min + LEVELS as i32 - 1;
        let mut fit = [0u64; WORDS];
        let mut above = bm_get(&self.above);
        for (w, word) in above.iter_mut().enumerate() {
            let mut bits = *word;
            while bits != 0 {
                let b = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if self.count(w * 64 + b) == top {
                    fit[w] |= 1 << b;
                }
            }
            *word &= !fit[w];
        }
        bm_set(&self.level[LEVELS - 1], fit);
        bm_set(&self.above, above);
    }

    /// The window moves down one count (a completion below it).
    fn slide_down(&self) {
        self.min
            .store(self.min.load(Ordering::Relaxed) - 1, Ordering::Relaxed);
        let top = bm_get(&self.level[LEVELS - 1]);
        let above = bm_get(&self.above);
        bm_set(&self.above, [above[0] | top[0], above[1] | top[1]]);
        for l in (1..LEVELS).rev() {
            bm_set(&self.level[l], bm_get(&self.level[l - 1]));
        }
        bm_set(&self.level[0], [0; WORDS]);
    }

    /// Path `i`'s count moves by `d` (+1 submit, -1 completion).
    fn step(&self, i: usize, d: i32) {
        let c = self.count(i);
        if d < 0 && c == self.min.load(Ordering::Relaxed) {
            self.slide_down();
        }
        bm_flip(self.slot(c), i);
        self.paths[i].inflight.store(c + d, Ordering::Relaxed);
        bm_flip(self.slot(c + d), i);
        let any = |b: &Bitmap| bm_get(b) != [0; WORDS];
        while !any(&self.level[0]) && (self.level.iter().any(any) || any(&self.above)) {
            self.slide_up();
        }
    }

    /// C's min-inflight pick; the lock held.
    fn pick_locked(&self) -> Option<usize> {
        let conn = bm_get(&self.connected);
        if let Some(i) = self.level.iter().find_map(|b| first_of(bm_get(b), conn)) {
            return Some(i);
        }
        // No connected path in the window: the least one above it.
        let above = bm_get(&self.above);
        let cand = [above[0] & conn[0], above[1] & conn[1]];
        (0..self.paths.len())
            .filter(|&i| cand[i / 64] >> (i % 64) & 1 != 0)
            .min_by_key(|&i| (self.count(i), i))
    }

    /// One request: its pick and submit, then its completion.
    fn request(&self) -> usize {
        let p = {
            let _g = self.lock();
            let p = self.pick_locked().unwrap_or(0);
            self.step(p, 1);
            p
        };
        let _g = self.lock();
        self.step(p, -1);
        p
    }
}

fn main() {
    // The index picks what the scan picks, from the same counts.
    for n in [1usize, 3, 8, 33, 64, 65, 128] {
        let ps = paths(n);
        let views = Views {
            paths: &ps,
            now: None,
        };
        let ix = Index::new(&ps);
        for step in 0..20_000usize {
            let i = (step * 7919 + step / 13) % n;
            {
                let _g = ix.lock();
                // Runs of submits, then of completions, to spread the
                // counts past the window and back.
                ix.step(i, if step / 500 % 2 == 0 { 1 } else { -1 });
                if step % 97 == 0 {
                    ps[i]
                        .state
                        .store(u8::from(step % 2 == 0), Ordering::Relaxed);
                    ix.rebuild();
                }
            }
            let _g = ix.lock();
            assert_eq!(
                ix.pick_locked(),
                scan_pick(&views),
                "{n} paths, step {step}"
            );
        }
    }
    // Every path in the window down: the least connected one above it,
    // here in the bitmaps' second word.
    let ps = paths(128);
    let ix = Index::new(&ps);
    {
        let _g = ix.lock();
        for _ in 0..2 * LEVELS {
            ix.step(100, 1);
        }
        for (i, p) in ps.iter().enumerate() {
            p.state.store(u8::from(i == 100), Ordering::Relaxed);
        }
        ix.rebuild();
        assert_eq!(ix.pick_locked(), Some(100), "fallback above the window");
    }
    table("lock", |ps| {
        let ix = Index::new(ps);
        (time(|| ix.request()), time2(|| ix.request()))
    });
}
