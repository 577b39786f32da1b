// SPDX-License-Identifier: GPL-2.0

//! A connection of a client path (`struct rtrs_clt_con`: its CM handler,
//! QP and CQ completions) and what survives a path's reconnects
//! ([`PathShared`]: state, server parameters, IO context, statistics; the
//! path's works live in `path::SessPath`).
//!
//! CM handlers run in process context; CQ callbacks in softirq for IRQ
//! connections, so they take no lock. Both reach a `Con` (the cm id's and
//! QP's context) that outlives its cm id and QP (see `path::conns::ConSlot`).
//!
//! One layer, as each names the other (a connection's path; a path's IO
//! context, on its connections). The files: this one (`Con` and its
//! `ConQp`), `cm_handler` (its CM and QP events: the QP's creation on
//! ADDR_RESOLVED, the connect request, ESTABLISHED, REJECTED), `completions`
//! (its CQ completions: IO responses, heartbeats, rkeys, the INFO exchange;
//! the IO path's handle on it) and `path_shared` (`PathShared`).

use core::sync::atomic::{AtomicI32, AtomicU32, Ordering};

use kernel::error::Error;
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};

use crate::ffi::sync::{Completion, RcuBox, RcuGuard, Retired};
use crate::ffi::trace;
use crate::ffi::verbs::{DevRef, QpRing};
use crate::io;
use crate::rtrs_core::path_state::StateReason;

mod cm_handler;
mod completions;
mod path_shared;

pub(crate) use completions::{InfoReqDone, InfoRspDone};
use completions::{IoCompDone, RdmaDone};
pub(crate) use path_shared::{
    PathArgs, PathInner, PathLink, PathRecovery, PathShared, PolicyGen, RtrsCltState,
    INFO_RSP_NONE, INFO_RSP_OK,
};

/// A path's IO context, on its connections.
pub(crate) type IoCtx = io::IoCtx<Con>;

/// What `create_con_cq_qp` makes of a connection under `Con::con_mutex`
/// (the QP, CQ and IUs are in `Con::qp`).
#[derive(Default)]
pub(crate) struct ConInner {
    /// Set before teardown; a late ADDR_RESOLVED then creates nothing.
    pub(crate) destroyed: bool,
    /// This connection's device reference (`dev_ref` of C); it outlives
    /// the QP, CQ and IUs, which use its PD.
    pub(crate) dev: Option<DevRef>,
}

/// A connection's QP with the CQ it completes on and the receive buffers
/// posted on it (`create_con_cq_qp`): `rsp_ius`, 8-byte receive buffers
/// (cid 0 always, IO cons in NEW_RKEY mode).
pub(crate) type ConQp = QpRing<Con, RdmaDone>;

impl ConQp {
    /// A receive into `rsp_ius[i]` (NEW_RKEY mode, and cid 0), or without
    /// a buffer on `io_comp_cqe` (`rtrs_post_recv_empty`).
    pub(crate) fn post_recv(&self, i: Option<usize>) -> Result {
        match i {
            Some(i) => self.post_ring_recv(i),
            None => self.qp().post_recv_empty::<IoCompDone>(),
        }
    }
}

/// One connection (`struct rtrs_clt_con`): the cm id's and the QP's context.
#[pin_data]
pub(crate) struct Con {
    pub(crate) cid: u16,
    /// `con->cpu`.
    cpu: u32,
    /// The path this connection belongs to.
    path: Arc<PathShared>,
    /// Its recovery and close works.
    up: Arc<dyn PathRecovery>,
    /// `cm_err`: 0 pending, 1 established, < 0 errno.
    pub(crate) cm_err: AtomicI32,
    /// `c.wr_cnt`, for send signaling.
    wr_cnt: AtomicU32,
    /// The PD's `local_dma_lkey`, set before the QP is created.
    lkey: AtomicU32,
    /// Completed whenever `cm_err` becomes non-zero (or the path closes).
    #[pin]
    pub(crate) cm_done: Completion,
    /// The QP with its CQ and receive buffers (`c.qp`, `c.cq`), published
    /// for posting and polling from any context under an `RcuGuard`; set
    /// once by `create_con_cq_qp`, taken out by teardown.
    qp: RcuBox<ConQp>,
    #[pin]
    pub(crate) con_mutex: Mutex<ConInner>,
}

impl Con {
    pub(crate) fn new(
        cid: u16,
        cpu: u32,
        path: Arc<PathShared>,
        up: Arc<dyn PathRecovery>,
    ) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            cid,
            cpu,
            path,
            up,
            cm_err: AtomicI32::new(0),
            wr_cnt: AtomicU32::new(1),
            lkey: AtomicU32::new(0),
            cm_done <- Completion::new(),
            qp: RcuBox::empty(),
            con_mutex <- new_mutex!(ConInner::default(), "rtrs_rs_con_mutex"),
        }? Error)
    }

    /// `rtrs_rdma_error_recovery` of this connection's path. Any context.
    pub(crate) fn error_recovery(&self) {
        self.path
            .trace_conn(trace::Kind::ErrorRecovery, self.up.max_reconnect_attempts());
        if self.path.start_error_recovery(StateReason::ErrorRecovery) {
            self.up.as_arc_borrow().queue_err_recovery();
        }
    }

    /// `rtrs_clt_close_conns(path, false)` from any context: CLOSING, and
    /// the close work does the rest.
    fn close_nowait(&self) {
        if self.path.start_closing() {
            self.up.as_arc_borrow().queue_close();
        }
    }

    /// `ib_process_cq_direct(con->cq, -1)` of a poll connection: the number
    /// of completions processed, 0 if this is not a poll connection, it is
    /// being torn down, or another caller is polling it right now.
    pub(crate) fn poll_direct(&self) -> i32 {
        let g = RcuGuard::new();
        self.qp.get(&g).map_or(0, |q| q.cq().process_direct())
    }

    /// The QP, CQ and receive buffers while `g` is held, once created.
    pub(crate) fn qp<'a>(&'a self, g: &'a RcuGuard) -> Option<&'a ConQp> {
        self.qp.get(g)
    }

    /// Unpublishes the QP (teardown): nobody posts on it or polls its CQ
    /// once a grace period has passed.
    pub(crate) fn take_qp(&self) -> Retired<ConQp> {
        self.qp.replace(None)
    }

    pub(crate) fn path(&self) -> &PathShared {
        &self.path
    }

    /// `flag_success_on_conn`.
    fn flag_success_on_conn(&self) {
        self.path().connected_cnt.fetch_add(1, Ordering::AcqRel);
        self.cm_err.store(1, Ordering::Release);
    }

    /// `flag_error_on_conn`.
    fn flag_error_on_conn(&self, cm_err: i32) {
        if self.cm_err.load(Ordering::Acquire) == 1
            && self.path().connected_cnt.fetch_sub(1, Ordering::AcqRel) == 1
        {
            self.path().all_disconnected.complete();
        }
        self.cm_err.store(cm_err, Ordering::Release);
    }

    /// The PD's local DMA lkey, for reposting receives from CQ callbacks
    /// (which must not take `con_mutex`).
    pub(crate) fn lkey(&self) -> u32 {
        self.lkey.load(Ordering::Acquire)
    }
}
