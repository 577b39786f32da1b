// SPDX-License-Identifier: GPL-2.0

//! The sysfs objects (bindings/rtrs_sysfs.c): the `rtrs-client` class,
//! /sys/class/rtrs-client/<sessname> and its paths/<src@dst> directories.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, Ordering};

use kernel::error::from_err_ptr;
use kernel::ffi::c_void;
use kernel::prelude::*;
use kernel::sync::Arc;

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
            .inspect_err(|e| pr_err!("cannot register class {}: {}\n", name, e.to_errno()))?;
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

/// /sys/class/rtrs-client/<sessname> with its `paths` directory.
///
/// # Invariants
///
/// `dev` came from `rtrs_rs_sess_dev_create` under `class`, and is destroyed
/// only in `drop`; `deleted` is set once `rtrs_rs_sess_dev_del` has run.
pub(crate) struct SessDev {
    dev: NonNull<bindings::rtrs_rs_sess_dev>,
    deleted: AtomicBool,
    /// The class stays registered while a device of it exists.
    _class: Arc<Class>,
}

// SAFETY: The driver core lets a device be deleted and released from any
// thread in process context.
unsafe impl Send for SessDev {}
// SAFETY: `&SessDev` only sets the files' target (unsafe, see `set_sess`)
// and deletes the device once (`deleted`), both allowed from any thread.
unsafe impl Sync for SessDev {}

impl SessDev {
    /// `rtrs_clt_create_sysfs_root_files`: /sys/class/rtrs-client/<name>.
    pub(crate) fn new(class: &Arc<Class>, name: &CStr) -> Result<Self> {
        // SAFETY: The class is registered while `class` lives (its type);
        // `name` is a C string, copied by the driver core.
        let dev = from_err_ptr(unsafe {
            bindings::rtrs_rs_sess_dev_create(class.as_ptr(), name.as_char_ptr())
        })?;
        // INVARIANT: Just created; the device holds the class.
        Ok(Self {
            dev: NonNull::new(dev).ok_or(ENOMEM)?,
            deleted: AtomicBool::new(false),
            _class: class.clone(),
        })
    }

    /// Points the session files at `sess`.
    ///
    /// # Safety
    ///
    /// `sess` is the session the files show, live until the device is
    /// deleted (`del`).
    pub(crate) unsafe fn set_sess(&self, sess: *const c_void) {
        // SAFETY: The device is live (type); `sess` by the caller.
        unsafe { bindings::rtrs_rs_sess_dev_set_sess(self.dev.as_ptr(), sess.cast_mut()) };
    }

    /// `rtrs_clt_destroy_sysfs_root`'s first half: the tree leaves sysfs,
    /// after every show and store on it returned (device_del drains them).
    /// The path directories may still be torn down after this. Only the
    /// first call does anything.
    pub(crate) fn del(&self) {
        if self.deleted.swap(true, Ordering::AcqRel) {
            return;
        }
        // SAFETY: Live (type: destroyed only in `drop`), and this is the
        // only call of the helper (`deleted` was false).
        unsafe { bindings::rtrs_rs_sess_dev_del(self.dev.as_ptr()) };
    }
}

impl Drop for SessDev {
    fn drop(&mut self) {
        // SAFETY: Created by `rtrs_rs_sess_dev_create`, destroyed once here,
        // with no `del` running (`&mut self`); every path directory below
        // it is gone already.
        unsafe { bindings::rtrs_rs_sess_dev_destroy(self.dev.as_ptr()) };
    }
}

/// paths/<src@dst>: the files of the `SessPath` it was created for.
///
/// # Invariants
///
/// `kobj` came from `rtrs_rs_path_kobj_create` for `path`, and is destroyed
/// once, by `drop` or `destroy_self`.
pub(crate) struct PathKobj {
    kobj: NonNull<bindings::rtrs_rs_path_kobj>,
    path: *const c_void,
}

/// A store running on a file of a path directory, on this thread: which
/// path's directory (by address, not to be dereferenced) and the file's
/// `struct attribute`. Only the store trampoline makes one.
pub(crate) struct PathStore {
    path: *const c_void,
    attr: *const c_void,
}

impl PathStore {
    /// # Safety
    ///
    /// A store on `attr`, a file of the directory [`PathKobj::new`] made for
    /// `path`, is running on this thread and outlasts the value.
    pub(crate) unsafe fn new(path: *const c_void, attr: *const c_void) -> Self {
        Self { path, attr }
    }

    /// Whether the store runs on `path`'s directory.
    pub(crate) fn is_on(&self, path: *const c_void) -> bool {
        core::ptr::eq(self.path, path)
    }
}

// SAFETY: The kobject may be removed from any thread in process context;
// `path` is only compared.
unsafe impl Send for PathKobj {}

impl PathKobj {
    /// `rtrs_clt_create_path_files`: paths/<name> below `dev`, whose files
    /// show `path`.
    ///
    /// # Safety
    ///
    /// `path` is the path the files show, live until this is dropped.
    pub(crate) unsafe fn new(dev: &SessDev, name: &CStr, path: *const c_void) -> Result<Self> {
        // SAFETY: `dev` is live (its type); `path` by the caller.
        let k = from_err_ptr(unsafe {
            bindings::rtrs_rs_path_kobj_create(
                dev.dev.as_ptr(),
                name.as_char_ptr(),
                path.cast_mut(),
            )
        })?;
        // INVARIANT: Just created for `path`.
        Ok(Self {
            kobj: NonNull::new(k).ok_or(ENOMEM)?,
            path,
        })
    }

    /// Removes the directory from within `store` (`sysfs_remove_file_self`
    /// first, as `rtrs_clt_destroy_path_files`). A store on another path's
    /// directory removes it as `drop` does.
    pub(crate) fn destroy_self(self, store: PathStore) {
        if !store.is_on(self.path) {
            drop(self);
            return;
        }
        let k = self.kobj.as_ptr();
        core::mem::forget(self);
        // SAFETY: Created by `rtrs_rs_path_kobj_create`, destroyed once
        // here (not in drop, forgotten above); a store on `store.attr`, a
        // file of this directory, is running on this thread (`PathStore`).
        unsafe { bindings::rtrs_rs_path_kobj_destroy_self(k, store.attr) };
    }
}

impl Drop for PathKobj {
    fn drop(&mut self) {
        // SAFETY: Created by `rtrs_rs_path_kobj_create`, destroyed once here;
        // kobject_del waits for running shows, so the path may go after.
        unsafe { bindings::rtrs_rs_path_kobj_destroy(self.kobj.as_ptr()) };
    }
}
