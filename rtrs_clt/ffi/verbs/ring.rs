// SPDX-License-Identifier: GPL-2.0

//! A connection's QP with its CQ and receive buffers ([`QpRing`]).

use core::marker::PhantomData;
use core::num::NonZeroU32;
use core::pin::Pin;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, Ordering};

use kernel::error::from_err_ptr;
use kernel::prelude::*;
use kernel::sync::Arc;

use super::cq::Cq;
use super::iu::{recv_len, Iu, IuDone};
use super::pd_pool::DevRef;
use super::qp::{qp_event_handler, PostGate, Qp, QpOwner, QpSizes};
use crate::bindings;

/// What runs when a receive into a [`QpRing`]'s buffer completes; it may
/// post the buffer again ([`RingIu::post_recv`]).
///
/// `done` runs in the CQ's context: softirq for IRQ connections, so it
/// must not sleep.
pub(crate) trait RingDone: Sized + 'static {
    /// The QP context type (`qp_context`).
    type Ctx: Sync;
    /// Handles the work completion `wc` of a receive into a ring buffer:
    /// `iu` is the buffer if the receive succeeded (`IB_WC_SUCCESS`), and
    /// `None` for a flushed or failed one (`wc.status` says which).
    fn done(ctx: &Self::Ctx, iu: Option<RingIu<'_, Self>>, wc: &bindings::ib_wc);
}

/// The `IuDone` of a ring buffer: its completion hands `D` a [`RingIu`].
struct Ring<D>(PhantomData<D>);

// A path has thousands of ring buffers (`Iu`): each is one kmalloc-64
// object, whatever `D` (the size does not depend on it).
const _: () = {
    struct Probe;
    impl RingDone for Probe {
        type Ctx = ();
        fn done(&(): &(), _: Option<RingIu<'_, Self>>, _: &bindings::ib_wc) {}
    }
    assert!(core::mem::size_of::<Iu<Ring<Probe>>>() <= 64);
};

/// A ring buffer's own state.
///
/// # Invariants
///
/// `held` is set while the buffer is posted or a [`RingIu`] holds it,
/// and clear otherwise: it is set only by a `compare_exchange` from clear
/// (`QpRing::post_ring_recv`), and cleared by the completion of a failed
/// or flushed receive, or by the `RingIu` that held it unless it posted it.
/// `len` is the buffer's size (`recv_len` of it): a repost receives into
/// the whole buffer and no further.
struct RingState {
    /// The gate of the ring's QP, the only QP the buffer is posted on.
    gate: Arc<PostGate>,
    held: AtomicBool,
    /// The buffer's size as a receive's length, checked once.
    len: NonZeroU32,
}

impl<D: RingDone> IuDone for Ring<D> {
    type Ctx = D::Ctx;
    type State = RingState;
    fn done(ctx: &D::Ctx, iu: &Iu<Self>, wc: &bindings::ib_wc) {
        let iu = if wc.status == bindings::ib_wc_status_IB_WC_SUCCESS {
            // INVARIANT: The receive posted into `iu` (once: `held`) has
            // completed: the buffer passes from the device to this value,
            // with `held` still set.
            Some(RingIu { iu })
        } else {
            // Flushed or failed: the device is done with the buffer, and
            // it is not posted again from here.
            iu.state.held.store(false, Ordering::Release);
            None
        };
        D::done(ctx, iu, wc);
    }
}

/// The receive buffers of a [`QpRing`], allocated before it, with the
/// gate its QP will post through.
pub(crate) struct RingIus<D: RingDone> {
    gate: Arc<PostGate>,
    ius: KVec<Pin<KBox<Iu<Ring<D>>>>>,
}

impl<D: RingDone> RingIus<D> {
    /// None (a ring that receives without buffers).
    pub(crate) fn none() -> Result<Self> {
        Ok(Self {
            gate: PostGate::new()?,
            ius: KVec::new(),
        })
    }

    /// `rtrs_iu_alloc(n, size, DMA_FROM_DEVICE)`.
    pub(crate) fn alloc(dev: &DevRef, n: usize, size: usize) -> Result<Self> {
        let gate = PostGate::new()?;
        let len = recv_len(size)?;
        let mut ius = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            // INVARIANT: `len` is `size`'s, the size of the buffer allocated
            // with this state.
            let state = RingState {
                gate: gate.clone(),
                held: AtomicBool::new(false),
                len,
            };
            let iu = Iu::alloc_with(
                dev,
                size,
                bindings::dma_data_direction_DMA_FROM_DEVICE,
                state,
            )?;
            ius.push(iu, GFP_KERNEL)?;
        }
        Ok(Self { gate, ius })
    }
}

/// A buffer of a [`QpRing`] that a receive completed into, handed to
/// [`RingDone::done`]: the buffer is this value's (the device does not
/// write it) until it is posted again ([`RingIu::post_recv`], which
/// consumes it) or dropped (then it stays unposted).
///
/// # Invariants
///
/// `iu` is a buffer of a `QpRing` with `held` set, and this value is the
/// only holder of it (see `RingState`): it is not posted.
pub(crate) struct RingIu<'a, D: RingDone> {
    iu: &'a Iu<Ring<D>>,
}

impl<D: RingDone> RingIu<'_, D> {
    /// `rtrs_iu_post_recv`: a receive into the whole buffer, on its ring's
    /// QP; ECONNABORTED once that QP is being drained.
    pub(crate) fn post_recv(self, lkey: u32) -> Result {
        let iu = self.iu;
        // `held` goes with the posted receive; it is cleared below if
        // nothing was posted.
        core::mem::forget(self);
        // INVARIANT: The buffer is not posted (`RingIu`'s invariant: it is
        // posted once), it lives until its ring's QP is drained (field
        // order of `QpRing`), nothing reads it until the receive completes
        // (`self` is consumed: no `data_for_cpu` borrow is left), and its
        // cqe expects the `qp_context` of that QP, whose gate this is.
        let res = iu.recv_wr_len(&iu.state.gate, lkey, iu.state.len).post();
        if res.is_err() {
            iu.state.held.store(false, Ordering::Release);
        }
        res
    }

    /// [`RingIu::post_recv`] by a borrower of `ring`, which must be the
    /// buffer's own (EINVAL otherwise): not counted by the gate
    /// ([`PostGate`]), as `ring` keeps its drain away.
    pub(crate) fn post_recv_on<C: QpOwner>(self, ring: &QpRing<C, D>) -> Result
    where
        D: RingDone<Ctx = C>,
    {
        let iu = self.iu;
        core::mem::forget(self);
        // INVARIANT: as in `post_recv`; `post_held` checks that the gate is
        // `ring`'s QP's.
        let res = iu
            .recv_wr_len(&iu.state.gate, ring.lkey, iu.state.len)
            .post_held(&ring.qp);
        if res.is_err() {
            iu.state.held.store(false, Ordering::Release);
        }
        res
    }

    /// The buffer, for the CPU (see [`Iu::data_for_cpu`]), borrowed from
    /// this value: it cannot outlive a repost.
    pub(crate) fn data_for_cpu(&self) -> &[u8] {
        self.iu.data_for_cpu()
    }

    /// The buffer back to the device (see [`Iu::sync_for_device`]).
    pub(crate) fn sync_for_device(&self) {
        self.iu.sync_for_device();
    }
}

impl<D: RingDone> Drop for RingIu<'_, D> {
    /// Not posted again: the buffer stays out of the receive queue.
    fn drop(&mut self) {
        self.iu.state.held.store(false, Ordering::Release);
    }
}

/// A connection's QP with the CQ it completes on and the receive buffers
/// only it posts into (`create_con_cq_qp`). Fields drop in order: the QP
/// (drained first), its buffers, then the CQ, so nothing posted outlives
/// what it uses.
///
/// # Invariants
///
/// The IUs of `ring` carry `qp`'s gate, and are posted only through it.
pub(crate) struct QpRing<C: QpOwner, D: RingDone<Ctx = C>> {
    qp: Qp<C>,
    ring: KVec<Pin<KBox<Iu<Ring<D>>>>>,
    cq: Cq,
    lkey: u32,
}

impl<C: QpOwner, D: RingDone<Ctx = C>> QpRing<C, D> {
    /// `rdma_create_qp` as rtrs.c's create_qp: RC, `cq` for both queues,
    /// `IB_SIGNAL_REQ_WR`, one receive SGE; `ring` are its receive buffers,
    /// posted with `lkey`.
    ///
    /// # Safety
    ///
    /// `cm_id` must be a live cm id with a bound device; it and `owner`
    /// must outlive the returned value.
    pub(crate) unsafe fn create(
        cm_id: *mut bindings::rdma_cm_id,
        dev: &DevRef,
        cq: Cq,
        ring: RingIus<D>,
        owner: *const C,
        sizes: &QpSizes,
        lkey: u32,
    ) -> Result<Self> {
        let mut attr = bindings::ib_qp_init_attr {
            event_handler: Some(qp_event_handler::<C>),
            qp_context: owner.cast_mut().cast(),
            send_cq: cq.as_ptr(),
            recv_cq: cq.as_ptr(),
            cap: bindings::ib_qp_cap {
                max_send_wr: sizes.max_send_wr,
                max_recv_wr: sizes.max_recv_wr,
                max_send_sge: sizes.max_send_sge,
                max_recv_sge: 1,
                ..Default::default()
            },
            sq_sig_type: bindings::ib_sig_type_IB_SIGNAL_REQ_WR,
            qp_type: bindings::ib_qp_type_IB_QPT_RC,
            ..Default::default()
        };
        let cm = NonNull::new(cm_id).ok_or(EINVAL)?;
        // SAFETY: The caller guarantees `cm_id`; the PD is live (`dev`);
        // `attr` is valid for the call.
        let qp =
            from_err_ptr(unsafe { bindings::rtrs_rs_rdma_create_qp(cm_id, dev.pd(), &mut attr) })?;
        // The helper returns `id->qp`, never NULL, or an ERR_PTR: a NULL
        // would be no QP, nothing to destroy.
        let qp = NonNull::new(qp).ok_or(EINVAL)?;
        // No fallible step from here on: the QP is owned by the `Qp` below.
        ring.gate.qp.store(qp.as_ptr(), Ordering::Release);
        // INVARIANT: created just above with `owner` as its context; the
        // caller guarantees the cm id and the owner, and `cq` is dropped
        // after the QP (field order). `ib_qp` is the QP just stored in the
        // gate. The ring is new: nothing posted yet, and its buffers carry
        // this gate.
        Ok(Self {
            qp: Qp {
                gate: ring.gate,
                ib_qp: qp,
                cm_id: cm,
                drained: AtomicBool::new(false),
                _owner: PhantomData,
            },
            ring: ring.ius,
            cq,
            lkey,
        })
    }

    /// The QP.
    pub(crate) fn qp(&self) -> &Qp<C> {
        &self.qp
    }

    /// The CQ.
    pub(crate) fn cq(&self) -> &Cq {
        &self.cq
    }

    /// `ib_drain_qp`: every request posted is flushed when it returns, and
    /// nothing can be posted on the QP any more. Process context.
    pub(crate) fn drain(&mut self) {
        self.qp.drain();
    }

    /// A receive into buffer `i` (`rtrs_iu_post_recv`); EBUSY if it is
    /// posted already (or a completion holds it), ECONNABORTED once the QP
    /// is being drained.
    pub(crate) fn post_ring_recv(&self, i: usize) -> Result {
        let iu = self.ring.get(i).ok_or(EINVAL)?;
        iu.state
            .held
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .map_err(|_| EBUSY)?;
        // INVARIANT: one of our buffers, taken from clear `held` just above.
        RingIu { iu }.post_recv(self.lkey)
    }
}
