// SPDX-License-Identifier: GPL-2.0

//! The client and its sessions: one RTRS session per name, shared by the
//! devices mapped on it, closed when its last device is unmapped.

use kernel::{
    alloc::{flags::GFP_KERNEL, KBox, KVec},
    error::{code::*, Error, Result},
    new_mutex, pr_err, pr_info,
    prelude::*,
    str::CString,
    sync::{Arc, Mutex},
};

use crate::dev::Dev;
use crate::ffi::{self, Major, TagSet};
use crate::rnbd_core::map_opts::{Lossy, MapOpts};
use crate::rnbd_core::proto::MsgSessInfo;
use crate::rtrs_api::{
    Completion, ConType, Data, DataBuf, Dir, LinkEvent, OpenParams, PathAddr, Permit, Request,
    Session, SessionOps, SessionRef,
};

/// A control message's wait (C waits without a bound).
pub(crate) const MSG_TIMEOUT_MS: u32 = 30_000;
/// rnbd's `RECONNECT_DELAY`: seconds between a lost path's reconnects.
const RECONNECT_DELAY: u8 = 30;
/// rnbd's `MAX_RECONNECTS`: for ever.
const MAX_RECONNECTS: i16 = -1;
/// Device indexes (rnbdN): 20 bits of minors, 6 per device.
const MAX_DEV_IDX: usize = 1 << (20 - 6);

/// The module's state behind `map_device`.
#[pin_data]
pub(crate) struct Clt {
    pub(crate) major: Major,
    /// Serializes maps and the end of unmaps (what they do to the
    /// sessions and their device lists).
    #[pin]
    pub(crate) map: Mutex<MapInner>,
    /// Device indexes in use, one bit each (taken alone: a device frees
    /// its index when it goes, under any lock).
    #[pin]
    idx: Mutex<KVec<u64>>,
    /// The module is going: devices go without a CLOSE.
    pub(crate) exiting: core::sync::atomic::AtomicBool,
    /// Where answers that came in softirq are processed.
    pub(crate) wq: ffi::Wq,
    /// Sessions not yet closed (module exit waits for them).
    live: core::sync::atomic::AtomicU32,
}

/// What `Clt::map` protects.
pub(crate) struct MapInner {
    /// The sessions, by name.
    pub(crate) sessions: KVec<Arc<Sess>>,
}

impl Clt {
    /// The client, with its block major.
    pub(crate) fn new(major: Major) -> Result<Arc<Self>> {
        let wq = ffi::Wq::new()?;
        Arc::pin_init(
            try_pin_init!(Clt {
                major,
                wq,
                map <- new_mutex!(MapInner { sessions: KVec::new() }),
                idx <- new_mutex!(KVec::new()),
                exiting: core::sync::atomic::AtomicBool::new(false),
                live: core::sync::atomic::AtomicU32::new(0),
            }),
            GFP_KERNEL,
        )
    }
}

impl Clt {
    /// Module exit: every device of every session goes (forced, without a
    /// CLOSE, as in C), then the sessions close.
    pub(crate) fn destroy_sessions(&self) {
        self.exiting
            .store(true, core::sync::atomic::Ordering::Relaxed);
        let sessions = core::mem::take(&mut self.map.lock().sessions);
        for s in sessions.iter() {
            loop {
                let d = s.devs().lock().first().cloned();
                let Some(d) = d else {
                    break;
                };
                if Dev::unmap(&d, true, None).is_err() {
                    // Being unmapped by a store: out of the list anyway.
                    let mut devs = s.devs().lock();
                    if let Some(i) = devs.iter().position(|x| Arc::ptr_eq(x, &d)) {
                        drop(ffi::vec_remove(&mut devs, i));
                    }
                }
            }
        }
        drop(sessions);
        // A session still held (by an OPEN in flight, its answer's work
        // item) closes when that ends: its code must still be there.
        let mut waited = 0u32;
        loop {
            self.wq.flush();
            if self.live.load(core::sync::atomic::Ordering::Acquire) == 0 {
                break;
            }
            if waited % 300 == 299 {
                pr_info!("waiting for sessions to close\n");
            }
            ffi::msleep(100);
            waited = waited.wrapping_add(1);
        }
    }

    /// The lowest free device index (`ida_alloc_max`), ENOSPC if none.
    pub(crate) fn alloc_idx(&self) -> Result<u32> {
        let mut idx = self.idx.lock();
        for (w, bits) in idx.iter_mut().enumerate() {
            if *bits != u64::MAX {
                let b = (!*bits).trailing_zeros() as usize;
                let i = w * 64 + b;
                if i >= MAX_DEV_IDX {
                    return Err(ENOSPC);
                }
                *bits |= 1 << b;
                return Ok(i as u32);
            }
        }
        let i = idx.len() * 64;
        if i >= MAX_DEV_IDX {
            return Err(ENOSPC);
        }
        idx.push(1, GFP_KERNEL)?;
        Ok(i as u32)
    }

    /// Frees an index.
    pub(crate) fn free_idx(&self, i: u32) {
        if let Some(w) = self.idx.lock().get_mut(i as usize / 64) {
            *w &= !(1 << (i % 64));
        }
    }
}

impl MapInner {
    /// The session named so.
    pub(crate) fn find(&self, name: &[u8]) -> Option<&Arc<Sess>> {
        self.sessions.iter().find(|s| s.name.as_bytes() == name)
    }

    /// Forgets a session (its last device went): it closes when its last
    /// reference goes.
    pub(crate) fn remove(&mut self, sess: &Arc<Sess>) {
        if let Some(i) = self.sessions.iter().position(|s| Arc::ptr_eq(s, sess)) {
            drop(ffi::vec_remove(&mut self.sessions, i));
        }
    }
}

/// A session: the RTRS session, its tag set, its limits, its devices.
pub(crate) struct Sess {
    /// The name.
    pub(crate) name: CString,
    /// The RTRS session (its callbacks hold the devices).
    pub(crate) rtrs: Session<Pin<KBox<SessEv>>>,
    /// One tag set for the session's disks.
    pub(crate) tag_set: TagSet<Dev>,
    /// `max_io_size` and `max_segments` of the session when it opened.
    pub(crate) max_io_size: u32,
    pub(crate) max_segments: u32,
    /// Poll queues of its (single) device.
    pub(crate) nr_poll_queues: u32,
    /// The client, for the device indexes; dropped last, after the close,
    /// and counted out of its live sessions then.
    pub(crate) clt: LiveRef,
}

/// A session's reference to its client, counted in `Clt::live`.
pub(crate) struct LiveRef(Arc<Clt>);

impl LiveRef {
    fn new(clt: &Arc<Clt>) -> Self {
        clt.live.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        LiveRef(clt.clone())
    }
}

impl core::ops::Deref for LiveRef {
    type Target = Arc<Clt>;

    fn deref(&self) -> &Arc<Clt> {
        &self.0
    }
}

impl Drop for LiveRef {
    fn drop(&mut self) {
        self.0
            .live
            .fetch_sub(1, core::sync::atomic::Ordering::Release);
    }
}

impl Sess {
    /// The session of a map: the one named so (whose paths and port the
    /// map's are not compared with, as in C), or a new one over the map's
    /// paths. Called with the map lock held.
    pub(crate) fn find_or_open(
        clt: &Arc<Clt>,
        m: &mut MapInner,
        o: &MapOpts<KBox<PathAddr>>,
    ) -> Result<Arc<Sess>> {
        let name = o.sessname.as_bytes();
        if let Some(s) = m.find(name) {
            // A session with poll queues has one device (C: EINVAL, no log).
            if o.nr_poll_queues != 0 || s.nr_poll_queues != 0 {
                return Err(EINVAL);
            }
            return Ok(s.clone());
        }
        if o.path_cnt == 0 {
            pr_err!(
                "Session {} not found, and path parameter not given",
                Lossy(name)
            );
            return Err(ENXIO);
        }
        let cname = {
            let mut v = KVec::with_capacity(name.len() + 1, GFP_KERNEL)?;
            v.extend_from_slice(name, GFP_KERNEL)?;
            v.push(0, GFP_KERNEL)?;
            CString::try_from(kernel::str::CStr::from_bytes_with_nul(&v).map_err(|_| EINVAL)?)?
        };
        let paths: KVec<&PathAddr> = {
            let mut v = KVec::with_capacity(o.path_cnt, GFP_KERNEL)?;
            for p in o.paths() {
                v.push(&**p, GFP_KERNEL)?;
            }
            v
        };
        let params = OpenParams {
            name: &cname,
            paths: &paths,
            port: o.port,
            reconnect_delay_sec: RECONNECT_DELAY,
            max_reconnect_attempts: MAX_RECONNECTS,
            nr_poll_queues: o.nr_poll_queues,
        };
        let ev = SessEv::new()?;
        let rtrs = Session::open(&params, ev)?;
        let a = rtrs.query()?;
        let (online, _) = ffi::cpus();
        let tag_set = TagSet::new(online, o.nr_poll_queues, a.queue_depth)?;
        let mut rsp = [0u8; MsgSessInfo::LEN];
        rtrs.request_wait(
            Dir::Read,
            &[&MsgSessInfo::new().encode()],
            &mut rsp,
            MSG_TIMEOUT_MS,
        )?;
        let ver = MsgSessInfo::decode_rsp(&rsp).map_err(|e| Error::from_errno(e.errno()))?;
        rtrs.ops()
            .ver
            .store(ver.negotiated(), core::sync::atomic::Ordering::Relaxed);
        let s = Arc::new(
            Sess {
                name: cname,
                rtrs,
                tag_set,
                max_io_size: a.max_io_size,
                max_segments: a.max_segments,
                nr_poll_queues: o.nr_poll_queues,
                clt: LiveRef::new(clt),
            },
            GFP_KERNEL,
        )?;
        m.sessions.push(s.clone(), GFP_KERNEL)?;
        Ok(s)
    }

    /// The session's devices (its callbacks' list).
    pub(crate) fn devs(&self) -> &Mutex<KVec<Arc<Dev>>> {
        &self.rtrs.ops().devs
    }
}

/// The session's callbacks and what they act on.
#[pin_data]
pub(crate) struct SessEv {
    /// The devices mapped on the session (those being mapped too).
    #[pin]
    pub(crate) devs: Mutex<KVec<Arc<Dev>>>,
    /// The protocol version agreed with the server (not used further, as
    /// in C).
    pub(crate) ver: core::sync::atomic::AtomicU8,
}

impl SessEv {
    fn new() -> Result<Pin<KBox<Self>>> {
        KBox::pin_init(
            try_pin_init!(SessEv {
                devs <- new_mutex!(KVec::new()),
                ver: core::sync::atomic::AtomicU8::new(0),
            }),
            GFP_KERNEL,
        )
    }
}

impl SessionOps for Pin<KBox<SessEv>> {
    fn link_event(&self, sess: &SessionRef, ev: LinkEvent) {
        match ev {
            LinkEvent::Disconnected => {
                for d in self.devs.lock().iter() {
                    d.disconnected();
                }
            }
            LinkEvent::Reconnected => self.remap_devs(sess),
        }
    }
}

impl SessEv {
    /// The session is back: SESS_INFO, then an OPEN for each device that
    /// is not being mapped, none waited for (C's `remap_devs`).
    fn remap_devs(&self, sess: &SessionRef) {
        if let Err(e) = send_sess_info(sess) {
            pr_err!("send_msg_sess_info: {}\n", e.to_errno());
            return;
        }
        if let Err(e) = sess.query() {
            pr_err!("rtrs_clt_query: {}\n", e.to_errno());
            return;
        }
        for d in self.devs.lock().iter() {
            if !d.state().remapped_on_reconnect() {
                continue;
            }
            d.log_info(format_args!("session reconnected, remapping device\n"));
            if let Err(e) = d.send_open_nowait(sess) {
                d.log_err(format_args!("send_msg_open(): {}\n", e.to_errno()));
                break;
            }
        }
    }
}

/// A SESS_INFO whose answer nobody waits for (on a reconnect).
struct SessInfoNowait {
    rsp: DataBuf,
}

impl Completion for SessInfoNowait {
    type Owner = KBox<Request<Self>>;

    fn data(&mut self) -> Data<'_> {
        Data::Buf(&mut self.rsp)
    }

    fn complete(_req: KBox<Request<Self>>, _permit: Permit<'_>, _result: Result) {}
}

fn send_sess_info(sess: &SessionRef) -> Result {
    let req = Request::new(SessInfoNowait {
        rsp: DataBuf::new(MsgSessInfo::LEN)?,
    })?;
    let permit = sess
        .wait_permit(ConType::Admin)
        .ok_or_else(|| ffi::errno(kernel::bindings::ECONNABORTED))?;
    sess.request(Dir::Read, permit, &[&MsgSessInfo::new().encode()], req)
        .map_err(|e| e.error)
}

/// Prints the mapping of a device ("Mapping device ... on session ...").
pub(crate) fn log_mapping(o: &MapOpts<KBox<PathAddr>>) {
    pr_info!(
        "Mapping device {} on session {}, (access_mode: {}, nr_poll_queues: {})\n",
        Lossy(o.pathname.as_bytes()),
        Lossy(o.sessname.as_bytes()),
        o.access_mode.as_str(),
        o.nr_poll_queues
    );
}
