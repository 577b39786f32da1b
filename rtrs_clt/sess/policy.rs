// SPDX-License-Identifier: GPL-2.0

//! A request's way to a path: `rtrs_clt_request`'s checks, then the
//! multipath policy's order over the CONNECTED paths and failover
//! (`rtrs_clt_failover_req`), each path offered the request at most once.

use core::cell::Cell;
use core::sync::atomic::Ordering;

use kernel::prelude::*;
use kernel::sync::ArcBorrow;

use crate::con::PathShared;
use crate::ffi::abi::{Confirm, Kvecs, RtrsPermit, UsrHdr};
use crate::ffi::error::emsgsize;
use crate::ffi::log::pr_warn_rl;
use crate::ffi::sync::{RcuGuard, RcuSnapshot};
use crate::ffi::trace;
use crate::ffi::verbs::SgList;
use crate::io::{ReqDesc, UserReq};
use crate::rtrs_core::permit::rtrs_permit_to_clt_con;
use crate::rtrs_core::policy::{
    failover_req, pack_hint, unpack_hint, LatencyHint, MpPolicy, Offer, PathView, PathViews,
    PolicyKind, WithPolicy,
};
use crate::rtrs_core::proto::{check_io_hdr, WireError};

use super::{PathEntry, Sess};

/// The path list as the policies see it: each path's state, inflight and
/// heartbeat latency read when the policy looks at it (a scan reads only
/// what its policy needs), over one snapshot of the list; with `now_ns`
/// (`service-time`), its completion-latency estimate as of then.
struct LiveViews<'a> {
    list: RcuSnapshot<'a, PathEntry>,
    now_ns: Option<i64>,
}

impl LiveViews<'_> {
    /// Entry `i`'s view, with its inflight, heartbeat latency and
    /// service-time estimate if asked for (else 0).
    #[inline]
    fn read(&self, i: usize, inflight: bool, latency: bool, svc: bool) -> Option<PathView> {
        let e = self.list.get(i)?;
        let sh = e.sp.shared();
        let view = PathView::new(
            sh.state(),
            if inflight { sh.stats.inflight() } else { 0 },
            if latency {
                sh.hb_cur_latency_ns.load(Ordering::Relaxed)
            } else {
                0
            },
        );
        Some(match self.now_ns {
            Some(now) if svc => view.with_svc_ns(sh.stats.svc_ns(now)),
            _ => view,
        })
    }
}

impl<'a> PathViews for LiveViews<'a> {
    type Path = ArcBorrow<'a, PathEntry>;

    fn paths_num(&self) -> usize {
        self.list.len()
    }

    fn view(&self, i: usize) -> Option<PathView> {
        self.read(i, true, true, true)
    }

    // Inline, with a constant `policy` from each scan: only what that
    // policy reads is loaded.
    #[inline]
    fn view_for(&self, i: usize, policy: MpPolicy) -> Option<PathView> {
        let k = policy.keys();
        self.read(i, k.inflight, k.latency, k.svc)
    }

    #[inline]
    fn connected(&self, i: usize) -> Option<ArcBorrow<'a, PathEntry>> {
        let e = self.list.get(i)?;
        e.sp.shared().is_connected().then_some(e)
    }
}

impl Sess {
    /// `rtrs_clt_request`: checks the permit and the sizes, then `issue`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn request(
        &self,
        read: bool,
        conf: Confirm,
        permit: &RtrsPermit,
        usr: Kvecs<'_>,
        data_len: usize,
        sg: SgList,
    ) -> Result {
        if self.permits().and_then(|p| p.index_of(permit)).is_none() {
            return Err(EINVAL);
        }
        let usr = UsrHdr::kvecs(usr).ok_or_else(emsgsize)?;
        let r = ReqDesc {
            read,
            usr,
            data_len,
            sg_nents: sg.nents(),
            user: Cell::new(Some(UserReq { conf, sg })),
            con_type: permit.con_type.load(Ordering::Relaxed),
            cpu_id: permit.cpu_id.load(Ordering::Relaxed),
            mem_id: permit.mem_id.load(Ordering::Relaxed),
        };
        self.issue(&r, None)
    }

    /// The loop of `rtrs_clt_request` (and of `rtrs_clt_failover_req`)
    /// under the session's policy, read once here: `issue_with`, of which
    /// there is one copy per policy, each with only its policy's work.
    /// `failover` is the path a failed-over request comes from.
    #[inline]
    pub(super) fn issue(&self, r: &ReqDesc<'_>, failover: Option<&PathShared>) -> Result {
        MpPolicy::from_raw(self.mp_policy_raw())
            .unwrap_or(MpPolicy::MinInflight)
            .dispatch(Issue {
                sess: self,
                r,
                failover,
            })
    }

    /// `issue` under policy `K`: offers the request to the CONNECTED paths
    /// in the policy's order, each at most once, until one posts it. Never
    /// sleeps.
    #[inline(never)]
    fn issue_with<K: PolicyKind>(&self, r: &ReqDesc<'_>, failover: Option<&PathShared>) -> Result {
        let sg_cnt = usize::try_from(r.sg_nents).unwrap_or(usize::MAX);
        let policy = K::POLICY;
        // Min-latency's keys change on heartbeats and state changes only,
        // so its first pick is cached across requests; the other policies'
        // keys change per request (inflight, service time) or per CPU (the
        // round-robin cursor), so they scan. The generation is read before
        // the scan; the hint word is Relaxed, as the walk checks its pick
        // CONNECTED and the generation in it rejects an old one.
        let gen = matches!(policy, MpPolicy::MinLatency).then(|| self.policy_gen.read());
        let cached = gen.and_then(|g| unpack_hint(self.lat_hint.load(Ordering::Relaxed), g));
        let mut hint = LatencyHint::new(cached);
        let guard = RcuGuard::new();
        // The policies read the list as it was when the walk began (each
        // path's state, inflight and latency live, one path at a time).
        let sample_svc = matches!(policy, MpPolicy::ServiceTime);
        let views = LiveViews {
            list: self.paths.snapshot(&guard),
            now_ns: sample_svc.then(crate::ffi::misc::ktime_get_ns),
        };
        let n = views.paths_num();
        // This CPU's round-robin cursor, which only round-robin reads: the
        // other policies neither look up the CPU nor store to the cursors'
        // shared lines.
        let slot = matches!(policy, MpPolicy::Rr)
            .then(crate::ffi::misc::this_cpu_id)
            .and_then(|cpu| usize::try_from(cpu).ok())
            .and_then(|c| self.rr_cursor.get(c));
        let mut cursor = slot.and_then(|c| {
            let v = c.load(Ordering::Relaxed);
            (v != usize::MAX).then_some(v)
        });
        let out = failover_req(policy, &views, n, &mut cursor, &mut hint, |_, e| {
            // CONNECTED when the walk checked it, under RCU: teardown
            // leaves CONNECTED, then waits for this section to end before
            // it frees anything.
            let shared = e.sp.shared();
            let (Some(path), Some(io)) = (e.sp.cur(&guard), shared.io(&guard)) else {
                return Offer::Skipped;
            };
            if let Err(e) = check_io_hdr(r.read, r.usr.len(), sg_cnt, io.max_hdr_size()) {
                return Offer::Abort(self.io_hdr_refused(e));
            }
            let cid = rtrs_permit_to_clt_con(r.con_type, r.cpu_id, u32::from(shared.irq_con_num()));
            let Some(con) = usize::try_from(cid).ok().and_then(|c| path.con(c)) else {
                return Offer::Skipped;
            };
            match io.submit(con, &guard, r, K::COUNTED, sample_svc) {
                Ok(()) => {
                    if let Some(from) = failover {
                        shared.stats.inc_failover();
                        self.trace_failover(from, shared.name().as_bytes(), 0);
                    }
                    Offer::Posted
                }
                Err(e) => Offer::Failed(e.to_errno()),
            }
        });
        drop(guard);
        if let Some(c) = slot {
            c.store(cursor.unwrap_or(usize::MAX), Ordering::Relaxed);
        }
        if let (Some(g), Some(i)) = (gen, hint.scanned) {
            self.lat_hint.store(pack_hint(g, i), Ordering::Relaxed);
        }
        if let (Some(from), Err(e)) = (failover, out) {
            self.trace_failover(from, b"", e);
        }
        out.map(|_| ()).map_err(Error::from_errno)
    }

    /// `rtrs_wrn_rl` of a request whose header does not fit the path's
    /// `max_hdr_size`: its errno.
    #[cold]
    #[inline(never)]
    fn io_hdr_refused(&self, e: WireError) -> i32 {
        pr_warn_rl!("{}: {}\n", &*self.sessname, e);
        e.errno()
    }

    /// The `rtrs_clt_failover` trace event: a request left `from` for `to`,
    /// or for no path (`err` < 0). Cold: only failover calls it.
    #[cold]
    #[inline(never)]
    fn trace_failover(&self, from: &PathShared, to: &[u8], err: i32) {
        if trace::on(trace::Kind::Failover) {
            trace::emit(&trace::Event::Failover {
                sess: self.sessname.as_bytes(),
                from: from.name().as_bytes(),
                to,
                err,
            });
        }
    }
}

/// `Sess::issue`'s arguments, run with the policy as a type.
struct Issue<'a, 'r> {
    sess: &'a Sess,
    r: &'a ReqDesc<'r>,
    failover: Option<&'a PathShared>,
}

impl WithPolicy for Issue<'_, '_> {
    type Out = Result;

    #[inline(always)]
    fn run<K: PolicyKind>(self) -> Result {
        self.sess.issue_with::<K>(self.r, self.failover)
    }
}
