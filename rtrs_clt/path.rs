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

use core::pin::Pin;

use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};

use crate::bindings;
use crate::clt::{IoCtx, PathArgs, PathShared, RtrsCltState, CLOSE_WORK, ERR_RECOVERY_WORK};
use crate::conns::PathConns;
use crate::io::ReqDesc;
use crate::rtrs_core::path_state::{self, ReconnectDecision, RtrsCltPathLink, SysfsReconnect};
use crate::rtrs_core::proto::{RTRS_RECONNECT_BACKOFF, RTRS_RECONNECT_SEED};
use crate::sync::{RcuBox, RcuGuard};
use crate::wq::{DelayedWork, WorkItem, WorkRef};

/// `WorkItem` id of `reconnect_dwork` (after the ones `PathShared` holds).
const RECONNECT_WORK: u64 = 2;

/// What a path asks of the session that owns it (C's `path->clt`). The
/// session implements it, so that a path does not depend on the session's
/// type: the layers import downward only.
pub(crate) trait PathOwner: Send + Sync {
    /// `rtrs_clt_path_up` for the session: counts the path (under `link`).
    fn path_up(&self, link: &Mutex<RtrsCltPathLink>);
    /// `rtrs_clt_path_down` for the session.
    fn path_down(&self, link: &Mutex<RtrsCltPathLink>);
    /// `rtrs_clt_failover_req`: a request taken back from this path, to be
    /// posted on another.
    fn failover_req(&self, r: &ReqDesc<'_>) -> Result;
    /// The session's `max_reconnect_attempts` (user value).
    fn max_reconnect_attempts(&self) -> i32;
}

/// One path of a session, from `rtrs_clt_open` (or `add_path`) until the
/// session closes.
///
/// # Invariants
///
/// A published `cur` was made from `self.shared` (by `init_path`) and is
/// taken out only by `stop_and_destroy_conns`.
#[pin_data(PinnedDrop)]
pub(crate) struct SessPath<O: PathOwner> {
    /// `reconnect_dwork` (`err_recovery_work` and `close_work` are in
    /// `shared`, which queues them). First: fields drop in order, and a
    /// work goes before what it uses.
    reconnect: DelayedWork,
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

// SAFETY: `cur` follows the type invariant; the rest is `Send`/`Sync`.
unsafe impl<O: PathOwner> Send for SessPath<O> {}
// SAFETY: As above.
unsafe impl<O: PathOwner> Sync for SessPath<O> {}

#[pinned_drop]
impl<O: PathOwner> PinnedDrop for SessPath<O> {
    fn drop(self: Pin<&mut Self>) {
        // A path dropped without being closed (an error in open or
        // add_path after it connected) closes here: once CLOSED no error
        // requeues a work. Then the works, which reference us, stop.
        self.close_conns(true);
        self.shared.close_work().cancel_sync();
        self.shared.err_recovery_work().cancel_sync();
        self.reconnect.cancel_sync();
        self.stop_and_destroy_conns();
    }
}

/// `err_recovery_work`: tears the connections down, then reconnects after
/// `reconnect_delay_sec` with jitter.
impl<O: PathOwner> WorkItem<ERR_RECOVERY_WORK> for SessPath<O> {
    fn run(&self, _work: &WorkRef<'_>) {
        self.stop_and_destroy_conns();
        let jitter = crate::misc::random_below(RTRS_RECONNECT_SEED);
        self.reconnect.queue(path_state::reconnect_delay_ms(
            self.reconnect_delay_sec,
            jitter,
        ));
    }
}

/// `reconnect_dwork`.
impl<O: PathOwner> WorkItem<RECONNECT_WORK> for SessPath<O> {
    fn run(&self, _work: &WorkRef<'_>) {
        self.reconnect_work();
    }
}

/// `close_work`.
impl<O: PathOwner> WorkItem<CLOSE_WORK> for SessPath<O> {
    fn run(&self, _work: &WorkRef<'_>) {
        self.shared.err_recovery_work().cancel_sync();
        self.reconnect.cancel_sync();
        self.stop_and_destroy_conns();
        self.shared.change_state(RtrsCltState::Closed);
    }
}

impl<O: PathOwner> SessPath<O> {
    /// `alloc_path`: not connected yet (see `init_path`); its works run
    /// on `wq`, which outlives it.
    pub(crate) fn new(
        args: &PathArgs<'_>,
        wq: *mut bindings::workqueue_struct,
        sess: Arc<O>,
        reconnect_delay_sec: u32,
    ) -> Result<Pin<KBox<Self>>> {
        KBox::pin_init(
            try_pin_init!(&this in SessPath::<O> {
                // SAFETY: The works in `shared` and `reconnect` run code of
                // the `SessPath` at `this` and are not queued before it is
                // initialised. They go with it: `shared` is shared only with
                // the connected `PathConns`, which `drop` tears down (after
                // cancelling the works) before the fields go.
                shared: unsafe { PathShared::new(args, this.as_ptr().cast_const(), wq) }?,
                cur: RcuBox::empty(),
                sess,
                reconnect_delay_sec,
                init <- new_mutex!((), "rtrs_rs_init_mutex"),
                // SAFETY: As above.
                reconnect: unsafe {
                    DelayedWork::new::<Self, RECONNECT_WORK>(this.as_ptr().cast_const(), wq)
                }?,
            }? Error),
            GFP_KERNEL,
        )
    }

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
    /// heartbeat and publishes the connections; the state is CONNECTED.
    /// `rtrs_clt_path_up` follows once `init` is released (see `path_up`).
    pub(crate) fn init_path(&self) -> Result {
        {
            let _g = self.init.lock();
            // SAFETY: The connections live in `cur` or in this frame, and
            // `drop` tears `cur` down before the works in `shared` (whose
            // owner we are) can outlive us.
            let mut path = unsafe { PathConns::connect(&self.shared) }.inspect_err(|e| {
                pr_err!(
                    "{}: init_conns() failed: err={}\n",
                    self.shared.sessname(),
                    e.to_errno()
                )
            })?;
            path.alloc_reqs().inspect_err(|e| {
                pr_err!(
                    "{}: alloc_path_reqs(), err: {:?}\n",
                    self.shared.sessname(),
                    e
                )
            })?;
            path.start_hb()?;
            let old = self.cur.replace(Some(KBox::new(path, GFP_KERNEL)?));
            if old.is_some() {
                // Cannot happen: teardown unpublishes under `init`.
                pr_err!("{}: path published twice\n", self.shared.sessname());
            }
        }
        self.path_up();
        Ok(())
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
    pub(crate) fn stop_and_destroy_conns(&self) {
        {
            let _g = self.init.lock();
            // After the grace period every submitter that saw the path
            // CONNECTED is out, and the path is ours alone.
            if let Some(mut path) = self.cur.replace(None).wait() {
                path.teardown(|io| self.fail_all_outstanding_reqs(io));
            }
        }
        self.path_down();
    }

    /// `fail_all_outstanding_reqs`: each request still in flight is failed
    /// over to another path, or confirmed with the error.
    fn fail_all_outstanding_reqs(&self, io: &IoCtx) {
        io.fail_outstanding(&self.shared.stats, |fr: &ReqDesc<'_>| {
            self.sess.failover_req(fr)
        });
    }

    /// `rtrs_clt_reconnect_work`: rtrs_core decides whether to try.
    fn reconnect_work(&self) {
        let max = path_state::max_reconnect_attempts_from_user(self.max_reconnect_attempts());
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
        crate::misc::msleep(RTRS_RECONNECT_BACKOFF);
        if self.shared.change_state(RtrsCltState::Connecting)
            && self.init_path().is_err()
            && self.shared.update_state(path_state::reconnect_failed)
        {
            self.shared.stats.inc_reconnect(false);
            self.shared.err_recovery_work().queue(0);
        }
    }

    /// The session's `max_reconnect_attempts`.
    fn max_reconnect_attempts(&self) -> i32 {
        self.sess.max_reconnect_attempts()
    }

    /// `rtrs_clt_close_conns`: CLOSING, then the close work; with `wait`,
    /// until it has finished (CLOSED).
    pub(crate) fn close_conns(&self, wait: bool) {
        self.shared.close_conns_nowait();
        if wait {
            self.shared.close_work().flush();
        }
    }

    /// `rtrs_clt_reconnect_from_sysfs`: 0 once CONNECTED again, -ENOTCONN
    /// if the attempt failed, -EBUSY if the path is neither down nor
    /// reconnecting.
    pub(crate) fn reconnect_from_sysfs(&self) -> Result {
        match self.shared.update_state(path_state::sysfs_reconnect) {
            SysfsReconnect::Busy => return Err(EBUSY),
            SysfsReconnect::Flush => {}
            SysfsReconnect::Started => {
                self.shared.link.lock().sysfs_reconnect_started();
                self.stop_and_destroy_conns();
                self.reconnect.queue(0);
            }
        }
        self.reconnect.flush();
        if self.shared.state() == RtrsCltState::Connected {
            Ok(())
        } else {
            Err(crate::error::enotconn())
        }
    }

    /// `rtrs_clt_disconnect_from_sysfs`.
    pub(crate) fn disconnect_from_sysfs(&self) {
        self.close_conns(true);
    }
}
