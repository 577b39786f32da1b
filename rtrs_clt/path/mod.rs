// SPDX-License-Identifier: GPL-2.0

//! A session's path across reconnects (`struct rtrs_clt_path` with its
//! `err_recovery_work`, `reconnect_dwork` and `close_work`).
//!
//! The connections of a path are a [`PathConns`], published in `SessPath::cur`
//! while connected. IO reaches it only inside an RCU read-side section
//! ([`RcuGuard`]) and only if the path reads CONNECTED; teardown leaves
//! CONNECTED first, unpublishes `cur`, then waits with `synchronize_rcu`
//! before it drains and frees anything (the mechanism of
//! `rtrs_clt_stop_and_destroy_conns`). `init` (C's `init_mutex`)
//! serialises connect and teardown.
//!
//! Lock order: see the crate root (`init` comes after `Sess::paths_mutex`
//! and before `Con::con_mutex`).
//!
//! The files: this one (`SessPath` and its works), `conns` (one generation
//! of a path's connections, `PathConns`: init_conns, create_cm, the INFO
//! exchange, and teardown) and `hb` (the heartbeat work on cid 0).

use core::ops::Deref;
use core::sync::atomic::Ordering;

use kernel::c_str;
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow, Mutex};

use crate::con::{IoCtx, PathArgs, PathLink, PathRecovery, PathShared, RtrsCltState};
use crate::ffi::error::econnreset;
use crate::ffi::log::pr_err_rl;
use crate::ffi::sync::{RcuBox, RcuGuard};
use crate::ffi::trace;
use crate::ffi::wq::{impl_has_delayed_work, DelayedWork, WorkItem, Workqueue};
use crate::io::ReqDesc;
use crate::rtrs_core::path_state::{
    self, ConnectStage, ReconnectDecision, StateReason, SysfsReconnect,
};
use crate::rtrs_core::proto::{RTRS_RECONNECT_BACKOFF, RTRS_RECONNECT_SEED};

mod conns;
mod hb;

use conns::{ConnectError, PathConns};

/// `WorkItem` ids of a path's works.
const ERR_RECOVERY_WORK: u64 = 0;
const RECONNECT_WORK: u64 = 1;
const CLOSE_WORK: u64 = 2;
const HB_WORK: u64 = 3;

/// What a path asks of the session that owns it (C's `path->clt`). The
/// session implements it, so that a path does not depend on the session's
/// type: the layers import downward only.
pub(crate) trait PathOwner: Send + Sync + 'static {
    /// `rtrs_clt_path_up` for the session: counts the path (under `link`).
    fn path_up(&self, link: &PathLink);
    /// `rtrs_clt_path_down` for the session.
    fn path_down(&self, link: &PathLink);
    /// `rtrs_clt_failover_req`: a request taken back from this path, to be
    /// posted on another.
    fn failover_req(&self, r: &ReqDesc<'_>, from: &PathShared) -> Result;
    /// The session's `max_reconnect_attempts` (user value).
    fn max_reconnect_attempts(&self) -> i32;
}

/// One path of a session, from `rtrs_clt_open` (or `add_path`) until the
/// session closes it ([`PathHandle`]) and its works and connections are
/// done with it: each holds a reference while it is queued or connected.
///
/// # Invariants
///
/// A published `cur` was made from `self.shared` (by `init_path`) and is
/// taken out only under `init`: by `stop_and_destroy_conns`, or by
/// `init_path` when the path left CONNECTING before it became CONNECTED.
#[pin_data]
pub(crate) struct SessPath<O: PathOwner> {
    /// `err_recovery_work`: tears the connections down, then reconnects.
    #[pin]
    err_recovery_work: DelayedWork<Self, ERR_RECOVERY_WORK>,
    /// `reconnect_dwork`.
    #[pin]
    reconnect_work: DelayedWork<Self, RECONNECT_WORK>,
    /// `close_work`.
    #[pin]
    close_work: DelayedWork<Self, CLOSE_WORK>,
    /// `hb_dwork` of the connected generation (on its cid 0).
    #[pin]
    hb_work: DelayedWork<Self, HB_WORK>,
    /// What survives reconnects; sysfs files and connections point to it.
    shared: Arc<PathShared>,
    /// The connected `PathConns`, for IO under RCU; empty while down.
    cur: RcuBox<PathConns>,
    /// The session (`path->clt`). It holds its paths until it closes,
    /// which drops them and so these references.
    sess: Arc<O>,
    /// `reconnect_delay_sec` of the session.
    reconnect_delay_sec: u32,
    /// `init_mutex`.
    #[pin]
    init: Mutex<()>,
}

impl_has_delayed_work! {
    impl<O: PathOwner> for SessPath<O> {
        ERR_RECOVERY_WORK => err_recovery_work,
        RECONNECT_WORK => reconnect_work,
        CLOSE_WORK => close_work,
        HB_WORK => hb_work,
    }
}

/// `err_recovery_work`: tears the connections down, then reconnects after
/// `reconnect_delay_sec` with jitter.
impl<O: PathOwner> WorkItem<ERR_RECOVERY_WORK> for SessPath<O> {
    fn run(this: Arc<Self>) {
        let this = this.as_arc_borrow();
        this.stop_and_destroy_conns();
        let jitter = crate::ffi::misc::random_below(RTRS_RECONNECT_SEED);
        let delay = path_state::reconnect_delay_ms(this.reconnect_delay_sec, jitter);
        DelayedWork::<Self, RECONNECT_WORK>::queue(this, delay);
    }
}

/// `reconnect_dwork`.
impl<O: PathOwner> WorkItem<RECONNECT_WORK> for SessPath<O> {
    fn run(this: Arc<Self>) {
        this.as_arc_borrow().reconnect_work();
    }
}

/// `close_work`.
impl<O: PathOwner> WorkItem<CLOSE_WORK> for SessPath<O> {
    fn run(this: Arc<Self>) {
        let this = this.as_arc_borrow();
        DelayedWork::<Self, ERR_RECOVERY_WORK>::cancel_sync(this);
        DelayedWork::<Self, RECONNECT_WORK>::cancel_sync(this);
        this.stop_and_destroy_conns();
        this.shared
            .change_state(RtrsCltState::Closed, StateReason::Closed);
    }
}

/// `hb_work`: rtrs_core's tick on the connected generation's cid 0.
impl<O: PathOwner> WorkItem<HB_WORK> for SessPath<O> {
    fn run(this: Arc<Self>) {
        let again = {
            let g = RcuGuard::new();
            this.cur(&g).and_then(|c| c.con(0)).is_some_and(hb::hb_work)
        };
        if again {
            let ms = this.shared.hb.interval_ms;
            DelayedWork::<Self, HB_WORK>::queue(this.as_arc_borrow(), ms);
        }
    }
}

/// A connection's calls into its path, from CQ and CM context.
impl<O: PathOwner> PathRecovery for SessPath<O> {
    fn queue_err_recovery(self: ArcBorrow<'_, Self>) {
        DelayedWork::<Self, ERR_RECOVERY_WORK>::queue(self, 0);
    }

    fn queue_close(self: ArcBorrow<'_, Self>) {
        DelayedWork::<Self, CLOSE_WORK>::queue(self, 0);
    }

    fn max_reconnect_attempts(&self) -> i32 {
        self.sess.max_reconnect_attempts()
    }
}

/// The session's hold on one of its paths. Dropping it closes the path
/// (`rtrs_clt_close_conns(path, true)` and the rest of `free_path`), which
/// also drops what the connections held of it.
pub(crate) struct PathHandle<O: PathOwner>(Arc<SessPath<O>>);

impl<O: PathOwner> Deref for PathHandle<O> {
    type Target = SessPath<O>;
    fn deref(&self) -> &SessPath<O> {
        &self.0
    }
}

impl<O: PathOwner> Drop for PathHandle<O> {
    fn drop(&mut self) {
        // A path dropped without being closed (an error in open or
        // add_path after it connected) closes here: once CLOSED no error
        // requeues a work.
        let p = self.0.as_arc_borrow();
        p.close_conns(true);
        DelayedWork::<SessPath<O>, CLOSE_WORK>::cancel_sync(p);
        DelayedWork::<SessPath<O>, ERR_RECOVERY_WORK>::cancel_sync(p);
        DelayedWork::<SessPath<O>, RECONNECT_WORK>::cancel_sync(p);
        p.stop_and_destroy_conns();
    }
}

impl<O: PathOwner> PathHandle<O> {
    /// `alloc_path`: not connected yet (see `init_path`); its works run
    /// on `wq`.
    pub(crate) fn new(
        args: &PathArgs<'_>,
        wq: &Arc<Workqueue>,
        sess: Arc<O>,
        reconnect_delay_sec: u32,
    ) -> Result<Self> {
        let sp = Arc::pin_init(
            try_pin_init!(SessPath::<O> {
                err_recovery_work <- DelayedWork::new(wq, c_str!("rtrs_rs_err_recovery_work")),
                reconnect_work <- DelayedWork::new(wq, c_str!("rtrs_rs_reconnect_dwork")),
                close_work <- DelayedWork::new(wq, c_str!("rtrs_rs_close_work")),
                hb_work <- DelayedWork::new(wq, c_str!("rtrs_rs_hb_dwork")),
                shared: PathShared::new(args)?,
                cur: RcuBox::empty(),
                sess,
                reconnect_delay_sec,
                init <- new_mutex!((), "rtrs_rs_init_mutex"),
            }? Error),
            GFP_KERNEL,
        )?;
        Ok(Self(sp))
    }

    /// The path, to call what queues its works.
    pub(crate) fn get(&self) -> ArcBorrow<'_, SessPath<O>> {
        self.0.as_arc_borrow()
    }
}

impl<O: PathOwner> SessPath<O> {
    /// The session.
    pub(crate) fn sess(&self) -> &Arc<O> {
        &self.sess
    }

    /// What survives reconnects.
    pub(crate) fn shared(&self) -> &PathShared {
        &self.shared
    }

    /// The connected `PathConns` while `guard` is held, if it is published.
    pub(crate) fn cur<'a>(&'a self, guard: &'a RcuGuard) -> Option<&'a PathConns> {
        self.cur.get(guard)
    }

    /// `init_path`: connects, allocates the request slots, starts the
    /// heartbeat and publishes the connections; the state is CONNECTED and
    /// the session counts the path up (`rtrs_clt_path_up`).
    pub(crate) fn init_path(self: ArcBorrow<'_, Self>) -> Result {
        {
            let _g = self.init.lock();
            let up: Arc<dyn PathRecovery> = Arc::<Self>::from(self);
            let failed = |e: ConnectError| {
                let what = match e.stage {
                    ConnectStage::PathInfo => "rtrs_send_path_info()",
                    _ => "init_conns()",
                };
                pr_err!(
                    "{}: {} failed: err={}\n",
                    self.shared.sessname(),
                    what,
                    e.err.to_errno()
                );
                self.trace_connect(&e);
                e.err
            };
            let path = PathConns::connect(&self.shared, up).map_err(failed)?;
            let old = self.cur.replace(Some(path));
            if old.is_some() {
                // Cannot happen: teardown unpublishes under `init`.
                pr_err!("{}: path published twice\n", self.shared.sessname());
            }
            // CONNECTED once published, as C's path is usable when its INFO
            // response makes it CONNECTED: IO that sees the state finds the
            // connections. If the path left CONNECTING meanwhile (an error
            // made it CONNECTING_ERR, or a close CLOSING), it was never
            // CONNECTED, so no IO reached it: unpublished and torn down.
            if !self
                .shared
                .change_state(RtrsCltState::Connected, StateReason::Connected)
            {
                drop(self.cur.replace(None).wait());
                return Err(failed(ConnectError {
                    stage: ConnectStage::PathInfo,
                    cid: 0,
                    err: econnreset(),
                }));
            }
            // Under `init`, as C: a teardown that follows at once (an error
            // right after connecting) takes the path down after this.
            self.path_up();
            // `rtrs_start_hb`.
            self.shared.hb_missed_cnt.store(0, Ordering::Release);
            DelayedWork::<Self, HB_WORK>::queue(self, self.shared.hb.interval_ms);
        }
        if trace::on(trace::Kind::Connect) {
            trace::emit(&trace::Event::Connect {
                path: self.shared.name().as_bytes(),
                stage: ConnectStage::Done.name(),
                cid: 0,
                err: 0,
                reconnect_attempts: self.shared.link.attempts_unlocked(),
            });
        }
        Ok(())
    }

    /// The `rtrs_clt_connect` trace event of a failed attempt.
    fn trace_connect(&self, e: &ConnectError) {
        if trace::on(trace::Kind::Connect) {
            trace::emit(&trace::Event::Connect {
                path: self.shared.name().as_bytes(),
                stage: e.stage.name(),
                cid: e.cid,
                err: e.err.to_errno(),
                reconnect_attempts: self.shared.link.attempts_unlocked(),
            });
        }
    }

    /// `rtrs_clt_path_up` (the session sends no event while it opens).
    fn path_up(&self) {
        self.sess.path_up(&self.shared.link);
        self.shared.stats.inc_reconnect(true);
    }

    /// `rtrs_clt_path_down`.
    fn path_down(&self) {
        self.sess.path_down(&self.shared.link);
    }

    /// `rtrs_clt_stop_and_destroy_conns`. Process context.
    pub(crate) fn stop_and_destroy_conns(self: ArcBorrow<'_, Self>) {
        {
            let _g = self.init.lock();
            // `rtrs_stop_hb`.
            DelayedWork::<Self, HB_WORK>::cancel_sync(self);
            self.shared.hb_missed_cnt.store(0, Ordering::Release);
            // After the grace period every submitter that saw the path
            // CONNECTED is out, and the path is ours alone.
            if let Some(mut path) = self.cur.replace(None).wait() {
                path.teardown(|io| self.fail_all_outstanding_reqs(io));
            }
        }
        self.path_down();
    }

    /// `fail_all_outstanding_reqs`: each request still in flight is failed
    /// over to another path, or confirmed with the error, logged (C logs
    /// every request it fails here, even one it then fails over).
    fn fail_all_outstanding_reqs(&self, io: &IoCtx) {
        io.fail_outstanding(&self.shared.stats, |fr: &ReqDesc<'_>| {
            self.sess.failover_req(fr, &self.shared).inspect_err(|e| {
                pr_err_rl!(
                    "{}: IO {} request failed: error={}, no path took it over\n",
                    self.shared.sessname(),
                    if fr.read { "read" } else { "write" },
                    e.to_errno()
                )
            })
        });
    }

    /// `rtrs_clt_reconnect_work`: rtrs_core decides whether to try.
    fn reconnect_work(self: ArcBorrow<'_, Self>) {
        let user_max = self.sess.max_reconnect_attempts();
        self.shared.trace_conn(trace::Kind::ReconnectWork, user_max);
        let max = path_state::max_reconnect_attempts_from_user(user_max);
        let decision = self
            .shared
            .link
            .lock()
            .reconnect_work(self.shared.state(), max);
        match decision {
            ReconnectDecision::NotReconnecting => return,
            ReconnectDecision::GiveUp => {
                self.close_conns(false);
                return;
            }
            ReconnectDecision::Attempt => {}
        }
        crate::ffi::misc::msleep(RTRS_RECONNECT_BACKOFF);
        if self
            .shared
            .change_state(RtrsCltState::Connecting, StateReason::Reconnect)
            && self.init_path().is_err()
            && self
                .shared
                .update_state(StateReason::ReconnectFailed, path_state::reconnect_failed)
        {
            self.shared.stats.inc_reconnect(false);
            DelayedWork::<Self, ERR_RECOVERY_WORK>::queue(self, 0);
        }
    }

    /// `rtrs_clt_close_conns`: CLOSING, then the close work; with `wait`,
    /// until it has finished (CLOSED).
    pub(crate) fn close_conns(self: ArcBorrow<'_, Self>, wait: bool) {
        self.shared
            .trace_conn(trace::Kind::CloseConns, self.sess.max_reconnect_attempts());
        if self.shared.start_closing() {
            DelayedWork::<Self, CLOSE_WORK>::queue(self, 0);
        }
        if wait {
            DelayedWork::<Self, CLOSE_WORK>::flush(&self);
        }
    }

    /// `rtrs_clt_reconnect_from_sysfs`: 0 once CONNECTED again, -ENOTCONN
    /// if the attempt failed, -EBUSY if the path is neither down nor
    /// reconnecting.
    pub(crate) fn reconnect_from_sysfs(self: ArcBorrow<'_, Self>) -> Result {
        match self
            .shared
            .update_state(StateReason::SysfsReconnect, path_state::sysfs_reconnect)
        {
            SysfsReconnect::Busy => return Err(EBUSY),
            SysfsReconnect::Flush => {
                // A recovery still tearing the connections down queues the
                // reconnect when done: wait for it, so the reconnect is
                // tried now (C flushes only the reconnect work and so
                // fails with -ENOTCONN at once, right after a link loss).
                DelayedWork::<Self, ERR_RECOVERY_WORK>::flush(&self);
            }
            SysfsReconnect::Started => {
                self.shared.link.lock().sysfs_reconnect_started();
                self.stop_and_destroy_conns();
                DelayedWork::<Self, RECONNECT_WORK>::queue(self, 0);
            }
        }
        DelayedWork::<Self, RECONNECT_WORK>::flush(&self);
        if self.shared.state() == RtrsCltState::Connected {
            Ok(())
        } else {
            Err(crate::ffi::error::enotconn())
        }
    }

    /// `rtrs_clt_disconnect_from_sysfs`.
    pub(crate) fn disconnect_from_sysfs(self: ArcBorrow<'_, Self>) {
        self.close_conns(true);
    }
}
