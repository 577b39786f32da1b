// SPDX-License-Identifier: GPL-2.0

//! A caller's scatterlist, and its DMA mapping.

use kernel::ffi::c_int;

use super::pd_pool::DevRef;
use crate::bindings;
use crate::ffi::log::pr_err_rl;

/// The scatterlist of a request (`struct scatterlist *` and its entries),
/// owned by whoever is answerable for the request: mapping consumes it,
/// unmapping gives it back.
///
/// # Invariants
///
/// `sg` points to `nents` entries that stay valid, and are DMA-mapped by
/// nobody else, until the request is confirmed (rtrs.h's contract for
/// `rtrs_clt_request`); `nents` is 0 for a request without data.
pub(crate) struct SgList {
    pub(super) sg: *mut bindings::scatterlist,
    nents: u32,
}

// SAFETY: The list may be mapped and unmapped from any thread (rtrs.h).
unsafe impl Send for SgList {}

impl SgList {
    /// No data.
    pub(crate) const EMPTY: Self = Self {
        sg: core::ptr::null_mut(),
        nents: 0,
    };

    /// # Safety
    ///
    /// As the type invariant: `sg` has `nents` entries, valid and not
    /// mapped elsewhere until the request is confirmed.
    pub(crate) unsafe fn new(sg: *mut bindings::scatterlist, nents: u32) -> Self {
        if sg.is_null() {
            return Self::EMPTY;
        }
        Self { sg, nents }
    }

    /// The number of entries.
    pub(crate) fn nents(&self) -> u32 {
        self.nents
    }

    /// `ib_dma_map_sg` on `dev`; the list back if it has no entries or
    /// the mapping failed.
    pub(crate) fn dma_map(
        self,
        dev: &DevRef,
        dir: bindings::dma_data_direction,
    ) -> core::result::Result<MappedSg, SgList> {
        let Some(n) = c_int::try_from(self.nents).ok().filter(|&n| n > 0) else {
            return Err(self);
        };
        // SAFETY: By the type invariant the list has `n` valid entries,
        // mapped by nobody else (we own it); the device is registered (`dev`).
        let count = unsafe {
            if dev.virt_dma() {
                // What `ib_dma_map_sg` calls for such a device, without the
                // helper's call.
                bindings::ib_dma_virt_map_sg(dev.ib_dev(), self.sg, n)
            } else {
                bindings::rtrs_rs_ib_dma_map_sg(dev.ib_dev(), self.sg, n, dir)
            }
        };
        if count <= 0 {
            return Err(self);
        }
        Ok(MappedSg {
            sg: self,
            count,
            dir,
            dev: dev.ib_dev(),
            virt_dma: dev.virt_dma(),
        })
    }
}

/// An [`SgList`] mapped for DMA on `dev`, with `count` mapped entries.
pub(crate) struct MappedSg {
    pub(super) sg: SgList,
    pub(super) count: c_int,
    dir: bindings::dma_data_direction,
    dev: *mut bindings::ib_device,
    /// `ib_uses_virt_dma(dev)`: the unmap has nothing to do.
    virt_dma: bool,
}

// SAFETY: As `SgList`; `dev` is only compared.
unsafe impl Send for MappedSg {}

impl MappedSg {
    /// The number of mapped entries (what `Mr::map_sg` must map).
    pub(crate) fn count(&self) -> c_int {
        self.count
    }

    /// Whether `unmap` has work to do: false on a device with virt DMA,
    /// where the mapped list may simply be dropped.
    #[inline]
    pub(crate) fn needs_unmap(&self) -> bool {
        !self.virt_dma
    }

    /// `ib_dma_unmap_sg` on `dev`, the device it was mapped on; the list
    /// back. (On another device it stays mapped, and this logs.)
    #[inline]
    pub(crate) fn unmap(self, dev: &DevRef) -> SgList {
        if dev.ib_dev() != self.dev {
            pr_err_rl!("rtrs: scatterlist unmapped on another device; left mapped\n");
            return self.sg;
        }
        if self.virt_dma {
            return self.sg;
        }
        let n = c_int::try_from(self.sg.nents).unwrap_or(0);
        // SAFETY: Mapped by `SgList::dma_map` with these arguments on this
        // device, once (`self` is consumed); the list is valid until
        // confirmed (`SgList` invariant).
        unsafe { bindings::rtrs_rs_ib_dma_unmap_sg(dev.ib_dev(), self.sg.sg, n, self.dir) };
        self.sg
    }
}
