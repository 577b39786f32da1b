// SPDX-License-Identifier: GPL-2.0

//! Information units: kmalloc'ed buffers, DMA-mapped, each with the cqe
//! its completions come back on.

use core::marker::PhantomData;
use core::num::NonZeroU32;
use core::pin::Pin;
use core::ptr::NonNull;

use kernel::error::to_result;
use kernel::prelude::*;
use kernel::types::Opaque;

use super::cqe::{first_cqe_done, CqeFirst};
use super::pd_pool::DevRef;
use super::qp::{PostGate, RecvWr};
use crate::bindings;

/// What runs when a work request posted with an [`Iu`] completes.
///
/// `Ctx` is the QP's owner, found through `wc->qp->qp_context` as C's
/// `to_clt_con(wc->qp->qp_context)` does. `done` runs in the CQ's context:
/// softirq for IRQ connections, so it must not sleep.
pub(crate) trait IuDone {
    /// The QP context type (`qp_context`).
    type Ctx: Sync;
    /// What each IU keeps for its handler (`()` but for a
    /// [`QpRing`](super::QpRing)'s receive buffers, which keep their ring's
    /// [`PostGate`] and whether they are posted).
    type State: Send + Sync;
    /// Handles the work completion of `iu`.
    fn done(ctx: &Self::Ctx, iu: &Iu<Self>, wc: &bindings::ib_wc)
    where
        Self: Sized;
}

/// `struct rtrs_iu`: a kmalloc'ed buffer, DMA-mapped for `dir`, and the
/// `ib_cqe` whose `done` calls `D::done`.
///
/// A path has thousands of receive IUs (C's `rtrs_iu_alloc` counts), each
/// boxed: `Iu<Ring<_>>` is 64 bytes, one kmalloc-64 object (see the
/// assertion below), so the buffer is held by its pointer, not a `KVec`.
///
/// # Invariants
///
/// `buf` is the zeroed `size`-byte buffer of a `KVec<u8>` of capacity
/// `size` (from `KVec::into_raw_parts`), owned by this value and freed in
/// `drop`; it is mapped at `dma_addr` on `dev` for `dir` until `drop`;
/// `cqe.done` is `first_cqe_done::<Self>`; `cqe` is the first field, so a
/// `wr_cqe` pointer to it is a pointer to the `Iu`.
#[repr(C)]
pub(crate) struct Iu<D: IuDone> {
    cqe: Opaque<bindings::ib_cqe>,
    buf: NonNull<u8>,
    pub(super) size: usize,
    pub(super) dma_addr: u64,
    dir: bindings::dma_data_direction,
    /// `ib_uses_virt_dma(dev)`: no sync or unmap to do.
    virt_dma: bool,
    dev: *mut bindings::ib_device,
    pub(super) state: D::State,
    _done: PhantomData<fn(&D)>,
}

// SAFETY: The buffer and mapping may be used and released from any thread.
unsafe impl<D: IuDone> Send for Iu<D> {}
// SAFETY: Shared access only reads the buffer (after the device wrote it and
// the completion ran) or passes `cqe` to the verbs core.
unsafe impl<D: IuDone> Sync for Iu<D> {}

// SAFETY: `Iu` is `#[repr(C)]` with `cqe` first, set to this trampoline
// (type invariant); its owners drain the QP before dropping it.
unsafe impl<D: IuDone> CqeFirst for Iu<D> {
    type Ctx = D::Ctx;
    fn done(ctx: &D::Ctx, iu: &Self, wc: &bindings::ib_wc) {
        D::done(ctx, iu, wc);
    }
}

impl<D: IuDone> Iu<D> {
    /// `rtrs_iu_alloc` for one IU: `size` zeroed bytes mapped for `dir`.
    pub(crate) fn alloc(
        dev: &DevRef,
        size: usize,
        dir: bindings::dma_data_direction,
    ) -> Result<Pin<KBox<Self>>>
    where
        D::State: Default,
    {
        Self::alloc_with(dev, size, dir, D::State::default())
    }

    /// [`Iu::alloc`] with the handler's `state`.
    pub(super) fn alloc_with(
        dev: &DevRef,
        size: usize,
        dir: bindings::dma_data_direction,
        state: D::State,
    ) -> Result<Pin<KBox<Self>>> {
        let mut buf = KVec::from_elem(0u8, size, GFP_KERNEL)?;
        // (An empty vector reserves exactly what `from_elem` asks for.)
        if buf.capacity() != size {
            return Err(EINVAL);
        }
        let mut dma_addr = 0u64;
        // SAFETY: `buf` is `size` bytes of kmalloc memory that stays put until
        // unmapped in `drop`; the device is registered (`dev`); `dma_addr`
        // is writable.
        to_result(unsafe {
            bindings::rtrs_rs_ib_dma_map_single(
                dev.ib_dev(),
                buf.as_mut_ptr().cast(),
                size,
                dir,
                &mut dma_addr,
            )
        })?;
        let (ptr, _, _) = buf.into_raw_parts();
        let iu = Iu {
            cqe: Opaque::new(bindings::ib_cqe {
                done: Some(first_cqe_done::<Self>),
            }),
            // A vector's pointer is never null (dangling when empty).
            buf: NonNull::new(ptr).ok_or(EINVAL)?,
            size,
            dma_addr,
            dir,
            virt_dma: dev.virt_dma(),
            dev: dev.ib_dev(),
            state,
            _done: PhantomData,
        };
        // INVARIANT: mapped just above; `done` set to the trampoline of `D`.
        Ok(KBox::pin(iu, GFP_KERNEL)?)
    }

    /// The buffer, for the CPU (`ib_dma_sync_single_for_cpu` first): after
    /// a receive completed into it, or a send buffer once its send is done.
    pub(crate) fn data_for_cpu(&self) -> &[u8] {
        // SAFETY: By the type invariant the buffer is mapped on `dev`, and
        // `buf` is `size` initialised bytes this value owns, which change
        // only through `&mut self` (or the device, before this sync).
        unsafe {
            if !self.virt_dma {
                bindings::rtrs_rs_ib_dma_sync_single_for_cpu(
                    self.dev,
                    self.dma_addr,
                    self.size,
                    self.dir,
                );
            }
            core::slice::from_raw_parts(self.buf.as_ptr(), self.size)
        }
    }

    /// Fills the buffer with `f` and hands it back to the device
    /// (`ib_dma_sync_single_for_device`). The IU must not be posted.
    pub(crate) fn fill_for_device<R>(
        mut self: Pin<&mut Self>,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> R {
        let r = f(self.as_mut().buf_mut());
        self.sync_for_device();
        r
    }

    /// The IU's cqe, for `wr_cqe`.
    pub(crate) fn cqe_ptr(&self) -> *mut bindings::ib_cqe {
        self.cqe.get()
    }

    /// A receive into the whole buffer, to be posted through `gate`.
    pub(super) fn recv_wr<'g>(&self, gate: &'g PostGate, lkey: u32) -> Result<RecvWr<'g>> {
        Ok(self.recv_wr_len(gate, lkey, recv_len(self.size)?))
    }

    /// [`Iu::recv_wr`] with the length [`recv_len`] gave for this
    /// buffer's size, checked once for a buffer posted again and again:
    /// `len` must be exactly that (a longer one would let the device
    /// write past the buffer).
    #[inline(always)]
    pub(super) fn recv_wr_len<'g>(
        &self,
        gate: &'g PostGate,
        lkey: u32,
        len: NonZeroU32,
    ) -> RecvWr<'g> {
        debug_assert_eq!(usize::try_from(len.get()).ok(), Some(self.size));
        RecvWr {
            gate,
            cqe: NonNull::from(&self.cqe).cast(),
            addr: self.dma_addr,
            len: len.get(),
            lkey,
            two: false,
        }
    }

    /// The buffer's DMA address.
    pub(crate) fn dma_addr(&self) -> u64 {
        self.dma_addr
    }

    /// `ib_dma_sync_single_for_device` of the first `len` bytes.
    pub(crate) fn sync_for_device_len(&self, len: usize) {
        if self.virt_dma {
            return;
        }
        // SAFETY: By the type invariant the buffer is mapped on `dev`.
        unsafe {
            bindings::rtrs_rs_ib_dma_sync_single_for_device(
                self.dev,
                self.dma_addr,
                len.min(self.size),
                self.dir,
            )
        };
    }

    /// `ib_dma_sync_single_for_device` of the whole buffer.
    pub(crate) fn sync_for_device(&self) {
        self.sync_for_device_len(self.size);
    }

    /// The buffer, writable (no DMA sync: see `sync_for_device_len`). The
    /// IU must not be posted.
    pub(crate) fn buf_mut(self: Pin<&mut Self>) -> &mut [u8] {
        // SAFETY: By the type invariant `buf` is `size` initialised bytes
        // this value owns; `&mut self` makes this borrow the only one.
        unsafe { core::slice::from_raw_parts_mut(self.buf.as_ptr(), self.size) }
    }
}

impl<D: IuDone> Drop for Iu<D> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the mapping is live and this is its
        // only unmap, and `buf` is the raw parts of a `KVec` of length and
        // capacity `size`, freed here once, after the unmap; no posted
        // request still uses it (owner's order: drained).
        unsafe {
            if !self.virt_dma {
                bindings::rtrs_rs_ib_dma_unmap_single(self.dev, self.dma_addr, self.size, self.dir);
            }
            drop(KVec::from_raw_parts(
                self.buf.as_ptr(),
                self.size,
                self.size,
            ));
        };
    }
}

/// A buffer's size as a receive's length: EINVAL if it is 0 or does not
/// fit a `u32`.
pub(super) fn recv_len(size: usize) -> Result<NonZeroU32> {
    u32::try_from(size)
        .ok()
        .and_then(NonZeroU32::new)
        .ok_or(EINVAL)
}
