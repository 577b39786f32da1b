// SPDX-License-Identifier: GPL-2.0

//! A `struct completion` wrapper (6.12's kernel crate has none).
//!
//! `complete` may be called from any context, including softirq CQE
//! callbacks; the waits sleep and are for process context only.

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
