// SPDX-License-Identifier: GPL-2.0

//! The raw parts of a session's permits: their memory (`permits` of C),
//! which rnbd gets pointers into (per permit an `RtrsPermit` header, then
//! its pdu), and the wait queue (`permits_wait`) that
//! `rtrs_clt_get_permit(WAIT)` and `rtrs_clt_close` sleep on. The bitmap
//! that hands the permits out is safe code, in the session (`Permits`).

use core::ptr::NonNull;

use kernel::ffi::c_void;
use kernel::prelude::*;

use crate::bindings;
use crate::ffi::abi::RtrsPermit;
use crate::rtrs_core::permit::PermitLayout;

/// The permits' storage, laid out by `layout`, and their wait queue.
///
/// # Invariants
///
/// `base` points to the pool of `layout` (permits with an `RtrsPermit`
/// header), owned by `_store`, 8-byte aligned, which begins zeroed; `wq` is
/// an initialised wait queue head freed in drop.
pub(crate) struct PermitPool {
    _store: KVec<u64>,
    base: *mut u8,
    layout: PermitLayout,
    wq: NonNull<bindings::wait_queue_head>,
}

// SAFETY: Bit ownership in the permits' map serialises the writes to each
// permit's header, which are atomic besides; the wait queue is thread safe.
unsafe impl Send for PermitPool {}
// SAFETY: As above.
unsafe impl Sync for PermitPool {}

impl Drop for PermitPool {
    fn drop(&mut self) {
        // SAFETY: By the type invariant; nobody waits any more (close waited).
        unsafe { bindings::rtrs_rs_waitq_free(self.wq.as_ptr()) };
    }
}

impl PermitPool {
    /// The zeroed pool of `layout`, and its wait queue.
    pub(crate) fn new(layout: PermitLayout) -> Result<Self> {
        let mut store = KVec::from_elem(0u64, layout.words(), GFP_KERNEL)?;
        let base = store.as_mut_ptr().cast::<u8>();
        let wq = NonNull::new(bindings::rtrs_rs_waitq_alloc()).ok_or(ENOMEM)?;
        // INVARIANT: `store` is the zeroed pool of `layout` in `u64`s, and
        // `wq` was just initialised.
        Ok(Self {
            _store: store,
            base,
            layout,
            wq,
        })
    }

    /// `queue_depth`: the number of permits.
    pub(crate) fn queue_depth(&self) -> u32 {
        self.layout.queue_depth()
    }

    /// Where permit `i` starts (what rnbd gets: the header, then its pdu).
    pub(crate) fn permit_ptr(&self, i: u32) -> Option<*mut RtrsPermit> {
        let off = self.layout.offset(i)?;
        // In the storage: `off` is that of a permit of `layout`.
        Some(self.base.wrapping_add(off).cast())
    }

    /// The header of permit `i`.
    pub(crate) fn permit(&self, i: u32) -> Option<&RtrsPermit> {
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

    /// Wakes the waiters for a permit; right after the bitmap's atomic put.
    #[inline]
    pub(crate) fn wake(&self) {
        // `smp_mb__after_atomic()`: the put was a locked read-modify-write,
        // a full barrier on x86 already.
        #[cfg(CONFIG_X86)]
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
        #[cfg(not(CONFIG_X86))]
        core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
        let wq = self.wq.as_ptr();
        // SAFETY: By the type invariant `wq` is initialised. `waitqueue_active`
        // inline: the list head's `next` read once (READ_ONCE), as the
        // waiters change it under the queue's lock; only when a waiter is
        // queued does the helper run (its barrier is then redundant).
        unsafe {
            let head = core::ptr::addr_of_mut!((*wq).head);
            let next =
                core::sync::atomic::AtomicPtr::from_ptr(core::ptr::addr_of_mut!((*head).next))
                    .load(core::sync::atomic::Ordering::Relaxed);
            if next != head {
                bindings::rtrs_rs_waitq_wake(wq);
            }
        }
    }

    /// Sleeps (uninterruptibly) until `cond()`, which runs on this thread
    /// only (first, then after each wake-up).
    pub(crate) fn wait_until<F: FnMut() -> bool>(&self, mut cond: F) {
        let ctx: *mut F = &mut cond;
        // SAFETY: `wq` is initialised (type invariant); `call_cond::<F>` is
        // given `ctx`, an `F` that this thread alone uses until the call
        // returns.
        unsafe { bindings::rtrs_rs_waitq_wait(self.wq.as_ptr(), Some(call_cond::<F>), ctx.cast()) };
    }
}

/// The `wait_event` condition of `PermitPool::wait_until`: `ctx` is its `F`.
///
/// # Safety
///
/// `ctx` points to an `F` that the calling thread alone uses.
unsafe extern "C" fn call_cond<F: FnMut() -> bool>(ctx: *mut c_void) -> bool {
    // SAFETY: By the function's contract.
    let cond = unsafe { &mut *ctx.cast::<F>() };
    cond()
}
