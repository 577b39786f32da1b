// SPDX-License-Identifier: GPL-2.0

//! A connection of a client path (`struct rtrs_clt_con`: its CM handler,
//! QP and CQ completions) and what survives a path's reconnects
//! ([`PathShared`]: state, server parameters, IO context, statistics; the
//! path's works live in `path::SessPath`).
//!
//! CM handlers run in process context; CQ callbacks in softirq for IRQ
//! connections, so they take no lock. Both reach a `Con` (the cm id's and
//! QP's context) that outlives its cm id and QP (see `conns::ConSlot`).

use core::sync::atomic::{
    AtomicBool, AtomicI32, AtomicI64, AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering,
};

use kernel::error::Error;
use kernel::fmt;
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::str::CString;
use kernel::sync::lock::{mutex::MutexBackend, Guard};
use kernel::sync::{Arc, ArcBorrow, Mutex};

use crate::bindings;
use crate::ffi::addr::SockAddr;
use crate::ffi::cm::{CmEvent, CmHandler, CmIdRef};
use crate::ffi::error::{econnaborted, econnreset, ehostunreach};
use crate::ffi::log::{pr_err_rl, pr_warn_rl};
use crate::ffi::misc::{nr_cpu_ids, uuid_gen};
use crate::ffi::sync::{Completion, OnceBox, RcuBox, RcuGuard, Retired};
use crate::ffi::trace;
use crate::ffi::verbs::{
    wc_imm_data, wc_status_msg, Cq, CqeHandler, DevPool, DevRef, Iu, IuDone, Qp, QpOwner, QpRing,
    QpSizes, RingDone, RingIu, RingIus,
};
use crate::io::{self, IoCon};
use crate::rtrs_core::imm::{self, ImmError, RtrsImm};
use crate::rtrs_core::names::NAME_MAX;
use crate::rtrs_core::path_state::{self, ErrorRecovery, HbParams, RtrsCltPathLink, StateReason};
use crate::rtrs_core::proto::{
    RtrsCltConQueues, RtrsCltPathLimits, RtrsMsgConnReq, RtrsMsgConnRsp, RtrsMsgRkeyRsp,
    RtrsPathParams, RtrsRbuf, WireError, RTRS_CONNECT_TIMEOUT_MS, RTRS_MAX_SEGMENTS,
    SERVICE_CON_QUEUE_DEPTH,
};
use crate::rtrs_core::sysfs_fmt;
use crate::stats::PathStats;

/// A path's IO context, on its connections.
pub(crate) type IoCtx = io::IoCtx<Con>;

/// Retry counts of the connect request (rtrs_rdma_route_resolved).
const CONN_RETRY_COUNT: u8 = 7;
const CONN_RNR_RETRY_COUNT: u8 = 7;

// ---------------------------------------------------------------------------
// Path state (enum rtrs_clt_state)
// ---------------------------------------------------------------------------

pub(crate) use crate::rtrs_core::path_state::RtrsCltState;

/// The state stored as u8 in `PathShared::state` (always a valid value).
fn state_from_u8(v: u8) -> RtrsCltState {
    RtrsCltState::from_raw(u32::from(v)).unwrap_or(RtrsCltState::Dead)
}

// ---------------------------------------------------------------------------
// PathShared
// ---------------------------------------------------------------------------

/// `info_rsp` values of [`PathShared`].
pub(crate) const INFO_RSP_NONE: u8 = 0;
pub(crate) const INFO_RSP_OK: u8 = 1;
const INFO_RSP_ERR: u8 = 2;

/// A device name as `char hca_name[IB_DEVICE_NAME_MAX]`: at most 63 bytes.
#[derive(Clone, Copy)]
pub(crate) struct HcaName {
    buf: [u8; 64],
    len: usize,
}

impl Default for HcaName {
    fn default() -> Self {
        Self {
            buf: [0; 64],
            len: 0,
        }
    }
}

impl HcaName {
    fn from_bytes(b: &[u8]) -> Self {
        let mut n = Self::default();
        for (d, s) in n.buf.iter_mut().take(63).zip(b) {
            *d = *s;
            n.len = n.len.saturating_add(1);
        }
        n
    }

    /// The name's bytes.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }
}

/// A path's name, "src@dst" as its sysfs directory, at most `NAME_MAX` bytes.
#[derive(Clone, Copy)]
pub(crate) struct PathName {
    buf: [u8; NAME_MAX],
    len: usize,
}

impl PathName {
    fn new(src: &SockAddr, dst: &SockAddr) -> Self {
        let mut n = Self {
            buf: [0; NAME_MAX],
            len: 0,
        };
        n.len =
            sysfs_fmt::rtrs_addr_to_str(&mut n.buf, src.parsed().as_ref(), dst.parsed().as_ref());
        n
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }
}

/// `established` and `reconnect_attempts` of a path under their mutex, and
/// a copy of `reconnect_attempts` for lock-free readers (the trace events,
/// which fire in completion context too, as C reads the field unlocked).
#[pin_data]
pub(crate) struct PathLink {
    #[pin]
    m: Mutex<RtrsCltPathLink>,
    attempts: AtomicU32,
}

/// [`PathLink`] locked; the copy follows the value when it is dropped.
pub(crate) struct PathLinkGuard<'a> {
    g: Guard<'a, RtrsCltPathLink, MutexBackend>,
    attempts: &'a AtomicU32,
}

impl PathLink {
    fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            m <- new_mutex!(RtrsCltPathLink::new(), "rtrs_rs_path_link"),
            attempts: AtomicU32::new(0),
        })
    }

    pub(crate) fn lock(&self) -> PathLinkGuard<'_> {
        PathLinkGuard {
            g: self.m.lock(),
            attempts: &self.attempts,
        }
    }

    /// `reconnect_attempts` as last unlocked, for traces.
    pub(crate) fn attempts_unlocked(&self) -> u32 {
        self.attempts.load(Ordering::Relaxed)
    }
}

impl core::ops::Deref for PathLinkGuard<'_> {
    type Target = RtrsCltPathLink;
    fn deref(&self) -> &RtrsCltPathLink {
        &self.g
    }
}

impl core::ops::DerefMut for PathLinkGuard<'_> {
    fn deref_mut(&mut self) -> &mut RtrsCltPathLink {
        &mut self.g
    }
}

impl Drop for PathLinkGuard<'_> {
    fn drop(&mut self) {
        self.attempts
            .store(self.g.reconnect_attempts, Ordering::Relaxed);
    }
}

/// Per-path values learnt from the conn_rsp of cid 0 and the INFO_RSP.
///
/// Protected by `PathShared::inner`.
#[derive(Default)]
pub(crate) struct PathInner {
    /// The path's device and PD, taken by cid 0 (`s.dev` of C); each
    /// connection holds its own reference too (`dev_ref`).
    pub(crate) dev: Option<DevRef>,
    /// queue_depth, max_io_size, ... from cid 0's conn_rsp.
    pub(crate) params: Option<RtrsPathParams>,
    /// Server chunks, `queue_depth` of them (`rbufs`).
    pub(crate) rbufs: KVec<RtrsRbuf>,
    /// `hca_port` (cm id port of cid 0).
    pub(crate) hca_port: u32,
    /// `hca_name`: cid 0's device name.
    pub(crate) hca_name: HcaName,
    /// `max_pages_per_mr` (query_fast_reg_mode).
    pub(crate) max_pages_per_mr: u32,
    /// The source address cid 0's route resolved to, recorded when it is
    /// established as C does (`s.src_addr`); names the path in sysfs.
    pub(crate) resolved_src: Option<SockAddr>,
}

/// The part of a path that CM handlers and CQ callbacks reach.
///
/// Lock-free fields are atomics; `inner` is a mutex, so it is never taken in
/// CQ callbacks (softirq). The INFO_RSP callback only records the received
/// length; the connecting thread processes it (see `PathConns::send_path_info`).
#[pin_data]
pub(crate) struct PathShared {
    pub(crate) sessname: CString,
    /// `s.uuid` (path uuid).
    uuid: [u8; 16],
    /// `clt->paths_uuid` (session uuid).
    paths_uuid: [u8; 16],
    pub(crate) dst_addr: SockAddr,
    /// `s.src_addr`: all zeros ("any") when no source was given.
    pub(crate) src_addr: SockAddr,
    /// "src@dst" from the addresses given, until `dir_name` is set.
    given_name: PathName,
    /// `s.con_num` and `s.irq_con_num`.
    pub(crate) con_num: u16,
    pub(crate) irq_con_num: u16,
    /// `s.recon_cnt`: incremented by every `init_conns`.
    pub(crate) recon_cnt: AtomicU16,
    /// `for_new_clt`: first_conn bit of the conn_req; set once cid 0 of
    /// this path was established, so later reconnects may create the
    /// session on the server again.
    for_new_clt: AtomicBool,
    pool: Arc<DevPool>,
    /// `RtrsCltState` as u8.
    state: AtomicU8,
    /// Connections whose ESTABLISHED was accepted and that have not failed since.
    pub(crate) connected_cnt: AtomicI32,
    /// `s.signal_interval`.
    signal_interval: AtomicU32,
    /// INFO_RSP receive result, `INFO_RSP_*`, and its byte_len.
    pub(crate) info_rsp: AtomicU8,
    pub(crate) info_rsp_len: AtomicU32,
    /// `flags & RTRS_MSG_NEW_RKEY_F` of the server, for CQ callbacks.
    new_rkey: AtomicBool,
    /// `s.hb_missed_cnt`, reset by every receive.
    pub(crate) hb_missed_cnt: AtomicU32,
    /// `s.hb_cur_latency` in ns, set by heartbeat acks
    /// (`set_hb_cur_latency`).
    pub(crate) hb_cur_latency_ns: AtomicI64,
    /// `s.hb_last_sent` in ns (ktime_get).
    pub(crate) hb_last_sent_ns: AtomicI64,
    /// A heartbeat was sent and not acknowledged yet (beyond C: an ack
    /// nobody asked for is ignored, see `path_state::hb_ack_latency`).
    pub(crate) hb_outstanding: AtomicBool,
    /// HB_MSGs from the peer since the last heartbeat tick (a flood is
    /// logged, see `path_state::hb_flood`).
    pub(crate) hb_msgs_rx: AtomicU32,
    /// The heartbeat's period and misses allowed.
    pub(crate) hb: HbParams,
    /// `clt_path->stats`: outlives the path's sysfs files.
    pub(crate) stats: PathStats,
    /// Request slots, MRs and rbufs (`reqs`, `rbufs`), published once the
    /// path is connected; `PathConns::teardown` takes them out after every QP
    /// is drained and frees them after a grace period.
    pub(crate) io: RcuBox<IoCtx>,
    /// Completed on every state change and when the INFO_RSP arrives
    /// (stands in for the wake-ups on `state_wq` in C).
    #[pin]
    pub(crate) state_changed: Completion,
    /// Completed when `connected_cnt` drops to zero.
    #[pin]
    pub(crate) all_disconnected: Completion,
    #[pin]
    pub(crate) inner: Mutex<PathInner>,
    /// `established` and `reconnect_attempts` (rtrs_core's reconnect and
    /// link-event bookkeeping). A leaf lock: taken after `Sess::paths_ev`
    /// or `inner`, nothing under it.
    #[pin]
    pub(crate) link: PathLink,
    /// The sysfs directory's name, fixed when the path first connected.
    dir_name: OnceBox<PathName>,
    /// The session's, bumped when the state or `hb_cur_latency_ns` changes.
    policy_gen: Arc<PolicyGen>,
}

/// What a new path is made from (`alloc_path`'s arguments).
pub(crate) struct PathArgs<'a> {
    pub(crate) pool: &'a Arc<DevPool>,
    pub(crate) sessname: &'a CStr,
    pub(crate) src: &'a SockAddr,
    pub(crate) dst: &'a SockAddr,
    pub(crate) paths_uuid: [u8; 16],
    /// The session is new to the server (`for_new_clt`).
    pub(crate) for_new_clt: bool,
    pub(crate) nr_poll_queues: u32,
    /// The heartbeat's period and misses allowed (module parameters).
    pub(crate) hb: HbParams,
    /// The session's [`PolicyGen`].
    pub(crate) policy_gen: &'a Arc<PolicyGen>,
}

/// A session's count of changes to what min-latency picks by: a path's
/// state or heartbeat latency, and the path list. IO caches its pick with
/// the count read before the scan, and scans again once it moved.
#[derive(Default)]
pub(crate) struct PolicyGen(AtomicU64);

impl PolicyGen {
    /// After a change. Release: whoever reads the new count sees the change.
    pub(crate) fn bump(&self) {
        self.0.fetch_add(1, Ordering::Release);
    }

    /// Before a scan. Acquire: the scan sees every change counted, so a
    /// pick never carries a count newer than what it saw.
    pub(crate) fn read(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}

/// What a connection asks of the path that owns it, from CQ and CM
/// context (the path implements it; a connection holds it while it lives).
pub(crate) trait PathRecovery: Send + Sync {
    /// Queues `err_recovery_work`: the path moved to RECONNECTING.
    fn queue_err_recovery(self: ArcBorrow<'_, Self>);
    /// Queues `close_work`: the path moved to CLOSING.
    fn queue_close(self: ArcBorrow<'_, Self>);
    /// The session's `max_reconnect_attempts` (user value), for traces.
    fn max_reconnect_attempts(&self) -> i32;
}

impl PathShared {
    /// `alloc_path` minus the connections and works: the state is CONNECTING.
    pub(crate) fn new(a: &PathArgs<'_>) -> Result<Arc<Self>> {
        // One admin connection, one per CPU id, then the poll ones.
        let irq_con_num = u16::try_from(nr_cpu_ids())
            .ok()
            .and_then(|n| n.checked_add(1))
            .ok_or(EINVAL)?;
        let con_num = u16::try_from(a.nr_poll_queues)
            .ok()
            .and_then(|n| n.checked_add(irq_con_num))
            .ok_or(EINVAL)?;
        Arc::pin_init(
            try_pin_init!(PathShared {
                sessname: CString::try_from_fmt(fmt!("{}", a.sessname))?,
                uuid: uuid_gen(),
                paths_uuid: a.paths_uuid,
                dst_addr: *a.dst,
                src_addr: *a.src,
                given_name: PathName::new(a.src, a.dst),
                con_num,
                irq_con_num,
                recon_cnt: AtomicU16::new(0),
                for_new_clt: AtomicBool::new(a.for_new_clt),
                pool: a.pool.clone(),
                state: AtomicU8::new(RtrsCltState::Connecting as u8),
                connected_cnt: AtomicI32::new(0),
                signal_interval: AtomicU32::new(SERVICE_CON_QUEUE_DEPTH),
                info_rsp: AtomicU8::new(INFO_RSP_NONE),
                info_rsp_len: AtomicU32::new(0),
                new_rkey: AtomicBool::new(false),
                hb_missed_cnt: AtomicU32::new(0),
                hb_cur_latency_ns: AtomicI64::new(0),
                hb_last_sent_ns: AtomicI64::new(0),
                hb_outstanding: AtomicBool::new(false),
                hb_msgs_rx: AtomicU32::new(0),
                hb: a.hb,
                stats: PathStats::new()?,
                io: RcuBox::empty(),
                state_changed <- Completion::new(),
                all_disconnected <- Completion::new(),
                inner <- new_mutex!(PathInner::default(), "rtrs_rs_path_inner"),
                link <- PathLink::new(),
                dir_name: OnceBox::empty(),
                policy_gen: a.policy_gen.clone(),
            }? Error),
            GFP_KERNEL,
        )
    }

    /// The session name.
    pub(crate) fn sessname(&self) -> &CStr {
        &self.sessname
    }

    /// What the path brings to the session's limits; `None` before cid 0
    /// is established.
    pub(crate) fn info(&self) -> Option<RtrsCltPathLimits> {
        let inner = self.inner.lock();
        let p = inner.params.as_ref()?;
        Some(RtrsCltPathLimits {
            queue_depth: p.queue_depth,
            max_io_size: p.max_io_size,
            max_pages_per_mr: inner.max_pages_per_mr,
        })
    }

    pub(crate) fn state(&self) -> RtrsCltState {
        state_from_u8(self.state.load(Ordering::Acquire))
    }

    /// Applies one of rtrs_core's state moves (`path_state::change_state`
    /// and the others) to the path's state atomically, as C does under
    /// `state_wq.lock`: `f` sees the current state and may change it; if
    /// another thread changed it meanwhile, `f` runs again on the new one
    /// (the moves are pure). Waiters on the state are woken on a change.
    /// A move is traced with `reason`.
    pub(crate) fn update_state<R>(
        &self,
        reason: StateReason,
        mut f: impl FnMut(&mut RtrsCltState) -> R,
    ) -> R {
        let mut old = self.state.load(Ordering::Acquire);
        loop {
            let mut s = state_from_u8(old);
            let r = f(&mut s);
            if s as u8 == old {
                return r;
            }
            match self
                .state
                .compare_exchange(old, s as u8, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    self.policy_gen.bump();
                    self.state_changed.complete();
                    if trace::on(trace::Kind::StateChange) {
                        trace::emit(&trace::Event::StateChange {
                            path: self.name().as_bytes(),
                            old,
                            new: s as u8,
                            reason: reason.name(),
                        });
                    }
                    return r;
                }
                Err(cur) => old = cur,
            }
        }
    }

    /// `s.hb_missed_cnt = 0` on a receive. Written only when it is not 0
    /// already: every IO completion comes here, and the line is read by
    /// every submission.
    fn reset_hb_missed(&self) {
        if self.hb_missed_cnt.load(Ordering::Relaxed) != 0 {
            self.hb_missed_cnt.store(0, Ordering::Relaxed);
        }
    }

    /// Records a heartbeat's round trip (`s.hb_cur_latency`), which
    /// min-latency picks by.
    pub(crate) fn set_hb_cur_latency(&self, ns: i64) {
        self.hb_cur_latency_ns.store(ns, Ordering::Relaxed);
        self.policy_gen.bump();
    }

    /// `rtrs_clt_change_state`: moves to `new` if the table allows it.
    pub(crate) fn change_state(&self, new: RtrsCltState, reason: StateReason) -> bool {
        self.update_state(reason, |s| path_state::change_state(s, new))
    }

    /// The sysfs directory's name: "src@dst" with the source address that
    /// cid 0's route resolved to, fixed the first time this is called
    /// (once the path is connected, as C names its kobject). Process context.
    /// -ENOMEM if it cannot be kept: the directory never takes another name.
    pub(crate) fn dir_name(&self) -> Result<&PathName> {
        if self.dir_name.get().is_none() {
            let n = PathName::new(&self.src_addr(), &self.dst_addr);
            // Another caller may have set it meanwhile: theirs stays.
            let _ = self.dir_name.set(KBox::new(n, GFP_KERNEL)?);
        }
        self.dir_name.get().ok_or(ENOMEM)
    }

    /// The path's name for logs and traces in any context: its sysfs
    /// directory's once that exists, else from the addresses it was given.
    pub(crate) fn name(&self) -> &PathName {
        self.dir_name.get().unwrap_or(&self.given_name)
    }

    /// Fires one of C's `rtrs_clt_conn_class` events for this path, with
    /// the session's `max_reconnect_attempts`.
    pub(crate) fn trace_conn(&self, kind: trace::Kind, max_reconnect_attempts: i32) {
        if !trace::on(kind) {
            return;
        }
        let r = self.stats.reconnects();
        trace::emit(&trace::Event::Conn(
            kind,
            trace::ConnFields {
                path: self.name().as_bytes(),
                state: self.state() as u8,
                reconnect_attempts: self.link.attempts_unlocked(),
                max_reconnect_attempts,
                fail_cnt: r.fail_cnt,
                success_cnt: r.successful_cnt,
            },
        ));
    }

    /// The IO context, once `PathConns::alloc_reqs` has run, while `g` is held.
    pub(crate) fn io<'a>(&'a self, g: &'a RcuGuard) -> Option<&'a IoCtx> {
        self.io.get(g)
    }

    /// The path's source address: the one cid 0's route resolved to once it
    /// is established, else the one given (zeros when none was).
    pub(crate) fn src_addr(&self) -> SockAddr {
        self.inner.lock().resolved_src.unwrap_or(self.src_addr)
    }

    /// `(src_addr, dst_addr)`, as given to connect.
    pub(crate) fn addrs(&self) -> (&SockAddr, &SockAddr) {
        (&self.src_addr, &self.dst_addr)
    }

    /// `hca_name` and `hca_port` as recorded when cid 0 was established.
    pub(crate) fn hca(&self) -> (HcaName, u32) {
        let inner = self.inner.lock();
        (inner.hca_name, inner.hca_port)
    }

    /// `s.irq_con_num`.
    pub(crate) fn irq_con_num(&self) -> u16 {
        self.irq_con_num
    }

    /// The state part of `rtrs_rdma_error_recovery`. Any context:
    /// CONNECTED goes to RECONNECTING (true: the recovery work is to be
    /// queued); an error while connecting moves to CONNECTING_ERR for the
    /// connecting thread.
    pub(crate) fn start_error_recovery(&self, reason: StateReason) -> bool {
        self.update_state(reason, path_state::rdma_error_recovery) == ErrorRecovery::Reconnecting
    }

    /// The state part of `rtrs_clt_close_conns`: CLOSING (true: the close
    /// work is to be queued).
    pub(crate) fn start_closing(&self) -> bool {
        self.change_state(RtrsCltState::Closing, StateReason::Close)
    }

    /// `rtrs_clt_change_state_get_old`: (changed, old state).
    pub(crate) fn change_state_get_old(
        &self,
        new: RtrsCltState,
        reason: StateReason,
    ) -> (bool, RtrsCltState) {
        self.update_state(reason, |s| path_state::change_state_get_old(s, new))
    }
}

// ---------------------------------------------------------------------------
// Con
// ---------------------------------------------------------------------------

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

/// `io_comp_cqe` of C (a constant here, see `verbs::static_cqe`): empty
/// receives and heartbeat acks (`rtrs_clt_rdma_done` without a buffer).
struct IoCompDone;

impl CqeHandler for IoCompDone {
    type Ctx = Con;
    fn done(con: &Con, wc: &bindings::ib_wc) {
        con.rdma_done(wc, None);
    }
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

    /// `rtrs_clt_rdma_done`: IO responses (IMM or, with NEW_RKEY, the
    /// RKEY_RSP send), heartbeats, server invalidations, and errors, which go
    /// to error recovery. Softirq for IRQ connections: no locks, no sleep.
    fn rdma_done(&self, wc: &bindings::ib_wc, iu: Option<RingIu<'_, RdmaDone>>) {
        let path = self.path();
        if wc.status != bindings::ib_wc_status_IB_WC_SUCCESS {
            if wc.status != bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR {
                let msg = wc_status_msg(wc.status);
                pr_err_rl!("{}: RDMA failed: {}\n", self.sess(), msg);
                self.error_recovery();
            }
            return;
        }
        path.stats.update_wc(self.cpu);
        let new_rkey = path.new_rkey.load(Ordering::Acquire);
        match wc.opcode {
            bindings::ib_wc_opcode_IB_WC_RECV_RDMA_WITH_IMM => {
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
                            io.process_io_rsp(self, msg_id, errno, w_inval);
                        }
                        w_inval
                    }
                    Err(ImmError::BadMsgId { msg_id, w_inval }) => {
                        if io.is_some() {
                            pr_err_rl!("{}: IO response for bad msg_id {}\n", self.sess(), msg_id);
                        } else {
                            pr_warn_rl!(
                                "{}: IO response {} before IO set-up\n",
                                self.sess(),
                                msg_id
                            );
                        }
                        w_inval
                    }
                    Ok(hb @ (RtrsImm::HbMsg | RtrsImm::HbAck)) => {
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
                        if new_rkey {
                            self.recv_done(iu);
                            return;
                        }
                        false
                    }
                    Err(ImmError::BadType { imm_type }) => {
                        pr_warn_rl!("{}: Unknown IMM type {}\n", self.sess(), imm_type);
                        false
                    }
                };
                drop(g);
                // As C: empty receives in place of what completed, whether
                // it came into a buffer or not (a buffer is not posted
                // again here): one for this IMM, and for a W_INV response
                // one more for the SEND_WITH_INV that came before it
                // (rtrs_post_recv_empty_x2).
                drop(iu);
                let n = if w_inval { 2 } else { 1 };
                for _ in 0..n {
                    match self.post_recv_empty() {
                        Ok(()) => {}
                        // Teardown took the QP or drains it: nothing more
                        // is posted on it.
                        Err(e) if e == econnaborted() => return,
                        Err(e) => {
                            pr_err_rl!(
                                "{}: rtrs_post_recv_empty(): {}\n",
                                self.sess(),
                                e.to_errno()
                            );
                            self.error_recovery();
                            return;
                        }
                    }
                }
            }
            bindings::ib_wc_opcode_IB_WC_RECV => {
                // Key invalidations from the server, or RKEY_RSP.
                path.reset_hb_missed();
                if new_rkey {
                    let inval = bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE as kernel::ffi::c_int;
                    if wc.wc_flags & inval != 0 {
                        self.recv_done(iu);
                    } else {
                        self.rkey_rsp_done(wc, iu);
                    }
                }
            }
            bindings::ib_wc_opcode_IB_WC_RDMA_WRITE => {}
            op => pr_warn_rl!("{}: Unexpected WC type: {}\n", self.sess(), op),
        }
    }

    /// `rtrs_clt_recv_done`: posts the NEW_RKEY receive buffer again.
    fn recv_done(&self, iu: Option<RingIu<'_, RdmaDone>>) {
        let Some(iu) = iu else {
            pr_err_rl!("{}: receive without buffer in NEW_RKEY mode\n", self.sess());
            self.error_recovery();
            return;
        };
        match iu.post_recv(self.lkey()) {
            Ok(()) => {}
            // The QP is being drained (teardown): nothing more is posted.
            Err(e) if e == econnaborted() => {}
            Err(e) => {
                pr_err_rl!("{}: post iu failed {}\n", self.sess(), e.to_errno());
                self.error_recovery();
            }
        }
    }

    /// `rtrs_clt_rkey_rsp_done`: the new rkey of a chunk, then the IO response.
    fn rkey_rsp_done(&self, wc: &bindings::ib_wc, iu: Option<RingIu<'_, RdmaDone>>) {
        let path = self.path();
        let Some(iu) = iu else {
            pr_err_rl!("{}: rkey response without buffer\n", self.sess());
            self.error_recovery();
            return;
        };
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
            io.set_rkey(msg.buf_id, msg.rkey);
            if let Some((errno, w_inval)) = rsp {
                io.process_io_rsp(self, msg_id, errno, w_inval);
            }
        }
        drop(g);
        iu.sync_for_device();
        self.recv_done(Some(iu));
    }

    /// The PD's local DMA lkey, for reposting receives from CQ callbacks
    /// (which must not take `con_mutex`).
    pub(crate) fn lkey(&self) -> u32 {
        self.lkey.load(Ordering::Acquire)
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

    /// `rtrs_post_recv_empty`: a receive without buffer on `io_comp_cqe`;
    /// ECONNABORTED once the QP is unpublished or being drained.
    fn post_recv_empty(&self) -> Result {
        let g = RcuGuard::new();
        self.qp(&g).ok_or(econnaborted())?.post_recv(None)
    }

    /// `rtrs_post_rdma_write_imm_empty` on `io_comp_cqe`; ECONNABORTED
    /// once the QP is unpublished or being drained.
    pub(crate) fn post_imm_empty(&self, imm_val: u32) -> Result {
        let flags = self.next_send_flags();
        let g = RcuGuard::new();
        let q = self.qp(&g).ok_or(econnaborted())?;
        q.qp().post_imm_empty::<IoCompDone>(imm_val, flags)
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
                .change_state(RtrsCltState::ConnectingErr, StateReason::ConnectFailed);
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
