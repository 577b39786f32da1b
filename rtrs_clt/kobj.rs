// SPDX-License-Identifier: GPL-2.0

//! The sysfs objects of a session (bindings/rtrs_sysfs.c):
//! /sys/class/rtrs-client/<sessname> and its paths/<src@dst> directories.

use core::ptr::NonNull;

use kernel::error::from_err_ptr;
use kernel::ffi::c_void;
use kernel::prelude::*;

use crate::bindings;

/// /sys/class/rtrs-client/<sessname> with its `paths` directory.
pub(crate) struct SessDev(NonNull<bindings::rtrs_rs_sess_dev>);

impl SessDev {
    /// `rtrs_clt_create_sysfs_root_files`: /sys/class/rtrs-client/<name>.
    pub(crate) fn new(class: *mut bindings::class, name: &CStr) -> Result<Self> {
        // SAFETY: `class` is the module's, which outlives every session;
        // `name` is a C string.
        let dev =
            from_err_ptr(unsafe { bindings::rtrs_rs_sess_dev_create(class, name.as_char_ptr()) })?;
        Ok(Self(NonNull::new(dev).ok_or(ENOMEM)?))
    }

    /// Points the session files at `sess`.
    ///
    /// # Safety
    ///
    /// `sess` is the session the files show, live until the device is
    /// deleted (`del`).
    pub(crate) unsafe fn set_sess(&self, sess: *const c_void) {
        // SAFETY: The device is live (type); `sess` by the caller.
        unsafe { bindings::rtrs_rs_sess_dev_set_sess(self.0.as_ptr(), sess.cast_mut()) };
    }

    /// `rtrs_clt_destroy_sysfs_root`'s first half: the tree leaves sysfs,
    /// after every show and store on it returned (device_del drains them).
    /// The path directories may still be torn down after this.
    pub(crate) fn del(&self) {
        // SAFETY: Created by `rtrs_rs_sess_dev_create` and not destroyed
        // (that takes `self` by value); the helper runs once.
        unsafe { bindings::rtrs_rs_sess_dev_del(self.0.as_ptr()) };
    }
}

impl Drop for SessDev {
    fn drop(&mut self) {
        // SAFETY: Created by `rtrs_rs_sess_dev_create`, destroyed once here;
        // every path directory below it is gone already.
        unsafe { bindings::rtrs_rs_sess_dev_destroy(self.0.as_ptr()) };
    }
}

/// paths/<src@dst>: the files of the `SessPath` it was created for.
pub(crate) struct PathKobj(NonNull<bindings::rtrs_rs_path_kobj>);

// SAFETY: The kobject may be removed from any thread in process context.
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
            bindings::rtrs_rs_path_kobj_create(dev.0.as_ptr(), name.as_char_ptr(), path.cast_mut())
        })?;
        Ok(Self(NonNull::new(k).ok_or(ENOMEM)?))
    }

    /// Removes the directory from within a store on its own `attr`
    /// (`sysfs_remove_file_self` first, as `rtrs_clt_destroy_path_files`).
    pub(crate) fn destroy_self(self, attr: *const c_void) {
        let p = self.0.as_ptr();
        core::mem::forget(self);
        // SAFETY: Created by `rtrs_rs_path_kobj_create`, destroyed once
        // here (not in drop, forgotten above); `attr` is the attribute
        // whose store is running.
        unsafe { bindings::rtrs_rs_path_kobj_destroy_self(p, attr) };
    }
}

impl Drop for PathKobj {
    fn drop(&mut self) {
        // SAFETY: Created by `rtrs_rs_path_kobj_create`, destroyed once here;
        // kobject_del waits for running shows, so the path may go after.
        unsafe { bindings::rtrs_rs_path_kobj_destroy(self.0.as_ptr()) };
    }
}
