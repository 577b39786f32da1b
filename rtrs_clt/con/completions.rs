// SPDX-License-Identifier: GPL-2.0

//! A connection's completions (`rtrs_clt_rdma_done` and the INFO
//! exchange's), in the CQ's context: softirq for IRQ connections, so no
//! lock and no sleep; and the IO path's handle on a connection.

use core::sync::atomic::Ordering;

use kernel::prelude::*;

use crate::bindings;
use crate::ffi::error::econnaborted;
use crate::ffi::log::{pr_err_rl, pr_warn_rl};
use crate::ffi::sync::RcuGuard;
use crate::ffi::verbs::{wc_imm_data, wc_status_msg, CqeHandler, Iu, IuDone, Qp, RingDone, RingIu};
use crate::io::IoCon;
use crate::rtrs_core::imm::{self, ImmError, RtrsImm};
use crate::rtrs_core::path_state::{self, StateReason};
use crate::rtrs_core::proto::{RtrsMsgRkeyRsp, WireError};
use crate::stats::PathStats;

use super::path_shared::INFO_RSP_ERR;
use super::{Con, ConQp, IoCtx, INFO_RSP_OK};

/// `io_comp_cqe` of C (a constant here, see `verbs::static_cqe`): empty
/// receives and heartbeat acks (`rtrs_clt_rdma_done` without a buffer).
pub(super) struct IoCompDone;

impl CqeHandler for IoCompDone {
    type Ctx = Con;
    #[inline(always)]
    fn done(con: &Con, wc: &bindings::ib_wc) {
        con.rdma_done(wc, None);
    }
}

impl Con {
    /// `rtrs_clt_rdma_done`: IO responses (IMM or, with NEW_RKEY, the
    /// RKEY_RSP send), heartbeats, server invalidations, and errors, which go
    /// to error recovery. Softirq for IRQ connections: no locks, no sleep.
    /// Inline, also into the receive ring's CQE trampoline: the dispatch
    /// alone, each kind of receive its own call, so that a server
    /// invalidation's receive saves no registers before its repost.
    #[inline(always)]
    fn rdma_done(&self, wc: &bindings::ib_wc, iu: Option<RingIu<'_, RdmaDone>>) {
        if wc.status != bindings::ib_wc_status_IB_WC_SUCCESS {
            self.wc_failed(wc.status);
            return;
        }
        let path = self.path();
        path.stats.update_wc(self.cpu);
        match wc.opcode {
            bindings::ib_wc_opcode_IB_WC_RECV_RDMA_WITH_IMM => self.imm_done(wc, iu),
            bindings::ib_wc_opcode_IB_WC_RECV => {
                // Key invalidations from the server, or RKEY_RSP.
                path.reset_hb_missed();
                if path.new_rkey.load(Ordering::Acquire) {
                    let inval = bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE as kernel::ffi::c_int;
                    match (wc.wc_flags & inval != 0, iu) {
                        (true, Some(iu)) => self.recv_done(iu),
                        (false, Some(iu)) => self.rkey_rsp_done(wc, iu),
                        (true, None) => self.recv_without_buffer(),
                        (false, None) => self.rkey_rsp_without_buffer(),
                    }
                }
            }
            bindings::ib_wc_opcode_IB_WC_RDMA_WRITE => {}
            op => self.unexpected_wc(op),
        }
    }

    /// `rtrs_clt_rdma_done` of a failed work request.
    #[cold]
    #[inline(never)]
    fn wc_failed(&self, status: bindings::ib_wc_status) {
        if status != bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR {
            let msg = wc_status_msg(status);
            pr_err_rl!("{}: RDMA failed: {}\n", self.sess(), msg);
            self.error_recovery();
        }
    }

    #[cold]
    #[inline(never)]
    fn unexpected_wc(&self, op: bindings::ib_wc_opcode) {
        pr_warn_rl!("{}: Unexpected WC type: {}\n", self.sess(), op);
    }

    /// `rtrs_clt_rdma_done` of IB_WC_RECV_RDMA_WITH_IMM: an IO response or
    /// a heartbeat. One read-side section for the IO context and the
    /// empty receives.
    #[inline(never)]
    fn imm_done(&self, wc: &bindings::ib_wc, iu: Option<RingIu<'_, RdmaDone>>) {
        let path = self.path();
        path.reset_hb_missed();
        let g = RcuGuard::new();
        let io = path.io(&g);
        let qd = io.map_or(0, IoCtx::queue_depth);
        // Whether this IMM used the receive of a SEND_WITH_INV too.
        let w_inval = match RtrsImm::decode(wc_imm_data(wc), qd) {
            Ok(RtrsImm::IoRsp {
                msg_id,
                errno,
                w_inval,
            }) => {
                // Decoded against `io`'s depth: `io` is there.
                if let Some(io) = io {
                    io.process_io_rsp(self, &g, msg_id, errno, w_inval);
                }
                w_inval
            }
            Err(ImmError::BadMsgId { msg_id, w_inval }) => {
                self.bad_msg_id(io.is_some(), msg_id);
                w_inval
            }
            Ok(hb @ (RtrsImm::HbMsg | RtrsImm::HbAck)) => {
                self.hb_done(hb);
                if path.new_rkey.load(Ordering::Acquire) {
                    match iu {
                        Some(iu) => self.recv_done_in(iu, g),
                        None => {
                            drop(g);
                            self.recv_without_buffer();
                        }
                    }
                    return;
                }
                false
            }
            Err(ImmError::BadType { imm_type }) => {
                self.bad_imm_type(imm_type);
                false
            }
        };
        // As C: empty receives in place of what completed, whether it came
        // into a buffer or not (a buffer is not posted again here): one for
        // this IMM, and for a W_INV response one more for the SEND_WITH_INV
        // that came before it (rtrs_post_recv_empty_x2, one chain).
        drop(iu);
        let res = match self.qp(&g) {
            Some(q) => q.qp().post_recv_empty_n::<IoCompDone>(w_inval),
            None => Err(econnaborted()),
        };
        drop(g);
        if let Err(e) = res {
            self.post_recv_empty_failed(e);
        }
    }

    /// An empty receive not posted: quiet once teardown took the QP or
    /// drains it (nothing more is posted on it), else error recovery.
    #[cold]
    #[inline(never)]
    fn post_recv_empty_failed(&self, e: Error) {
        if e == econnaborted() {
            return;
        }
        pr_err_rl!(
            "{}: rtrs_post_recv_empty(): {}\n",
            self.sess(),
            e.to_errno()
        );
        self.error_recovery();
    }

    #[cold]
    #[inline(never)]
    fn bad_msg_id(&self, io_set_up: bool, msg_id: u32) {
        if io_set_up {
            pr_err_rl!("{}: IO response for bad msg_id {}\n", self.sess(), msg_id);
        } else {
            pr_warn_rl!("{}: IO response {} before IO set-up\n", self.sess(), msg_id);
        }
    }

    #[cold]
    #[inline(never)]
    fn bad_imm_type(&self, imm_type: u32) {
        pr_warn_rl!("{}: Unknown IMM type {}\n", self.sess(), imm_type);
    }

    /// A heartbeat (HB_MSG: acked) or its ack (HB_ACK: the latency).
    #[inline(never)]
    fn hb_done(&self, hb: RtrsImm) {
        let path = self.path();
        if hb == RtrsImm::HbMsg {
            path.hb_msgs_rx.fetch_add(1, Ordering::Relaxed);
            self.send_hb_ack();
        } else {
            let now = crate::ffi::misc::ktime_get_ns();
            let sent = path.hb_last_sent_ns.load(Ordering::Relaxed);
            let asked = path.hb_outstanding.swap(false, Ordering::AcqRel);
            match path_state::hb_ack_latency(asked, now, sent) {
                Some(ns) => path.set_hb_cur_latency(ns),
                None => pr_warn_rl!(
                    "{}: HB_ACK without a heartbeat outstanding, ignored\n",
                    self.sess()
                ),
            }
        }
    }

    /// `rtrs_clt_recv_done`: posts the NEW_RKEY receive buffer again. Its
    /// own read-side section begins here, not in the ring's trampoline,
    /// which then saves no registers for it.
    #[inline(never)]
    fn recv_done(&self, iu: RingIu<'_, RdmaDone>) {
        self.repost_recv(iu, RcuGuard::new());
    }

    /// [`Con::recv_done`] in the caller's read-side section `g`, which it
    /// ends: one section for a receive's processing and its repost.
    #[inline(never)]
    fn recv_done_in(&self, iu: RingIu<'_, RdmaDone>, g: RcuGuard) {
        self.repost_recv(iu, g);
    }

    #[inline(always)]
    fn repost_recv(&self, iu: RingIu<'_, RdmaDone>, g: RcuGuard) {
        // Through the published QP, under RCU: teardown takes it out and
        // waits for this section before it drains, so the post needs no
        // count (`RingIu::post_recv_on`).
        let res = match self.qp(&g) {
            Some(ring) => iu.post_recv_on(ring),
            None => Err(econnaborted()),
        };
        drop(g);
        if let Err(e) = res {
            self.post_iu_failed(e);
        }
    }

    #[cold]
    #[inline(never)]
    fn recv_without_buffer(&self) {
        pr_err_rl!("{}: receive without buffer in NEW_RKEY mode\n", self.sess());
        self.error_recovery();
    }

    /// A receive buffer not posted again: quiet once the QP is being
    /// drained (teardown: nothing more is posted), else error recovery.
    #[cold]
    #[inline(never)]
    fn post_iu_failed(&self, e: Error) {
        if e == econnaborted() {
            return;
        }
        pr_err_rl!("{}: post iu failed {}\n", self.sess(), e.to_errno());
        self.error_recovery();
    }

    /// `rtrs_clt_rkey_rsp_done` without its buffer.
    #[cold]
    #[inline(never)]
    fn rkey_rsp_without_buffer(&self) {
        pr_err_rl!("{}: rkey response without buffer\n", self.sess());
        self.error_recovery();
    }

    /// `rtrs_clt_rkey_rsp_done`: the new rkey of a chunk, then the IO response.
    #[inline(never)]
    fn rkey_rsp_done(&self, wc: &bindings::ib_wc, iu: RingIu<'_, RdmaDone>) {
        let path = self.path();
        let len = usize::try_from(wc.byte_len).unwrap_or(usize::MAX);
        let msg = match iu.data_for_cpu().get(..len).map(RtrsMsgRkeyRsp::decode) {
            Some(Ok(m)) => m,
            Some(Err(WireError::Truncated { .. })) => {
                pr_err_rl!(
                    "{}: rkey response is malformed: size {}\n",
                    self.sess(),
                    wc.byte_len
                );
                self.error_recovery();
                return;
            }
            _ => {
                pr_err_rl!("{}: rkey response is malformed\n", self.sess());
                self.error_recovery();
                return;
            }
        };
        let g = RcuGuard::new();
        let io = path.io(&g);
        let qd = io.map_or(0, IoCtx::queue_depth);
        // The IO response this message comes with, if any: a bad id
        // included, which the buf_id check refuses.
        let (msg_id, rsp) = match RtrsImm::decode(wc_imm_data(wc), qd) {
            Ok(RtrsImm::IoRsp {
                msg_id,
                errno,
                w_inval,
            }) => (Some(msg_id), Some((errno, w_inval))),
            Err(ImmError::BadMsgId { msg_id, .. }) => (Some(msg_id), None),
            Ok(RtrsImm::HbMsg | RtrsImm::HbAck) | Err(ImmError::BadType { .. }) => (None, None),
        };
        if let Some(msg_id) = msg_id {
            let Some(io) = io else {
                self.error_recovery();
                return;
            };
            if let Err(e) = msg.check(qd, msg_id) {
                pr_err_rl!("{}: rkey response: {}\n", self.sess(), e);
                self.error_recovery();
                return;
            }
            io.process_rkey_rsp(self, &g, msg_id, msg.rkey, rsp);
        }
        iu.sync_for_device();
        self.recv_done_in(iu, g);
    }

    /// `rtrs_send_hb_ack`: an empty RDMA_WRITE_WITH_IMM carrying HB_ACK on
    /// this (cid 0) QP, signaled every `signal_interval` sends.
    fn send_hb_ack(&self) {
        match self.post_imm_empty(imm::RTRS_HB_ACK_IMM_VAL) {
            Ok(()) => {}
            // Teardown took the QP.
            Err(e) if e == econnaborted() => {}
            Err(e) => {
                pr_err_rl!(
                    "{}: send HB ACK failed, errno: {}\n",
                    self.sess(),
                    e.to_errno()
                );
                self.error_recovery();
            }
        }
    }

    /// `rtrs_post_rdma_write_imm_empty` on `io_comp_cqe`; ECONNABORTED
    /// once the QP is unpublished or being drained.
    pub(crate) fn post_imm_empty(&self, imm_val: u32) -> Result {
        let flags = self.next_send_flags();
        let g = RcuGuard::new();
        let q = self.qp(&g).ok_or_else(econnaborted)?;
        q.qp().post_imm_empty::<IoCompDone>(imm_val, flags)
    }
}

// ---------------------------------------------------------------------------
// The IO path's handle, and the IU completion handlers
// ---------------------------------------------------------------------------

/// The IO path's handle on a connection.
impl IoCon for Con {
    fn sess(&self) -> &CStr {
        &self.path().sessname
    }

    fn qp<'a>(&'a self, g: &'a RcuGuard) -> Option<&'a Qp<Self>> {
        Con::qp(self, g).map(ConQp::qp)
    }

    fn next_send_flags(&self) -> kernel::ffi::c_int {
        let si = self.path().signal_interval.load(Ordering::Acquire).max(1);
        let cnt = self.wr_cnt.fetch_add(1, Ordering::AcqRel).wrapping_add(1);
        if cnt.checked_rem(si) == Some(0) {
            bindings::ib_send_flags_IB_SEND_SIGNALED as kernel::ffi::c_int
        } else {
            0
        }
    }

    fn stats(&self) -> &PathStats {
        &self.path().stats
    }

    fn error_recovery(&self) {
        Con::error_recovery(self);
    }

    fn io<'a>(&'a self, g: &'a RcuGuard) -> Option<&'a IoCtx> {
        self.path().io(g)
    }

    fn req_iu_done(&self, wc: &bindings::ib_wc) {
        self.rdma_done(wc, None);
    }
}

/// `rtrs_clt_rdma_done` for the `rsp_ius`.
pub(crate) struct RdmaDone;

impl RingDone for RdmaDone {
    type Ctx = Con;
    #[inline(always)]
    fn done(con: &Con, iu: Option<RingIu<'_, Self>>, wc: &bindings::ib_wc) {
        con.rdma_done(wc, iu);
    }
}

/// `rtrs_clt_info_req_done`.
pub(crate) struct InfoReqDone;

impl IuDone for InfoReqDone {
    type Ctx = Con;
    type State = ();
    fn done(con: &Con, _iu: &Iu<Self>, wc: &bindings::ib_wc) {
        if wc.status != bindings::ib_wc_status_IB_WC_SUCCESS {
            let msg = wc_status_msg(wc.status);
            pr_err_rl!("{}: Path info request send failed: {}\n", con.sess(), msg);
            con.path()
                .update_state(StateReason::ConnectFailed, path_state::connect_failed);
        }
    }
}

/// `rtrs_clt_info_rsp_done`, first half: record the result (softirq, no
/// locks); `PathConns::send_path_info` validates and processes it.
pub(crate) struct InfoRspDone;

impl IuDone for InfoRspDone {
    type Ctx = Con;
    type State = ();
    fn done(con: &Con, _iu: &Iu<Self>, wc: &bindings::ib_wc) {
        let path = con.path();
        if wc.status != bindings::ib_wc_status_IB_WC_SUCCESS {
            if wc.status != bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR {
                let msg = wc_status_msg(wc.status);
                pr_err_rl!("{}: Path info response recv failed: {}\n", con.sess(), msg);
            }
            path.info_rsp.store(INFO_RSP_ERR, Ordering::Release);
        } else if wc.opcode != bindings::ib_wc_opcode_IB_WC_RECV {
            pr_err_rl!(
                "{}: Path info response: unexpected opcode {}\n",
                con.sess(),
                wc.opcode
            );
            path.info_rsp.store(INFO_RSP_ERR, Ordering::Release);
        } else {
            path.info_rsp_len.store(wc.byte_len, Ordering::Relaxed);
            path.info_rsp.store(INFO_RSP_OK, Ordering::Release);
        }
        path.state_changed.complete();
    }
}
