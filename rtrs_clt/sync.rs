// SPDX-License-Identifier: GPL-2.0

//! A `struct completion` wrapper (6.12's kernel crate has none), RCU read
//! sections, and an RCU-published box.
//!
//! `complete` may be called from any context, including softirq CQE
//! callbacks; the waits sleep and are for process context only.

use core::marker::PhantomData;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, Ordering};

use kernel::prelude::*;
use kernel::time::msecs_to_jiffies;
use kernel::types::Opaque;

use crate::bindings;

/// What a wait on a [`Completion`] ended with.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum WaitResult {
    /// `complete` was called.
    Done,
    /// The timeout expired first.
    TimedOut,
    /// A signal arrived first (interruptible waits only).
    Interrupted,
}

/// A kernel `struct completion`.
///
/// # Invariants
///
/// `c` was initialised by `init_completion` and stays pinned until dropped.
#[pin_data]
pub(crate) struct Completion {
    #[pin]
    c: Opaque<bindings::completion>,
}

// SAFETY: A completion is meant to be shared between threads; every operation
// on it is serialised by its internal wait-queue lock.
unsafe impl Send for Completion {}
// SAFETY: As above: `&Completion` only allows the thread-safe operations.
unsafe impl Sync for Completion {}

impl Completion {
    /// An initialiser for a completion that is not done.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            // SAFETY: `p` points to pinned, writable memory for a completion.
            c <- Opaque::ffi_init(|p| unsafe { bindings::rtrs_rs_init_completion(p) }),
        })
    }

    /// Marks one waiter's worth of "done" and wakes a waiter. Any context.
    pub(crate) fn complete(&self) {
        // SAFETY: By the type invariant `c` is initialised.
        unsafe { bindings::complete(self.c.get()) };
    }

    /// Resets the done count to zero.
    pub(crate) fn reinit(&self) {
        // SAFETY: By the type invariant `c` is initialised.
        unsafe { bindings::rtrs_rs_reinit_completion(self.c.get()) };
    }

    /// Sleeps until done, `ms` milliseconds pass, or a signal arrives.
    pub(crate) fn wait_interruptible_timeout(&self, ms: u32) -> WaitResult {
        // SAFETY: By the type invariant `c` is initialised; this may sleep,
        // which the callers (process context only) allow.
        let ret = unsafe {
            bindings::wait_for_completion_interruptible_timeout(self.c.get(), msecs_to_jiffies(ms))
        };
        match ret {
            r if r > 0 => WaitResult::Done,
            0 => WaitResult::TimedOut,
            _ => WaitResult::Interrupted,
        }
    }

    /// Sleeps (uninterruptibly) until done or `ms` milliseconds pass.
    pub(crate) fn wait_timeout(&self, ms: u32) -> WaitResult {
        // SAFETY: By the type invariant `c` is initialised; process context only.
        let ret =
            unsafe { bindings::wait_for_completion_timeout(self.c.get(), msecs_to_jiffies(ms)) };
        if ret > 0 {
            WaitResult::Done
        } else {
            WaitResult::TimedOut
        }
    }
}

/// An RCU read-side critical section (`rcu_read_lock` until drop). Never
/// sleep while holding one.
pub(crate) struct RcuGuard(core::marker::PhantomData<*mut ()>);

impl RcuGuard {
    /// `rcu_read_lock()`.
    pub(crate) fn new() -> Self {
        // SAFETY: No preconditions; paired with the unlock in drop.
        unsafe { bindings::rtrs_rs_rcu_read_lock() };
        Self(core::marker::PhantomData)
    }
}

impl Drop for RcuGuard {
    fn drop(&mut self) {
        // SAFETY: Paired with the lock in `new`, on the same task (the guard
        // is not `Send`).
        unsafe { bindings::rtrs_rs_rcu_read_unlock() };
    }
}

/// `synchronize_rcu()`: every `RcuGuard` taken before this call has been
/// dropped when it returns. Sleeps.
pub(crate) fn synchronize_rcu() {
    // SAFETY: Process context (callers are works and sysfs/API paths).
    unsafe { bindings::rtrs_rs_synchronize_rcu() };
}

/// A `KBox<T>` published to RCU readers: readers see it through
/// [`RcuBox::get`] under an [`RcuGuard`]; the owner replaces it and gets the
/// old box back only after a grace period ([`Retired::wait`]), when no
/// reader can hold it any more.
///
/// # Invariants
///
/// `p` is null or comes from `KBox::into_raw` and is owned by this
/// `RcuBox`. A box taken out by [`RcuBox::replace`] is freed (or handed
/// back) only after `synchronize_rcu` returned.
pub(crate) struct RcuBox<T> {
    p: AtomicPtr<T>,
    _own: PhantomData<KBox<T>>,
}

// SAFETY: The box is owned (as a `KBox<T>`) and moves with the `RcuBox`.
unsafe impl<T: Send> Send for RcuBox<T> {}
// SAFETY: Through `&RcuBox` readers get `&T` (so `T: Sync`) and writers
// move boxes in and out across threads (so `T: Send`).
unsafe impl<T: Send + Sync> Sync for RcuBox<T> {}

impl<T> RcuBox<T> {
    /// Nothing published.
    pub(crate) const fn empty() -> Self {
        Self {
            p: AtomicPtr::new(core::ptr::null_mut()),
            _own: PhantomData,
        }
    }

    /// The published value, for as long as `_g` is held.
    pub(crate) fn get<'a>(&'a self, _g: &'a RcuGuard) -> Option<&'a T> {
        let p = self.p.load(Ordering::Acquire);
        // SAFETY: By the type invariant a non-null `p` is a live box, freed
        // only after a grace period that `_g` holds off.
        unsafe { p.as_ref() }
    }

    /// Publishes `new` (or nothing) and returns what was published, which
    /// readers may still hold until a grace period has passed.
    pub(crate) fn replace(&self, new: Option<KBox<T>>) -> Retired<T> {
        let n = new.map_or(core::ptr::null_mut(), KBox::into_raw);
        Retired(NonNull::new(self.p.swap(n, Ordering::AcqRel)))
    }
}

impl<T> Drop for RcuBox<T> {
    fn drop(&mut self) {
        let p = *self.p.get_mut();
        if !p.is_null() {
            // SAFETY: By the type invariant; `&mut self` means no `get`
            // borrow of it is alive.
            drop(unsafe { KBox::from_raw(p) });
        }
    }
}

/// What [`RcuBox::replace`] took out: readers may still see it until a grace
/// period has passed.
#[must_use]
pub(crate) struct Retired<T>(Option<NonNull<T>>);

impl<T> Retired<T> {
    /// Whether something was taken out.
    pub(crate) fn is_some(&self) -> bool {
        self.0.is_some()
    }

    /// Waits for a grace period (always: the caller may rely on it for
    /// readers of other state too) and returns the box, now only ours.
    /// Sleeps.
    pub(crate) fn wait(mut self) -> Option<KBox<T>> {
        synchronize_rcu();
        // SAFETY: The pointer came from `KBox::into_raw` (the invariant of
        // the `RcuBox` it was published in) and readers are gone.
        self.0.take().map(|p| unsafe { KBox::from_raw(p.as_ptr()) })
    }
}

impl<T> Drop for Retired<T> {
    /// Nothing to do when nothing was taken out; else as [`Retired::wait`].
    fn drop(&mut self) {
        if self.0.is_some() {
            // Not waited for: free it safely all the same (this sleeps).
            drop(Retired(self.0.take()).wait());
        }
    }
}
