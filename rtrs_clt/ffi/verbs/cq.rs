// SPDX-License-Identifier: GPL-2.0

//! Completion queues.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, Ordering};

use kernel::error::from_err_ptr;
use kernel::prelude::*;

use super::pd_pool::DevRef;
use crate::bindings;

/// A CQ: from the device's shared pool for IRQ connections, private for
/// poll connections, as rtrs.c's create_cq does. Released on drop.
///
/// # Invariants
///
/// `cq` is live until `drop`; `Pool` ones came from `ib_cq_pool_get` with
/// `nr_cqe` entries, `Own` ones from `ib_alloc_cq`.
pub(crate) enum Cq {
    /// `ib_cq_pool_get` (IB_POLL_SOFTIRQ connections).
    Pool {
        /// The CQ.
        cq: NonNull<bindings::ib_cq>,
        /// Entries taken from the pool CQ.
        nr_cqe: u32,
    },
    /// `ib_alloc_cq` (IB_POLL_DIRECT connections).
    Own {
        /// The CQ.
        cq: NonNull<bindings::ib_cq>,
        /// Held while a caller polls it: polls never run concurrently.
        busy: AtomicBool,
    },
}

// SAFETY: A CQ may be used and released from any thread.
unsafe impl Send for Cq {}
// SAFETY: `&Cq` only hands out the pointer.
unsafe impl Sync for Cq {}

impl Cq {
    /// `ib_cq_pool_get(dev, nr_cqe, vector, poll_ctx)`.
    pub(crate) fn pool_get(
        dev: &DevRef,
        nr_cqe: u32,
        vector: u32,
        poll_ctx: bindings::ib_poll_context,
    ) -> Result<Self> {
        let vec = kernel::ffi::c_int::try_from(vector).map_err(|_| EINVAL)?;
        // SAFETY: `dev` keeps the device registered.
        let cq =
            from_err_ptr(unsafe { bindings::ib_cq_pool_get(dev.ib_dev(), nr_cqe, vec, poll_ctx) })?;
        let cq = NonNull::new(cq).ok_or(ENOMEM)?;
        // INVARIANT: just taken from the pool with `nr_cqe` entries.
        Ok(Cq::Pool { cq, nr_cqe })
    }

    /// `ib_alloc_cq(dev, NULL, nr_cqe, vector, poll_ctx)`.
    pub(crate) fn alloc(
        dev: &DevRef,
        nr_cqe: u32,
        vector: u32,
        poll_ctx: bindings::ib_poll_context,
    ) -> Result<Self> {
        let vec = kernel::ffi::c_int::try_from(vector).map_err(|_| EINVAL)?;
        let n = kernel::ffi::c_int::try_from(nr_cqe).map_err(|_| EINVAL)?;
        // SAFETY: `dev` keeps the device registered; no private context is used
        // (completions find their owner through `wc->qp->qp_context`).
        let cq = from_err_ptr(unsafe {
            bindings::rtrs_rs_ib_alloc_cq(dev.ib_dev(), core::ptr::null_mut(), n, vec, poll_ctx)
        })?;
        let cq = NonNull::new(cq).ok_or(ENOMEM)?;
        // INVARIANT: just allocated.
        Ok(Cq::Own {
            cq,
            busy: AtomicBool::new(false),
        })
    }

    /// The raw CQ, for the QP attributes.
    pub(crate) fn as_ptr(&self) -> *mut bindings::ib_cq {
        match self {
            Cq::Pool { cq, .. } | Cq::Own { cq, .. } => cq.as_ptr(),
        }
    }

    /// `ib_process_cq_direct(cq, -1)` of an IB_POLL_DIRECT CQ: the number
    /// of completions processed; 0 for a pool CQ (the core polls it) or
    /// while another caller polls this one.
    pub(crate) fn process_direct(&self) -> kernel::ffi::c_int {
        let Cq::Own { cq, busy } = self else {
            return 0;
        };
        if busy.swap(true, Ordering::Acquire) {
            return 0;
        }
        // SAFETY: By the type invariant the CQ is live, allocated with
        // IB_POLL_DIRECT; `busy` keeps other polls out.
        let n = unsafe { bindings::ib_process_cq_direct(cq.as_ptr(), -1) };
        busy.store(false, Ordering::Release);
        n
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        match self {
            // SAFETY: By the type invariant the CQ came from the pool with
            // `nr_cqe` entries; the QP using it is already destroyed (owner's order).
            Cq::Pool { cq, nr_cqe } => unsafe { bindings::ib_cq_pool_put(cq.as_ptr(), *nr_cqe) },
            // SAFETY: By the type invariant the CQ is ours; its QP is gone.
            Cq::Own { cq, .. } => unsafe { bindings::ib_free_cq(cq.as_ptr()) },
        }
    }
}
