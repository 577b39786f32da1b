// SPDX-License-Identifier: GPL-2.0

//! Queue pairs, and the work requests posted on them, each through the
//! QP's [`PostGate`].

use core::marker::PhantomData;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};

use kernel::error::to_result;
use kernel::ffi::c_int;
use kernel::prelude::*;
use kernel::sync::Arc;

use super::cqe::{static_cqe, CqeHandler};
use super::iu::{Iu, IuDone};
use crate::bindings;
use crate::ffi::error::econnaborted;

// ---------------------------------------------------------------------------
// Work requests
// ---------------------------------------------------------------------------

/// Who may post on a QP, shared by the QP and its ring's receive buffers:
/// the QP, and a gate that is open from the QP's creation until its drain
/// begins. Every post goes through it ([`PostGate::post`], or
/// [`HeldQp::post`] under a borrow of the `Qp`), so nothing is posted
/// once a drain has started, and a drain waits for the posts that passed
/// the gate before it closed: everything posted is flushed by the drain.
///
/// # Invariants
///
/// `qp` is null until `QpRing::create` stores the QP it created; that QP
/// is destroyed only after `close` has returned. The low bits of `state`
/// count the posts in progress (each between its `fetch_add` and its
/// `fetch_sub` in `post`); `GATE_CLOSED` is set by the first `close` and
/// never cleared. `close` is called only by `Qp::drain`, which takes the
/// `Qp` by `&mut`: a post made while a `&Qp` is borrowed ([`HeldQp`])
/// cannot overlap it, and is not counted.
pub(super) struct PostGate {
    pub(super) qp: AtomicPtr<bindings::ib_qp>,
    state: AtomicU32,
}

/// `PostGate::state`'s closed bit; the bits below it count posts.
const GATE_CLOSED: u32 = 1 << 31;

impl PostGate {
    /// An open gate without a QP yet.
    pub(super) fn new() -> Result<Arc<Self>> {
        Ok(Arc::new(
            Self {
                qp: AtomicPtr::new(core::ptr::null_mut()),
                state: AtomicU32::new(0),
            },
            GFP_KERNEL,
        )?)
    }

    /// Runs `post` with the QP while the gate is open; ECONNABORTED once a
    /// drain has begun (as once teardown took the QP), EINVAL before the QP
    /// exists. Any context.
    fn post(&self, post: impl FnOnce(NonNull<bindings::ib_qp>) -> Result) -> Result {
        // Counted before looking: a `close` after this waits for the
        // `fetch_sub` below (both are read-modify-writes of `state`).
        let prev = self.state.fetch_add(1, Ordering::Acquire);
        let res = if prev & GATE_CLOSED != 0 {
            Err(econnaborted())
        } else {
            NonNull::new(self.qp.load(Ordering::Acquire))
                .ok_or(EINVAL)
                .and_then(post)
        };
        self.state.fetch_sub(1, Ordering::Release);
        res
    }

    /// Closes the gate and waits until no post is in progress: every
    /// request posted on the QP is on it when this returns. Process context.
    fn close(&self) {
        self.state.fetch_or(GATE_CLOSED, Ordering::AcqRel);
        // Posts do not sleep: this hardly ever waits (teardown unpublished
        // the QP a grace period ago; only ring reposts can still run).
        while self.state.load(Ordering::Acquire) != GATE_CLOSED {
            bindings::rtrs_rs_msleep(1);
        }
    }
}

/// The gate and the QP of a borrowed [`Qp`], for posts that the borrow
/// keeps its drain away from: not counted, the gate's closed bit only read
/// (see [`PostGate`]'s invariants).
///
/// # Invariants
///
/// `qp` is `gate`'s QP, and a `Qp` with this gate is borrowed for `'q`:
/// the QP is live and `close` does not run while this value exists.
#[derive(Clone, Copy)]
pub(super) struct HeldQp<'q> {
    gate: &'q PostGate,
    qp: NonNull<bindings::ib_qp>,
}

impl HeldQp<'_> {
    /// Runs `post` with the QP, unless a drain has begun (ECONNABORTED).
    #[inline(always)]
    fn post(self, post: impl FnOnce(NonNull<bindings::ib_qp>) -> Result) -> Result {
        // Relaxed: a `close` that this could see happened before the `&mut`
        // drain ended, which happened before the borrow this runs under.
        if self.gate.state.load(Ordering::Relaxed) & GATE_CLOSED != 0 {
            return Err(econnaborted());
        }
        post(self.qp)
    }
}

/// A post's return as a `Result`: the success test inline, the errno
/// made out of line (`to_result` is not inlined across crates).
#[inline(always)]
fn post_result(ret: c_int) -> Result {
    if ret == 0 {
        Ok(())
    } else {
        post_error(ret)
    }
}

#[cold]
#[inline(never)]
fn post_error(ret: c_int) -> Result {
    // (A positive return, which no post gives, is EINVAL.)
    to_result(ret).and(Err(EINVAL))
}

/// `ib_post_send` (a static inline): the device's `post_send` op, called
/// here rather than through a C helper, but under kCFI, where an indirect
/// call from Rust would need the op's type hash.
///
/// # Safety
///
/// `qp` is a live QP and `wr` a valid chain for it.
#[inline(always)]
unsafe fn ib_post_send(qp: *mut bindings::ib_qp, wr: *const bindings::ib_send_wr) -> c_int {
    // SAFETY: The caller's guarantee; a live QP's device is registered,
    // and the core requires both post ops of every device
    // (`ib_device_check_mandatory`); `bad` is writable.
    unsafe {
        #[cfg(not(CONFIG_CFI_CLANG))]
        {
            let mut bad: *const bindings::ib_send_wr = core::ptr::null();
            match (*(*qp).device).ops.post_send {
                Some(post) => post(qp, wr, &mut bad),
                None => EINVAL.to_errno(),
            }
        }
        #[cfg(CONFIG_CFI_CLANG)]
        bindings::rtrs_rs_ib_post_send(qp, wr, core::ptr::null_mut())
    }
}

/// `ib_post_recv`, as [`ib_post_send`].
///
/// # Safety
///
/// `qp` is a live QP and `wr` a valid chain for it.
#[inline(always)]
unsafe fn ib_post_recv(qp: *mut bindings::ib_qp, wr: *const bindings::ib_recv_wr) -> c_int {
    // SAFETY: The caller's guarantee; a live QP's device is registered,
    // and the core requires both post ops of every device
    // (`ib_device_check_mandatory`); `bad` is writable.
    unsafe {
        #[cfg(not(CONFIG_CFI_CLANG))]
        {
            let mut bad: *const bindings::ib_recv_wr = core::ptr::null();
            match (*(*qp).device).ops.post_recv {
                Some(post) => post(qp, wr, &mut bad),
                None => EINVAL.to_errno(),
            }
        }
        #[cfg(CONFIG_CFI_CLANG)]
        bindings::rtrs_rs_ib_post_recv(qp, wr, core::ptr::null_mut())
    }
}

/// One receive ready to be posted: `len` bytes at `addr` (no SGE if `len`
/// is 0), completing on `cqe`; two alike in one chain if `two`, which
/// only a receive without buffer sets (a buffer is posted once).
///
/// # Invariants
///
/// `cqe`, whose `done` expects the `qp_context` of `gate`'s QP, and the
/// buffer (mapped for the device, and not read by the CPU until the
/// receive completes) stay valid until the receive completes or the QP is
/// drained. `two` only if `len` is 0: a buffer is never posted twice.
pub(super) struct RecvWr<'g> {
    pub(super) gate: &'g PostGate,
    pub(super) cqe: NonNull<bindings::ib_cqe>,
    pub(super) addr: u64,
    pub(super) len: u32,
    pub(super) lkey: u32,
    pub(super) two: bool,
}

impl RecvWr<'_> {
    /// `ib_post_recv`, through the gate, counted.
    pub(super) fn post(self) -> Result {
        self.post_with(None)
    }

    /// `ib_post_recv` by the borrower of `qp`, whose gate must be this
    /// request's: not counted ([`HeldQp`]).
    #[inline(always)]
    pub(super) fn post_held<C: QpOwner>(self, qp: &Qp<C>) -> Result {
        if !core::ptr::eq(self.gate, &*qp.gate) {
            return Err(EINVAL);
        }
        self.post_with(Some(qp.held()))
    }

    /// Posts through the gate, counted, or through `held`, not counted;
    /// `held`'s gate must be this request's (`post_held` checks it).
    #[inline(always)]
    fn post_with(self, held: Option<HeldQp<'_>>) -> Result {
        let mut sge = bindings::ib_sge {
            addr: self.addr,
            length: self.len,
            lkey: self.lkey,
        };
        let wr = bindings::ib_recv_wr {
            next: core::ptr::null_mut(),
            __bindgen_anon_1: bindings::ib_recv_wr__bindgen_ty_1 {
                wr_cqe: self.cqe.as_ptr(),
            },
            sg_list: if self.len == 0 {
                core::ptr::null_mut()
            } else {
                &mut sge
            },
            num_sge: i32::from(self.len != 0),
        };
        // The second of a chain (`rtrs_post_recv_empty_x2`): chained
        // backwards, as C.
        let wr2 = bindings::ib_recv_wr {
            next: core::ptr::addr_of!(wr).cast_mut(),
            ..wr
        };
        let head = if self.two && self.len == 0 { &wr2 } else { &wr };
        let post = |qp: NonNull<bindings::ib_qp>| {
            // SAFETY: `qp` is the QP of this request's gate (`post_held`
            // checked a held post's gate), live until this returns: by the
            // open gate's count (`PostGate`), or for a held post by the
            // borrow of its `Qp` (`HeldQp`). What the request names outlives
            // it (type invariant). `head` is `wr2` -> `wr` -> null or `wr` alone, all
            // on this frame with `sge` across the call; the core and the
            // driver only read them (`ib_post_recv` takes a const chain), so
            // the pointer cast to mut is never written through.
            post_result(unsafe { ib_post_recv(qp.as_ptr(), head) })
        };
        match held {
            Some(h) => h.post(post),
            None => self.gate.post(post),
        }
    }
}

/// A chain of send work requests ready to be posted.
///
/// # Invariants
///
/// `qp` is the [`HeldQp`] of a `Qp` borrowed for this value's life (so
/// posts are not counted). `wr` points to a valid chain until `post`
/// returns (for RDMA opcodes, the `wr` members of `ib_rdma_wr`s, for
/// REG_MR of an `ib_reg_wr`); every buffer and cqe it names (each cqe's
/// `done` expects the `qp_context` of that QP) stays valid until the
/// request completes or the QP is drained.
struct SendWr<'q> {
    qp: HeldQp<'q>,
    wr: *const bindings::ib_send_wr,
}

impl SendWr<'_> {
    /// `ib_post_send`, unless the QP is being drained.
    #[inline(always)]
    fn post(self) -> Result {
        self.qp.post(|qp| {
            // SAFETY: `qp` is live while its `Qp` is borrowed (`HeldQp`),
            // and the gate was open; the chain by the type invariant; the
            // core copies it.
            post_result(unsafe { ib_post_send(qp.as_ptr(), self.wr) })
        })
    }
}

// ---------------------------------------------------------------------------
// Queue pairs
// ---------------------------------------------------------------------------

/// The owner of a QP, its `qp_context`.
pub(crate) trait QpOwner: Sync {
    /// An asynchronous QP event (`ib_event.event`); process or atomic context.
    fn qp_event(&self, event: bindings::ib_event_type);
}

/// The QP event handler trampoline (rtrs.c's qp_event_handler).
///
/// # Safety
///
/// Called by the verbs core with a valid event and the `qp_context` given to
/// `QpRing::<C, _>::create`, which points to a live `C`.
pub(super) unsafe extern "C" fn qp_event_handler<C: QpOwner>(
    ev: *mut bindings::ib_event,
    ctx: *mut kernel::ffi::c_void,
) {
    // SAFETY: By the function's contract: the core passes a valid event,
    // and `ctx` is a live `C`.
    let (event, owner) = unsafe { ((*ev).event, &*ctx.cast::<C>()) };
    owner.qp_event(event);
}

/// An RC QP created on a cm id with `rdma_create_qp` (by
/// [`QpRing::create`](super::QpRing::create), the only place one is made),
/// drained and destroyed on drop.
///
/// Every post goes through its [`PostGate`]: once a drain has begun nothing
/// more is posted, so a drained QP stays drained.
///
/// # Invariants
///
/// `gate`'s QP is `cm_id->qp` and `ib_qp`, live until `drop`; `cm_id`, the
/// CQ and the `C` given to `QpRing::create` outlive this value;
/// `qp_context` is that `C`. `drained` is set only after an `ib_drain_qp` that began with the
/// gate closed. The QP is drained before it is destroyed, so every request
/// posted on it has completed (or was flushed) by then.
pub(crate) struct Qp<C: QpOwner> {
    pub(super) gate: Arc<PostGate>,
    /// `gate`'s QP, for posts by a borrower: read without the gate's load
    /// and null test.
    pub(super) ib_qp: NonNull<bindings::ib_qp>,
    pub(super) cm_id: NonNull<bindings::rdma_cm_id>,
    pub(super) drained: AtomicBool,
    pub(super) _owner: PhantomData<*const C>,
}

// SAFETY: A QP may be used and destroyed from any thread.
unsafe impl<C: QpOwner> Send for Qp<C> {}
// SAFETY: Posting and draining are thread safe in the verbs core.
unsafe impl<C: QpOwner> Sync for Qp<C> {}

/// Sizes of a QP (`create_qp` arguments of rtrs.c).
pub(crate) struct QpSizes {
    /// `cap.max_send_wr`.
    pub(crate) max_send_wr: u32,
    /// `cap.max_recv_wr`.
    pub(crate) max_recv_wr: u32,
    /// `cap.max_send_sge`.
    pub(crate) max_send_sge: u32,
}

impl<C: QpOwner> Qp<C> {
    /// `rdma_notify(cm_id, event)` on the cm id the QP was created on (the
    /// QP event handler's COMM_EST).
    pub(crate) fn notify_cm(&self, event: bindings::ib_event_type) -> Result {
        // SAFETY: By the type invariant the cm id outlives the QP.
        to_result(unsafe { bindings::rdma_notify(self.cm_id.as_ptr(), event) })
    }

    /// Posts a chain of send work requests; ECONNABORTED once the QP is
    /// being drained.
    ///
    /// # Safety
    ///
    /// `wr` and what it points to are valid for the call; the buffers and
    /// cqes the requests name stay alive until they complete or the QP is
    /// drained, and each cqe's `done` expects a `C` as `qp_context`.
    pub(crate) unsafe fn post_send_wr(&self, wr: *const bindings::ib_send_wr) -> Result {
        // INVARIANT: The caller's guarantee.
        SendWr {
            qp: self.held(),
            wr,
        }
        .post()
    }

    /// The gate and the QP, for posts under this borrow.
    #[inline(always)]
    fn held(&self) -> HeldQp<'_> {
        // INVARIANT: `ib_qp` is the gate's QP (type invariant), and `self`
        // is borrowed for the result's life.
        HeldQp {
            gate: &self.gate,
            qp: self.ib_qp,
        }
    }

    /// `ib_drain_qp`: closes the gate, then moves the QP to error and waits
    /// until every posted request has completed (flushed), unless a drain
    /// did so already. Process context.
    pub(super) fn drain(&mut self) {
        self.gate.close();
        // A finished drain began with the gate closed: nothing was posted
        // since, so there is nothing left to flush.
        if self.drained.load(Ordering::Acquire) {
            return;
        }
        // SAFETY: By the type invariant the QP is live (not destroyed
        // before drop) and its CQ outlives it.
        unsafe { bindings::ib_drain_qp(self.ib_qp.as_ptr()) };
        // INVARIANT: the gate was closed before this drain began.
        self.drained.store(true, Ordering::Release);
    }

    /// `rtrs_post_recv_empty`: a receive without buffer whose completion
    /// goes to `H`; ECONNABORTED once the QP is being drained.
    pub(crate) fn post_recv_empty<H: CqeHandler<Ctx = C>>(&self) -> Result {
        self.post_recv_empty_n::<H>(false)
    }

    /// [`Qp::post_recv_empty`], or two in one post if `two`
    /// (`rtrs_post_recv_empty_x2`).
    #[inline(always)]
    pub(crate) fn post_recv_empty_n<H: CqeHandler<Ctx = C>>(&self, two: bool) -> Result {
        // INVARIANT: No buffer, and the cqe is a constant whose handler
        // expects a `C`.
        RecvWr {
            gate: &self.gate,
            cqe: NonNull::new(static_cqe::<H>()).ok_or(EINVAL)?,
            addr: 0,
            len: 0,
            lkey: 0,
            two,
        }
        .post_held(self)
    }

    /// `rtrs_post_rdma_write_imm_empty`: an RDMA_WRITE_WITH_IMM without
    /// data carrying `imm`, whose completion (if `flags` signal it) goes to
    /// `H`; ECONNABORTED once the QP is being drained.
    pub(crate) fn post_imm_empty<H: CqeHandler<Ctx = C>>(&self, imm: u32, flags: c_int) -> Result {
        let wr = bindings::ib_rdma_wr {
            wr: bindings::ib_send_wr {
                __bindgen_anon_1: bindings::ib_send_wr__bindgen_ty_1 {
                    wr_cqe: static_cqe::<H>(),
                },
                opcode: bindings::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM,
                send_flags: flags,
                ex: bindings::ib_send_wr__bindgen_ty_2 {
                    imm_data: imm.to_be(),
                },
                ..Default::default()
            },
            ..Default::default()
        };
        // INVARIANT: `wr` is one RDMA request in an `ib_rdma_wr`, live
        // across the call, without SGE, and its cqe is a constant whose
        // handler expects a `C`.
        SendWr {
            qp: self.held(),
            wr: core::ptr::addr_of!(wr).cast(),
        }
        .post()
    }

    /// `rtrs_iu_post_recv`: posts a receive into the whole of `iu`;
    /// ECONNABORTED once the QP is being drained.
    ///
    /// # Safety
    ///
    /// `iu` must stay alive until the receive completes or the QP is
    /// drained, and its buffer must not be read (`data_for_cpu`) before
    /// the receive has completed.
    pub(crate) unsafe fn post_recv<D: IuDone<Ctx = C>>(&self, iu: &Iu<D>, lkey: u32) -> Result {
        // INVARIANT: The caller keeps `iu` alive and unread; its
        // `cqe.done` matches `D`, whose context type is this QP's owner
        // type.
        iu.recv_wr(&self.gate, lkey)?.post_held(self)
    }

    /// `rtrs_iu_post_send`: a signaled SEND of the first `len` bytes of
    /// `iu`; ECONNABORTED once the QP is being drained.
    ///
    /// # Safety
    ///
    /// `iu` must stay alive, and its buffer unwritten, until the send
    /// completes or the QP is drained.
    pub(crate) unsafe fn post_send<D: IuDone<Ctx = C>>(
        &self,
        iu: &Iu<D>,
        len: usize,
        lkey: u32,
    ) -> Result {
        if len == 0 || len > iu.size {
            return Err(EINVAL);
        }
        let mut sge = bindings::ib_sge {
            addr: iu.dma_addr,
            length: u32::try_from(len).map_err(|_| EINVAL)?,
            lkey,
        };
        let wr = bindings::ib_send_wr {
            __bindgen_anon_1: bindings::ib_send_wr__bindgen_ty_1 {
                wr_cqe: iu.cqe_ptr(),
            },
            sg_list: &mut sge,
            num_sge: 1,
            opcode: bindings::ib_wr_opcode_IB_WR_SEND,
            send_flags: bindings::ib_send_flags_IB_SEND_SIGNALED as kernel::ffi::c_int,
            ..Default::default()
        };
        // INVARIANT: `wr` and `sge` live across the call; the caller keeps
        // `iu` (buffer and cqe, whose `done` expects a `C`) alive.
        SendWr {
            qp: self.held(),
            wr: &wr,
        }
        .post()
    }
}

impl<C: QpOwner> Drop for Qp<C> {
    fn drop(&mut self) {
        // Always: a drain that already ran leaves nothing to flush, and
        // after this nothing can be posted.
        self.drain();
        // SAFETY: By the type invariant the cm id outlives the QP and this is
        // the QP's only destroy; it is drained.
        unsafe { bindings::rdma_destroy_qp(self.cm_id.as_ptr()) };
    }
}
