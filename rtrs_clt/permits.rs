// SPDX-License-Identifier: GPL-2.0

//! A session's permits (`permits_map`, `permits`, `permits_wait`): one per
//! request slot, taken without locks by `rtrs_clt_get_permit` and given
//! back by `rtrs_clt_put_permit`.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, Ordering};

use kernel::ffi::c_void;
use kernel::prelude::*;

use crate::bindings;
use crate::ffi::abi::RtrsPermit;
use crate::rtrs_core::imm;
use crate::rtrs_core::permit::{PermitLayout, PermitLayoutError, PermitMap};

/// The permit pool (`permits_map`, `permits`, `permits_wait`).
///
/// # Invariants
///
/// `base` points to the pool of `layout` (permits with an `RtrsPermit`
/// header), owned by `_store`, 8-byte aligned, which begins zeroed; `map`
/// has the words of `layout.queue_depth()` bits; `wq` is an initialised
/// wait queue head freed in drop.
pub(crate) struct Permits {
    map: KVec<AtomicU64>,
    _store: KVec<u64>,
    base: *mut u8,
    layout: PermitLayout,
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
        self.layout.queue_depth()
    }

    /// `alloc_permits`.
    pub(crate) fn new(queue_depth: u32, pdu_sz: usize) -> Result<Self> {
        let layout = PermitLayout::new(core::mem::size_of::<RtrsPermit>(), pdu_sz, queue_depth)
            .map_err(|e| match e {
                PermitLayoutError::PermitSize => EINVAL,
                PermitLayoutError::PoolSize => ENOMEM,
            })?;
        let mut store = KVec::from_elem(0u64, layout.words(), GFP_KERNEL)?;
        let base = store.as_mut_ptr().cast::<u8>();
        let words = PermitMap::words_for(queue_depth);
        let mut map = KVec::with_capacity(words, GFP_KERNEL)?;
        for _ in 0..words {
            map.push(AtomicU64::new(0), GFP_KERNEL)?;
        }
        let wq = NonNull::new(bindings::rtrs_rs_waitq_alloc()).ok_or(ENOMEM)?;
        // INVARIANT: `store` is the zeroed pool of `layout` in `u64`s, `map`
        // has `words_for(queue_depth)` words, and `wq` was just initialised.
        let p = Self {
            map,
            _store: store,
            base,
            layout,
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
        let off = self.layout.offset(i)?;
        // In the storage: `off` is that of a permit of `layout`.
        Some(self.base.wrapping_add(off).cast())
    }

    /// The header of permit `i`.
    fn permit(&self, i: u32) -> Option<&RtrsPermit> {
        let p = self.permit_ptr(i)?;
        // SAFETY: By the type invariant `p` is inside the storage with a
        // whole `RtrsPermit` after it (`layout.offset` is that of a permit
        // below the depth, each with a header), 8-byte aligned, and lives as
        // long as `self`; all-zero bytes are a valid header of atomics, and
        // it is only changed through them (rnbd uses the pdu after it).
        Some(unsafe { &*p })
    }

    /// The index of `p` if it is one of ours.
    pub(crate) fn index_of(&self, p: *const RtrsPermit) -> Option<u32> {
        let off = (p as usize).checked_sub(self.base as usize)?;
        self.layout.index(off)
    }

    /// The bitmap of the permits (`permits_map`).
    fn map(&self) -> PermitMap<'_> {
        PermitMap::new(&self.map, self.layout.queue_depth())
    }

    /// `__rtrs_get_permit`.
    pub(crate) fn try_get(&self, con_type: u32) -> Option<*mut RtrsPermit> {
        let idx = self.map().try_take()?;
        // We own bit `idx`: nobody else writes this permit now.
        let p = self.permit(idx)?;
        p.cpu_id
            .store(crate::ffi::misc::this_cpu_id(), Ordering::Relaxed);
        p.con_type.store(con_type, Ordering::Relaxed);
        self.permit_ptr(idx)
    }

    /// Wakes the waiters for a permit; right after the bitmap's atomic put.
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
        self.wait_until(|| self.map().all_free());
    }

    /// `rtrs_clt_put_permit`: frees `p` and wakes a waiter.
    pub(crate) fn put(&self, p: *const RtrsPermit) -> core::result::Result<(), PutError> {
        let i = self.index_of(p).ok_or(PutError::Foreign)?;
        if !self.map().put(i) {
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
