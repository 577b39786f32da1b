// SPDX-License-Identifier: GPL-2.0

//! The `/sys/class/rtrs-client` tree.
//!
//! 6.12 has no sysfs abstraction, so the tree is built from the driver core
//! through the bindings. The formats and parsers live in `rtrs_core::sysfs_fmt`.

use core::ptr::NonNull;

use kernel::error::from_err_ptr;
use kernel::prelude::*;

use crate::bindings;

/// A device class registered with `class_create` and destroyed on drop.
///
/// # Invariants
///
/// `cls` came from a successful `class_create` and is destroyed only in `drop`.
pub(crate) struct Class {
    cls: NonNull<bindings::class>,
}

// SAFETY: The driver core serialises class registration; the pointer may move between threads.
unsafe impl Send for Class {}
// SAFETY: `&Class` only hands out the pointer, which the driver core accepts from any thread.
unsafe impl Sync for Class {}

impl Class {
    /// Registers the class `name`; -EEXIST if another module (the C client) owns it.
    pub(crate) fn new(name: &'static CStr) -> Result<Self> {
        // SAFETY: `name` is NUL-terminated and outlives the class (it is static).
        let cls = from_err_ptr(unsafe { bindings::class_create(name.as_char_ptr()) })
            .inspect_err(|e| pr_err!("cannot register class {}: {:?}\n", name, e))?;
        let cls = NonNull::new(cls).ok_or(ENOMEM)?;
        // INVARIANT: `cls` was just created.
        Ok(Self { cls })
    }

    /// The raw class pointer, for creating devices under it.
    pub(crate) fn as_ptr(&self) -> *mut bindings::class {
        self.cls.as_ptr()
    }
}

impl Drop for Class {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the class is registered and destroyed only here.
        unsafe { bindings::class_destroy(self.cls.as_ptr()) };
    }
}
mod attrs;
