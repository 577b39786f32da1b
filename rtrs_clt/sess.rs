// SPDX-License-Identifier: GPL-2.0

//! The session (`struct rtrs_clt_sess`), its permits, and the exported
//! `rtrs_clt_*` API of rtrs.h (exported by `bindings/rtrs_export.c`).
//!
//! `rtrs_clt_open` connects every given path synchronously and returns a
//! connected session or ERR_PTR. Paths never change after open (no
//! add/remove path yet), so IO reads the path list without a lock.

use core::pin::Pin;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicI32, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use kernel::error::from_err_ptr;
use kernel::ffi::{c_char, c_int, c_void};
use kernel::fmt;
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::str::{BStr, CString};
use kernel::sync::lock::{mutex::MutexBackend, Guard};
use kernel::sync::{Arc, LockedBy, Mutex};

use crate::abi::{Kvec, RtrsAddr, RtrsAttrs, RtrsCltOps, RtrsCltReqOps, RtrsPermit, RTRS_IO_CON};
use crate::bindings;
use crate::clt::{PathArgs, PathInfo, RtrsCltState};
use crate::error::{ecomm, econnreset, emsgsize, err_ptr};
use crate::io::ReqDesc;
use crate::log::pr_warn_rl;
use crate::misc::nr_cpu_ids;
use crate::misc::uuid_gen;
use crate::path::PathOwner;
use crate::rtrs_core::names::check_sessname;
use crate::rtrs_core::path_state::{
    PathsUpUnderflow, RtrsCltLinkEv, RtrsCltPathLink, RtrsCltPathsUp,
};
use crate::rtrs_core::policy::{
    counts_inflight, failover_req, MpPolicy, Offer, PathView, PathViews,
};
use crate::rtrs_core::proto::{check_io_hdr, MAX_PATHS_NUM, NAME_MAX, RTRS_MAX_SEGMENTS};
use crate::rtrs_core::{imm, sysfs_fmt};
use crate::sync::{synchronize_rcu, RcuGuard};
use crate::verbs::DevPool;

/// A path of a session.
pub(crate) type SessPath = crate::path::SessPath<Sess>;

// ---------------------------------------------------------------------------
// Module-wide state the API needs
// ---------------------------------------------------------------------------

/// What `rtrs_clt_open` needs from the module.
pub(crate) struct Globals {
    pool: Arc<DevPool>,
    class: *mut bindings::class,
    wq: *mut bindings::workqueue_struct,
}

static GLOBALS: AtomicPtr<Globals> = AtomicPtr::new(core::ptr::null_mut());

/// Publishes the module state to the API; unpublished on drop (module
/// exit, when no user of the exported symbols is left).
pub(crate) struct GlobalsGuard;

impl GlobalsGuard {
    pub(crate) fn new(
        pool: Arc<DevPool>,
        class: *mut bindings::class,
        wq: *mut bindings::workqueue_struct,
    ) -> Result<Self> {
        let g = KBox::new(Globals { pool, class, wq }, GFP_KERNEL)?;
        GLOBALS.store(KBox::into_raw(g), Ordering::Release);
        Ok(Self)
    }
}

impl Drop for GlobalsGuard {
    fn drop(&mut self) {
        let g = GLOBALS.swap(core::ptr::null_mut(), Ordering::AcqRel);
        if !g.is_null() {
            // SAFETY: From `KBox::into_raw` in `new`; users of the API hold a
            // reference on this module, so none runs during module exit.
            drop(unsafe { KBox::from_raw(g) });
        }
    }
}

fn globals() -> Option<&'static Globals> {
    // SAFETY: Valid from module init to exit (see `GlobalsGuard`), which
    // covers every call of the exported API.
    unsafe { GLOBALS.load(Ordering::Acquire).as_ref() }
}

// ---------------------------------------------------------------------------
// Permits
// ---------------------------------------------------------------------------

/// The permit pool (`permits_map`, `permits`, `permits_wait`).
///
/// # Invariants
///
/// `base` points to `queue_depth * psize` bytes owned by `_store`; `wq` is
/// an initialised wait queue head freed in drop.
struct Permits {
    map: KVec<AtomicU64>,
    _store: KVec<u64>,
    base: *mut u8,
    psize: usize,
    queue_depth: u32,
    wq: NonNull<bindings::wait_queue_head>,
}

// SAFETY: Bit ownership in `map` serialises writes to each permit; the wait
// queue is thread safe.
unsafe impl Send for Permits {}
// SAFETY: As above.
unsafe impl Sync for Permits {}

impl Drop for Permits {
    fn drop(&mut self) {
        // SAFETY: By the type invariant; nobody waits any more (close waited).
        unsafe { bindings::rtrs_rs_waitq_free(self.wq.as_ptr()) };
    }
}

impl Permits {
    /// `alloc_permits`.
    fn new(queue_depth: u32, pdu_sz: usize) -> Result<Self> {
        let qd = usize::try_from(queue_depth).map_err(|_| EINVAL)?;
        // Rounded to 8 bytes so that each permit is aligned (C: unrounded;
        // identical for rnbd's pdu_sz of 0).
        let psize = core::mem::size_of::<RtrsPermit>()
            .checked_add(pdu_sz)
            .and_then(|v| v.checked_add(7))
            .ok_or(EINVAL)?
            & !7usize;
        let bytes = psize.checked_mul(qd).ok_or(ENOMEM)?;
        let mut store = KVec::from_elem(0u64, bytes.div_ceil(8).max(1), GFP_KERNEL)?;
        let base = store.as_mut_ptr().cast::<u8>();
        let words = qd.div_ceil(64);
        let mut map = KVec::with_capacity(words, GFP_KERNEL)?;
        for _ in 0..words {
            map.push(AtomicU64::new(0), GFP_KERNEL)?;
        }
        // SAFETY: No preconditions.
        let wq = NonNull::new(unsafe { bindings::rtrs_rs_waitq_alloc() }).ok_or(ENOMEM)?;
        let p = Self {
            map,
            _store: store,
            base,
            psize,
            queue_depth,
            wq,
        };
        for i in 0..queue_depth {
            let mem_off = imm::rtrs_permit_mem_off(queue_depth, i).map_err(|_| EINVAL)?;
            let permit = p.permit(i).ok_or(EINVAL)?;
            // SAFETY: In bounds (`permit`), aligned, and not shared yet.
            unsafe {
                permit.write(RtrsPermit {
                    con_type: 0,
                    cpu_id: 0,
                    mem_id: i,
                    mem_off,
                })
            };
        }
        Ok(p)
    }

    fn permit(&self, i: u32) -> Option<*mut RtrsPermit> {
        if i >= self.queue_depth {
            return None;
        }
        let off = usize::try_from(i).ok()?.checked_mul(self.psize)?;
        // SAFETY: `off` is below `queue_depth * psize`, inside the storage.
        Some(unsafe { self.base.add(off) }.cast())
    }

    /// The index of `p` if it is one of ours.
    fn index_of(&self, p: *const RtrsPermit) -> Option<u32> {
        let off = (p as usize).checked_sub(self.base as usize)?;
        if off.checked_rem(self.psize) != Some(0) {
            return None;
        }
        let i = u32::try_from(off.checked_div(self.psize)?).ok()?;
        (i < self.queue_depth).then_some(i)
    }

    /// `__rtrs_get_permit`.
    fn try_get(&self, con_type: u32) -> Option<*mut RtrsPermit> {
        loop {
            let mut found = None;
            for (w, word) in self.map.iter().enumerate() {
                let v = word.load(Ordering::Relaxed);
                if v == u64::MAX {
                    continue;
                }
                let bit = (!v).trailing_zeros();
                let idx = w.checked_mul(64)?.checked_add(usize::try_from(bit).ok()?)?;
                found = Some((word, bit, idx));
                break;
            }
            let (word, bit, idx) = found?;
            let idx = u32::try_from(idx).ok()?;
            if idx >= self.queue_depth {
                return None;
            }
            let mask = 1u64.checked_shl(bit)?;
            if word.fetch_or(mask, Ordering::Acquire) & mask != 0 {
                continue;
            }
            let p = self.permit(idx)?;
            // SAFETY: We own bit `idx`, so nobody else writes this permit.
            unsafe {
                (*p).cpu_id = bindings::rtrs_rs_raw_smp_processor_id();
                (*p).con_type = con_type;
            }
            return Some(p);
        }
    }

    fn bit(&self, i: u32) -> Option<(&AtomicU64, u64)> {
        let w = usize::try_from(i >> 6).ok()?;
        Some((self.map.get(w)?, 1u64.checked_shl(i & 63)?))
    }

    fn all_free(&self) -> bool {
        self.map.iter().all(|w| w.load(Ordering::Acquire) == 0)
    }

    fn wake(&self) {
        // SAFETY: By the type invariant `wq` is initialised.
        unsafe { bindings::rtrs_rs_waitq_wake(self.wq.as_ptr()) };
    }

    /// Sleeps (uninterruptibly) until `cond(ctx)`.
    fn wait(&self, cond: unsafe extern "C" fn(*mut c_void) -> bool, ctx: *mut c_void) {
        // SAFETY: `wq` is initialised; `cond` and `ctx` are valid for the call.
        unsafe { bindings::rtrs_rs_waitq_wait(self.wq.as_ptr(), Some(cond), ctx) };
    }
}

// ---------------------------------------------------------------------------
// sysfs
// ---------------------------------------------------------------------------

/// /sys/class/rtrs-client/<sessname> with its `paths` directory.
struct SessDev(NonNull<bindings::rtrs_rs_sess_dev>);

impl SessDev {
    /// `rtrs_clt_destroy_sysfs_root`'s first half: the tree leaves sysfs,
    /// after every show and store on it returned (device_del drains them).
    /// The path directories may still be torn down after this.
    fn del(&self) {
        // SAFETY: Created by `rtrs_rs_sess_dev_create` and not destroyed
        // (that takes `self` by value); the helper runs once.
        unsafe { bindings::rtrs_rs_sess_dev_del(self.0.as_ptr()) };
    }
}

impl Drop for SessDev {
    fn drop(&mut self) {
        // SAFETY: Created by `rtrs_rs_sess_dev_create`, destroyed once here;
        // every path directory below it is gone already.
        unsafe { bindings::rtrs_rs_sess_dev_destroy(self.0.as_ptr()) };
    }
}

/// paths/<src@dst>: the files of the `SessPath` it was created for.
struct PathKobj(NonNull<bindings::rtrs_rs_path_kobj>);

// SAFETY: The kobject may be removed from any thread in process context.
unsafe impl Send for PathKobj {}

impl PathKobj {
    /// Removes the directory from within a store on its own `attr`
    /// (`sysfs_remove_file_self` first, as `rtrs_clt_destroy_path_files`).
    fn destroy_self(self, attr: *const c_void) {
        let p = self.0.as_ptr();
        core::mem::forget(self);
        // SAFETY: Created by `rtrs_rs_path_kobj_create`, destroyed once
        // here (not in drop, forgotten above); `attr` is the attribute
        // whose store is running.
        unsafe { bindings::rtrs_rs_path_kobj_destroy_self(p, attr) };
    }
}

impl Drop for PathKobj {
    fn drop(&mut self) {
        // SAFETY: Created by `rtrs_rs_path_kobj_create`, destroyed once here;
        // kobject_del waits for running shows, so the path may go after.
        unsafe { bindings::rtrs_rs_path_kobj_destroy(self.0.as_ptr()) };
    }
}

/// A parsed address as the `sockaddr_storage` `rtrs_addr_to_sockaddr`
/// fills: `sockaddr_in`, `sockaddr_in6` or `sockaddr_ib` (sid mask all ones).
pub(crate) fn from_rtrs_sockaddr(
    a: &sysfs_fmt::RtrsSockaddr,
) -> bindings::__kernel_sockaddr_storage {
    let mut ss = bindings::__kernel_sockaddr_storage::default();
    let p: *mut bindings::__kernel_sockaddr_storage = &mut ss;
    // SAFETY: Plain data, written as bytes within its size.
    let b = unsafe {
        core::slice::from_raw_parts_mut(
            p.cast::<u8>(),
            core::mem::size_of::<bindings::__kernel_sockaddr_storage>(),
        )
    };
    let mut put = |off: usize, v: &[u8]| {
        if let Some(d) = off.checked_add(v.len()).and_then(|end| b.get_mut(off..end)) {
            d.copy_from_slice(v);
        }
    };
    put(0, &a.family().to_ne_bytes());
    match *a {
        sysfs_fmt::RtrsSockaddr::Inet { addr, port } => {
            put(2, &port.to_be_bytes());
            put(4, &addr);
        }
        sysfs_fmt::RtrsSockaddr::Inet6 {
            addr,
            port,
            scope_id,
        } => {
            put(2, &port.to_be_bytes());
            put(8, &addr);
            put(24, &scope_id.to_ne_bytes());
        }
        sysfs_fmt::RtrsSockaddr::Ib { gid, sid } => {
            put(8, &gid);
            put(24, &sid.to_be_bytes());
            put(32, &u64::MAX.to_be_bytes());
        }
    }
    ss
}

/// `dev_get_by_name` for an IPv6 "%scope": the interface index.
pub(crate) fn dev_ifindex(name: &[u8]) -> Option<u32> {
    let mut buf = [0u8; 16];
    if name.len() >= buf.len() {
        return None;
    }
    for (d, s) in buf.iter_mut().zip(name) {
        *d = *s;
    }
    // SAFETY: `buf` is NUL-terminated.
    let i = unsafe { bindings::rtrs_rs_dev_ifindex(buf.as_ptr().cast()) };
    u32::try_from(i).ok().filter(|&i| i != 0)
}

/// The parts of a `sockaddr_storage` that `rtrs_addr_to_str` prints.
pub(crate) fn to_rtrs_sockaddr(
    ss: &bindings::__kernel_sockaddr_storage,
) -> Option<sysfs_fmt::RtrsSockaddr> {
    let p: *const bindings::__kernel_sockaddr_storage = ss;
    // SAFETY: Plain data, read as bytes within its size.
    let b = unsafe {
        core::slice::from_raw_parts(
            p.cast::<u8>(),
            core::mem::size_of::<bindings::__kernel_sockaddr_storage>(),
        )
    };
    let fam = u32::from(u16::from_ne_bytes([*b.first()?, *b.get(1)?]));
    let port = u16::from_be_bytes([*b.get(2)?, *b.get(3)?]);
    let arr16 = |o: usize| -> Option<[u8; 16]> { b.get(o..o.checked_add(16)?)?.try_into().ok() };
    match fam {
        kernel::bindings::AF_INET => Some(sysfs_fmt::RtrsSockaddr::Inet {
            addr: b.get(4..8)?.try_into().ok()?,
            port,
        }),
        kernel::bindings::AF_INET6 => Some(sysfs_fmt::RtrsSockaddr::Inet6 {
            addr: arr16(8)?,
            port,
            scope_id: u32::from_ne_bytes(b.get(24..28)?.try_into().ok()?),
        }),
        kernel::bindings::AF_IB => Some(sysfs_fmt::RtrsSockaddr::Ib {
            gid: arr16(8)?,
            sid: u64::from_be_bytes(b.get(24..32)?.try_into().ok()?),
        }),
        _ => None,
    }
}

// ---------------------------------------------------------------------------
// The session
// ---------------------------------------------------------------------------

/// A path and its sysfs directory (created once the path is up).
///
/// IO holds `&PathEntry` under RCU and reads only `sp`; `kobj` is set and
/// taken under `Sess::paths_mutex` (add, remove, close), so writing it does
/// not touch what readers see. It comes first: fields drop in order, and the
/// directory, whose files show the path, must go before the path.
struct PathEntry {
    kobj: LockedBy<Option<PathKobj>, bool>,
    sp: Pin<KBox<SessPath>>,
}

/// The session's paths (`paths_list` and `paths_num`): boxed entries in
/// list order. Readers walk it under an [`RcuGuard`]; it changes only under
/// `Sess::paths_mutex`, and a removed entry is freed after a grace period.
///
/// # Invariants
///
/// The first `num` slots hold entries leaked from `KBox<PathEntry>` (a
/// slot may transiently read null or repeat its neighbour while `remove`
/// shifts); the rest are null. An entry is freed only by its remover.
struct PathList {
    slots: KVec<AtomicPtr<PathEntry>>,
    num: AtomicUsize,
}

impl PathList {
    fn new() -> Result<Self> {
        let mut slots = KVec::with_capacity(MAX_PATHS_NUM as usize, GFP_KERNEL)?;
        for _ in 0..MAX_PATHS_NUM {
            slots.push(AtomicPtr::new(core::ptr::null_mut()), GFP_KERNEL)?;
        }
        Ok(Self {
            slots,
            num: AtomicUsize::new(0),
        })
    }

    /// `paths_num`.
    fn len(&self) -> usize {
        self.num.load(Ordering::Acquire)
    }

    /// The entry in slot `i`, valid while `_g` is held.
    fn get<'a>(&'a self, i: usize, _g: &'a RcuGuard) -> Option<&'a PathEntry> {
        let p = self.slots.get(i)?.load(Ordering::Acquire);
        // SAFETY: By the type invariant entries are freed only after a
        // grace period, which `_g` holds off.
        unsafe { p.as_ref() }
    }

    /// The entries in order, valid while `g` is held.
    fn iter<'a>(&'a self, g: &'a RcuGuard) -> impl Iterator<Item = (usize, &'a PathEntry)> + 'a {
        (0..self.len()).filter_map(move |i| self.get(i, g).map(|e| (i, e)))
    }

    /// The entries in order, valid while the caller holds `paths_mutex`
    /// (`_held`): only `remove` and `take_all`, which run under it, free
    /// one. Unlike `iter`, the caller may sleep.
    fn iter_held<'a>(
        &'a self,
        _held: &'a Guard<'_, bool, MutexBackend>,
    ) -> impl Iterator<Item = &'a PathEntry> + 'a {
        (0..self.len()).filter_map(move |i| {
            let p = self.slots.get(i)?.load(Ordering::Acquire);
            // SAFETY: `_held` is a guard of `paths_mutex`, under which
            // alone entries are unlinked and freed (type invariant).
            unsafe { p.as_ref() }
        })
    }

    /// `rtrs_clt_add_path_to_arr`; the caller holds `paths_mutex`.
    fn push(&self, e: KBox<PathEntry>) -> core::result::Result<*const PathEntry, KBox<PathEntry>> {
        let n = self.len();
        let Some(slot) = self.slots.get(n) else {
            return Err(e);
        };
        let p = KBox::into_raw(e);
        slot.store(p, Ordering::Release);
        self.num.store(n.saturating_add(1), Ordering::Release);
        Ok(p)
    }

    /// `rtrs_clt_remove_path_from_arr`; the caller holds `paths_mutex`.
    /// Returns the entry's former index and the entry, which nobody can
    /// reach any more.
    fn remove(&self, e: *const PathEntry) -> Option<(usize, KBox<PathEntry>)> {
        let n = self.len();
        let i = (0..n).find(|&i| {
            self.slots
                .get(i)
                .is_some_and(|s| core::ptr::eq(s.load(Ordering::Acquire), e))
        })?;
        for j in i..n {
            let next = self
                .slots
                .get(j.saturating_add(1))
                .filter(|_| j.saturating_add(1) < n)
                .map_or(core::ptr::null_mut(), |s| s.load(Ordering::Acquire));
            if let Some(s) = self.slots.get(j) {
                s.store(next, Ordering::Release);
            }
        }
        // Readers see the list without the entry before `num` drops (see
        // rtrs_clt_remove_path_from_arr), and none holds it after this.
        synchronize_rcu();
        self.num.store(n.saturating_sub(1), Ordering::Release);
        // SAFETY: Leaked by `push`, unlinked and past a grace period.
        Some((i, unsafe { KBox::from_raw(e.cast_mut()) }))
    }

    /// Empties the list (session close; no IO runs any more).
    fn take_all(&self) -> KVec<KBox<PathEntry>> {
        let mut v = KVec::new();
        let n = self.len();
        self.num.store(0, Ordering::Release);
        synchronize_rcu();
        for s in self.slots.iter().take(n) {
            let p = s.swap(core::ptr::null_mut(), Ordering::AcqRel);
            if !p.is_null() {
                // SAFETY: Leaked by `push`, unlinked and past a grace period.
                let e = unsafe { KBox::from_raw(p) };
                // On ENOMEM the entry is dropped (closed) right here.
                let _ = v.push(e, GFP_KERNEL);
            }
        }
        v
    }
}

/// The path list as the policies see it: each path's state, inflight and
/// heartbeat latency read when the policy looks at it, under `g`.
struct LiveViews<'a> {
    list: &'a PathList,
    g: &'a RcuGuard,
}

impl PathViews for LiveViews<'_> {
    fn paths_num(&self) -> usize {
        self.list.len()
    }

    fn view(&self, i: usize) -> Option<PathView> {
        let sh = self.list.get(i, self.g)?.sp.shared();
        Some(PathView::new(
            sh.state(),
            sh.stats.inflight(),
            sh.hb_cur_latency_ns.load(Ordering::Relaxed),
        ))
    }
}

impl Drop for PathList {
    fn drop(&mut self) {
        drop(self.take_all());
    }
}

/// `struct rtrs_clt_sess`: what rnbd holds as `struct rtrs_clt_sess *`.
///
/// IO walks the path list and reaches each path's connections under RCU
/// (see `PathList` and `crate::path`).
///
/// Lock order: `paths_mutex` → `SessPath::init` → `paths_ev`.
pub(crate) struct Sess {
    sessname: CString,
    /// `paths_list`, in the order given to open, then `add_path` order.
    paths: PathList,
    /// `paths_mutex`: serialises add, remove and close; `true` once the
    /// session closes (no path may be added or removed then).
    paths_mutex: Pin<KBox<Mutex<bool>>>,
    /// `port` given to open, for `add_path`.
    port: u16,
    /// `reconnect_delay_sec` given to open, for `add_path`.
    reconnect_delay_sec: u32,
    /// `paths_uuid`: the session's id on the server.
    paths_uuid: [u8; 16],
    queue_depth: u32,
    max_io_size: u32,
    max_segments: u32,
    permits: Permits,
    /// A copy of the caller's `rtrs_clt_ops` (priv, link_ev).
    ops: RtrsCltOps,
    /// `paths_up` (rtrs_core's count) under `paths_ev_mutex`.
    paths_ev: Pin<KBox<Mutex<RtrsCltPathsUp>>>,
    /// `mp_policy` (MP_POLICY_*), set through sysfs at any time.
    mp_policy: AtomicI32,
    /// `max_reconnect_attempts`.
    max_reconnect_attempts: AtomicI32,
    /// Round-robin cursor per CPU id (`pcpu_path`): the index of the last
    /// path used from that CPU, `usize::MAX` for none.
    rr_cursor: KVec<AtomicUsize>,
    dev: Option<SessDev>,
}

// SAFETY: `ops` holds the caller's private pointer and callback, which rnbd
// allows from any context; the rest is `Send`/`Sync`.
unsafe impl Send for Sess {}
// SAFETY: As above.
unsafe impl Sync for Sess {}

impl Sess {
    #[allow(clippy::too_many_arguments)]
    fn open(
        ops: &RtrsCltOps,
        pathname: &CStr,
        paths: &[RtrsAddr],
        port: u16,
        pdu_sz: usize,
        reconnect_delay_sec: u8,
        max_reconnect_attempts: i16,
        nr_poll_queues: u32,
    ) -> Result<KBox<Self>> {
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
        // SAFETY: The class lives as long as the module; the name is a C string.
        let dev = from_err_ptr(unsafe {
            bindings::rtrs_rs_sess_dev_create(g.class, sessname.as_char_ptr())
        })?;
        let dev = SessDev(NonNull::new(dev).ok_or(ENOMEM)?);
        let paths_uuid = uuid_gen();
        let paths_mutex = KBox::pin_init(new_mutex!(false, "rtrs_rs_paths_mutex"), GFP_KERNEL)?;
        let mut entries: KVec<KBox<PathEntry>> = KVec::with_capacity(paths.len(), GFP_KERNEL)?;
        let mut queue_depth = 0u32;
        let mut max_io_size = 0u32;
        let mut max_segments = RTRS_MAX_SEGMENTS;
        let mut res = Ok(());
        for (i, a) in paths.iter().enumerate() {
            let r = Self::open_path(
                g,
                &sessname,
                &dev,
                &paths_mutex,
                a,
                paths_uuid,
                i == 0,
                nr_poll_queues,
                u32::from(reconnect_delay_sec),
                i32::from(max_reconnect_attempts),
            )
            .and_then(|(e, info)| {
                queue_depth = info.queue_depth;
                if max_io_size == 0 || (info.max_io_size != 0 && info.max_io_size < max_io_size) {
                    max_io_size = info.max_io_size;
                }
                max_segments = max_segments.min(info.max_pages_per_mr);
                entries.push(KBox::new(e, GFP_KERNEL)?, GFP_KERNEL)?;
                Ok(())
            });
            if let Err(e) = r {
                res = Err(e);
                break;
            }
        }
        let res = res.and_then(|()| {
            let mut rr = KVec::with_capacity(nr_cpu_ids() as usize, GFP_KERNEL)?;
            for _ in 0..nr_cpu_ids() {
                rr.push(AtomicUsize::new(usize::MAX), GFP_KERNEL)?;
            }
            let ev = KBox::pin_init(
                new_mutex!(RtrsCltPathsUp::default(), "rtrs_rs_paths_ev_mutex"),
                GFP_KERNEL,
            )?;
            let list = PathList::new()?;
            Ok((Permits::new(queue_depth, pdu_sz)?, rr, ev, list))
        });
        let (permits, rr_cursor, paths_ev, list) = match res {
            Ok(v) => v,
            Err(e) => {
                Self::close_paths(&mut entries, &paths_mutex);
                drop(dev);
                return Err(e);
            }
        };
        for e in entries {
            // Cannot fail: `entries` has at most MAX_PATHS_NUM paths.
            let _ = list.push(e);
        }
        let sess = KBox::new(
            Sess {
                sessname,
                paths: list,
                paths_mutex,
                port,
                reconnect_delay_sec: u32::from(reconnect_delay_sec),
                paths_uuid,
                queue_depth,
                max_io_size,
                max_segments,
                permits,
                ops: RtrsCltOps {
                    priv_: ops.priv_,
                    link_ev: ops.link_ev,
                },
                paths_ev,
                mp_policy: AtomicI32::new(MpPolicy::MinInflight.as_raw()),
                max_reconnect_attempts: AtomicI32::new(i32::from(max_reconnect_attempts)),
                rr_cursor,
                dev: Some(dev),
            },
            GFP_KERNEL,
        );
        // On ENOMEM the paths (in `PathList`) close as it drops.
        let sess = sess?;
        let p: *const Sess = &*sess;
        {
            // Each path is linked under its `link` lock and counted if it is
            // established then (see `SessPath::path_up`); from here on
            // `path_up`/`path_down` keep the count.
            // `link` sleeps: the list is held by `paths_mutex`, not RCU.
            let held = sess.paths_mutex.lock();
            let mut up = sess.paths_ev.lock();
            for e in sess.paths.iter_held(&held) {
                let link = e.sp.shared().link.lock();
                e.sp.set_sess(p);
                up.link_path(&link);
            }
        }
        if let Some(d) = sess.dev.as_ref() {
            // SAFETY: The device is registered; the boxed session outlives
            // it (`close` drops the device first).
            unsafe { bindings::rtrs_rs_sess_dev_set_sess(d.0.as_ptr(), p.cast_mut().cast()) };
        }
        Ok(sess)
    }

    /// `alloc_path` + `init_path` + `rtrs_clt_create_path_files` for one path.
    #[allow(clippy::too_many_arguments)]
    fn open_path(
        g: &Globals,
        sessname: &CStr,
        dev: &SessDev,
        paths_mutex: &Mutex<bool>,
        a: &RtrsAddr,
        paths_uuid: [u8; 16],
        first: bool,
        nr_poll_queues: u32,
        reconnect_delay_sec: u32,
        max_reconnect_attempts: i32,
    ) -> Result<(PathEntry, PathInfo)> {
        // SAFETY: rnbd passes valid sockaddr_storage pointers (src optional).
        let dst = unsafe { a.dst.as_ref() }.ok_or(EINVAL)?;
        // SAFETY: As above.
        let src = unsafe { a.src.as_ref() }.copied().unwrap_or_default();
        let args = PathArgs {
            pool: &g.pool,
            sessname,
            src: &src,
            dst,
            paths_uuid,
            for_new_clt: first,
            nr_poll_queues,
        };
        let sp = SessPath::new(&args, g.wq, reconnect_delay_sec, max_reconnect_attempts)?;
        sp.init_path()?;
        let info = sp.shared().info().ok_or(EINVAL)?;
        let kobj = Self::create_path_files(dev, &sp)?;
        let e = PathEntry {
            kobj: LockedBy::new(paths_mutex, Some(kobj)),
            sp,
        };
        Ok((e, info))
    }

    /// Each path: connections closed (`rtrs_clt_close_conns(path, true)`),
    /// then its sysfs directory, then the path. The entries are unlisted.
    fn close_paths(entries: &mut KVec<KBox<PathEntry>>, paths_mutex: &Mutex<bool>) {
        for e in entries.iter_mut() {
            e.sp.close_conns(true);
            let kobj = e.kobj.access_mut(&mut paths_mutex.lock()).take();
            drop(kobj);
        }
        *entries = KVec::new();
    }

    fn close(mut self: KBox<Self>) {
        // Sysfs first, as C: a running add_path (or a path's reconnect)
        // finishes before the paths are taken, and none starts after.
        if let Some(d) = self.dev.as_ref() {
            d.del();
        }
        // free_permits' wait: no request may be in flight below.
        let ctx: *mut c_void = (&self.permits as *const Permits).cast_mut().cast();
        self.permits.wait(permits_all_free, ctx);
        let mut entries = {
            let mut closing = self.paths_mutex.lock();
            *closing = true;
            self.paths.take_all()
        };
        Self::close_paths(&mut entries, &self.paths_mutex);
        drop(self.dev.take());
        pr_info!("{}: session closed\n", &*self.sessname);
    }

    fn link_ev(&self, ev: RtrsCltLinkEv) {
        let ops: *const RtrsCltOps = &self.ops;
        // SAFETY: `ops` is our copy of the caller's ops; the C helper calls
        // `link_ev(priv, ev)` if it is set.
        unsafe { bindings::rtrs_rs_call_link_ev(ops.cast(), ev as c_int) };
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
        if MpPolicy::from_raw(v).is_some() {
            self.mp_policy.store(v, Ordering::Relaxed);
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
            .iter(&g)
            .any(|(_, e)| e.sp.shared().state() == RtrsCltState::Connected);
        drop(g);
        up
    }

    /// `rtrs_clt_create_path_from_sysfs`: a new path (no poll queues), in
    /// the list before it connects (IO skips it until CONNECTED), with its
    /// directory once it is up.
    pub(crate) fn add_path(&self, addr: &sysfs_fmt::RtrsAddr) -> Result {
        let g = globals().ok_or(ENODEV)?;
        let dev = self.dev.as_ref().ok_or(ENODEV)?;
        let src = addr
            .src
            .as_ref()
            .map(from_rtrs_sockaddr)
            .unwrap_or_default();
        let dst = from_rtrs_sockaddr(&addr.dst);
        let entry = {
            let closing = self.paths_mutex.lock();
            if *closing {
                return Err(ENODEV);
            }
            let args = PathArgs {
                pool: &g.pool,
                sessname: &self.sessname,
                src: &src,
                dst: &dst,
                paths_uuid: self.paths_uuid,
                // A session with no path left is new to the server.
                for_new_clt: self.paths.len() == 0,
                nr_poll_queues: 0,
            };
            let sp = SessPath::new(
                &args,
                g.wq,
                self.reconnect_delay_sec,
                self.max_reconnect_attempts(),
            )?;
            sp.set_sess(self);
            let e = KBox::new(
                PathEntry {
                    kobj: LockedBy::new(&self.paths_mutex, None),
                    sp,
                },
                GFP_KERNEL,
            )?;
            match self.paths.push(e) {
                Ok(p) => p,
                Err(e) => {
                    // C sends it on and the server refuses it with
                    // ECONNRESET; the list here holds MAX_PATHS_NUM.
                    pr_err!(
                        "{}: add_path: the session has {} paths already\n",
                        &*self.sessname,
                        MAX_PATHS_NUM
                    );
                    drop(e);
                    return Err(econnreset());
                }
            }
        };
        // SAFETY: Only `remove_path` and `close` free an entry, both under
        // `paths_mutex` after checking it is listed; a path without a
        // directory cannot be removed, and close takes the entries only
        // after `SessDev::del` has waited for this store to return.
        let e = unsafe { &*entry };
        let res = e.sp.init_path().and_then(|()| {
            // Under the mutex, so that a `remove_path` written into the new
            // directory finds it recorded.
            let mut closing = self.paths_mutex.lock();
            let k = Self::create_path_files(dev, &e.sp)?;
            *e.kobj.access_mut(&mut closing) = Some(k);
            Ok(())
        });
        if let Err(err) = res {
            let removed = {
                let mut closing = self.paths_mutex.lock();
                self.paths
                    .remove(entry)
                    .map(|(i, e)| (i, e.kobj.access_mut(&mut closing).take(), e))
            };
            if let Some((i, kobj, e)) = removed {
                self.rr_cursor_on_remove(i);
                e.sp.close_conns(true);
                // After the mutex: removing the directory waits for its
                // running stores, which may wait for the mutex.
                drop(kobj);
            }
            return Err(err);
        }
        Ok(())
    }

    /// `rtrs_clt_remove_path_from_sysfs`: closes the path, marks it DEAD,
    /// unlinks it and removes its directory (from within the store of its
    /// own `attr`), then frees it.
    pub(crate) fn remove_path(&self, sp: &SessPath, attr: *const c_void) -> Result {
        let changed = loop {
            sp.close_conns(true);
            let (changed, old) = sp.shared().change_state_get_old(RtrsCltState::Dead);
            if changed || old == RtrsCltState::Dead {
                break changed;
            }
        };
        if !changed {
            return Ok(());
        }
        let removed = {
            let mut closing = self.paths_mutex.lock();
            if *closing {
                None
            } else {
                let g = RcuGuard::new();
                let ptr = self
                    .paths
                    .iter(&g)
                    .find(|(_, e)| core::ptr::eq(&*e.sp, sp))
                    .map(|(_, e)| e as *const PathEntry);
                drop(g);
                ptr.and_then(|p| self.paths.remove(p))
                    .map(|(i, e)| (i, e.kobj.access_mut(&mut closing).take(), e))
            }
        };
        if let Some((i, kobj, e)) = removed {
            self.rr_cursor_on_remove(i);
            if let Some(k) = kobj {
                k.destroy_self(attr);
            }
            drop(e);
        }
        Ok(())
    }

    /// Keeps each CPU's round-robin cursor on the same path after the one
    /// at `removed` left the list.
    fn rr_cursor_on_remove(&self, removed: usize) {
        let n = self.paths.len();
        for c in self.rr_cursor.iter() {
            let v = c.load(Ordering::Relaxed);
            let mut cur = (v != usize::MAX).then_some(v);
            crate::rtrs_core::policy::rr_cursor_on_remove(&mut cur, removed, n);
            c.store(cur.unwrap_or(usize::MAX), Ordering::Relaxed);
        }
    }

    /// `rtrs_clt_create_path_files`: paths/<src@dst> for a connected path.
    fn create_path_files(dev: &SessDev, sp: &Pin<KBox<SessPath>>) -> Result<PathKobj> {
        // The directory is named "src@dst" with the resolved source, as in C.
        let s = sp.shared().src_addr();
        let (_, d) = sp.shared().addrs();
        let mut name = [0u8; NAME_MAX];
        let len = sysfs_fmt::rtrs_addr_to_str(
            &mut name,
            to_rtrs_sockaddr(&s).as_ref(),
            to_rtrs_sockaddr(d).as_ref(),
        );
        let name =
            CString::try_from_fmt(fmt!("{}", BStr::from_bytes(name.get(..len).unwrap_or(&[]))))?;
        let spp: *const SessPath = &**sp;
        // SAFETY: The session device is live; the `SessPath` is boxed and
        // outlives the kobject (dropped first, see `PathEntry`).
        let k = from_err_ptr(unsafe {
            bindings::rtrs_rs_path_kobj_create(dev.0.as_ptr(), name.as_char_ptr(), spp.cast())
        })
        .inspect_err(|e| {
            pr_err!(
                "{}: create path files, err: {:?}\n",
                sp.shared().sessname(),
                e
            )
        })?;
        Ok(PathKobj(NonNull::new(k).ok_or(ENOMEM)?))
    }

    /// `rtrs_clt_request`: checks the sizes, then `issue`.
    #[allow(clippy::too_many_arguments)]
    fn request(
        &self,
        read: bool,
        ops: &RtrsCltReqOps,
        permit: &RtrsPermit,
        usr: &[Kvec],
        data_len: usize,
        sg: *mut bindings::scatterlist,
        sg_cnt: u32,
    ) -> Result {
        let mut usr_len = 0usize;
        for v in usr {
            usr_len = usr_len.checked_add(v.iov_len).ok_or(emsgsize())?;
        }
        let r = ReqDesc {
            read,
            conf: ops.conf_fn,
            priv_: ops.priv_,
            usr,
            usr_len,
            data_len,
            sg,
            sg_cnt,
            con_type: permit.con_type,
            cpu_id: permit.cpu_id,
            mem_id: permit.mem_id,
        };
        self.issue(&r, false)
    }

    /// The loop of `rtrs_clt_request` (and of `rtrs_clt_failover_req`):
    /// offers the request to the CONNECTED paths in the policy's order, each
    /// at most once, until one posts it. Never sleeps.
    fn issue(&self, r: &ReqDesc<'_>, failover: bool) -> Result {
        let sg_cnt = usize::try_from(r.sg_cnt).unwrap_or(usize::MAX);
        let policy = MpPolicy::from_raw(self.mp_policy_raw()).unwrap_or(MpPolicy::MinInflight);
        let guard = RcuGuard::new();
        // The policies read the live list, one path at a time, as C does.
        let views = LiveViews {
            list: &self.paths,
            g: &guard,
        };
        let n = views.paths_num();
        // SAFETY: No preconditions.
        let cpu = unsafe { bindings::rtrs_rs_raw_smp_processor_id() };
        let slot = usize::try_from(cpu)
            .ok()
            .and_then(|c| self.rr_cursor.get(c));
        let mut cursor = slot.and_then(|c| {
            let v = c.load(Ordering::Relaxed);
            (v != usize::MAX).then_some(v)
        });
        let counted = counts_inflight(policy);
        let out = failover_req(policy, &views, n, &mut cursor, |i| {
            let Some(e) = self.paths.get(i, &guard) else {
                return Offer::Skipped;
            };
            let shared = e.sp.shared();
            // Re-checked under RCU: teardown leaves CONNECTED, then waits
            // for this section to end before it frees anything.
            if shared.state() != RtrsCltState::Connected {
                return Offer::Skipped;
            }
            let (Some(path), Some(io)) = (e.sp.cur(&guard), shared.io(&guard)) else {
                return Offer::Skipped;
            };
            if let Err(e) = check_io_hdr(r.read, r.usr_len, sg_cnt, io.max_hdr_size()) {
                pr_warn_rl!("{}: {}\n", &*self.sessname, e);
                return Offer::Abort(e.errno());
            }
            // rtrs_permit_to_clt_con.
            let cid = if r.con_type == RTRS_IO_CON {
                let n = u32::from(shared.irq_con_num().saturating_sub(1));
                r.cpu_id.checked_rem(n).unwrap_or(0).saturating_add(1)
            } else {
                0
            };
            let Some(con) = usize::try_from(cid).ok().and_then(|c| path.con(c)) else {
                return Offer::Skipped;
            };
            match io.submit(con, r, counted) {
                Ok(()) => {
                    if failover {
                        shared.stats.inc_failover();
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
        out.map(|_| ()).map_err(Error::from_errno)
    }
}

impl PathOwner for Sess {
    /// `rtrs_clt_path_up` for the session (rtrs_core's count): RECONNECTED
    /// to rnbd, under `paths_ev`, when the first path comes back after all
    /// were down.
    fn path_up(&self, link: &Mutex<RtrsCltPathLink>) {
        let mut up = self.paths_ev.lock();
        let ev = up.path_up(&mut link.lock());
        if let Some(ev) = ev {
            self.link_ev(ev);
        }
    }

    /// `rtrs_clt_path_down` for the session: DISCONNECTED when the last
    /// established path goes.
    fn path_down(&self, link: &Mutex<RtrsCltPathLink>) {
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
    fn failover_req(&self, r: &ReqDesc<'_>) -> Result {
        self.issue(r, true)
    }

    fn max_reconnect_attempts(&self) -> i32 {
        Sess::max_reconnect_attempts(self)
    }
}

/// `wait_event` condition of `free_permits`.
///
/// # Safety
///
/// `ctx` is a live `Permits`.
unsafe extern "C" fn permits_all_free(ctx: *mut c_void) -> bool {
    // SAFETY: By the function's contract.
    let p = unsafe { &*ctx.cast::<Permits>() };
    p.all_free()
}

/// Context of `try_get_permit`.
struct GetCtx<'a> {
    permits: &'a Permits,
    con_type: u32,
    got: *mut RtrsPermit,
}

/// The retry condition of `rtrs_clt_get_permit` (WAIT).
///
/// # Safety
///
/// `ctx` is a live `GetCtx`, used by this thread only.
unsafe extern "C" fn try_get_permit(ctx: *mut c_void) -> bool {
    // SAFETY: By the function's contract.
    let c = unsafe { &mut *ctx.cast::<GetCtx<'_>>() };
    match c.permits.try_get(c.con_type) {
        Some(p) => {
            c.got = p;
            true
        }
        None => false,
    }
}

// ---------------------------------------------------------------------------
// The exported API (prototypes in rtrs.h; exported by rtrs_export.c)
// ---------------------------------------------------------------------------

/// `rtrs_clt_open`.
///
/// # Safety
///
/// Arguments as rtrs.h documents them: `ops` and `pathname` valid, `paths`
/// an array of `path_cnt` entries.
#[no_mangle]
pub(crate) unsafe extern "C" fn rtrs_clt_open(
    ops: *mut RtrsCltOps,
    pathname: *const c_char,
    paths: *const RtrsAddr,
    path_cnt: usize,
    port: u16,
    pdu_sz: usize,
    reconnect_delay_sec: u8,
    max_reconnect_attempts: i16,
    nr_poll_queues: u32,
) -> *mut Sess {
    if ops.is_null() || pathname.is_null() || (paths.is_null() && path_cnt > 0) {
        return err_ptr(EINVAL);
    }
    // SAFETY: `pathname` is a NUL-terminated string (contract).
    let name = unsafe { CStr::from_char_ptr(pathname) };
    let paths: &[RtrsAddr] = if path_cnt == 0 {
        &[]
    } else {
        // SAFETY: `paths` has `path_cnt` entries (contract).
        unsafe { core::slice::from_raw_parts(paths, path_cnt) }
    };
    // SAFETY: Checked non-null above; valid for the call (contract).
    let ops = unsafe { &*ops };
    match Sess::open(
        ops,
        name,
        paths,
        port,
        pdu_sz,
        reconnect_delay_sec,
        max_reconnect_attempts,
        nr_poll_queues,
    ) {
        Ok(s) => {
            pr_info!(
                "{}: session opened: paths={} queue_depth={} max_io_size={} max_segments={}\n",
                name,
                paths.len(),
                s.queue_depth,
                s.max_io_size,
                s.max_segments
            );
            KBox::into_raw(s)
        }
        Err(e) => {
            pr_err!(
                "{}: rtrs_clt_open failed: {}\n",
                BStr::from_bytes(name.as_bytes()),
                e.to_errno()
            );
            err_ptr(e)
        }
    }
}

/// `rtrs_clt_close`: waits for every permit, then frees the session.
///
/// # Safety
///
/// `clt` came from `rtrs_clt_open` and is not used afterwards.
#[no_mangle]
pub(crate) unsafe extern "C" fn rtrs_clt_close(clt: *mut Sess) {
    if clt.is_null() {
        return;
    }
    // SAFETY: By the function's contract.
    let s = unsafe { KBox::from_raw(clt) };
    s.close();
}

/// `rtrs_clt_get_permit`.
///
/// # Safety
///
/// `clt` is an open session. May sleep if `can_wait` is RTRS_PERMIT_WAIT.
#[no_mangle]
pub(crate) unsafe extern "C" fn rtrs_clt_get_permit(
    clt: *mut Sess,
    con_type: c_int,
    can_wait: c_int,
) -> *mut RtrsPermit {
    // SAFETY: By the function's contract.
    let Some(s) = (unsafe { clt.as_ref() }) else {
        return core::ptr::null_mut();
    };
    let ct = u32::try_from(con_type).unwrap_or(0);
    if let Some(p) = s.permits.try_get(ct) {
        return p;
    }
    if can_wait == 0 {
        return core::ptr::null_mut();
    }
    let mut ctx = GetCtx {
        permits: &s.permits,
        con_type: ct,
        got: core::ptr::null_mut(),
    };
    let ctxp: *mut GetCtx<'_> = &mut ctx;
    s.permits.wait(try_get_permit, ctxp.cast());
    ctx.got
}

/// `rtrs_clt_put_permit`: frees the permit and wakes a waiter.
///
/// # Safety
///
/// `clt` is an open session; `permit` came from it.
#[no_mangle]
pub(crate) unsafe extern "C" fn rtrs_clt_put_permit(clt: *mut Sess, permit: *mut RtrsPermit) {
    // SAFETY: By the function's contract.
    let Some(s) = (unsafe { clt.as_ref() }) else {
        return;
    };
    let Some((word, mask)) = s.permits.index_of(permit).and_then(|i| s.permits.bit(i)) else {
        pr_warn!("{}: put of a foreign permit\n", &*s.sessname);
        return;
    };
    if word.load(Ordering::Relaxed) & mask == 0 {
        pr_warn!("{}: put of a free permit\n", &*s.sessname);
        return;
    }
    word.fetch_and(!mask, Ordering::Release);
    s.permits.wake();
}

/// `rtrs_clt_request`: 0 if the request was posted (its `conf_fn` will be
/// called once), else the errno (and `conf_fn` is never called).
///
/// # Safety
///
/// As rtrs.h: valid session, ops, permit, `nr` kvecs, `sg_cnt` entries.
#[no_mangle]
pub(crate) unsafe extern "C" fn rtrs_clt_request(
    dir: c_int,
    ops: *mut RtrsCltReqOps,
    clt: *mut Sess,
    permit: *mut RtrsPermit,
    vec: *const Kvec,
    nr: usize,
    data_len: usize,
    sg: *mut bindings::scatterlist,
    sg_cnt: u32,
) -> c_int {
    // SAFETY: By the function's contract.
    let (Some(s), Some(ops), Some(permit)) =
        (unsafe { clt.as_ref() }, unsafe { ops.as_ref() }, unsafe {
            permit.as_ref()
        })
    else {
        return EINVAL.to_errno();
    };
    if s.permits.index_of(permit).is_none() {
        return EINVAL.to_errno();
    }
    let usr: &[Kvec] = if nr == 0 || vec.is_null() {
        &[]
    } else {
        // SAFETY: `vec` has `nr` entries (contract).
        unsafe { core::slice::from_raw_parts(vec, nr) }
    };
    // READ is 0 in the kernel.
    match s.request(dir == 0, ops, permit, usr, data_len, sg, sg_cnt) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `rtrs_clt_rdma_cq_direct`: polls connection `index + 1` (rnbd's poll
/// hctx `queue_num`) of the connected paths until one yields completions.
/// -1 when no path is connected, so that the block layer stops polling.
///
/// # Safety
///
/// `clt` is an open session.
#[no_mangle]
pub(crate) unsafe extern "C" fn rtrs_clt_rdma_cq_direct(clt: *mut Sess, index: u32) -> c_int {
    // SAFETY: By the function's contract.
    let Some(s) = (unsafe { clt.as_ref() }) else {
        return -1;
    };
    let mut cnt = -1;
    let Some(cid) = usize::try_from(index).ok().and_then(|i| i.checked_add(1)) else {
        return cnt;
    };
    let guard = RcuGuard::new();
    for (_, e) in s.paths.iter(&guard) {
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

/// `rtrs_clt_query`.
///
/// # Safety
///
/// `clt` is an open session, `attr` writable.
#[no_mangle]
pub(crate) unsafe extern "C" fn rtrs_clt_query(clt: *mut Sess, attr: *mut RtrsAttrs) -> c_int {
    // SAFETY: By the function's contract.
    let (Some(s), Some(attr)) = (unsafe { clt.as_ref() }, unsafe { attr.as_mut() }) else {
        return EINVAL.to_errno();
    };
    if !s.is_connected() {
        return ecomm().to_errno();
    }
    attr.queue_depth = s.queue_depth;
    attr.max_segments = s.max_segments;
    let seg = s.max_segments.saturating_mul(4096);
    // min_t(int, ...) of C.
    attr.max_io_size = core::cmp::min(
        i32::try_from(s.max_io_size).unwrap_or(i32::MAX),
        i32::try_from(seg).unwrap_or(i32::MAX),
    )
    .max(0) as u32;
    0
}
