// SPDX-License-Identifier: GPL-2.0

//! The connections of one client path, their set-up and their teardown, as
//! rtrs-clt.c does it (init_conns, create_cm, rtrs_send_path_info,
//! rtrs_clt_stop_and_destroy_conns); a connection's own QP and CQ are made
//! in `con` (create_con_cq_qp).

use core::pin::Pin;
use core::sync::atomic::Ordering;

use kernel::error::Error;
use kernel::prelude::*;
use kernel::str::BStr;
use kernel::sync::Arc;

use crate::bindings;
use crate::con::{
    Con, InfoReqDone, InfoRspDone, IoCtx, PathRecovery, PathShared, RtrsCltState, INFO_RSP_NONE,
    INFO_RSP_OK,
};
use crate::ffi::cm::CmId;
use crate::ffi::dev_event::{DevEvent, DevEventHandler, DevEvents};
use crate::ffi::error::{econnaborted, econnreset, etimedout};
use crate::ffi::sync::{RcuGuard, Retired, WaitResult};
use crate::ffi::trace;
use crate::ffi::verbs::{DevRef, Iu};
use crate::io::IoCon;
use crate::rtrs_core::path_state::{self, ConnectStage, DevEventAction, StateReason};
use crate::rtrs_core::proto::{
    RtrsCltConQueues, RtrsMsgInfoReq, RtrsMsgInfoRsp, RTRS_CONNECT_TIMEOUT_MS,
};

/// A connection's cm id, which holds the connection (its context).
///
/// Drop order: teardown has taken the QP (with its CQ and IUs) out and
/// destroyed it; `ConSlot::drop` marks the connection destroyed, destroys a
/// QP made since, and puts the device reference (under `con_mutex`); then
/// the cm id is destroyed (waiting for a running handler); then the
/// connection is freed (`CmId`).
struct ConSlot {
    cm_id: CmId<Con>,
}

impl ConSlot {
    fn con(&self) -> &Con {
        self.cm_id.owner()
    }
}

impl Drop for ConSlot {
    fn drop(&mut self) {
        let con = self.con();
        let mut inner = con.con_mutex.lock();
        inner.destroyed = true;
        // Taken out by teardown already, unless a late ADDR_RESOLVED made
        // one since: it goes before the cm id.
        drop(con.take_qp());
        drop(inner.dev.take());
    }
}

/// The INFO_REQ/INFO_RSP buffers of `rtrs_send_path_info`. Kept until the
/// QPs are drained (C frees them in their completions).
struct InfoIus {
    tx: Pin<KBox<Iu<InfoReqDone>>>,
    rx: Pin<KBox<Iu<InfoRspDone>>>,
}

/// A connected generation's watch on its device: a port or GID event that
/// ends the path starts error recovery at once (see rtrs_core's
/// `dev_event_action`), where C only logs it and waits for the heartbeat.
pub(crate) struct PortWatch {
    shared: Arc<PathShared>,
    up: Arc<dyn PathRecovery>,
    /// `hca_port` of cid 0.
    port: u32,
}

impl PortWatch {
    /// Watches the device of connected `shared`. Without it (no device
    /// recorded, ENOMEM) the path goes on; the heartbeat still notices.
    fn start(
        shared: &Arc<PathShared>,
        up: Arc<dyn PathRecovery>,
    ) -> Option<Pin<KBox<DevEvents<PortWatch>>>> {
        let (dev, port) = {
            let inner = shared.inner.lock();
            let dev: Option<DevRef> = inner.dev.as_ref().and_then(|d| d.try_clone().ok());
            (dev, inner.hca_port)
        };
        // The source address cid 0's route resolved to.
        let src = shared.src_addr();
        let w = PortWatch {
            shared: shared.clone(),
            up,
            port,
        };
        DevEvents::register(&dev?, port, &src, w)
            .inspect_err(|e| {
                pr_warn!(
                    "{}: cannot watch the device's port events: {}\n",
                    &*shared.sessname,
                    e.to_errno()
                )
            })
            .ok()
    }
}

impl DevEventHandler for PortWatch {
    fn event(&self, ev: DevEvent) {
        let act = path_state::dev_event_action(ev.kind, ev.port, self.port, || ev.src_gid_present);
        if act == DevEventAction::Recover {
            pr_warn!(
                "{}: path {}: {} on port {}, starting recovery\n",
                &*self.shared.sessname,
                BStr::from_bytes(self.shared.name().as_bytes()),
                ev.kind.name(),
                ev.port
            );
            if self.shared.start_error_recovery(StateReason::PortEvent) {
                self.up.as_arc_borrow().queue_err_recovery();
            }
        }
        if trace::on(trace::Kind::PortEvent) {
            trace::emit(&trace::Event::Device {
                path: self.shared.name().as_bytes(),
                event: ev.kind.name(),
                port: ev.port,
                state: self.shared.state() as u8,
            });
        }
    }
}

/// Why [`PathConns::connect`] failed: the stage, the connection and the
/// C client's errno.
pub(crate) struct ConnectError {
    pub(crate) stage: ConnectStage,
    pub(crate) cid: u16,
    pub(crate) err: Error,
}

/// The connections of a client path (`struct rtrs_clt_path` minus what
/// survives a reconnect, which is in [`PathShared`]), connected by
/// [`PathConns::connect`] and torn down by [`PathConns::teardown`] or drop.
pub(crate) struct PathConns {
    /// In creation order (cid).
    cons: KVec<ConSlot>,
    info_ius: Option<InfoIus>,
    shared: Arc<PathShared>,
    /// The device's events while connected (see [`PortWatch`]).
    watch: Option<Pin<KBox<DevEvents<PortWatch>>>>,
}

impl PathConns {
    /// `init_conns` + `rtrs_send_path_info` for `shared`, which is
    /// CONNECTING: connects one admin connection, one per CPU id and the
    /// poll ones, does the INFO exchange and allocates the request slots;
    /// the caller publishes the connections, then makes the path
    /// CONNECTED. On error everything is torn down, the
    /// path is CONNECTING_ERR (so a reconnect can take it, as C's
    /// `init_conns` and `rtrs_send_path_info` leave it) and the C client's
    /// errno returned. The connections hold `up` (their path) until they go.
    pub(crate) fn connect(
        shared: &Arc<PathShared>,
        up: Arc<dyn PathRecovery>,
    ) -> core::result::Result<KBox<Self>, ConnectError> {
        shared.recon_cnt.fetch_add(1, Ordering::Relaxed);
        // Out of CONNECTING before the teardown: its disconnects are ours,
        // not the server's.
        let failed = |e: ConnectError| {
            shared.update_state(StateReason::ConnectFailed, path_state::connect_failed);
            e
        };
        let mut path = KBox::new(
            PathConns {
                cons: KVec::new(),
                info_ius: None,
                shared: shared.clone(),
                watch: None,
            },
            GFP_KERNEL,
        )
        .map_err(|e| {
            failed(ConnectError {
                stage: ConnectStage::CreateCm,
                cid: 0,
                err: e.into(),
            })
        })?;
        // On error `path` is torn down after the state change.
        path.connect_steps(&up).map_err(failed)?;
        path.watch = PortWatch::start(shared, up);
        Ok(path)
    }

    /// The steps of [`PathConns::connect`].
    fn connect_steps(
        &mut self,
        up: &Arc<dyn PathRecovery>,
    ) -> core::result::Result<(), ConnectError> {
        let at = |stage| move |err| ConnectError { stage, cid: 0, err };
        self.init_conns(up)?;
        self.send_path_info().map_err(at(ConnectStage::PathInfo))?;
        self.alloc_reqs().map_err(at(ConnectStage::AllocReqs))
    }

    /// What CM handlers and CQ callbacks share.
    pub(crate) fn shared(&self) -> &PathShared {
        &self.shared
    }

    /// Connection `cid`.
    pub(crate) fn con(&self, cid: usize) -> Option<&Con> {
        self.cons.get(cid).map(ConSlot::con)
    }

    /// `alloc_path_reqs` plus the lock-free copy of the rbufs, once the
    /// INFO response has filled them.
    fn alloc_reqs(&mut self) -> Result {
        let io = {
            let shared = self.shared();
            let pinner = shared.inner.lock();
            let params = pinner.params.ok_or(EINVAL)?;
            let dev = pinner.dev.as_ref().ok_or(EINVAL)?;
            IoCtx::new(
                &shared.sessname,
                dev,
                &params,
                pinner.rbufs.as_slice(),
                pinner.max_pages_per_mr,
            )?
        };
        // Nothing was published before (a fresh connect); else the old one
        // goes after a grace period.
        drop(self.shared().io.replace(Some(io)));
        Ok(())
    }

    /// `init_conns`: creates and connects each connection in cid order.
    fn init_conns(&mut self, up: &Arc<dyn PathRecovery>) -> core::result::Result<(), ConnectError> {
        for cid in 0..self.shared.con_num {
            self.init_con(up, cid).map_err(|err| ConnectError {
                stage: ConnectStage::CreateCm,
                cid,
                err,
            })?;
        }
        Ok(())
    }

    /// One connection of `init_conns`: created, resolved and connected.
    fn init_con(&mut self, up: &Arc<dyn PathRecovery>, cid: u16) -> Result {
        // Not borrowed from `self`: the connections change meanwhile.
        let shared = self.shared.clone();
        let nr_cpus = u32::from(shared.irq_con_num.saturating_sub(1)).max(1);
        // Connections 0 and 1 both go to the first CPU.
        let cpu = u32::from(cid.saturating_sub(1))
            .checked_rem(nr_cpus)
            .unwrap_or(0);
        let con = KBox::pin_init(Con::new(cid, cpu, shared.clone(), up.clone()), GFP_KERNEL)?;
        let family = shared.dst_addr.family();
        let ps = if u32::from(family) == kernel::bindings::AF_IB {
            bindings::rdma_ucm_port_space_RDMA_PS_IB
        } else {
            bindings::rdma_ucm_port_space_RDMA_PS_TCP
        };
        let cm_id = CmId::create(con, ps, bindings::ib_qp_type_IB_QPT_RC).inspect_err(|e| {
            pr_err!(
                "{}: Failed to create CM ID, err: {}\n",
                &*shared.sessname,
                e.to_errno()
            )
        })?;
        self.cons.push(ConSlot { cm_id }, GFP_KERNEL)?;
        let slot = self.cons.last().ok_or(EINVAL)?;
        Self::create_cm(&shared, slot)
    }

    /// `create_cm`, after the id exists: resolve and wait for the outcome.
    fn create_cm(shared: &PathShared, slot: &ConSlot) -> Result {
        let sess = &*shared.sessname;
        slot.cm_id.set_reuseaddr(true).inspect_err(|e| {
            pr_err!(
                "{}: Set address reuse failed, err: {}\n",
                sess,
                e.to_errno()
            )
        })?;
        slot.cm_id
            .resolve_addr(&shared.src_addr, &shared.dst_addr, RTRS_CONNECT_TIMEOUT_MS)
            .inspect_err(|e| {
                pr_err!(
                    "{}: Failed to resolve address, err: {}\n",
                    sess,
                    e.to_errno()
                )
            })?;
        match slot
            .con()
            .cm_done
            .wait_interruptible_timeout(RTRS_CONNECT_TIMEOUT_MS)
        {
            WaitResult::TimedOut => return Err(etimedout()),
            WaitResult::Interrupted => return Err(ERESTARTSYS),
            WaitResult::Done => {}
        }
        let cm_err = slot.con().cm_err.load(Ordering::Acquire);
        if cm_err < 0 {
            return Err(Error::from_errno(cm_err));
        }
        if shared.state() != RtrsCltState::Connecting || cm_err != 1 {
            // Device removal.
            return Err(econnaborted());
        }
        Ok(())
    }

    /// `post_recv_path`: receives on every connection (`recv_posted` of
    /// `RtrsCltConQueues`); with NEW_RKEY each into an `rsp_ius` buffer,
    /// otherwise without SGE on `io_comp_cqe`.
    fn post_recv_path(&self, queue_depth: u32, new_rkey: bool) -> Result {
        for slot in self.cons.iter() {
            let con = slot.con();
            let q = RtrsCltConQueues::new(con.cid, queue_depth).map_err(|_| EINVAL)?;
            let q = usize::try_from(q.recv_posted).map_err(|_| EINVAL)?;
            let g = RcuGuard::new();
            let qp = con.qp(&g).ok_or(EINVAL)?;
            for i in 0..q {
                qp.post_recv(new_rkey.then_some(i)).inspect_err(|e| {
                    pr_err!("{}: post_recv_io(), err: {}\n", con.sess(), e.to_errno())
                })?;
            }
        }
        Ok(())
    }

    /// `rtrs_send_path_info`, and the processing half of
    /// `rtrs_clt_info_rsp_done` (`process_info_rsp`, `post_recv_path`),
    /// done here in process context. The caller moves the state.
    fn send_path_info(&mut self) -> Result {
        // Not borrowed from `self`: the connections change meanwhile.
        let shared = self.shared.clone();
        let sess = &*shared.sessname;
        let (params, lkey) = {
            let pinner = shared.inner.lock();
            let params = pinner.params.ok_or(EINVAL)?;
            let dev = pinner.dev.as_ref().ok_or(EINVAL)?;
            let qd = usize::try_from(params.queue_depth).map_err(|_| EINVAL)?;
            let rx_sz = RtrsMsgInfoRsp::rx_size(qd).ok_or(EINVAL)?;
            let mut tx = Iu::<InfoReqDone>::alloc(
                dev,
                RtrsMsgInfoReq::SIZE,
                bindings::dma_data_direction_DMA_TO_DEVICE,
            )?;
            let rx =
                Iu::<InfoRspDone>::alloc(dev, rx_sz, bindings::dma_data_direction_DMA_FROM_DEVICE)?;
            let msg = RtrsMsgInfoReq::new(sess.as_bytes())?;
            tx.as_mut().fill_for_device(|buf| msg.encode(buf))?;
            // Stored before posting: posted buffers must outlive the drain.
            self.info_ius = Some(InfoIus { tx, rx });
            (params, dev.local_dma_lkey())
        };
        let ius = self.info_ius.as_ref().ok_or(EINVAL)?;
        let con0 = self.cons.first().ok_or(EINVAL)?.con();
        shared.info_rsp.store(INFO_RSP_NONE, Ordering::Release);
        shared.state_changed.reinit();
        {
            let g = RcuGuard::new();
            let qp = con0.qp(&g).ok_or(EINVAL)?.qp();
            // SAFETY: `ius` stays in `self.info_ius` until after the drain in
            // `teardown`; `rx` is read only once its completion has reported
            // INFO_RSP_OK.
            unsafe { qp.post_recv(&ius.rx, lkey) }.inspect_err(|e| {
                pr_err!("{}: rtrs_iu_post_recv(), err: {}\n", sess, e.to_errno())
            })?;
            // SAFETY: As above; `tx` is not written after `fill_for_device`.
            unsafe { qp.post_send(&ius.tx, RtrsMsgInfoReq::SIZE, lkey) }.inspect_err(|e| {
                pr_err!("{}: rtrs_iu_post_send(), err: {}\n", sess, e.to_errno())
            })?;
        }

        // Wait for the response or a state change, as C's wait on state_wq.
        // Each wake-up is an event after the reinit above; a few rounds
        // cover a state change that is not the one waited for.
        for _ in 0..4 {
            if shared.state() != RtrsCltState::Connecting
                || shared.info_rsp.load(Ordering::Acquire) != INFO_RSP_NONE
            {
                break;
            }
            if shared
                .state_changed
                .wait_interruptible_timeout(RTRS_CONNECT_TIMEOUT_MS)
                != WaitResult::Done
            {
                break;
            }
        }
        match shared.info_rsp.load(Ordering::Acquire) {
            INFO_RSP_OK if shared.state() == RtrsCltState::Connecting => {}
            INFO_RSP_NONE if shared.state() == RtrsCltState::Connecting => {
                pr_err!(
                    "{}: no path info response within {} ms\n",
                    sess,
                    RTRS_CONNECT_TIMEOUT_MS
                );
                return Err(etimedout());
            }
            _ => return Err(econnreset()),
        }

        // rtrs_clt_info_rsp_done + process_info_rsp.
        let len =
            usize::try_from(shared.info_rsp_len.load(Ordering::Relaxed)).map_err(|_| EINVAL)?;
        let data = ius.rx.data_for_cpu();
        let Some(buf) = data.get(..len) else {
            pr_err!("{}: Path info response is malformed: size {}\n", sess, len);
            return Err(econnreset());
        };
        {
            let mut pinner = shared.inner.lock();
            RtrsMsgInfoRsp::process(
                buf,
                params.queue_depth,
                params.chunk_size,
                pinner.rbufs.as_mut_slice(),
            )
            .map_err(|e| {
                pr_err!("{}: Path info response: {}\n", sess, e);
                econnreset()
            })?;
        }
        self.post_recv_path(params.queue_depth, params.new_rkey())
            .map_err(|_| econnreset())
    }

    /// `rtrs_clt_stop_and_destroy_conns` after the heartbeat: disconnects
    /// and drains every connection, hands the request slots to `fail`
    /// (`fail_all_outstanding_reqs`) and frees them, waits (at most the
    /// connect timeout) for the DISCONNECTED events, then destroys QPs,
    /// CQs and cm ids and puts the PD. The state is left alone.
    ///
    /// The caller has made sure no submitter can reach this path any more
    /// (state not CONNECTED, unpublished, `synchronize_rcu`).
    pub(crate) fn teardown(&mut self, fail: impl FnOnce(&IoCtx)) {
        // Not borrowed from `self`: the connections change meanwhile.
        let shared = self.shared.clone();
        // No more device events: recovery has begun, or the path closes.
        self.watch = None;
        shared.all_disconnected.reinit();
        // stop_cm: disconnect, then drain each QP once nobody posts on it or
        // polls its CQ (the core's drain polls a poll connection's CQ
        // itself).
        let mut taken = KVec::new();
        for slot in self.cons.iter() {
            // A late ADDR_RESOLVED creates nothing from now on.
            slot.con().con_mutex.lock().destroyed = true;
            slot.cm_id.disconnect();
            // On ENOMEM this one is drained and destroyed right here, after
            // its grace period (`ConQp` drains when dropped).
            let _ = taken.push(slot.con().take_qp(), GFP_KERNEL);
        }
        let mut qps = KVec::new();
        for mut q in Retired::wait_all(taken).flatten() {
            q.drain();
            // On ENOMEM the drained QP is destroyed right here.
            let _ = qps.push(q, GFP_KERNEL);
        }
        // Everything posted is flushed now.
        self.info_ius = None;
        // The QPs are drained (no callback uses it) and no submitter can
        // reach the path (the caller's guarantee); the grace period covers
        // the readers of `io()` all the same.
        let io = shared.io.replace(None);
        if io.is_some() {
            if let Some(io) = io.wait() {
                fail(&io);
            }
        }
        if shared.connected_cnt.load(Ordering::Acquire) > 0
            && shared
                .all_disconnected
                .wait_timeout(RTRS_CONNECT_TIMEOUT_MS)
                == WaitResult::TimedOut
        {
            pr_warn!(
                "{}: timed out waiting for the disconnect of all connections\n",
                &*shared.sessname
            );
        }
        // The path's own device reference goes first, so that the last
        // connection's `destroy_con_cq_qp` puts the PD while its cm id (and
        // so the device) is still there, as in C.
        drop(shared.inner.lock().dev.take());
        // destroy_con_cq_qp, then in creation order, as C: the device
        // reference, destroy_cm, destroy_con.
        drop(qps);
        drop(core::mem::take(&mut self.cons));
        // This generation's connections are gone: none of them can report
        // its disconnect now. A count left above zero (a DISCONNECTED that
        // never came, as when the CM could not allocate its DREQ) would
        // make every later teardown of the path wait the whole timeout
        // (beyond C, which keeps the count).
        shared.connected_cnt.store(0, Ordering::Release);
    }
}

impl Drop for PathConns {
    fn drop(&mut self) {
        // A path dropped on a connect error, or after `teardown` (a no-op
        // then): the state is the owner's business.
        self.teardown(|_| {});
    }
}
