// SPDX-License-Identifier: GPL-2.0

//! Permit rules of the session (`rtrs-clt.c`): the connection a permit's
//! request goes on, the lock-free permit bitmap ([`PermitMap`]) and where
//! each permit lies in the pool ([`PermitLayout`]). The module owns the
//! memory and the wait queue; these decide.

use core::sync::atomic::{AtomicU64, Ordering};

#[cfg(test)]
/// `RTRS_ADMIN_CON`: a permit for connection 0.
pub const RTRS_ADMIN_CON: u32 = 0;
/// `RTRS_IO_CON`: a permit for the IO connection of its CPU.
pub const RTRS_IO_CON: u32 = 1;

/// Permit bits per bitmap word.
const WORD_BITS: u32 = u64::BITS;

/// `rtrs_permit_to_clt_con`: the connection id of a permit, 1 +
/// `cpu_id % (irq_con_num - 1)` for an IO permit, 0 otherwise. With fewer
/// than two IRQ connections (C would divide by zero) an IO permit gets 1.
pub const fn rtrs_permit_to_clt_con(con_type: u32, cpu_id: u32, irq_con_num: u32) -> u32 {
    if con_type != RTRS_IO_CON {
        return 0;
    }
    let io_cons = irq_con_num.saturating_sub(1);
    // The remainder is below `io_cons` < u32::MAX: the sum cannot overflow.
    match cpu_id.checked_rem(io_cons) {
        Some(r) => r.saturating_add(1),
        None => 1,
    }
}

/// The permit bitmap (`permits_map`) of `queue_depth` permits over a slice
/// of atomic words, bit `i % 64` of word `i / 64` for permit `i`; bits of
/// permits that do not fit in the slice do not exist.
#[derive(Clone, Copy)]
pub struct PermitMap<'a> {
    words: &'a [AtomicU64],
    queue_depth: u32,
}

impl<'a> PermitMap<'a> {
    /// The words needed for `queue_depth` permits (`BITS_TO_LONGS`).
    pub const fn words_for(queue_depth: u32) -> usize {
        // u32 to usize is lossless on the 64-bit targets the module builds for.
        queue_depth.div_ceil(WORD_BITS) as usize
    }

    /// A view of `words` as the bitmap of `queue_depth` permits.
    pub const fn new(words: &'a [AtomicU64], queue_depth: u32) -> Self {
        Self { words, queue_depth }
    }

    /// The word and mask of permit `i`, if it exists.
    fn bit(&self, i: u32) -> Option<(&'a AtomicU64, u64)> {
        if i >= self.queue_depth {
            return None;
        }
        let w = usize::try_from(i / WORD_BITS).ok()?;
        Some((self.words.get(w)?, 1u64 << (i % WORD_BITS)))
    }

    /// `__rtrs_get_permit`'s loop: takes the first free permit (its bit
    /// set with Acquire ordering) and returns its index; `None` when all
    /// `queue_depth` are taken. A racing taker that wins the same bit sends
    /// this one back to the scan.
    pub fn try_take(&self) -> Option<u32> {
        loop {
            let (word, bit, idx) = self.first_zero()?;
            if idx >= self.queue_depth {
                return None;
            }
            let mask = 1u64 << bit;
            if word.fetch_or(mask, Ordering::Acquire) & mask == 0 {
                return Some(idx);
            }
        }
    }

    /// `find_first_zero_bit` over the words (a relaxed snapshot): the word,
    /// the bit in it and the permit index.
    fn first_zero(&self) -> Option<(&'a AtomicU64, u32, u32)> {
        let mut base = 0u32;
        for word in self.words {
            let v = word.load(Ordering::Relaxed);
            if v != u64::MAX {
                let bit = (!v).trailing_zeros();
                return Some((word, bit, base.checked_add(bit)?));
            }
            base = base.checked_add(WORD_BITS)?;
        }
        None
    }

    /// `__rtrs_put_permit`: frees permit `i` (its bit cleared with Release
    /// ordering); false if it was not taken or does not exist.
    pub fn put(&self, i: u32) -> bool {
        let Some((word, mask)) = self.bit(i) else {
            return false;
        };
        word.fetch_and(!mask, Ordering::Release) & mask != 0
    }

    #[cfg(test)]
    /// `test_bit`: whether permit `i` is taken.
    pub fn is_taken(&self, i: u32) -> bool {
        self.bit(i)
            .is_some_and(|(word, mask)| word.load(Ordering::Relaxed) & mask != 0)
    }

    /// `bitmap_empty` (Acquire loads): whether every permit is free.
    pub fn all_free(&self) -> bool {
        self.words.iter().all(|w| w.load(Ordering::Acquire) == 0)
    }
}

/// Why a [`PermitLayout`] cannot be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermitLayoutError {
    /// The size of one permit overflows (EINVAL).
    PermitSize,
    /// The pool's size overflows (ENOMEM).
    PoolSize,
}

/// Where the permits of `alloc_permits` lie: `queue_depth` permits of
/// `psize` bytes each, one after the other. `psize` (C's `permit_size`) is
/// rounded up to 8 bytes so that each permit is aligned; C does not round,
/// which is the same for rnbd's pdu_sz of 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PermitLayout {
    psize: usize,
    queue_depth: u32,
    bytes: usize,
    /// `psize` is `odd << shift`; `inv` is `odd`'s inverse modulo 2^64, so
    /// that `index` divides exactly by a multiplication: the IO path checks
    /// a permit twice per request, and a division is slow.
    shift: u32,
    inv: usize,
    /// `(1 << shift) - 1`: the bits a permit's offset has clear.
    mask: usize,
    /// The quotients `index` accepts: `queue_depth`, or none if `psize`
    /// is 0. Both precomputed, as `index` runs twice per request.
    index_limit: usize,
}

impl PermitLayout {
    /// The layout of `queue_depth` permits of a `hdr_size`-byte header
    /// (`struct rtrs_permit`) followed by `pdu_sz` bytes.
    pub const fn new(
        hdr_size: usize,
        pdu_sz: usize,
        queue_depth: u32,
    ) -> Result<Self, PermitLayoutError> {
        let psize = match hdr_size.checked_add(pdu_sz) {
            Some(v) => match v.checked_add(7) {
                Some(v) => v & !7usize,
                None => return Err(PermitLayoutError::PermitSize),
            },
            None => return Err(PermitLayoutError::PermitSize),
        };
        // u32 to usize is lossless on the 64-bit targets the module builds for.
        let bytes = match psize.checked_mul(queue_depth as usize) {
            Some(b) => b,
            None => return Err(PermitLayoutError::PoolSize),
        };
        let shift = if psize == 0 {
            0
        } else {
            psize.trailing_zeros()
        };
        let odd = psize >> shift;
        // Newton's iteration: `odd * odd` is 1 modulo 8 (3 bits right), and
        // each step doubles the bits right: 6, 12, 24, 48, 96.
        let mut inv = odd;
        let mut step = 0;
        while step < 5 {
            inv = inv.wrapping_mul(2usize.wrapping_sub(odd.wrapping_mul(inv)));
            step += 1;
        }
        Ok(Self {
            psize,
            queue_depth,
            bytes,
            shift,
            inv,
            mask: (1usize << shift) - 1,
            index_limit: if psize == 0 { 0 } else { queue_depth as usize },
        })
    }

    #[cfg(test)]
    /// The size of one permit, a multiple of 8.
    pub const fn psize(&self) -> usize {
        self.psize
    }

    /// The number of permits.
    pub const fn queue_depth(&self) -> u32 {
        self.queue_depth
    }

    #[cfg(test)]
    /// The pool's size in bytes.
    pub const fn bytes(&self) -> usize {
        self.bytes
    }

    /// The pool's size in 8-byte words, at least one.
    pub const fn words(&self) -> usize {
        let w = self.bytes.div_ceil(8);
        if w == 0 {
            1
        } else {
            w
        }
    }

    /// `get_permit`: the offset of permit `i` in the pool.
    pub fn offset(&self, i: u32) -> Option<usize> {
        if i >= self.queue_depth {
            return None;
        }
        usize::try_from(i).ok()?.checked_mul(self.psize)
    }

    /// The index of the permit at offset `off`, if a permit starts there.
    pub fn index(&self, off: usize) -> Option<u32> {
        if off & self.mask != 0 {
            return None;
        }
        // Below the depth, `q * odd` is below `bytes` and so does not wrap:
        // then `q * odd == off >> shift` exactly, and `q` is the quotient.
        // Any `off` that `odd` does not divide gives a `q` at or above it.
        let q = off.wrapping_shr(self.shift).wrapping_mul(self.inv);
        if q < self.index_limit {
            // Below a `u32` depth.
            Some(q as u32)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::sync::atomic::AtomicU32;
    use std::sync::Barrier;
    use std::vec::Vec;

    /// Depths around the word size, and the protocol's largest.
    const DEPTHS: [u32; 9] = [1, 2, 63, 64, 65, 100, 128, 129, 512];

    fn words(qd: u32) -> Vec<AtomicU64> {
        (0..PermitMap::words_for(qd))
            .map(|_| AtomicU64::new(0))
            .collect()
    }

    #[test]
    fn to_con_io_permits_spread_over_irq_cons() {
        // 4 IRQ connections: cids 1..=3 in turn, as C's modulo.
        let cids: Vec<u32> = (0..7)
            .map(|cpu| rtrs_permit_to_clt_con(RTRS_IO_CON, cpu, 4))
            .collect();
        assert_eq!(cids, [1, 2, 3, 1, 2, 3, 1]);
        assert_eq!(rtrs_permit_to_clt_con(RTRS_IO_CON, 5, 2), 1);
        // The largest cid: no overflow in the `+ 1`.
        assert_eq!(
            rtrs_permit_to_clt_con(RTRS_IO_CON, u32::MAX - 2, u32::MAX),
            u32::MAX - 1
        );
        assert_eq!(rtrs_permit_to_clt_con(RTRS_IO_CON, u32::MAX, u32::MAX), 2);
    }

    #[test]
    fn to_con_admin_and_other_types_go_to_cid_0() {
        for cpu in [0, 1, 63, u32::MAX] {
            assert_eq!(rtrs_permit_to_clt_con(RTRS_ADMIN_CON, cpu, 4), 0);
            assert_eq!(rtrs_permit_to_clt_con(2, cpu, 4), 0);
            assert_eq!(rtrs_permit_to_clt_con(u32::MAX, cpu, 0), 0);
        }
    }

    #[test]
    fn to_con_fewer_than_two_irq_cons_does_not_divide_by_zero() {
        for cpu in [0, 1, 7, u32::MAX] {
            assert_eq!(rtrs_permit_to_clt_con(RTRS_IO_CON, cpu, 0), 1);
            assert_eq!(rtrs_permit_to_clt_con(RTRS_IO_CON, cpu, 1), 1);
        }
    }

    #[test]
    fn map_takes_lowest_free_permits_up_to_depth() {
        for qd in DEPTHS {
            let w = words(qd);
            assert_eq!(w.len(), qd.div_ceil(64) as usize);
            let m = PermitMap::new(&w, qd);
            assert!(m.all_free());
            for i in 0..qd {
                assert_eq!(m.try_take(), Some(i), "qd {qd}");
                assert!(m.is_taken(i));
            }
            assert_eq!(m.try_take(), None, "qd {qd}: bits past the depth stay free");
            assert!(!m.is_taken(qd));
            // Bits past the depth in the last word were never set.
            let tail = qd % 64;
            if tail != 0 {
                let last = w[w.len() - 1].load(Ordering::Relaxed);
                assert_eq!(last, (1u64 << tail) - 1);
            }
            assert!(!m.all_free());
        }
    }

    #[test]
    fn map_put_frees_and_refuses_double_or_foreign_puts() {
        for qd in DEPTHS {
            let w = words(qd);
            let m = PermitMap::new(&w, qd);
            while m.try_take().is_some() {}
            let mid = qd / 2;
            assert!(m.put(mid));
            assert!(!m.is_taken(mid));
            assert!(!m.put(mid), "double put");
            assert!(!m.put(qd), "past the depth");
            assert!(!m.put(u32::MAX));
            assert_eq!(
                m.try_take(),
                Some(mid),
                "the freed permit is the first free"
            );
            for i in 0..qd {
                assert!(m.put(i));
            }
            assert!(m.all_free());
            assert!(!m.put(0));
        }
    }

    #[test]
    fn map_on_too_short_slice_has_no_extra_permits() {
        let w = words(64);
        let m = PermitMap::new(&w, 100);
        for i in 0..64 {
            assert_eq!(m.try_take(), Some(i));
        }
        assert_eq!(m.try_take(), None);
        assert!(!m.put(80));
        assert!(!m.is_taken(80));
        let none = PermitMap::new(&[], 4);
        assert_eq!(none.try_take(), None);
        assert!(none.all_free());
        assert_eq!(PermitMap::words_for(0), 0);
    }

    #[test]
    fn map_concurrent_takers_never_share_a_permit() {
        const THREADS: usize = 8;
        const ROUNDS: usize = 20_000;
        for qd in [1, 5, 63, 65, 129] {
            let w = words(qd);
            let m = PermitMap::new(&w, qd);
            // Owner of each permit (thread + 1), 0 when free.
            let owner: Vec<AtomicU32> = (0..qd).map(|_| AtomicU32::new(0)).collect();
            let handed = AtomicU64::new(0);
            let start = Barrier::new(THREADS);
            std::thread::scope(|s| {
                for t in 0..THREADS {
                    let (m, owner, handed, start) = (&m, &owner, &handed, &start);
                    s.spawn(move || {
                        let me = u32::try_from(t + 1).unwrap();
                        let mut held = Vec::new();
                        start.wait();
                        for r in 0..ROUNDS {
                            if let Some(i) = m.try_take() {
                                let prev = owner[i as usize].swap(me, Ordering::Relaxed);
                                assert_eq!(prev, 0, "permit {i} handed out twice");
                                handed.fetch_add(1, Ordering::Relaxed);
                                held.push(i);
                            }
                            // Hold up to three, then give the oldest back.
                            if held.len() > r % 4 {
                                let i = held.remove(0);
                                assert_eq!(owner[i as usize].swap(0, Ordering::Relaxed), me);
                                assert!(m.put(i));
                            }
                        }
                        for i in held {
                            assert_eq!(owner[i as usize].swap(0, Ordering::Relaxed), me);
                            assert!(m.put(i));
                        }
                    });
                }
            });
            assert!(handed.load(Ordering::Relaxed) > 0);
            assert!(m.all_free(), "qd {qd}");
        }
    }

    #[test]
    fn map_concurrent_drain_hands_out_each_permit_once() {
        const THREADS: usize = 6;
        for qd in [1, 64, 65, 200, 512] {
            let w = words(qd);
            let m = PermitMap::new(&w, qd);
            let start = Barrier::new(THREADS);
            let got: Vec<Vec<u32>> = std::thread::scope(|s| {
                let hs: Vec<_> = (0..THREADS)
                    .map(|_| {
                        let (m, start) = (&m, &start);
                        s.spawn(move || {
                            start.wait();
                            core::iter::from_fn(|| m.try_take()).collect::<Vec<u32>>()
                        })
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let all: Vec<u32> = got.into_iter().flatten().collect();
            let set: BTreeSet<u32> = all.iter().copied().collect();
            assert_eq!(all.len(), qd as usize, "qd {qd}: no permit twice");
            assert_eq!(set, (0..qd).collect(), "qd {qd}: every permit once");
        }
    }

    #[test]
    fn layout_rounds_permit_size_to_8() {
        let l = PermitLayout::new(16, 0, 128).unwrap();
        assert_eq!(
            (l.psize(), l.queue_depth(), l.bytes(), l.words()),
            (16, 128, 2048, 256)
        );
        for (pdu, psize) in [(1, 24), (7, 24), (8, 24), (9, 32), (100, 120)] {
            assert_eq!(
                PermitLayout::new(16, pdu, 3).unwrap().psize(),
                psize,
                "pdu {pdu}"
            );
        }
        assert_eq!(PermitLayout::new(16, 1, 3).unwrap().bytes(), 72);
        assert_eq!(
            PermitLayout::new(16, 8, 0).unwrap().words(),
            1,
            "never an empty pool"
        );
    }

    #[test]
    fn layout_refuses_overflows() {
        assert_eq!(
            PermitLayout::new(16, usize::MAX - 15, 1),
            Err(PermitLayoutError::PermitSize)
        );
        assert_eq!(
            PermitLayout::new(16, usize::MAX - 16, 1),
            Err(PermitLayoutError::PermitSize)
        );
        assert_eq!(
            PermitLayout::new(16, usize::MAX - 23, 1).unwrap().psize(),
            usize::MAX - 7
        );
        assert_eq!(
            PermitLayout::new(16, usize::MAX / 2, 3),
            Err(PermitLayoutError::PoolSize)
        );
    }

    #[test]
    fn layout_offset_and_index_round_trip() {
        for qd in DEPTHS {
            let l = PermitLayout::new(16, 9, qd).unwrap();
            for i in 0..qd {
                let off = l.offset(i).unwrap();
                assert_eq!(off, i as usize * 32);
                assert!(off + l.psize() <= l.bytes());
                assert_eq!(l.index(off), Some(i));
            }
            assert_eq!(l.offset(qd), None);
            assert_eq!(l.index(qd as usize * 32), None, "one past the pool");
        }
    }

    #[test]
    fn layout_index_without_division_matches_division() {
        // What `index` computes, by division.
        fn by_div(l: &PermitLayout, off: usize) -> Option<u32> {
            let p = l.psize();
            if p == 0 || !off.is_multiple_of(p) {
                return None;
            }
            u32::try_from(off / p).ok().filter(|&i| i < l.queue_depth())
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for pdu in (0..200).chain([1000, 4095, 4096, 65535, 1 << 20]) {
            for qd in [1u32, 2, 3, 7, 64, 128, 512, 1000, 4096] {
                let l = PermitLayout::new(24, pdu, qd).unwrap();
                let p = l.psize();
                let mut offs: Vec<usize> = (0..qd as usize + 2)
                    .flat_map(|i| [i * p, i * p + 1, i * p + 8, (i * p).wrapping_sub(8)])
                    .collect();
                offs.extend((0..200).map(|_| next() as usize % (l.bytes() + p + 1)));
                offs.extend((0..50).map(|_| next() as usize));
                offs.extend([usize::MAX, usize::MAX - 7, 1 << 63]);
                for off in offs {
                    assert_eq!(l.index(off), by_div(&l, off), "pdu {pdu} qd {qd} off {off}");
                }
            }
        }
    }

    #[test]
    fn layout_index_refuses_offsets_inside_a_permit() {
        let l = PermitLayout::new(16, 0, 4).unwrap();
        for off in [1, 8, 15, 17, 63] {
            assert_eq!(l.index(off), None, "off {off}");
        }
        assert_eq!(l.index(usize::MAX), None);
        // A zero-sized permit has no index.
        assert_eq!(PermitLayout::new(0, 0, 4).unwrap().index(0), None);
    }
}
