// SPDX-License-Identifier: GPL-2.0

//! A connection's CM events (`rtrs_clt_rdma_cm_handler`): its QP, CQ and
//! receive buffers made on ADDR_RESOLVED (`create_con_cq_qp`), the connect
//! request on ROUTE_RESOLVED, the server's parameters on ESTABLISHED, a
//! rejection's errno; and its QP's events. Process context, under
//! rdma_cm's per-id handler mutex.

use core::sync::atomic::Ordering;

use kernel::error::Error;
use kernel::prelude::*;

use crate::bindings;
use crate::ffi::cm::{CmEvent, CmHandler, CmIdRef};
use crate::ffi::error::{econnaborted, econnreset, ehostunreach};
use crate::ffi::log::pr_warn_rl;
use crate::ffi::sync::RcuGuard;
use crate::ffi::verbs::{Cq, DevRef, QpOwner, QpSizes, RingIus};
use crate::io::IoCon;
use crate::rtrs_core::proto::{
    RtrsCltConQueues, RtrsMsgConnReq, RtrsMsgConnRsp, RtrsMsgRkeyRsp, RtrsRbuf, WireError,
    RTRS_CONNECT_TIMEOUT_MS, RTRS_MAX_SEGMENTS,
};

use super::path_shared::HcaName;
use super::{Con, ConInner, ConQp, PathInner, RtrsCltState};

/// Retry counts of the connect request (rtrs_rdma_route_resolved).
const CONN_RETRY_COUNT: u8 = 7;
const CONN_RNR_RETRY_COUNT: u8 = 7;

impl Con {
    /// `query_fast_reg_mode`: the per-MR page limit.
    fn query_fast_reg_mode(inner: &mut PathInner, dev: &DevRef) {
        let attrs = dev.attrs();
        // ffs(page_size_cap) - 1, at least 12.
        let shift = if attrs.page_size_cap == 0 {
            12
        } else {
            attrs.page_size_cap.trailing_zeros().max(12)
        };
        let pages =
            u32::try_from(attrs.max_mr_size.checked_shr(shift).unwrap_or(0)).unwrap_or(u32::MAX);
        inner.max_pages_per_mr = pages
            .min(RTRS_MAX_SEGMENTS)
            .min(attrs.max_fast_reg_page_list_len);
    }

    /// `create_con_cq_qp` (under `con_mutex`).
    fn create_con_cq_qp(&self, inner: &mut ConInner, id: &CmIdRef<'_>) -> Result {
        let path = self.path();
        let mut pinner = path.inner.lock();
        let (dev, queues) = if self.cid == 0 {
            // The whole path uses the device of cid 0, which must come first.
            if pinner.dev.is_some() {
                return Err(EINVAL);
            }
            // SAFETY: From ADDR_RESOLVED on the cm id is bound to this device,
            // which stays registered until the id is destroyed; every
            // `DevRef` of this path is dropped before its cm ids.
            let dev = unsafe { path.pool.find_or_add(id.binding().device) }.map_err(|_| {
                pr_warn!(
                    "{}: rtrs_ib_dev_find_get_or_add(): no memory\n",
                    self.sess()
                );
                ENOMEM
            })?;
            pinner.dev = Some(dev.try_clone()?);
            Self::query_fast_reg_mode(&mut pinner, &dev);
            // Sized for the service depth: no queue depth yet.
            (dev, RtrsCltConQueues::new(self.cid, 0).map_err(|_| EINVAL)?)
        } else {
            let dev = pinner.dev.as_ref().ok_or(EINVAL)?.try_clone()?;
            let qd = pinner
                .params
                .as_ref()
                .map(|p| p.queue_depth)
                .ok_or(EINVAL)?;
            (
                dev,
                RtrsCltConQueues::new(self.cid, qd).map_err(|_| EINVAL)?,
            )
        };
        let new_rkey = pinner.params.as_ref().is_some_and(|p| p.new_rkey());
        drop(pinner);

        let attrs = dev.attrs();
        let (max_send_wr, max_recv_wr) = queues.qp_wrs(attrs.max_qp_wr);
        let max_send_sge = queues.max_send_sge;
        let cq_num = queues.cq_num(attrs.max_qp_wr, attrs.max_cqe);
        let cq_vector = self.cpu.checked_rem(dev.num_comp_vectors()).unwrap_or(0);
        self.lkey.store(dev.local_dma_lkey(), Ordering::Release);
        inner.dev = Some(dev);
        let dev = inner.dev.as_ref().ok_or(EINVAL)?;
        let rsp_ius = if new_rkey || self.cid == 0 {
            let n = usize::try_from(cq_num).map_err(|_| EINVAL)?;
            RingIus::alloc(dev, n, RtrsMsgRkeyRsp::SIZE)?
        } else {
            RingIus::none()?
        };
        let cq = if self.cid >= self.path().irq_con_num {
            Cq::alloc(
                dev,
                cq_num,
                cq_vector,
                bindings::ib_poll_context_IB_POLL_DIRECT,
            )
        } else {
            Cq::pool_get(
                dev,
                cq_num,
                cq_vector,
                bindings::ib_poll_context_IB_POLL_SOFTIRQ,
            )
        }
        .inspect_err(|e| {
            pr_err!(
                "{}: Creating completion queue failed, errno: {}\n",
                self.sess(),
                e.to_errno()
            )
        })?;
        let sizes = QpSizes {
            max_send_wr,
            max_recv_wr,
            max_send_sge,
        };
        // SAFETY: The cm id is live and bound; the QP goes into `self.qp`,
        // which teardown (or `ConSlot::drop`) empties before the cm id and
        // the connection go.
        let q = unsafe { ConQp::create(id.as_ptr(), dev, cq, rsp_ius, self, &sizes, self.lkey()) }
            .inspect_err(|e| {
                pr_err!(
                    "{}: Creating QP failed, err: {}\n",
                    self.sess(),
                    e.to_errno()
                )
            })?;
        if self.qp.replace(Some(KBox::new(q, GFP_KERNEL)?)).is_some() {
            // Cannot happen: ADDR_RESOLVED comes once per cm id.
            pr_err!("{}: QP created twice\n", self.sess());
        }
        Ok(())
    }

    /// `rtrs_rdma_addr_resolved`.
    fn addr_resolved(&self, id: &CmIdRef<'_>) -> Result {
        {
            let mut inner = self.con_mutex.lock();
            if inner.destroyed {
                return Err(econnaborted());
            }
            self.create_con_cq_qp(&mut inner, id).inspect_err(|e| {
                pr_err!(
                    "{}: create_con_cq_qp(), err: {}\n",
                    self.sess(),
                    e.to_errno()
                )
            })?;
        }
        id.resolve_route(RTRS_CONNECT_TIMEOUT_MS).inspect_err(|e| {
            pr_err!(
                "{}: Resolving route failed, err: {}\n",
                self.sess(),
                e.to_errno()
            )
        })
    }

    /// `rtrs_rdma_route_resolved`.
    fn route_resolved(&self, id: &CmIdRef<'_>) -> Result {
        let path = self.path();
        let msg = RtrsMsgConnReq::new(
            self.cid,
            path.con_num,
            path.recon_cnt.load(Ordering::Relaxed),
            path.uuid,
            path.paths_uuid,
            path.for_new_clt.load(Ordering::Relaxed),
        );
        let mut buf = [0u8; RtrsMsgConnReq::SIZE];
        msg.encode(&mut buf)?;
        id.connect_locked(&buf, CONN_RETRY_COUNT, CONN_RNR_RETRY_COUNT)
            .inspect_err(|e| pr_err!("{}: rdma_connect_locked(): {}\n", self.sess(), e.to_errno()))
    }

    /// `rtrs_rdma_conn_established`.
    fn conn_established(&self, id: &CmIdRef<'_>, ev: &CmEvent<'_>) -> Result {
        let msg = RtrsMsgConnRsp::decode_established(ev.conn_private_data()).map_err(|e| {
            pr_err!("{}: Invalid RTRS connection response: {}\n", self.sess(), e);
            econnreset()
        })?;
        if self.cid != 0 {
            return Ok(());
        }
        let path = self.path();
        let mut pinner = path.inner.lock();
        let prev = pinner.params.as_ref().map_or(0, |p| p.queue_depth);
        let params = msg.path_params(prev).map_err(|e| {
            pr_err!("{}: {}\n", self.sess(), e);
            if matches!(e, WireError::QueueDepthChanged { .. }) {
                pr_err!(
                    "{}: Disabling auto-reconnect. Trigger a manual reconnect after issue is resolved\n",
                    self.sess()
                );
                path.link.lock().disable_auto_reconnect();
            }
            econnreset()
        })?;
        if pinner.rbufs.is_empty() {
            let qd = usize::try_from(params.queue_depth).map_err(|_| EINVAL)?;
            pinner.rbufs = KVec::from_elem(RtrsRbuf::default(), qd, GFP_KERNEL)?;
        }
        path.signal_interval
            .store(params.signal_interval, Ordering::Release);
        path.new_rkey.store(params.new_rkey(), Ordering::Release);
        pinner.params = Some(params);
        let bound = id.binding();
        pinner.hca_port = bound.port_num;
        let name = id.device_name().map_or(&[][..], |n| n.as_bytes());
        pinner.hca_name = HcaName::from_bytes(name);
        pinner.resolved_src = Some(bound.src_addr);
        path.for_new_clt.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// `rtrs_rdma_conn_rejected`: the errno to record.
    fn conn_rejected(&self, ev: &CmEvent<'_>) -> i32 {
        match RtrsMsgConnRsp::reject_errno(ev.consumer_reject_data()) {
            Some(errno) => {
                if errno == EBUSY.to_errno() {
                    pr_err!(
                        "{}: Previous session is still exists on the server, please reconnect later\n",
                        self.sess()
                    );
                } else {
                    pr_err!(
                        "{}: Connect rejected: status {} ({}), rtrs errno {}\n",
                        self.sess(),
                        ev.status(),
                        ev.reject_msg(),
                        errno
                    );
                }
                errno
            }
            None => {
                pr_err!(
                    "{}: Connect rejected but with malformed message: status {} ({})\n",
                    self.sess(),
                    ev.status(),
                    ev.reject_msg()
                );
                econnreset().to_errno()
            }
        }
    }
}

impl CmHandler for Con {
    /// `rtrs_clt_rdma_cm_handler`.
    fn cm_event(&self, id: &CmIdRef<'_>, ev: &CmEvent<'_>) {
        let ehostunreach = ehostunreach().to_errno();
        let econnreset = econnreset().to_errno();
        let cm_err = match ev.event() {
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_RESOLVED => {
                self.addr_resolved(id).err().map_or(0, Error::to_errno)
            }
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_RESOLVED => {
                self.route_resolved(id).err().map_or(0, Error::to_errno)
            }
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED => {
                match self.conn_established(id, ev) {
                    Ok(()) => {
                        self.flag_success_on_conn();
                        self.cm_done.complete();
                        return;
                    }
                    Err(e) => e.to_errno(),
                }
            }
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_REJECTED => self.conn_rejected(ev),
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED => {
                // Once per path: its first connection to go takes it out of
                // CONNECTED or CONNECTING (error recovery below); a teardown
                // of ours has left both before its disconnects.
                if matches!(
                    self.path().state(),
                    RtrsCltState::Connected | RtrsCltState::Connecting
                ) {
                    pr_warn_rl!(
                        "{}: path {}: disconnected by the server (cid {})\n",
                        self.sess(),
                        kernel::str::BStr::from_bytes(self.path().name().as_bytes()),
                        self.cid
                    );
                }
                econnreset
            }
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_ERROR
            | bindings::rdma_cm_event_type_RDMA_CM_EVENT_UNREACHABLE
            | bindings::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_CHANGE
            | bindings::rdma_cm_event_type_RDMA_CM_EVENT_TIMEWAIT_EXIT => {
                pr_warn!(
                    "{}: CM error (CM event: {}, err: {})\n",
                    self.sess(),
                    ev.event_msg(),
                    ev.status()
                );
                econnreset
            }
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_ERROR
            | bindings::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_ERROR => {
                pr_warn!(
                    "{}: CM error (CM event: {}, err: {})\n",
                    self.sess(),
                    ev.event_msg(),
                    ev.status()
                );
                ehostunreach
            }
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_DEVICE_REMOVAL => {
                // The close work destroys the cm ids, which lets the
                // removal complete; a connecting thread sees CLOSING.
                pr_warn_rl!(
                    "{}: CM event: {}, status: {}\n",
                    self.sess(),
                    ev.event_msg(),
                    ev.status()
                );
                self.close_nowait();
                self.cm_done.complete();
                return;
            }
            _ => {
                pr_err!(
                    "{}: Unexpected RDMA CM error (CM event: {}, err: {})\n",
                    self.sess(),
                    ev.event_msg(),
                    ev.status()
                );
                econnreset
            }
        };
        if cm_err != 0 {
            self.flag_error_on_conn(cm_err);
            self.error_recovery();
            self.cm_done.complete();
        }
    }
}

impl QpOwner for Con {
    /// rtrs.c's qp_event_handler.
    fn qp_event(&self, event: bindings::ib_event_type) {
        if event == bindings::ib_event_type_IB_EVENT_COMM_EST {
            pr_info!("{}: QP event COMM_EST ({}) received\n", self.sess(), event);
            let g = RcuGuard::new();
            if let Some(q) = self.qp(&g) {
                let _ = q.qp().notify_cm(event);
            }
        } else {
            pr_info!("{}: Unhandled QP event ({}) received\n", self.sess(), event);
        }
    }
}
