// SPDX-License-Identifier: GPL-2.0

//! The fast-registration MR.

use core::ptr::NonNull;

use kernel::error::from_err_ptr;
use kernel::ffi::c_int;
use kernel::prelude::*;

use super::pd_pool::DevRef;
use super::sg::MappedSg;
use crate::bindings;
use crate::rtrs_core::proto::fast_reg_keys;

/// A fast-registration MR (`ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, pages)`),
/// deregistered on drop.
///
/// # Invariants
///
/// `mr` is live until drop; its PD is kept by whoever owns the `Mr` (a
/// path's `IoCtx` keeps its `DevRef`).
pub(crate) struct Mr {
    mr: NonNull<bindings::ib_mr>,
}

// SAFETY: An MR may be used and deregistered from any thread; it is changed
// only through `&mut self`.
unsafe impl Send for Mr {}
// SAFETY: As above; `&self` only reads it.
unsafe impl Sync for Mr {}

impl Mr {
    /// `ib_alloc_mr` on the PD of `dev`.
    pub(crate) fn alloc(dev: &DevRef, max_pages: u32) -> Result<Self> {
        // SAFETY: The PD is live (`dev`).
        let mr = from_err_ptr(unsafe {
            bindings::ib_alloc_mr(dev.pd(), bindings::ib_mr_type_IB_MR_TYPE_MEM_REG, max_pages)
        })?;
        Ok(Self {
            mr: NonNull::new(mr).ok_or(ENOMEM)?,
        })
    }

    /// The `struct ib_mr` (iova, length, lkey, rkey).
    pub(crate) fn get(&self) -> &bindings::ib_mr {
        // SAFETY: By the type invariant the MR is live; it changes only
        // through `&mut self`.
        unsafe { self.mr.as_ref() }
    }

    /// For an IB_WR_REG_MR work request.
    pub(crate) fn as_ptr(&self) -> *mut bindings::ib_mr {
        self.mr.as_ptr()
    }

    /// `rtrs_map_sg_fr`: `ib_map_mr_sg(mr, sg, count, NULL, SZ_4K)` (4K
    /// pages, as the block layer's virt boundary), then, if it mapped them
    /// all, the MR's next key (`proto::fast_reg_keys`). Returns the number
    /// of entries mapped (or C's negative errno). Inline: once per IO.
    #[inline]
    pub(crate) fn map_sg(&mut self, sg: &MappedSg) -> c_int {
        let mr = self.mr.as_ptr();
        // SAFETY: The MR is live and ours (`&mut self`): nothing else reads
        // or writes it during the call or the key update; `sg` is mapped,
        // with `count` DMA entries.
        unsafe {
            let nr = bindings::ib_map_mr_sg(mr, sg.sg.sg, sg.count, core::ptr::null_mut(), 4096);
            if nr == sg.count {
                ((*mr).lkey, (*mr).rkey) = fast_reg_keys((*mr).lkey, (*mr).rkey);
            }
            nr
        }
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        // SAFETY: By the type invariant; no posted request uses it (its
        // owner drains the QPs first).
        unsafe { bindings::rtrs_rs_ib_dereg_mr(self.mr.as_ptr()) };
    }
}
