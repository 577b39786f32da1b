// SPDX-License-Identifier: GPL-2.0

//! A session's permits (`permits_map`, `permits`, `permits_wait`): one per
//! request slot, taken without locks by `rtrs_clt_get_permit` and given
//! back by `rtrs_clt_put_permit`.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, Ordering};

use kernel::ffi::c_void;
use kernel::prelude::*;

use crate::abi::RtrsPermit;
use crate::bindings;
use crate::rtrs_core::imm;

/// The permit pool (`permits_map`, `permits`, `permits_wait`).
///
/// # Invariants
///
/// `base` points to `queue_depth * psize` bytes owned by `_store`, 8-byte
/// aligned, which begin zeroed; `psize` is a multiple of 8 of at least the
/// size of an `RtrsPermit`; `wq` is an initialised wait queue head freed
/// in drop.
pub(crate) struct Permits {
    map: KVec<AtomicU64>,
    _store: KVec<u64>,
    base: *mut u8,
    psize: usize,
    queue_depth: u32,
    wq: NonNull<bindings::wait_queue_head>,
}

// SAFETY: Bit ownership in `map` serialises the writes to each permit's
// header, which are atomic besides; the wait queue is thread safe.
unsafe impl Send for Permits {}
// SAFETY: As above.
unsafe impl Sync for Permits {}

impl Drop for Permits {
    fn drop(&mut self) {
        // SAFETY: By the type invariant; nobody waits any more (close waited).
        unsafe { bindings::rtrs_rs_waitq_free(self.wq.as_ptr()) };
    }
}

impl Permits {
    /// `queue_depth`: the number of permits (the session's one copy).
    pub(crate) fn queue_depth(&self) -> u32 {
        self.queue_depth
    }

    /// `alloc_permits`.
    pub(crate) fn new(queue_depth: u32, pdu_sz: usize) -> Result<Self> {
        let qd = usize::try_from(queue_depth).map_err(|_| EINVAL)?;
        // Rounded to 8 bytes so that each permit is aligned (C: unrounded;
        // identical for rnbd's pdu_sz of 0).
        let psize = core::mem::size_of::<RtrsPermit>()
            .checked_add(pdu_sz)
            .and_then(|v| v.checked_add(7))
            .ok_or(EINVAL)?
            & !7usize;
        let bytes = psize.checked_mul(qd).ok_or(ENOMEM)?;
        let mut store = KVec::from_elem(0u64, bytes.div_ceil(8).max(1), GFP_KERNEL)?;
        let base = store.as_mut_ptr().cast::<u8>();
        let words = qd.div_ceil(64);
        let mut map = KVec::with_capacity(words, GFP_KERNEL)?;
        for _ in 0..words {
            map.push(AtomicU64::new(0), GFP_KERNEL)?;
        }
        let wq = NonNull::new(bindings::rtrs_rs_waitq_alloc()).ok_or(ENOMEM)?;
        // INVARIANT: `store` is `bytes` zeroed bytes of `u64`s, and `wq` was
        // just initialised.
        let p = Self {
            map,
            _store: store,
            base,
            psize,
            queue_depth,
            wq,
        };
        for i in 0..queue_depth {
            let mem_off = imm::rtrs_permit_mem_off(queue_depth, i).map_err(|_| EINVAL)?;
            let permit = p.permit(i).ok_or(EINVAL)?;
            permit.mem_id.store(i, Ordering::Relaxed);
            permit.mem_off.store(mem_off, Ordering::Relaxed);
        }
        Ok(p)
    }

    /// Where permit `i` starts (what rnbd gets: the header, then its pdu).
    fn permit_ptr(&self, i: u32) -> Option<*mut RtrsPermit> {
        if i >= self.queue_depth {
            return None;
        }
        let off = usize::try_from(i).ok()?.checked_mul(self.psize)?;
        // In the storage: `off` is below `queue_depth * psize`.
        Some(self.base.wrapping_add(off).cast())
    }

    /// The header of permit `i`.
    fn permit(&self, i: u32) -> Option<&RtrsPermit> {
        let p = self.permit_ptr(i)?;
        // SAFETY: By the type invariant `p` is inside the storage with a
        // whole `RtrsPermit` after it (`i < queue_depth`, `psize` covers
        // one), 8-byte aligned, and lives as long as `self`; all-zero bytes
        // are a valid header of atomics, and it is only changed through
        // them (rnbd uses the pdu after it).
        Some(unsafe { &*p })
    }

    /// The index of `p` if it is one of ours.
    pub(crate) fn index_of(&self, p: *const RtrsPermit) -> Option<u32> {
        let off = (p as usize).checked_sub(self.base as usize)?;
        if off.checked_rem(self.psize) != Some(0) {
            return None;
        }
        let i = u32::try_from(off.checked_div(self.psize)?).ok()?;
        (i < self.queue_depth).then_some(i)
    }

    /// `__rtrs_get_permit`.
    pub(crate) fn try_get(&self, con_type: u32) -> Option<*mut RtrsPermit> {
        loop {
            let mut found = None;
            for (w, word) in self.map.iter().enumerate() {
                let v = word.load(Ordering::Relaxed);
                if v == u64::MAX {
                    continue;
                }
                let bit = (!v).trailing_zeros();
                let idx = w.checked_mul(64)?.checked_add(usize::try_from(bit).ok()?)?;
                found = Some((word, bit, idx));
                break;
            }
            let (word, bit, idx) = found?;
            let idx = u32::try_from(idx).ok()?;
            if idx >= self.queue_depth {
                return None;
            }
            let mask = 1u64.checked_shl(bit)?;
            if word.fetch_or(mask, Ordering::Acquire) & mask != 0 {
                continue;
            }
            // We own bit `idx`: nobody else writes this permit now.
            let p = self.permit(idx)?;
            p.cpu_id
                .store(crate::misc::this_cpu_id(), Ordering::Relaxed);
            p.con_type.store(con_type, Ordering::Relaxed);
            return self.permit_ptr(idx);
        }
    }

    fn bit(&self, i: u32) -> Option<(&AtomicU64, u64)> {
        let w = usize::try_from(i >> 6).ok()?;
        Some((self.map.get(w)?, 1u64.checked_shl(i & 63)?))
    }

    fn all_free(&self) -> bool {
        self.map.iter().all(|w| w.load(Ordering::Acquire) == 0)
    }

    fn wake(&self) {
        // SAFETY: By the type invariant `wq` is initialised.
        unsafe { bindings::rtrs_rs_waitq_wake(self.wq.as_ptr()) };
    }

    /// Sleeps (uninterruptibly) until `cond()`, which runs on this thread
    /// only (first, then after each wake-up).
    fn wait_until<F: FnMut() -> bool>(&self, mut cond: F) {
        let ctx: *mut F = &mut cond;
        // SAFETY: `wq` is initialised (type invariant); `call_cond::<F>` is
        // given `ctx`, an `F` that this thread alone uses until the call
        // returns.
        unsafe { bindings::rtrs_rs_waitq_wait(self.wq.as_ptr(), Some(call_cond::<F>), ctx.cast()) };
    }

    /// `rtrs_clt_get_permit` with RTRS_PERMIT_WAIT: a permit, sleeping
    /// until one is free.
    pub(crate) fn get_wait(&self, con_type: u32) -> *mut RtrsPermit {
        if let Some(p) = self.try_get(con_type) {
            return p;
        }
        let mut got = core::ptr::null_mut();
        self.wait_until(|| match self.try_get(con_type) {
            Some(p) => {
                got = p;
                true
            }
            None => false,
        });
        got
    }

    /// `free_permits`' wait: until every permit is back.
    pub(crate) fn wait_all_free(&self) {
        self.wait_until(|| self.all_free());
    }

    /// `rtrs_clt_put_permit`: frees `p` and wakes a waiter.
    pub(crate) fn put(&self, p: *const RtrsPermit) -> core::result::Result<(), PutError> {
        let (word, mask) = self
            .index_of(p)
            .and_then(|i| self.bit(i))
            .ok_or(PutError::Foreign)?;
        if word.fetch_and(!mask, Ordering::Release) & mask == 0 {
            return Err(PutError::NotInUse);
        }
        self.wake();
        Ok(())
    }
}

/// Why a permit could not be put back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PutError {
    /// Not one of this session's permits.
    Foreign,
    /// Free already.
    NotInUse,
}

/// The `wait_event` condition of `Permits::wait_until`: `ctx` is its `F`.
///
/// # Safety
///
/// `ctx` points to an `F` that the calling thread alone uses.
unsafe extern "C" fn call_cond<F: FnMut() -> bool>(ctx: *mut c_void) -> bool {
    // SAFETY: By the function's contract.
    let cond = unsafe { &mut *ctx.cast::<F>() };
    cond()
}
