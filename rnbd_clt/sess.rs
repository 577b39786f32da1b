// SPDX-License-Identifier: GPL-2.0

//! The client and its sessions: one RTRS session per name, shared by the
//! devices mapped on it, closed once no device of it is left (an unmapped
//! device still open by a user keeps it).
//!
//! The registry (`Clt::map`) is held only briefly: a session being opened
//! is a slot in state `Opening`, and the maps of the same name wait on
//! `Clt::opened` (C's `rtrs_ready`) while the others go on.

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use kernel::{
    alloc::{flags::GFP_KERNEL, KBox, KVec},
    error::{code::*, Error, Result},
    impl_has_work, new_condvar, new_mutex, new_work, pr_err, pr_info,
    prelude::*,
    str::CString,
    sync::{Arc, CondVar, Mutex},
    workqueue::{Work, WorkItem},
};

use crate::dev::Dev;
use crate::ffi::{self, Major, Requeue, TagSet};
use crate::rnbd_core::map_opts::{Lossy, MapOpts};
use crate::rnbd_core::proto::MsgSessInfo;
use crate::rtrs_api::{
    Completion, ConType, Data, DataBuf, Dir, LinkEvent, OpenParams, PathAddr, Permit, Request,
    Session, SessionOps, SessionRef,
};

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
    /// The sessions by name (short sections only).
    #[pin]
    pub(crate) map: Mutex<MapInner>,
    /// Signalled when a session's open ends (either way).
    #[pin]
    opened: CondVar,
    /// Device indexes in use, one bit each (taken alone: a device frees
    /// its index when it goes, under any lock).
    #[pin]
    idx: Mutex<KVec<u64>>,
    /// The module is going: devices go without a CLOSE.
    pub(crate) exiting: AtomicBool,
    /// Where answers that came in softirq are processed, and sessions
    /// without devices are reaped.
    pub(crate) wq: Arc<ffi::Wq>,
    /// Sessions not yet closed (module exit waits for them).
    live: AtomicU32,
    /// Reaps the sessions left without devices.
    #[pin]
    reap: Work<Clt>,
}

impl_has_work! {
    impl HasWork<Self> for Clt { self.reap }
}

impl WorkItem for Clt {
    type Pointer = Arc<Clt>;

    fn run(this: Arc<Clt>) {
        this.reap_sessions();
    }
}

/// What `Clt::map` protects.
pub(crate) struct MapInner {
    /// The sessions by name, opened or being opened.
    slots: KVec<Slot>,
}

/// A session name's place in the registry.
struct Slot {
    name: KVec<u8>,
    state: SlotState,
}

enum SlotState {
    /// A map is opening it; others wait on `Clt::opened`.
    Opening,
    Open(Arc<Sess>),
    /// The reaper is closing it: a map of its name waits (the name is
    /// the RTRS session's until its close returns).
    Closing,
}

impl Clt {
    /// The client, with its block major.
    pub(crate) fn new(major: Major) -> Result<Arc<Self>> {
        let wq = Arc::new(ffi::Wq::new()?, GFP_KERNEL)?;
        Arc::pin_init(
            try_pin_init!(Clt {
                major,
                wq,
                map <- new_mutex!(MapInner { slots: KVec::new() }),
                opened <- new_condvar!(),
                idx <- new_mutex!(KVec::new()),
                exiting: AtomicBool::new(false),
                live: AtomicU32::new(0),
                reap <- new_work!("rnbd_client_rs::reap"),
            }),
            GFP_KERNEL,
        )
    }

    /// The open sessions.
    pub(crate) fn sessions(m: &MapInner) -> impl Iterator<Item = &Arc<Sess>> {
        m.slots.iter().filter_map(|s| match &s.state {
            SlotState::Open(x) => Some(x),
            SlotState::Opening | SlotState::Closing => None,
        })
    }

    /// The session a map names, with a device reserved on it (released by
    /// [`Sess::put_dev`], or taken over by the device): the open one, or
    /// one this opens over the map's paths (C's
    /// `find_and_get_or_create_sess`; an existing session's paths and
    /// port are not compared with the map's).
    pub(crate) fn get_sess(self: &Arc<Self>, o: &MapOpts<KBox<PathAddr>>) -> Result<Arc<Sess>> {
        let name = o.sessname.as_bytes();
        let mut m = self.map.lock();
        loop {
            match m
                .slots
                .iter()
                .find(|s| s.name.as_slice() == name)
                .map(|s| &s.state)
            {
                Some(SlotState::Open(s)) => {
                    // A session with poll queues has one device (C: EINVAL,
                    // no log).
                    if o.nr_poll_queues != 0 || s.nr_poll_queues != 0 {
                        return Err(EINVAL);
                    }
                    s.devs_alive.fetch_add(1, Ordering::Relaxed);
                    return Ok(s.clone());
                }
                Some(SlotState::Opening | SlotState::Closing) => {
                    if self.opened.wait_interruptible(&mut m) {
                        return Err(ERESTARTSYS);
                    }
                }
                None => break,
            }
        }
        if o.path_cnt == 0 {
            pr_err!(
                "Session {} not found, and path parameter not given",
                Lossy(name)
            );
            return Err(ENXIO);
        }
        let mut n = KVec::with_capacity(name.len(), GFP_KERNEL)?;
        n.extend_from_slice(name, GFP_KERNEL)?;
        m.slots.push(
            Slot {
                name: n,
                state: SlotState::Opening,
            },
            GFP_KERNEL,
        )?;
        drop(m);
        let r = Sess::open(self, o);
        let mut m = self.map.lock();
        let i = m.slots.iter().position(|s| s.name.as_slice() == name);
        let r = match (r, i) {
            (Ok(s), Some(i)) => {
                s.devs_alive.fetch_add(1, Ordering::Relaxed);
                m.slots[i].state = SlotState::Open(s.clone());
                Ok(s)
            }
            (Err(e), Some(i)) => {
                drop(ffi::vec_remove(&mut m.slots, i));
                Err(e)
            }
            // The registry was emptied meanwhile (module exit).
            (_, None) => Err(ENODEV),
        };
        drop(m);
        self.opened.notify_all();
        r
    }

    /// Closes the sessions left without devices: each is `Closing` while
    /// it closes, outside the lock, then goes.
    fn reap_sessions(&self) {
        let mut dead = KVec::new();
        {
            let mut m = self.map.lock();
            for slot in m.slots.iter_mut() {
                let idle = match &slot.state {
                    SlotState::Open(s) => s.devs_alive.load(Ordering::Acquire) == 0,
                    SlotState::Opening | SlotState::Closing => false,
                };
                if !idle || dead.reserve(1, GFP_KERNEL).is_err() {
                    continue;
                }
                if let SlotState::Open(s) = core::mem::replace(&mut slot.state, SlotState::Closing)
                {
                    // (Reserved just above.)
                    let _ = dead.push(s, GFP_KERNEL);
                }
            }
        }
        if dead.is_empty() {
            return;
        }
        drop(dead);
        let mut m = self.map.lock();
        let mut i = 0;
        while i < m.slots.len() {
            if matches!(m.slots[i].state, SlotState::Closing) {
                drop(ffi::vec_remove(&mut m.slots, i));
            } else {
                i += 1;
            }
        }
        drop(m);
        self.opened.notify_all();
    }
}

impl Clt {
    /// Module exit: every device of every session goes (forced, without a
    /// CLOSE, as in C), then the sessions close.
    pub(crate) fn destroy_sessions(&self) {
        self.exiting.store(true, Ordering::Relaxed);
        let slots = core::mem::take(&mut self.map.lock().slots);
        for slot in slots.iter() {
            let SlotState::Open(s) = &slot.state else {
                continue;
            };
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
        drop(slots);
        // A session still held (by an OPEN in flight, its answer's work
        // item, a reaper's run) closes when that ends: its code must
        // still be there.
        let mut waited = 0u32;
        loop {
            self.wq.flush();
            if self.live.load(Ordering::Acquire) == 0 {
                // A reaper queued by the last device's drop: no device,
                // hence no more queueing, after this.
                self.wq.flush();
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

/// A session: the RTRS session, its tag set, its limits, its devices.
pub(crate) struct Sess {
    /// The name.
    pub(crate) name: CString,
    /// The RTRS session (its callbacks hold the devices).
    pub(crate) rtrs: Session<Pin<KBox<SessEv>>>,
    /// One tag set for the session's disks.
    pub(crate) tag_set: TagSet<Dev>,
    /// Its disks' hardware queues waiting for a permit, and the permits
    /// their IO holds.
    pub(crate) requeue: Arc<Requeue>,
    /// `max_io_size` and `max_segments` of the session when it opened.
    pub(crate) max_io_size: u32,
    pub(crate) max_segments: u32,
    /// Poll queues of its (single) device.
    pub(crate) nr_poll_queues: u32,
    /// Its devices not yet freed (unmapped but still open count), and the
    /// maps about to make one: at 0 the session is reaped.
    devs_alive: AtomicU32,
    /// The client, for the device indexes; dropped last, after the close,
    /// and counted out of its live sessions then.
    pub(crate) clt: LiveRef,
}

/// A session's reference to its client, counted in `Clt::live`.
pub(crate) struct LiveRef(Arc<Clt>);

impl LiveRef {
    fn new(clt: &Arc<Clt>) -> Self {
        clt.live.fetch_add(1, Ordering::Relaxed);
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
        self.0.live.fetch_sub(1, Ordering::Release);
    }
}

impl Sess {
    /// Opens a session over the map's paths (sleeps: the paths connect,
    /// SESS_INFO is answered).
    fn open(clt: &Arc<Clt>, o: &MapOpts<KBox<PathAddr>>) -> Result<Arc<Sess>> {
        let name = o.sessname.as_bytes();
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
        let tag_set = TagSet::new(online, o.nr_poll_queues, a.queue_depth, &cname)?;
        let mut rsp = [0u8; MsgSessInfo::LEN];
        rtrs.request_wait(Dir::Read, &[&MsgSessInfo::new().encode()], &mut rsp, None)?;
        let ver = MsgSessInfo::decode_rsp(&rsp).map_err(|e| Error::from_errno(e.errno()))?;
        rtrs.ops().ver.store(ver.negotiated(), Ordering::Relaxed);
        Arc::new(
            Sess {
                name: cname,
                rtrs,
                tag_set,
                requeue: Requeue::new()?,
                max_io_size: a.max_io_size,
                max_segments: a.max_segments,
                nr_poll_queues: o.nr_poll_queues,
                devs_alive: AtomicU32::new(0),
                clt: LiveRef::new(clt),
            },
            GFP_KERNEL,
        )
        .map_err(Into::into)
    }

    /// A device of the session is gone (or a map gave its reservation
    /// up): the last one reaps the session.
    pub(crate) fn put_dev(&self) {
        if self.devs_alive.fetch_sub(1, Ordering::AcqRel) == 1 {
            let clt = Arc::clone(&self.clt);
            // (Already queued: that run sees this too.)
            let _ = self.clt.wq.queue().enqueue(clt);
        }
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
    // Not waiting: the link event must not block (C's NOWAIT, -ENOMEM).
    let permit = sess.try_permit(ConType::Admin).ok_or(ENOMEM)?;
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
