// SPDX-License-Identifier: GPL-2.0

//! Completions: the `ib_cqe` posted as a request's `wr_cqe`, and the
//! trampolines that hand its work completion to a handler in the CQ's
//! context, with the QP's owner ([`CqeHandler`]: a constant cqe;
//! [`CqeFirst`]: a type that carries its own cqe); reading a work
//! completion.

use core::marker::PhantomData;

use kernel::prelude::*;
use kernel::types::Opaque;

use crate::bindings;

/// `ib_wc_status_msg(status)`, for logs.
pub(crate) fn wc_status_msg(status: bindings::ib_wc_status) -> &'static CStr {
    // SAFETY: ib_wc_status_msg returns a static NUL-terminated string for
    // any value.
    unsafe { CStr::from_char_ptr(bindings::ib_wc_status_msg(status)) }
}

/// `be32_to_cpu(wc->ex.imm_data)`: the immediate of a completion with
/// IB_WC_WITH_IMM (the invalidated rkey with IB_WC_WITH_INVALIDATE).
pub(crate) fn wc_imm_data(wc: &bindings::ib_wc) -> u32 {
    // SAFETY: Both members of `ex` are 32-bit integers, valid for any bits.
    u32::from_be(unsafe { wc.ex.imm_data })
}

/// Completions of requests posted with the cqe [`static_cqe::<Self>`],
/// which carries nothing but its handler: the QP's owner (its
/// `qp_context`) is all `done` gets.
///
/// `done` runs in the CQ's context: softirq for IRQ connections, so it
/// must not sleep.
pub(crate) trait CqeHandler: 'static {
    /// The QP context type (`qp_context`, see [`Qp`](super::Qp)).
    type Ctx: Sync;
    /// Handles one work completion.
    fn done(ctx: &Self::Ctx, wc: &bindings::ib_wc);
}

/// The cqe of a [`CqeHandler`]: a constant, since it names only its
/// handler (the verbs core only reads a cqe, to call its `done`).
#[repr(C)]
struct StaticCqe<H> {
    cqe: bindings::ib_cqe,
    _h: PhantomData<fn(&H)>,
}

impl<H: CqeHandler> StaticCqe<H> {
    /// The one value of this type.
    const CQE: &'static Self = &Self {
        cqe: bindings::ib_cqe {
            done: Some(first_cqe_done::<Self>),
        },
        _h: PhantomData,
    };
}

// SAFETY: `StaticCqe` is `#[repr(C)]` with its `ib_cqe` first, whose `done`
// is this trampoline (`CQE` is its only value); it is posted only on a
// `Qp<H::Ctx>` (`static_cqe`'s contract) and, a constant, never goes away.
unsafe impl<H: CqeHandler> CqeFirst for StaticCqe<H> {
    type Ctx = H::Ctx;
    fn done(ctx: &H::Ctx, _this: &Self, wc: &bindings::ib_wc) {
        H::done(ctx, wc);
    }
}

/// The `wr_cqe` whose completions go to `H::done`: post it only on a
/// `Qp<H::Ctx>`. A constant, so it outlives any request.
pub(crate) fn static_cqe<H: CqeHandler>() -> *mut bindings::ib_cqe {
    let c: *const StaticCqe<H> = StaticCqe::<H>::CQE;
    // The verbs core does not write through it.
    c.cast_mut().cast()
}

/// The `ib_cqe` first in a [`CqeFirst`] type: set to the type's trampoline
/// when made, then only read, by the verbs core, to call it.
#[repr(transparent)]
pub(crate) struct Cqe(Opaque<bindings::ib_cqe>);

// SAFETY: Written only by `of`; afterwards nothing but the verbs core reads
// it (its `done`, a function pointer), from any CPU.
unsafe impl Send for Cqe {}
// SAFETY: As above: shared reads only.
unsafe impl Sync for Cqe {}

impl Cqe {
    /// The cqe of `T`: its `done` is `first_cqe_done::<T>`.
    pub(crate) fn of<T: CqeFirst>() -> Self {
        Self(Opaque::new(bindings::ib_cqe {
            done: Some(first_cqe_done::<T>),
        }))
    }

    /// The `wr_cqe` to post.
    pub(crate) fn as_ptr(&self) -> *mut bindings::ib_cqe {
        self.0.get()
    }
}

/// Types whose completions carry themselves: a `#[repr(C)]` struct with an
/// `ib_cqe` first, posted as `wr_cqe` (an [`Iu`](super::Iu), an IO request
/// slot, a [`CqeHandler`]'s constant cqe).
///
/// # Safety
///
/// `Self` is `#[repr(C)]` with an `ib_cqe` (or `Opaque<ib_cqe>`) first,
/// whose `done` is [`first_cqe_done::<Self>`]; it is posted only on a
/// `Qp<Self::Ctx>` and stays alive until its QP is drained.
pub(crate) unsafe trait CqeFirst: Sync + Sized {
    /// The QP context type (`qp_context`).
    type Ctx: Sync;
    /// Handles the work completion of `this`, in the CQ's context.
    fn done(ctx: &Self::Ctx, this: &Self, wc: &bindings::ib_wc);
}

/// The `ib_cqe.done` trampoline of a [`CqeFirst`] type.
///
/// # Safety
///
/// Called by the CQ core with a completion whose `wr_cqe` is the first
/// field of a live `T` (the `CqeFirst` contract).
pub(crate) unsafe extern "C" fn first_cqe_done<T: CqeFirst>(
    _cq: *mut bindings::ib_cq,
    wc: *mut bindings::ib_wc,
) {
    // SAFETY: The CQ core passes a valid work completion, with `qp` set to
    // the QP the request was posted on (for every completion, flushed ones
    // too: rtrs-clt.c's handlers read `wc->qp->qp_context` the same way);
    // by the `CqeFirst` contract `wr_cqe` points to the first field of a
    // live `T`, posted on a QP whose `qp_context` is a live `T::Ctx`.
    let (wc, this, ctx) = unsafe {
        let wc = &*wc;
        let this = &*wc.__bindgen_anon_1.wr_cqe.cast::<T>();
        (wc, this, &*(*wc.qp).qp_context.cast::<T::Ctx>())
    };
    T::done(ctx, this, wc);
}
