// SPDX-License-Identifier: GPL-2.0

//! An owned kernel workqueue (6.12's `kernel::workqueue` has no allocator)
//! and a delayed work embedded in its owner (6.12 has no `DelayedWork`;
//! modelled on upstream's later `DelayedWork<T, ID>` queued through an
//! `Arc<T>`).

use core::marker::PhantomData;
use core::ptr::NonNull;

use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow};
use kernel::types::Opaque;

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
    /// Allocates a workqueue called `name` with default flags, as the C
    /// client does. Every delayed work on it holds a reference.
    pub(crate) fn new(name: &'static CStr) -> Result<Arc<Self>> {
        // SAFETY: `name` is NUL-terminated and static; it holds no '%' so it is
        // a valid format with no arguments.
        let wq = unsafe { bindings::alloc_workqueue(name.as_char_ptr(), 0, 0) };
        let wq = NonNull::new(wq).ok_or(ENOMEM)?;
        // INVARIANT: `wq` was just allocated.
        Ok(Arc::new(Self { wq }, GFP_KERNEL)?)
    }
}

impl Drop for Workqueue {
    fn drop(&mut self) {
        // SAFETY: By the type invariant `wq` is live and this is its only destroy;
        // destroy_workqueue drains pending work first.
        unsafe { bindings::destroy_workqueue(self.wq.as_ptr()) };
    }
}

/// The code of the work `ID` of `T`.
pub(crate) trait WorkItem<const ID: u64 = 0>: HasDelayedWork<ID> + Send + Sync {
    /// Runs in process context on the work's workqueue, with the reference
    /// the pending work held.
    fn run(this: Arc<Self>);
}

/// A type that embeds a `DelayedWork<Self, ID>`; implement it with
/// [`impl_has_delayed_work!`].
///
/// # Safety
///
/// `OFFSET` is the byte offset in `Self` of the field `delayed_work` returns.
pub(crate) unsafe trait HasDelayedWork<const ID: u64>: Sized {
    /// Where the work sits in `Self`.
    const OFFSET: usize;
    /// The work.
    fn delayed_work(&self) -> &DelayedWork<Self, ID>;
}

/// `impl_has_delayed_work!(impl<O: Bound> for Type<O> { ID => field, ... })`.
macro_rules! impl_has_delayed_work {
    (impl<$g:ident: $b:path> for $ty:ty { $($id:expr => $f:ident),* $(,)? }) => {$(
        // SAFETY: `OFFSET` is the offset of `$f`, the field `delayed_work` returns.
        unsafe impl<$g: $b> $crate::ffi::wq::HasDelayedWork<{ $id }> for $ty {
            const OFFSET: usize = ::core::mem::offset_of!(Self, $f);
            fn delayed_work(&self) -> &$crate::ffi::wq::DelayedWork<Self, { $id }> {
                &self.$f
            }
        }
    )*};
}
pub(crate) use impl_has_delayed_work;

/// A `struct delayed_work` embedded in a `T` that lives in an `Arc`, and
/// the workqueue it runs on. Queueing takes a reference on the owner, which
/// the run (or a cancel) gives back: a pending or running work keeps its
/// owner, and so its workqueue, alive, and no drop has to cancel it.
///
/// # Invariants
///
/// `dwork` was initialised to run `run_work::<T, ID>`; it sits at
/// `T::OFFSET` in a `T` owned by an `Arc` (`queue` takes an `ArcBorrow`);
/// while it is pending it owns one reference to that `Arc`.
#[repr(C)]
#[pin_data]
pub(crate) struct DelayedWork<T, const ID: u64> {
    #[pin]
    dwork: Opaque<bindings::delayed_work>,
    wq: Arc<Workqueue>,
    _owner: PhantomData<fn(Arc<T>)>,
}

// SAFETY: Queueing, cancelling and flushing a delayed work are thread safe,
// and the run gets the owner, which is `Send + Sync` (`WorkItem`).
unsafe impl<T: Send + Sync, const ID: u64> Send for DelayedWork<T, ID> {}
// SAFETY: As above.
unsafe impl<T: Send + Sync, const ID: u64> Sync for DelayedWork<T, ID> {}

/// The work function of `DelayedWork<T, ID>`.
///
/// # Safety
///
/// `work` is the `work_struct` of a pending `DelayedWork<T, ID>` that is
/// being run.
unsafe extern "C" fn run_work<T: WorkItem<ID>, const ID: u64>(work: *mut bindings::work_struct) {
    // `work` is the first field of the `delayed_work`, which is the first of
    // the `DelayedWork` (`repr(C)`), at `T::OFFSET` in its owner.
    let owner = work
        .cast::<u8>()
        .wrapping_sub(core::mem::offset_of!(bindings::delayed_work, work) + T::OFFSET)
        .cast::<T>();
    // SAFETY: By the type invariant the pending work owned this reference;
    // the run takes it over.
    T::run(unsafe { Arc::from_raw(owner) });
}

impl<T: WorkItem<ID>, const ID: u64> DelayedWork<T, ID> {
    /// A work of the `T` it is initialised in, which runs on `wq`; `name`
    /// names its lockdep class (one per `ID`, as C has one per init site).
    pub(crate) fn new(wq: &Arc<Workqueue>, name: &'static CStr) -> impl PinInit<Self> {
        let wq = wq.clone();
        let class = u32::try_from(ID).unwrap_or(u32::MAX);
        pin_init!(Self {
            dwork <- Opaque::ffi_init(|slot: *mut bindings::delayed_work| {
                // SAFETY: `slot` is valid for writes and pinned; the macro
                // behind the helper initialises all of it. `name` is static.
                unsafe {
                    bindings::rtrs_rs_init_delayed_work(
                        slot,
                        Some(run_work::<T, ID>),
                        class,
                        name.as_char_ptr(),
                    )
                }
            }),
            wq,
            _owner: PhantomData,
        })
    }

    /// Queues the work of `owner` after `delay_ms`; false if it was pending
    /// already. Any context.
    pub(crate) fn queue(owner: ArcBorrow<'_, T>, delay_ms: u32) -> bool {
        let w = owner.delayed_work();
        // The reference the work owns once it is queued.
        let r = Arc::from(owner);
        // SAFETY: The work is initialised and its workqueue alive (`owner`
        // holds a reference); if this queues it, `r` is handed over below.
        let queued = unsafe {
            bindings::rtrs_rs_queue_delayed_work(w.wq.wq.as_ptr(), w.dwork.get(), delay_ms)
        };
        if queued {
            // INVARIANT: the pending work owns this reference now (its run
            // or a cancel gives it back).
            core::mem::forget(r);
        }
        queued
    }

    /// Cancels the work of `owner` and waits for a running instance; true
    /// if it was pending. Process context, not from the work itself.
    pub(crate) fn cancel_sync(owner: ArcBorrow<'_, T>) -> bool {
        let w = owner.delayed_work();
        // SAFETY: The work is initialised (type invariant).
        if !unsafe { bindings::cancel_delayed_work_sync(w.dwork.get()) } {
            return false;
        }
        let raw: *const T = &*owner;
        // SAFETY: The work was pending, so it owned a reference (type
        // invariant), which is now ours; `owner` holds another, so this is
        // not the last.
        drop(unsafe { Arc::from_raw(raw) });
        true
    }

    /// Runs the pending work of `owner` now and waits for it. Process
    /// context, not from the work itself.
    pub(crate) fn flush(owner: &T) {
        // SAFETY: The work is initialised (type invariant); the run, not
        // the flush, gives back the reference.
        unsafe { bindings::flush_delayed_work(owner.delayed_work().dwork.get()) };
    }
}
