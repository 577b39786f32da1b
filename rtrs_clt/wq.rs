// SPDX-License-Identifier: GPL-2.0

//! An owned kernel workqueue (6.12's `kernel::workqueue` has no allocator).

use core::ptr::NonNull;

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
