// SPDX-License-Identifier: GPL-2.0

//! What survives a path's reconnects ([`PathShared`]: state, server
//! parameters, IO context, statistics), the part of a path that its
//! connections' CM handlers and CQ callbacks reach; the path's works live
//! in `path::SessPath`.

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

use crate::ffi::addr::SockAddr;
use crate::ffi::misc::{nr_cpu_ids, uuid_gen};
use crate::ffi::sync::{Completion, OnceBox, RcuBox, RcuGuard};
use crate::ffi::trace;
use crate::ffi::verbs::{DevPool, DevRef};
use crate::rtrs_core::names::NAME_MAX;
use crate::rtrs_core::path_state::{self, ErrorRecovery, HbParams, RtrsCltPathLink, StateReason};
use crate::rtrs_core::proto::{
    RtrsCltPathLimits, RtrsPathParams, RtrsRbuf, SERVICE_CON_QUEUE_DEPTH,
};
use crate::rtrs_core::sysfs_fmt;
use crate::stats::PathStats;

use super::IoCtx;

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
pub(super) const INFO_RSP_ERR: u8 = 2;

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
    pub(super) fn from_bytes(b: &[u8]) -> Self {
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
    pub(super) uuid: [u8; 16],
    /// `clt->paths_uuid` (session uuid).
    pub(super) paths_uuid: [u8; 16],
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
    pub(super) for_new_clt: AtomicBool,
    pub(super) pool: Arc<DevPool>,
    /// `RtrsCltState` as u8.
    state: AtomicU8,
    /// Connections whose ESTABLISHED was accepted and that have not failed since.
    pub(crate) connected_cnt: AtomicI32,
    /// `s.signal_interval`.
    pub(super) signal_interval: AtomicU32,
    /// INFO_RSP receive result, `INFO_RSP_*`, and its byte_len.
    pub(crate) info_rsp: AtomicU8,
    pub(crate) info_rsp_len: AtomicU32,
    /// `flags & RTRS_MSG_NEW_RKEY_F` of the server, for CQ callbacks.
    pub(super) new_rkey: AtomicBool,
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

    /// `state == RTRS_CLT_CONNECTED`: IO may go on the path.
    #[inline]
    pub(crate) fn is_connected(&self) -> bool {
        self.state() == RtrsCltState::Connected
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
    pub(super) fn reset_hb_missed(&self) {
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
