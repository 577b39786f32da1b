// SPDX-License-Identifier: GPL-2.0

//! The session (`struct rtrs_clt_sess`): its path list, the multipath
//! policies, failover, and adding and removing paths.
//!
//! `Sess::open` connects every given path synchronously and returns a
//! connected session. IO walks the path list under RCU without a lock;
//! paths are added and removed under `paths_mutex` (see `RcuArray`).
//!
//! The files: this one (the session: open, close, its path list and what
//! its paths and the exported API ask of it), `paths` (adding and removing
//! paths), `policy` (a request's way to a path: the multipath policies and
//! failover) and `permits` (the permits: the bitmap over the pool).

use core::pin::Pin;
use core::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};

use kernel::ffi::c_int;
use kernel::fmt;
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::str::CString;
use kernel::sync::{Arc, LockedBy, Mutex};

use crate::con::{PathArgs, PathLink, PathShared, PolicyGen, RtrsCltState};
use crate::ffi::abi::{LinkEvCb, PathAddr, RtrsAttrs, RtrsPermit};
use crate::ffi::error::ecomm;
use crate::ffi::kobj::{Class, PathKobj, SessDev};
use crate::ffi::log::pr_warn_rl;
use crate::ffi::misc::nr_cpu_ids;
use crate::ffi::misc::uuid_gen;
use crate::ffi::sync::{OnceBox, RcuArray, RcuBox, RcuGuard};
use crate::ffi::trace;
use crate::ffi::verbs::DevPool;
use crate::ffi::wq::Workqueue;
use crate::io::ReqDesc;
use crate::path::PathOwner;
use crate::rtrs_core::names::check_sessname;
use crate::rtrs_core::path_state::{HbParams, PathsUpUnderflow, RtrsCltLinkEv, RtrsCltPathsUp};
use crate::rtrs_core::policy::{MpPolicy, HINT_NONE};
use crate::rtrs_core::proto::{RtrsCltLimits, MAX_PATHS_NUM, NAME_MAX};

mod paths;
mod permits;
mod policy;

use permits::{Permits, PutError};

/// A path of a session.
pub(crate) type SessPath = crate::path::SessPath<Sess>;
/// The session's hold on a path.
type PathHandle = crate::path::PathHandle<Sess>;

// ---------------------------------------------------------------------------
// Module-wide state the API needs
// ---------------------------------------------------------------------------

/// What `rtrs_clt_open` needs from the module.
#[derive(Clone)]
pub(crate) struct Globals {
    pool: Arc<DevPool>,
    class: Arc<Class>,
    wq: Arc<Workqueue>,
    hb: HbParams,
}

static GLOBALS: RcuBox<Globals> = RcuBox::empty();

/// Publishes the module state to the API; unpublished on drop (module
/// exit, when no user of the exported symbols is left).
pub(crate) struct GlobalsGuard;

impl GlobalsGuard {
    pub(crate) fn new(
        pool: Arc<DevPool>,
        class: Arc<Class>,
        wq: Arc<Workqueue>,
        hb: HbParams,
    ) -> Result<Self> {
        let g = KBox::new(
            Globals {
                pool,
                class,
                wq,
                hb,
            },
            GFP_KERNEL,
        )?;
        drop(GLOBALS.replace(Some(g)).wait());
        Ok(Self)
    }
}

impl Drop for GlobalsGuard {
    fn drop(&mut self) {
        drop(GLOBALS.replace(None).wait());
    }
}

/// The module state; `None` outside module init to exit. The class and
/// workqueue stay valid while the caller runs: users of the API hold a
/// reference on this module.
fn globals() -> Option<Globals> {
    let g = RcuGuard::new();
    GLOBALS.get(&g).cloned()
}

/// The session's paths (`paths_list`, `paths_num`) and `paths_mutex`,
/// which guards whether the session is closing.
type PathArray = RcuArray<PathEntry, bool>;

/// A path and its sysfs directory (created once the path is up).
///
/// IO holds `&PathEntry` under RCU and reads only `sp`; `kobj` is set and
/// taken under `Sess::paths_mutex` (add, remove, close), so writing it does
/// not touch what readers see. It comes first: fields drop in order, and the
/// directory, whose files show the path, must go before the path.
struct PathEntry {
    kobj: LockedBy<Option<PathKobj>, bool>,
    sp: PathHandle,
}

/// `struct rtrs_clt_sess`: what rnbd holds as `struct rtrs_clt_sess *`
/// (from `Arc::into_raw`; its paths hold it too, until close).
///
/// IO walks the path list and reaches each path's connections under RCU
/// (see `RcuArray` and `crate::path`).
///
/// Lock order: `paths_mutex` → `SessPath::init` → `paths_ev`.
pub(crate) struct Sess {
    sessname: CString,
    /// `paths_list`, in the order given to open, then `add_path` order.
    /// Its writers' lock is `paths_mutex`: it serialises add, remove and
    /// close, and guards `true` once the session closes (no path may be
    /// added or removed then).
    paths: Pin<KBox<PathArray>>,
    /// `port` given to open, for `add_path`.
    port: u16,
    /// `reconnect_delay_sec` given to open, for `add_path`.
    reconnect_delay_sec: u32,
    /// `paths_uuid`: the session's id on the server.
    paths_uuid: [u8; 16],
    /// What the paths of open told, set before open returns.
    limits: OnceBox<SessLimits>,
    /// The caller's `link_ev` (from `rtrs_clt_ops`).
    link_ev: LinkEvCb,
    /// `paths_up` (rtrs_core's count) under `paths_ev_mutex`.
    paths_ev: Pin<KBox<Mutex<RtrsCltPathsUp>>>,
    /// `mp_policy` (MP_POLICY_*), set through sysfs at any time.
    mp_policy: AtomicI32,
    /// `max_reconnect_attempts`.
    max_reconnect_attempts: AtomicI32,
    /// Round-robin cursor per CPU id (`pcpu_path`): the index of the last
    /// path used from that CPU, `usize::MAX` for none.
    rr_cursor: KVec<AtomicUsize>,
    /// Bumped by the paths and by changes to the list.
    policy_gen: Arc<PolicyGen>,
    /// Min-latency's cached pick (`policy::pack_hint`): the path its last
    /// full scan chose, with `policy_gen` as read before that scan.
    lat_hint: AtomicU64,
    /// The sysfs device; deleted by `close`, destroyed with the session.
    dev: SessDev,
}

/// The session's limits, from the paths of `rtrs_clt_open`: the permits
/// (for `queue_depth`), `max_io_size` and `max_segments`.
struct SessLimits {
    permits: Permits,
    clt: RtrsCltLimits,
}

impl Sess {
    /// `rtrs_clt_open`: the session first (so that its paths can count
    /// themselves up, without link events until it has opened), then each
    /// path connected in turn, then the permits. The caller shows the
    /// session's files (`show_files`) with the handle it gives out.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn open(
        link_ev: LinkEvCb,
        pathname: &CStr,
        paths: &[PathAddr<'_>],
        port: u16,
        pdu_sz: usize,
        reconnect_delay_sec: u8,
        max_reconnect_attempts: i16,
        nr_poll_queues: u32,
    ) -> Result<Arc<Sess>> {
        if check_sessname(pathname.as_bytes()).is_err() || pathname.as_bytes().len() >= NAME_MAX {
            pr_err!("pathname cannot contain / and .\n");
            return Err(EINVAL);
        }
        let n = u32::try_from(paths.len()).map_err(|_| EINVAL)?;
        if n == 0 || n > MAX_PATHS_NUM {
            return Err(EINVAL);
        }
        let g = globals().ok_or(ENODEV)?;
        let sessname = CString::try_from_fmt(fmt!("{}", pathname))?;
        let mut rr_cursor = KVec::with_capacity(nr_cpu_ids() as usize, GFP_KERNEL)?;
        for _ in 0..nr_cpu_ids() {
            rr_cursor.push(AtomicUsize::new(usize::MAX), GFP_KERNEL)?;
        }
        let sess = Arc::new(
            Sess {
                dev: SessDev::new(&g.class, &sessname)?,
                sessname,
                paths: KBox::pin_init(
                    RcuArray::new(
                        MAX_PATHS_NUM as usize,
                        new_mutex!(false, "rtrs_rs_paths_mutex"),
                    )?,
                    GFP_KERNEL,
                )?,
                port,
                reconnect_delay_sec: u32::from(reconnect_delay_sec),
                paths_uuid: uuid_gen(),
                limits: OnceBox::empty(),
                link_ev,
                paths_ev: KBox::pin_init(
                    new_mutex!(RtrsCltPathsUp::opening(), "rtrs_rs_paths_ev_mutex"),
                    GFP_KERNEL,
                )?,
                mp_policy: AtomicI32::new(MpPolicy::MinInflight.as_raw()),
                max_reconnect_attempts: AtomicI32::new(i32::from(max_reconnect_attempts)),
                rr_cursor,
                policy_gen: Arc::new(PolicyGen::default(), GFP_KERNEL)?,
                lat_hint: AtomicU64::new(HINT_NONE),
            },
            GFP_KERNEL,
        )?;
        if let Err(e) = sess.open_paths(&g, paths, pdu_sz, nr_poll_queues) {
            sess.shut();
            return Err(e);
        }
        sess.paths_ev.lock().opened();
        if let Some(l) = sess.limits.get() {
            pr_info!(
                "{}: session opened: paths={} queue_depth={} max_io_size={} max_segments={}\n",
                &*sess.sessname,
                paths.len(),
                l.permits.queue_depth(),
                l.clt.max_io_size,
                l.clt.max_segments
            );
        }
        Ok(sess)
    }

    /// Points the session's sysfs files at `this`, the handle its user
    /// keeps until `close`; the files turn it back into an `ArcBorrow`.
    ///
    /// # Safety
    ///
    /// `this` came from `Arc::into_raw` and that reference is given up only
    /// to `close`, which deletes the files first.
    pub(crate) unsafe fn show_files(this: *const Self) {
        // SAFETY: `this` is live (the function's contract), and stays so
        // while the files exist.
        unsafe { (*this).dev.set_sess(this.cast()) };
    }

    /// The paths of open, each connected and listed, then the limits.
    fn open_paths(
        self: &Arc<Self>,
        g: &Globals,
        paths: &[PathAddr<'_>],
        pdu_sz: usize,
        nr_poll_queues: u32,
    ) -> Result {
        let mut clt = RtrsCltLimits::new();
        for (i, a) in paths.iter().enumerate() {
            let dst = a.dst.ok_or(EINVAL)?;
            let src = a.src.copied().unwrap_or_default();
            let args = PathArgs {
                pool: &g.pool,
                sessname: &self.sessname,
                src: &src,
                dst,
                paths_uuid: self.paths_uuid,
                for_new_clt: i == 0,
                nr_poll_queues,
                hb: g.hb,
                policy_gen: &self.policy_gen,
            };
            let sp = PathHandle::new(&args, &g.wq, self.clone(), self.reconnect_delay_sec)?;
            sp.get().init_path()?;
            let info = sp.shared().info().ok_or(EINVAL)?;
            let kobj = Self::create_path_files(&self.dev, &sp)?;
            let e = Arc::new(
                PathEntry {
                    kobj: LockedBy::new(self.paths.writer(), Some(kobj)),
                    sp,
                },
                GFP_KERNEL,
            )?;
            // Cannot fail: open takes at most MAX_PATHS_NUM paths.
            let _ = self.paths.lock().push(e);
            self.policy_gen.bump();
            clt.merge(&info);
        }
        let limits = KBox::new(
            SessLimits {
                permits: Permits::new(clt.queue_depth, pdu_sz)?,
                clt,
            },
            GFP_KERNEL,
        )?;
        self.limits.set(limits).map_err(|_| EINVAL)
    }

    /// Each path: connections closed (`rtrs_clt_close_conns(path, true)`),
    /// then its sysfs directory, then the path. The entries are unlisted.
    fn close_paths(entries: &mut KVec<Arc<PathEntry>>, paths_mutex: &Mutex<bool>) {
        for e in entries.iter_mut() {
            e.sp.get().close_conns(true);
            let kobj = e.kobj.access_mut(&mut paths_mutex.lock()).take();
            drop(kobj);
        }
        *entries = KVec::new();
    }

    /// Sysfs first, as C: a running add_path (or a path's reconnect)
    /// finishes before the paths are taken, and none starts after. Then the
    /// paths go, and with them their references to the session.
    fn shut(&self) {
        self.dev.del();
        // free_permits' wait: no request may be in flight below.
        if let Some(l) = self.limits.get() {
            l.permits.wait_all_free();
        }
        let mut entries = {
            let mut closing = self.paths.lock();
            *closing = true;
            closing.take_all()
        };
        self.policy_gen.bump();
        Self::close_paths(&mut entries, self.paths.writer());
    }

    /// `rtrs_clt_close`: `this` is the handle from `open`.
    pub(crate) fn close(this: Arc<Self>) {
        this.shut();
        pr_info!("{}: session closed\n", &*this.sessname);
    }

    fn link_ev(&self, ev: RtrsCltLinkEv) {
        self.link_ev.call(ev as c_int);
    }
}

impl Sess {
    /// The session name.
    pub(crate) fn sessname(&self) -> &CStr {
        &self.sessname
    }

    /// `port` given to open.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// `mp_policy` as its MP_POLICY_* value.
    pub(crate) fn mp_policy_raw(&self) -> i32 {
        self.mp_policy.load(Ordering::Relaxed)
    }

    /// Sets `mp_policy`; `v` is a valid MP_POLICY_* value.
    pub(crate) fn set_mp_policy_raw(&self, v: i32) {
        let Some(new) = MpPolicy::from_raw(v) else {
            return;
        };
        let old = self.mp_policy.swap(v, Ordering::Relaxed);
        if trace::on(trace::Kind::MpPolicy) {
            trace::emit(&trace::Event::MpPolicy {
                sess: self.sessname.as_bytes(),
                old: MpPolicy::from_raw(old).map_or("", MpPolicy::name),
                new: new.name(),
            });
        }
    }

    /// `rtrs_clt_get_max_reconnect_attempts`.
    pub(crate) fn max_reconnect_attempts(&self) -> i32 {
        self.max_reconnect_attempts.load(Ordering::Relaxed)
    }

    /// `rtrs_clt_set_max_reconnect_attempts`.
    pub(crate) fn set_max_reconnect_attempts(&self, v: i32) {
        self.max_reconnect_attempts.store(v, Ordering::Relaxed);
    }

    fn is_connected(&self) -> bool {
        let g = RcuGuard::new();
        let up = self
            .paths
            .snapshot(&g)
            .iter()
            .any(|(_, e)| e.sp.shared().state() == RtrsCltState::Connected);
        drop(g);
        up
    }
}

impl PathOwner for Sess {
    /// `rtrs_clt_path_up` for the session (rtrs_core's count): RECONNECTED
    /// to rnbd, under `paths_ev`, when the first path comes back after all
    /// were down.
    fn path_up(&self, link: &PathLink) {
        let mut up = self.paths_ev.lock();
        let ev = up.path_up(&mut link.lock());
        if let Some(ev) = ev {
            self.link_ev(ev);
        }
    }

    /// `rtrs_clt_path_down` for the session: DISCONNECTED when the last
    /// established path goes.
    fn path_down(&self, link: &PathLink) {
        let mut up = self.paths_ev.lock();
        let ev = up.path_down(&mut link.lock());
        match ev {
            Ok(Some(ev)) => self.link_ev(ev),
            Ok(None) => {}
            Err(PathsUpUnderflow) => pr_warn!("{}: paths_up underflow\n", &*self.sessname),
        }
    }

    /// `rtrs_clt_failover_req`: posts a request taken back from a failed
    /// path on another connected one, counting it in that path's failover.
    fn failover_req(&self, r: &ReqDesc<'_>, from: &PathShared) -> Result {
        self.issue(r, Some(from))
    }

    fn max_reconnect_attempts(&self) -> i32 {
        Sess::max_reconnect_attempts(self)
    }
}

/// What the exported API asks of a session (see api.rs).
impl Sess {
    /// `rtrs_clt_get_permit`: with `wait`, sleeps until one is free.
    pub(crate) fn get_permit(&self, con_type: u32, wait: bool) -> *mut RtrsPermit {
        let Some(p) = self.permits() else {
            return core::ptr::null_mut();
        };
        if wait {
            p.get_wait(con_type)
        } else {
            p.try_get(con_type).unwrap_or(core::ptr::null_mut())
        }
    }

    /// The permits (set by open before rnbd gets the session).
    fn permits(&self) -> Option<&Permits> {
        self.limits.get().map(|l| &l.permits)
    }

    /// `rtrs_clt_put_permit`.
    pub(crate) fn put_permit(&self, permit: *const RtrsPermit) {
        let Some(p) = self.permits() else {
            return;
        };
        if let Err(e) = p.put(permit) {
            self.warn_put(e);
        }
    }

    /// The log line of a refused put, out of the put's way.
    #[cold]
    #[inline(never)]
    fn warn_put(&self, e: PutError) {
        match e {
            PutError::Foreign => pr_warn_rl!("{}: put of a foreign permit\n", &*self.sessname),
            PutError::NotInUse => pr_warn_rl!("{}: put of a free permit\n", &*self.sessname),
        }
    }

    /// `rtrs_clt_rdma_cq_direct`: polls connection `index + 1` (rnbd's
    /// poll hctx `queue_num`) of the connected paths until one yields
    /// completions; -1 when no path is connected, so that the block layer
    /// stops polling.
    pub(crate) fn cq_direct(&self, index: u32) -> c_int {
        let mut cnt = -1;
        let Some(cid) = usize::try_from(index).ok().and_then(|i| i.checked_add(1)) else {
            return cnt;
        };
        let guard = RcuGuard::new();
        for (_, e) in self.paths.snapshot(&guard).iter() {
            if e.sp.shared().state() != RtrsCltState::Connected {
                continue;
            }
            let Some(path) = e.sp.cur(&guard) else {
                continue;
            };
            // C indexes con[index + 1] unchecked; an index past the last
            // connection polls nothing here.
            cnt = path.con(cid).map_or(0, |c| c.poll_direct());
            if cnt != 0 {
                break;
            }
        }
        cnt
    }

    /// `rtrs_clt_query`: ECOMM while no path is connected.
    pub(crate) fn query(&self, attr: &mut RtrsAttrs) -> Result {
        if !self.is_connected() {
            return Err(ecomm());
        }
        let l = self.limits.get().ok_or_else(ecomm)?;
        attr.queue_depth = l.permits.queue_depth();
        attr.max_segments = l.clt.max_segments;
        attr.max_io_size = l.clt.query_max_io_size();
        Ok(())
    }
}
