// SPDX-License-Identifier: GPL-2.0

//! An owned kernel workqueue (6.12's `kernel::workqueue` has no allocator)
//! and a delayed work on it (6.12 has no `DelayedWork`; modelled on
//! upstream's later `DelayedWork<T>`, allocated by a C helper instead of
//! embedded).

use core::marker::PhantomData;
use core::ptr::NonNull;

use kernel::ffi::c_void;
use kernel::prelude::*;

use crate::bindings;

/// A workqueue allocated with `alloc_workqueue` and destroyed on drop.
///
/// # Invariants
///
/// `wq` came from a successful `alloc_workqueue` and is destroyed only in `drop`.
pub(crate) struct Workqueue {
    wq: NonNull<bindings::workqueue_struct>,
}

// SAFETY: A workqueue may be used and destroyed from any thread.
unsafe impl Send for Workqueue {}
// SAFETY: Queueing work is thread safe; `&Workqueue` exposes nothing else.
unsafe impl Sync for Workqueue {}

impl Workqueue {
    /// Allocates a workqueue called `name` with default flags, as the C client does.
    pub(crate) fn new(name: &'static CStr) -> Result<Self> {
        // SAFETY: `name` is NUL-terminated and static; it holds no '%' so it is
        // a valid format with no arguments.
        let wq = unsafe { bindings::alloc_workqueue(name.as_char_ptr(), 0, 0) };
        let wq = NonNull::new(wq).ok_or(ENOMEM)?;
        // INVARIANT: `wq` was just allocated.
        Ok(Self { wq })
    }

    /// The raw pointer, for queueing work through the bindings.
    pub(crate) fn as_ptr(&self) -> *mut bindings::workqueue_struct {
        self.wq.as_ptr()
    }
}

impl Drop for Workqueue {
    fn drop(&mut self) {
        // SAFETY: By the type invariant `wq` is live and this is its only destroy;
        // destroy_workqueue drains pending work first.
        unsafe { bindings::destroy_workqueue(self.wq.as_ptr()) };
    }
}

/// The code of a delayed work owned (directly or through a field) by a `T`.
/// `ID` tells apart the works of one owner type.
pub(crate) trait WorkItem<const ID: u64 = 0>: Sync {
    /// Runs in process context on the work's workqueue; `work` is the
    /// running work, which may queue itself again.
    fn run(&self, work: &WorkRef<'_>);
}

/// The running work, as `WorkItem::run` sees it.
pub(crate) struct WorkRef<'a> {
    w: NonNull<bindings::rtrs_rs_dwork>,
    _running: PhantomData<&'a ()>,
}

impl WorkRef<'_> {
    /// Queues the work again after `delay_ms`.
    pub(crate) fn queue(&self, delay_ms: u32) {
        // SAFETY: The work is running, so it is not freed before this
        // returns (freeing cancels it synchronously first).
        unsafe { bindings::rtrs_rs_dwork_queue(self.w.as_ptr(), delay_ms) };
    }
}

/// The work function of a `DelayedWork` made for `WorkItem<ID>` of `T`.
///
/// # Safety
///
/// `ctx` is the `T` given to `DelayedWork::new`, live while the work runs.
unsafe extern "C" fn run_work<T: WorkItem<ID>, const ID: u64>(
    w: *mut bindings::rtrs_rs_dwork,
    ctx: *mut c_void,
) {
    // SAFETY: By the function's contract.
    let owner = unsafe { &*ctx.cast::<T>() };
    if let Some(w) = NonNull::new(w) {
        owner.run(&WorkRef {
            w,
            _running: PhantomData,
        });
    }
}

/// A delayed work on a workqueue that runs `WorkItem::run` of its owner;
/// cancelled (waiting for a running instance) and freed on drop.
///
/// # Invariants
///
/// `w` came from `rtrs_rs_dwork_alloc` and is freed only in drop; its
/// owner and workqueue outlive it (see `new`).
pub(crate) struct DelayedWork {
    w: NonNull<bindings::rtrs_rs_dwork>,
}

// SAFETY: Queueing, cancelling and flushing a delayed work are thread safe.
unsafe impl Send for DelayedWork {}
// SAFETY: As above.
unsafe impl Sync for DelayedWork {}

impl DelayedWork {
    /// A work that runs `WorkItem::<ID>::run` of `owner` on `wq`.
    ///
    /// # Safety
    ///
    /// `owner` stays valid (it may be still initialising, but is not
    /// queued until it is done) and `wq` stays alive until the work is
    /// dropped: the owner holds the work, or drops it before it goes.
    pub(crate) unsafe fn new<T: WorkItem<ID>, const ID: u64>(
        owner: *const T,
        wq: *mut bindings::workqueue_struct,
    ) -> Result<Self> {
        // SAFETY: `run_work::<T, ID>` matches the callback type and its
        // contract holds by the caller's.
        let w = unsafe {
            bindings::rtrs_rs_dwork_alloc(Some(run_work::<T, ID>), owner.cast_mut().cast(), wq)
        };
        // INVARIANT: Just allocated; the caller vouches for owner and wq.
        Ok(Self {
            w: NonNull::new(w).ok_or(ENOMEM)?,
        })
    }

    /// Queues the work after `delay_ms` (no-op if it is pending); any context.
    pub(crate) fn queue(&self, delay_ms: u32) {
        // SAFETY: By the type invariant the work and its workqueue are live.
        unsafe { bindings::rtrs_rs_dwork_queue(self.w.as_ptr(), delay_ms) };
    }

    /// Cancels the work and waits for a running instance. Process context.
    pub(crate) fn cancel_sync(&self) {
        // SAFETY: By the type invariant.
        unsafe { bindings::rtrs_rs_dwork_cancel_sync(self.w.as_ptr()) };
    }

    /// Runs a pending work now and waits for it. Process context.
    pub(crate) fn flush(&self) {
        // SAFETY: By the type invariant.
        unsafe { bindings::rtrs_rs_dwork_flush(self.w.as_ptr()) };
    }
}

impl Drop for DelayedWork {
    fn drop(&mut self) {
        // SAFETY: By the type invariant; freed once, after a synchronous
        // cancel (in the helper).
        unsafe { bindings::rtrs_rs_dwork_free(self.w.as_ptr()) };
    }
}
