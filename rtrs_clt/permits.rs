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
/// `base` points to `queue_depth * psize` bytes owned by `_store`; `wq` is
/// an initialised wait queue head freed in drop.
pub(crate) struct Permits {
    map: KVec<AtomicU64>,
    _store: KVec<u64>,
    base: *mut u8,
    psize: usize,
    queue_depth: u32,
    wq: NonNull<bindings::wait_queue_head>,
}

// SAFETY: Bit ownership in `map` serialises writes to each permit; the wait
// queue is thread safe.
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
            // SAFETY: In bounds (`permit`), aligned, and not shared yet.
            unsafe {
                permit.write(RtrsPermit {
                    con_type: 0,
                    cpu_id: 0,
                    mem_id: i,
                    mem_off,
                })
            };
        }
        Ok(p)
    }

    fn permit(&self, i: u32) -> Option<*mut RtrsPermit> {
        if i >= self.queue_depth {
            return None;
        }
        let off = usize::try_from(i).ok()?.checked_mul(self.psize)?;
        // SAFETY: `off` is below `queue_depth * psize`, inside the storage.
        Some(unsafe { self.base.add(off) }.cast())
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
            let p = self.permit(idx)?;
            // SAFETY: We own bit `idx`, so nobody else writes this permit.
            unsafe {
                (*p).cpu_id = crate::misc::this_cpu_id();
                (*p).con_type = con_type;
            }
            return Some(p);
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

    /// Sleeps (uninterruptibly) until `cond(ctx)`.
    fn wait(&self, cond: unsafe extern "C" fn(*mut c_void) -> bool, ctx: *mut c_void) {
        // SAFETY: `wq` is initialised; `cond` and `ctx` are valid for the call.
        unsafe { bindings::rtrs_rs_waitq_wait(self.wq.as_ptr(), Some(cond), ctx) };
    }

    /// `rtrs_clt_get_permit` with RTRS_PERMIT_WAIT: a permit, sleeping
    /// until one is free.
    pub(crate) fn get_wait(&self, con_type: u32) -> *mut RtrsPermit {
        if let Some(p) = self.try_get(con_type) {
            return p;
        }
        let mut ctx = GetCtx {
            permits: self,
            con_type,
            got: core::ptr::null_mut(),
        };
        let ctxp: *mut GetCtx<'_> = &mut ctx;
        self.wait(try_get_permit, ctxp.cast());
        ctx.got
    }

    /// `free_permits`' wait: until every permit is back.
    pub(crate) fn wait_all_free(&self) {
        let ctx: *mut c_void = (self as *const Self).cast_mut().cast();
        self.wait(permits_all_free, ctx);
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

/// `wait_event` condition of `free_permits`.
///
/// # Safety
///
/// `ctx` is a live `Permits`.
unsafe extern "C" fn permits_all_free(ctx: *mut c_void) -> bool {
    // SAFETY: By the function's contract.
    let p = unsafe { &*ctx.cast::<Permits>() };
    p.all_free()
}

/// Context of `try_get_permit`.
struct GetCtx<'a> {
    permits: &'a Permits,
    con_type: u32,
    got: *mut RtrsPermit,
}

/// The retry condition of `rtrs_clt_get_permit` (WAIT).
///
/// # Safety
///
/// `ctx` is a live `GetCtx`, used by this thread only.
unsafe extern "C" fn try_get_permit(ctx: *mut c_void) -> bool {
    // SAFETY: By the function's contract.
    let c = unsafe { &mut *ctx.cast::<GetCtx<'_>>() };
    match c.permits.try_get(c.con_type) {
        Some(p) => {
            c.got = p;
            true
        }
        None => false,
    }
}
