// SPDX-License-Identifier: GPL-2.0

//! A safe Rust API over an RTRS client session, for Rust kernel modules.
//!
//! It calls the seven `rtrs_clt_*` exports (and rtrs_core's
//! `rtrs_addr_to_sockaddr`), so it runs over rtrs-client-rs and over C's
//! rtrs-client alike: 6.12 has no stable Rust ABI between modules, the C
//! one is the contract. A consumer includes this file as a module:
//!
//! ```ignore
//! #[path = "../rtrs_api/rtrs_api.rs"]
//! mod rtrs_api;
//! ```
//!
//! and builds with `KBUILD_EXTRA_SYMBOLS` naming the client's
//! Module.symvers.
//!
//! What C leaves to convention, the types say here:
//! - [`Session`] closes on drop; its callbacks are a trait ([`SessionOps`]),
//!   not a `void *priv`, owned by the session, and a link event gets the
//!   session ([`SessionRef`]) to act on.
//! - A [`Permit`] borrows its session, so the session cannot close under
//!   it, and returns itself on drop. [`Permit::into_raw`] makes a
//!   [`RawPermit`] to keep across callbacks; only the session it came from
//!   takes it back ([`Session::permit_from_raw`]).
//! - A request consumes its permit and the object that completes it (a
//!   [`Completion`], owned by the request until then, with the data's
//!   memory); the completion gets both back, once.
//!
//! Example (the module in tests/consumer-rs/ does this and more): ask an
//! rnbd-server for its protocol version.
//!
//! ```ignore
//! struct Events;
//! impl SessionOps for Events {
//!     fn link_event(&self, _sess: &SessionRef, ev: LinkEvent) {
//!         pr_info!("{:?}\n", ev);
//!     }
//! }
//!
//! let path = PathAddr::parse(c_str!("ip:10.0.0.2"), RTRS_PORT)?;
//! let paths = [&*path];
//! let sess = Session::open(&OpenParams::new(c_str!("s1"), &paths), Events)?;
//! let mut rsp = [0u8; 36];
//! sess.request_wait(Dir::Read, &[&sess_info_msg], &mut rsp, 30_000)?;
//! // Or without waiting: a `Completion` of one's own, whose `complete`
//! // runs when the answer is there.
//! sess.request(Dir::Read, sess.try_permit(ConType::Io).ok_or(EBUSY)?, &[&msg], Request::new(mine)?)
//!     .map_err(|e| e.error)?;
//! ```

use core::{
    ffi::{c_char, c_int, c_void},
    marker::PhantomData,
    ptr::NonNull,
    sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, Ordering},
};

use kernel::{
    alloc::{flags::GFP_KERNEL, KBox, KVec},
    bindings,
    error::{code::*, from_err_ptr, to_result, Error, Result},
    str::CStr,
    sync::Arc,
    types::Opaque,
};

/// The C ABI of rtrs.h, which the client modules export.
mod ffi {
    use super::*;

    /// `struct rtrs_clt_sess`: opaque.
    #[repr(C)]
    pub(super) struct RtrsCltSess {
        _p: [u8; 0],
    }

    /// `struct rtrs_permit`: opaque.
    #[repr(C)]
    pub(super) struct RtrsPermit {
        _p: [u8; 0],
    }

    /// `struct rtrs_addr`.
    #[repr(C)]
    pub(super) struct RtrsAddr {
        pub(super) src: *mut bindings::__kernel_sockaddr_storage,
        pub(super) dst: *mut bindings::__kernel_sockaddr_storage,
    }

    /// `struct rtrs_clt_ops`.
    #[repr(C)]
    pub(super) struct RtrsCltOps {
        pub(super) priv_: *mut c_void,
        pub(super) link_ev: Option<unsafe extern "C" fn(*mut c_void, c_int)>,
    }

    /// `struct rtrs_clt_req_ops`.
    #[repr(C)]
    pub(super) struct RtrsCltReqOps {
        pub(super) priv_: *mut c_void,
        pub(super) conf_fn: Option<unsafe extern "C" fn(*mut c_void, c_int)>,
    }

    /// `struct rtrs_attrs`.
    #[repr(C)]
    #[derive(Default)]
    pub(super) struct RtrsAttrs {
        pub(super) queue_depth: u32,
        pub(super) max_io_size: u32,
        pub(super) max_segments: u32,
    }

    extern "C" {
        pub(super) fn rtrs_clt_open(
            ops: *mut RtrsCltOps,
            pathname: *const c_char,
            paths: *const RtrsAddr,
            path_cnt: usize,
            port: u16,
            pdu_sz: usize,
            reconnect_delay_sec: u8,
            max_reconnect_attempts: i16,
            nr_poll_queues: u32,
        ) -> *mut RtrsCltSess;
        pub(super) fn rtrs_clt_close(sess: *mut RtrsCltSess);
        pub(super) fn rtrs_clt_get_permit(
            sess: *mut RtrsCltSess,
            con_type: c_int,
            wait: c_int,
        ) -> *mut RtrsPermit;
        pub(super) fn rtrs_clt_put_permit(sess: *mut RtrsCltSess, permit: *mut RtrsPermit);
        pub(super) fn rtrs_clt_request(
            dir: c_int,
            ops: *mut RtrsCltReqOps,
            sess: *mut RtrsCltSess,
            permit: *mut RtrsPermit,
            vec: *const bindings::kvec,
            nr: usize,
            len: usize,
            sg: *mut bindings::scatterlist,
            sg_cnt: u32,
        ) -> c_int;
        pub(super) fn rtrs_clt_rdma_cq_direct(sess: *mut RtrsCltSess, index: u32) -> c_int;
        pub(super) fn rtrs_clt_query(sess: *mut RtrsCltSess, attr: *mut RtrsAttrs) -> c_int;
        pub(super) fn rtrs_api_init_completion(x: *mut bindings::completion);
        pub(super) fn rtrs_addr_to_sockaddr(
            s: *const c_char,
            len: usize,
            port: u16,
            addr: *mut RtrsAddr,
        ) -> c_int;
    }
}

/// Errnos 6.12's `kernel::error::code` lacks.
fn econnreset() -> Error {
    Error::from_errno(-(bindings::ECONNRESET as i32))
}
fn etimedout() -> Error {
    Error::from_errno(-(bindings::ETIMEDOUT as i32))
}

/// `RTRS_PORT`: the server's default port.
pub const RTRS_PORT: u16 = 1234;

/// `enum rtrs_clt_link_ev`: what [`SessionOps::link_event`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkEvent {
    /// A path is connected again after the session had none.
    Reconnected,
    /// The session's last connected path went down.
    Disconnected,
}

/// The session's callbacks.
pub trait SessionOps: Send + Sync + 'static {
    /// A link event. Runs in process context under the session's event
    /// lock: it may sleep, query `sess`, take a permit and send requests
    /// without waiting for their end (as rnbd remaps its devices), but not
    /// open or close a session, or add or remove a path.
    fn link_event(&self, sess: &SessionRef, ev: LinkEvent);
}

/// A path's addresses: the server's, and optionally the local one.
pub struct PathAddr {
    src: Opaque<bindings::__kernel_sockaddr_storage>,
    dst: Opaque<bindings::__kernel_sockaddr_storage>,
    has_src: bool,
}

impl PathAddr {
    /// Reads `[src@]dst` (each `ip:<v4|v6>` or `gid:<gid>`, or a bare
    /// address) as rnbd's `path=` is read, with `port` the server's.
    pub fn parse(s: &CStr, port: u16) -> Result<KBox<Self>> {
        // SAFETY: All-zero is a valid (empty) sockaddr_storage.
        let zero = || Opaque::new(unsafe { core::mem::zeroed() });
        let mut p = KBox::new(
            PathAddr {
                src: zero(),
                dst: zero(),
                has_src: false,
            },
            GFP_KERNEL,
        )?;
        let mut a = ffi::RtrsAddr {
            src: p.src.get(),
            dst: p.dst.get(),
        };
        // SAFETY: `s` is NUL-terminated (the function looks for '@' with
        // strchr), `a` points at two sockaddr_storage that nothing else
        // uses during the call; the function sets `a.src` to NULL when
        // there is no local address.
        to_result(unsafe {
            ffi::rtrs_addr_to_sockaddr(s.as_char_ptr().cast(), s.len(), port, &mut a)
        })?;
        p.has_src = !a.src.is_null();
        Ok(p)
    }
}

/// How a session is opened: `rtrs_clt_open`'s arguments.
pub struct OpenParams<'a> {
    /// The session's name, the same on the server.
    pub name: &'a CStr,
    /// Its paths (at least one).
    pub paths: &'a [&'a PathAddr],
    /// The server's port, for addresses that have none.
    pub port: u16,
    /// Seconds between reconnect attempts of a path that went down.
    pub reconnect_delay_sec: u8,
    /// Attempts before a path is given up (-1: forever).
    pub max_reconnect_attempts: i16,
    /// Connections polled by their caller ([`Session::poll`]), not by
    /// interrupts.
    pub nr_poll_queues: u32,
}

impl<'a> OpenParams<'a> {
    /// rnbd's choices: port 1234, a reconnect every 30 s, forever, no poll
    /// queues.
    pub fn new(name: &'a CStr, paths: &'a [&'a PathAddr]) -> Self {
        OpenParams {
            name,
            paths,
            port: RTRS_PORT,
            reconnect_delay_sec: 30,
            max_reconnect_attempts: -1,
            nr_poll_queues: 0,
        }
    }
}

/// `struct rtrs_attrs`: the session's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attrs {
    /// Requests in flight at most (the permits).
    pub queue_depth: u32,
    /// Bytes of one request's data at most.
    pub max_io_size: u32,
    /// Data segments of one request at most.
    pub max_segments: u32,
}

/// The connection a permit is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConType {
    /// `RTRS_ADMIN_CON`: control messages.
    Admin = 0,
    /// `RTRS_IO_CON`: block IO.
    Io = 1,
}

/// A request's direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// The server writes the data into the request's buffer (`READ`).
    Read = 0,
    /// The server reads the data from it (`WRITE`).
    Write = 1,
}

/// An open session. Dropping it closes the session (which may sleep): its
/// requests in flight complete with an error first. Its requests and
/// permits are [`SessionRef`]'s, which it dereferences to.
pub struct Session<T: SessionOps> {
    sref: SessionRef,
    shared: Arc<Shared<T>>,
}

/// What the client's `priv` points to: the callbacks, and the session
/// they are about (set once `rtrs_clt_open` returned it).
struct Shared<T> {
    raw: AtomicPtr<ffi::RtrsCltSess>,
    ops: T,
}

/// An open session seen from its users and its callbacks: queries,
/// permits and requests. Only a [`Session`] and a link event's call lend
/// one, so it does not outlive the session.
pub struct SessionRef {
    raw: NonNull<ffi::RtrsCltSess>,
    /// One flag per poll queue: set while someone polls it (the client's
    /// direct CQ takes one poller at a time).
    polling: KVec<AtomicBool>,
}

// SAFETY: The client's exports may be called from any thread on the same
// session, concurrently.
unsafe impl Send for SessionRef {}
// SAFETY: As above: `&SessionRef` only calls the thread-safe exports.
unsafe impl Sync for SessionRef {}

impl<T: SessionOps> core::ops::Deref for Session<T> {
    type Target = SessionRef;

    fn deref(&self) -> &SessionRef {
        &self.sref
    }
}

/// `link_ev` of the session's ops.
///
/// # Safety
///
/// `priv_` is the `priv` that [`Session::open`] gave the client.
unsafe extern "C" fn link_ev_tramp<T: SessionOps>(priv_: *mut c_void, ev: c_int) {
    // SAFETY: `priv_` points into the session's `Arc<Shared<T>>`, which the
    // session holds until after `rtrs_clt_close`, after which no link
    // event is delivered.
    let sh = unsafe { &*priv_.cast::<Shared<T>>() };
    let Some(raw) = NonNull::new(sh.raw.load(Ordering::Acquire)) else {
        // Not yet opened (the client reports none before).
        return;
    };
    // The call's own view: `link_event` cannot keep it.
    let sref = SessionRef {
        raw,
        polling: KVec::new(),
    };
    sh.ops.link_event(
        &sref,
        if ev == 0 {
            LinkEvent::Reconnected
        } else {
            LinkEvent::Disconnected
        },
    );
}

impl<T: SessionOps> Session<T> {
    /// Opens a session and connects its paths (sleeps; fails if none
    /// connects).
    pub fn open(p: &OpenParams<'_>, ops: T) -> Result<Self> {
        if p.paths.is_empty() {
            return Err(EINVAL);
        }
        let mut addrs = KVec::with_capacity(p.paths.len(), GFP_KERNEL)?;
        for a in p.paths {
            let src = if a.has_src {
                a.src.get()
            } else {
                core::ptr::null_mut()
            };
            addrs.push(
                ffi::RtrsAddr {
                    src,
                    dst: a.dst.get(),
                },
                GFP_KERNEL,
            )?;
        }
        let shared = Arc::new(
            Shared {
                raw: AtomicPtr::new(core::ptr::null_mut()),
                ops,
            },
            GFP_KERNEL,
        )?;
        let mut c_ops = ffi::RtrsCltOps {
            priv_: (&*shared as *const Shared<T>).cast_mut().cast(),
            link_ev: Some(link_ev_tramp::<T>),
        };
        // SAFETY: `c_ops` is valid for the call (the client copies it);
        // its `priv_` stays valid while the session is open, since the
        // returned `Session` holds `shared`. The name is NUL-terminated;
        // the addresses are valid for the call and only read.
        let raw = unsafe {
            ffi::rtrs_clt_open(
                &mut c_ops,
                p.name.as_char_ptr().cast(),
                addrs.as_ptr(),
                addrs.len(),
                p.port,
                0,
                p.reconnect_delay_sec,
                p.max_reconnect_attempts,
                p.nr_poll_queues,
            )
        };
        let raw = from_err_ptr(raw)?;
        let raw = NonNull::new(raw).ok_or(ENOMEM)?;
        let mut polling = KVec::with_capacity(p.nr_poll_queues as usize, GFP_KERNEL);
        if let Ok(v) = polling.as_mut() {
            for _ in 0..p.nr_poll_queues {
                // (Within the capacity just reserved.)
                let _ = v.push(AtomicBool::new(false), GFP_KERNEL);
            }
        }
        let polling = match polling {
            Ok(v) => v,
            Err(e) => {
                // SAFETY: Opened above, not shared yet.
                unsafe { ffi::rtrs_clt_close(raw.as_ptr()) };
                return Err(e.into());
            }
        };
        shared.raw.store(raw.as_ptr(), Ordering::Release);
        Ok(Session {
            sref: SessionRef { raw, polling },
            shared,
        })
    }

    /// The callbacks' object.
    pub fn ops(&self) -> &T {
        &self.shared.ops
    }
}

impl SessionRef {
    /// The session's limits (`rtrs_clt_query`); fails with ECOMM while no
    /// path is connected.
    pub fn query(&self) -> Result<Attrs> {
        let mut a = ffi::RtrsAttrs::default();
        // SAFETY: The session is open; `a` is writable.
        to_result(unsafe { ffi::rtrs_clt_query(self.raw.as_ptr(), &mut a) })?;
        Ok(Attrs {
            queue_depth: a.queue_depth,
            max_io_size: a.max_io_size,
            max_segments: a.max_segments,
        })
    }

    fn get_permit(&self, con: ConType, wait: bool) -> Option<Permit<'_>> {
        // SAFETY: The session is open. With `wait` this may sleep, which
        // `wait_permit`'s contract says.
        let p = unsafe { ffi::rtrs_clt_get_permit(self.raw.as_ptr(), con as c_int, wait as c_int) };
        Some(Permit {
            sess: self.raw,
            permit: NonNull::new(p)?,
            _sess: PhantomData,
        })
    }

    /// A permit if one is free now (any context).
    pub fn try_permit(&self, con: ConType) -> Option<Permit<'_>> {
        self.get_permit(con, false)
    }

    /// A permit, waiting for one to be freed (sleeps); `None` once the
    /// session is closing.
    pub fn wait_permit(&self, con: ConType) -> Option<Permit<'_>> {
        self.get_permit(con, true)
    }

    /// Takes back a permit kept with [`Permit::into_raw`]; gives it back
    /// if it came from another session.
    pub fn permit_from_raw(&self, raw: RawPermit) -> core::result::Result<Permit<'_>, RawPermit> {
        if raw.sess != self.raw {
            return Err(raw);
        }
        Ok(Permit {
            sess: raw.sess,
            permit: raw.permit,
            _sess: PhantomData,
        })
    }

    /// Polls the session's poll queue `i`, on the first connected path
    /// with completions there (`rtrs_clt_rdma_cq_direct`): how many it
    /// found (0 as well while another thread polls that queue), or
    /// ECONNRESET once no path is connected; EINVAL for a queue the
    /// session has not.
    pub fn poll(&self, i: u32) -> Result<u32> {
        let Some(busy) = self.polling.get(i as usize) else {
            return Err(EINVAL);
        };
        if busy.swap(true, Ordering::Acquire) {
            return Ok(0);
        }
        // The client's connections: the admin one, one per CPU id, then
        // the polled ones; it polls connection `index + 1`.
        // SAFETY: A plain read of a boot-time constant.
        let index = unsafe { bindings::nr_cpu_ids } + i;
        // SAFETY: The session is open, `index + 1` is one of its polled
        // connections, and `busy` makes this its only poller.
        let n = unsafe { ffi::rtrs_clt_rdma_cq_direct(self.raw.as_ptr(), index) };
        busy.store(false, Ordering::Release);
        u32::try_from(n).map_err(|_| econnreset())
    }

    /// Sends a request: `msg` (the header the server reads, copied now)
    /// and the data of `req`, which the client owns until
    /// [`Completion::complete`] gives it back with the permit. On error
    /// nothing was sent, and both come back in the [`RequestError`].
    pub fn request<'s, O: RequestOwner>(
        &'s self,
        dir: Dir,
        permit: Permit<'s>,
        msg: &[&[u8]],
        mut req: O,
    ) -> core::result::Result<(), RequestError<'s, O>> {
        let mut vec = [bindings::kvec {
            iov_base: core::ptr::null_mut(),
            iov_len: 0,
        }; 4];
        if msg.is_empty() || msg.len() > vec.len() {
            return Err(RequestError {
                error: EINVAL,
                permit,
                req,
            });
        }
        for (v, m) in vec.iter_mut().zip(msg) {
            *v = bindings::kvec {
                iov_base: m.as_ptr().cast_mut().cast(),
                iov_len: m.len(),
            };
        }
        let r = req.request_mut();
        let (sg, sg_cnt, len) = match r.c.data() {
            Data::None => (core::ptr::null_mut(), 0, 0),
            Data::Buf(d) => {
                let (p, len) = (d.0.as_mut_ptr(), d.0.len());
                // SAFETY: One entry, the request's, which no request in
                // flight uses (`req` is ours); `p` is kmalloc memory of
                // `len` (1..=u32::MAX) bytes, borrowed mutably from the
                // request's completion, so no other request has it.
                unsafe { bindings::sg_init_one(r.sg.get(), p.cast(), len as u32) };
                (r.sg.get(), 1, len)
            }
            Data::Sg(l) => (l.sg.as_ptr(), l.cnt, l.len),
        };
        let permit = permit.into_raw();
        r.permit = Some(RawPermit {
            sess: permit.sess,
            permit: permit.permit,
        });
        // The client owns `req` from here until its confirmation.
        let raw = req.into_raw();
        let mut ops = ffi::RtrsCltReqOps {
            priv_: raw.as_ptr().cast(),
            conf_fn: Some(conf_tramp::<O>),
        };
        // SAFETY: The session is open and the permit is its own, handed
        // to the request. `ops` and `msg` are read (copied) during the
        // call. The scatterlist and the data are the request's
        // (`RequestOwner` and `SgList` say until when), and `*raw` is not
        // touched again here: from here the request may already be
        // confirmed on another CPU.
        let r = unsafe {
            ffi::rtrs_clt_request(
                dir as c_int,
                &mut ops,
                permit.sess.as_ptr(),
                permit.permit.as_ptr(),
                vec.as_ptr(),
                msg.len(),
                len,
                sg,
                sg_cnt,
            )
        };
        if r == 0 {
            return Ok(());
        }
        // SAFETY: Not sent, so `conf_fn` is never called: `raw` is ours
        // again, from `into_raw` above.
        let mut req = unsafe { O::from_raw(raw) };
        req.request_mut().permit = None;
        Err(RequestError {
            error: Error::from_errno(r),
            permit: Permit {
                sess: permit.sess,
                permit: permit.permit,
                _sess: PhantomData,
            },
            req,
        })
    }
}

/// A wait without a bound sleeps this long at a time.
const WAIT_SLICE_MS: u32 = 10_000;

impl SessionRef {
    /// Sends a control message on an admin permit and waits for its end
    /// (sleeps): for [`Dir::Read`] the server's answer lands in `data`,
    /// for [`Dir::Write`] `data` is sent. ETIMEDOUT after `timeout_ms`
    /// (the request is then left to end on its own); with `None`, it waits
    /// for the end however long, as C's rnbd-client: RTRS ends every
    /// request it took (answered, failed over, or failed with its paths).
    pub fn request_wait(
        &self,
        dir: Dir,
        msg: &[&[u8]],
        data: &mut [u8],
        timeout_ms: Option<u32>,
    ) -> Result {
        let mut buf = None;
        if !data.is_empty() {
            let mut b = DataBuf::new(data.len())?;
            if dir == Dir::Write {
                let dst = b.as_mut_slice();
                // (Equal by construction; checked so that no panic is left.)
                if dst.len() != data.len() {
                    return Err(EINVAL);
                }
                dst.copy_from_slice(data);
            }
            buf = Some(b);
        }
        let st = Arc::new(
            SyncState {
                done: Done::new()?,
                result: AtomicI32::new(0),
                back: Handoff::new(),
            },
            GFP_KERNEL,
        )?;
        let req = Request::new(SyncReq {
            st: Some(st.clone()),
            buf,
        })?;
        let permit = self.wait_permit(ConType::Admin).ok_or_else(econnreset)?;
        self.request(dir, permit, msg, req).map_err(|e| e.error)?;
        match timeout_ms {
            Some(ms) if !st.done.wait(ms) => return Err(etimedout()),
            Some(_) => {}
            // In slices, so that a long wait is not a hung task.
            None => while !st.done.wait(WAIT_SLICE_MS) {},
        }
        to_result(st.result.load(Ordering::Acquire))?;
        let back = st.back.take().ok_or(EINVAL)?;
        if let (Dir::Read, Some(b)) = (dir, back.c.buf.as_ref()) {
            let src = b.as_slice();
            if src.len() != data.len() {
                return Err(EINVAL);
            }
            data.copy_from_slice(src);
        }
        Ok(())
    }
}

impl<T: SessionOps> Drop for Session<T> {
    fn drop(&mut self) {
        // SAFETY: Opened by `open` and not used after this: every permit
        // borrowed the session, so none is left but `RawPermit`s, which
        // the close waits for (a leaked one would hang it). The callbacks
        // (`shared`) stay until the close has returned.
        unsafe { ffi::rtrs_clt_close(self.sref.raw.as_ptr()) };
    }
}

/// A `struct completion` to wait for a request's end (or many): signalled
/// from any context, waited for in process context.
pub struct Done(Opaque<bindings::completion>);

// SAFETY: complete() and the waits are thread-safe on a shared completion.
unsafe impl Send for Done {}
// SAFETY: As above.
unsafe impl Sync for Done {}

impl Done {
    /// A completion, not yet done, set up where it stays.
    pub fn new() -> Result<Arc<Self>> {
        let d = Arc::new(Done(Opaque::uninit()), GFP_KERNEL)?;
        // SAFETY: The memory is the new `Arc`'s, which does not move it,
        // and nothing else uses it yet.
        unsafe { ffi::rtrs_api_init_completion(d.0.get()) };
        Ok(d)
    }

    /// Wakes the waiter (any context).
    pub fn complete(&self) {
        // SAFETY: Set up by `new`.
        unsafe { bindings::complete(self.0.get()) };
    }

    /// Waits for [`Done::complete`] (sleeps); false after `ms` without it.
    pub fn wait(&self, ms: u32) -> bool {
        // SAFETY: Set up by `new`; the caller may sleep.
        unsafe {
            let j = bindings::__msecs_to_jiffies(ms);
            bindings::wait_for_completion_timeout(self.0.get(), j) != 0
        }
    }
}

/// A box handed from one context to another without a lock (a
/// completion in softirq to its waiter): the last one put, until taken.
struct Handoff<T>(AtomicPtr<T>);

// SAFETY: It owns at most one `KBox<T>`, moved between threads whole.
unsafe impl<T: Send> Send for Handoff<T> {}
// SAFETY: `put` and `take` swap atomically: one owner at a time.
unsafe impl<T: Send> Sync for Handoff<T> {}

impl<T> Handoff<T> {
    fn new() -> Self {
        Handoff(AtomicPtr::new(core::ptr::null_mut()))
    }

    fn put(&self, b: KBox<T>) {
        let old = self.0.swap(KBox::into_raw(b), Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: Every non-null pointer in it came from `into_raw`
            // and was swapped out here, so it is ours alone.
            drop(unsafe { KBox::from_raw(old) });
        }
    }

    fn take(&self) -> Option<KBox<T>> {
        let p = self.0.swap(core::ptr::null_mut(), Ordering::AcqRel);
        // SAFETY: As in `put`.
        (!p.is_null()).then(|| unsafe { KBox::from_raw(p) })
    }
}

impl<T> Drop for Handoff<T> {
    fn drop(&mut self) {
        drop(self.take());
    }
}

/// What a [`Session::request_wait`] shares with its request.
struct SyncState {
    done: Arc<Done>,
    result: AtomicI32,
    /// The request, back from its completion.
    back: Handoff<Request<SyncReq>>,
}

struct SyncReq {
    /// Given up by the completion, so that the request parked in `back`
    /// does not hold its own state.
    st: Option<Arc<SyncState>>,
    buf: Option<DataBuf>,
}

impl Completion for SyncReq {
    type Owner = KBox<Request<Self>>;

    fn data(&mut self) -> Data<'_> {
        match self.buf.as_mut() {
            Some(b) => Data::Buf(b),
            None => Data::None,
        }
    }

    fn complete(mut req: KBox<Request<Self>>, permit: Permit<'_>, result: Result) {
        drop(permit);
        let Some(st) = req.c.st.take() else {
            return;
        };
        let errno = match result {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        };
        st.result.store(errno, Ordering::Release);
        st.back.put(req);
        st.done.complete();
    }
}

/// A request that was not sent: why, and what it owned.
pub struct RequestError<'s, O> {
    /// The errno: EAGAIN or ENOMEM when a retry may work, ECONNABORTED
    /// when no path is connected, EMSGSIZE when it is too big.
    pub error: Error,
    /// The permit it was given.
    pub permit: Permit<'s>,
    /// The request.
    pub req: O,
}

/// A request: its state while in flight (the permit, the data's
/// scatterlist entry) and the [`Completion`] it ends in. The client owns
/// the box while the request is in flight; a consumer may keep it and
/// send it again.
pub struct Request<C> {
    permit: Option<RawPermit>,
    sg: Opaque<bindings::scatterlist>,
    /// The completion.
    pub c: C,
}

// SAFETY: The scatterlist entry is used by the client only while it owns
// the request; the rest is `C`'s, which is `Send`.
unsafe impl<C: Send> Send for Request<C> {}

impl<C: Completion> Request<C> {
    /// A request ending in `c`, in a box.
    pub fn new(c: C) -> Result<KBox<Self>> {
        Ok(KBox::new(Self::with(c), GFP_KERNEL)?)
    }

    /// A request ending in `c`, to place where its own owner keeps it.
    pub fn with(c: C) -> Self {
        Request {
            permit: None,
            sg: Opaque::uninit(),
            c,
        }
    }
}

/// `conf_fn` of a request.
///
/// # Safety
///
/// `priv_` is the `priv` that [`Session::request`] gave the client, and
/// this is the request's one confirmation.
unsafe extern "C" fn conf_tramp<O: RequestOwner>(priv_: *mut c_void, errno: c_int) {
    let Some(p) = NonNull::new(priv_.cast::<Request<O::C>>()) else {
        return;
    };
    // SAFETY: `priv_` is the `into_raw` of `request`, and the client
    // confirms a request once.
    let mut req = unsafe { O::from_raw(p) };
    let Some(p) = req.request_mut().permit.take() else {
        // `request` sets it before sending.
        return;
    };
    let r = if errno == 0 {
        Ok(())
    } else {
        Err(Error::from_errno(errno))
    };
    // The confirmation runs before the session's close ends, so the
    // session is open for as long as this call.
    O::C::complete(
        req,
        Permit {
            sess: p.sess,
            permit: p.permit,
            _sess: PhantomData,
        },
        r,
    );
}

/// Who owns a request while it is in flight, and keeps it where it is: a
/// box, or a block request's driver data (a consumer's FFI layer).
///
/// # Safety
///
/// `into_raw` gives a pointer to the owner's `Request`, which stays valid
/// and unmoved, and which nothing else reads or writes, until `from_raw`
/// takes it back; `from_raw(into_raw(x))` is `x`.
pub unsafe trait RequestOwner: Sized + Send + 'static {
    /// The completion of the request it owns.
    type C: Completion<Owner = Self>;

    /// The request, before it is sent.
    fn request_mut(&mut self) -> &mut Request<Self::C>;

    /// Gives the request up to the client.
    fn into_raw(self) -> NonNull<Request<Self::C>>;

    /// Takes the request back.
    ///
    /// # Safety
    ///
    /// `p` came from `into_raw`, once.
    unsafe fn from_raw(p: NonNull<Request<Self::C>>) -> Self;
}

// SAFETY: A box's contents do not move while it is raw, and `into_raw`
// and `from_raw` are the box's own.
unsafe impl<C: Completion<Owner = Self>> RequestOwner for KBox<Request<C>> {
    type C = C;

    fn request_mut(&mut self) -> &mut Request<C> {
        self
    }

    fn into_raw(self) -> NonNull<Request<C>> {
        // SAFETY: `KBox::into_raw` is never null.
        unsafe { NonNull::new_unchecked(KBox::into_raw(self)) }
    }

    unsafe fn from_raw(p: NonNull<Request<C>>) -> Self {
        // SAFETY: By the function's contract.
        unsafe { KBox::from_raw(p.as_ptr()) }
    }
}

/// A request's data.
pub enum Data<'a> {
    /// None (a header only).
    None,
    /// One buffer of the completion's.
    Buf(&'a mut DataBuf),
    /// Scatterlist entries over memory the request owns.
    Sg(SgList<'a>),
}

/// Scatterlist entries (chained, as `sg_alloc_table_chained` makes them)
/// over memory a request owns, such as a block request's pages.
pub struct SgList<'a> {
    sg: NonNull<bindings::scatterlist>,
    cnt: u32,
    len: usize,
    _p: PhantomData<&'a mut bindings::scatterlist>,
}

impl SgList<'_> {
    /// Entries at `sg`: `cnt` of them (1 or more), `len` bytes in all.
    ///
    /// # Safety
    ///
    /// The entries and the memory they describe stay valid, DMA-able and
    /// used by no other request until the request carrying them
    /// completes: they are owned by its [`RequestOwner`].
    pub unsafe fn from_raw(sg: NonNull<bindings::scatterlist>, cnt: u32, len: usize) -> Self {
        SgList {
            sg,
            cnt,
            len,
            _p: PhantomData,
        }
    }
}

/// A request's data: bytes in kmalloc memory (physically contiguous, as
/// the client maps them for DMA), which the server reads or writes.
pub struct DataBuf(KVec<u8>);

impl DataBuf {
    /// A zeroed buffer of 1 to `u32::MAX` bytes.
    pub fn new(len: usize) -> Result<Self> {
        if len == 0 || u32::try_from(len).is_err() {
            return Err(EINVAL);
        }
        Ok(DataBuf(KVec::from_elem(0u8, len, GFP_KERNEL)?))
    }

    /// The bytes (what the server wrote, after a read completes).
    pub fn as_slice(&self) -> &[u8] {
        &self.0
    }

    /// The bytes to fill before a write.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.0
    }
}

/// What a request completes to, with the memory of its data.
pub trait Completion: Send + Sized + 'static {
    /// Who owns the request in flight (`KBox<Request<Self>>`, or a
    /// consumer's own).
    type Owner: RequestOwner<C = Self>;

    /// The request's data: the request has it alone until it completes.
    fn data(&mut self) -> Data<'_>;

    /// The request's end, once, in softirq or in the polling task (no
    /// sleeping): `result` is the server's answer (a negative errno from
    /// it), or the client's (ECONNABORTED when the session closed, or the
    /// failover's error). Dropping `permit` frees it; `req` may be sent
    /// again.
    fn complete(req: Self::Owner, permit: Permit<'_>, result: Result);
}

/// A permit: a request slot of the session, freed on drop.
pub struct Permit<'s> {
    sess: NonNull<ffi::RtrsCltSess>,
    permit: NonNull<ffi::RtrsPermit>,
    _sess: PhantomData<&'s ()>,
}

// SAFETY: A permit may be put from any context and thread.
unsafe impl Send for Permit<'_> {}

impl Permit<'_> {
    /// A permit to keep beyond the borrow (in a request's state): only its
    /// session takes it back. Never given back, it leaks, and the
    /// session's close waits for it for ever.
    pub fn into_raw(self) -> RawPermit {
        let r = RawPermit {
            sess: self.sess,
            permit: self.permit,
        };
        core::mem::forget(self);
        r
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        // SAFETY: The permit is the session's and the session is open:
        // `'s` borrows it, or the client is inside the request's
        // confirmation, which runs before the close ends.
        unsafe { ffi::rtrs_clt_put_permit(self.sess.as_ptr(), self.permit.as_ptr()) };
    }
}

/// A permit kept across callbacks ([`Permit::into_raw`]).
#[must_use]
pub struct RawPermit {
    sess: NonNull<ffi::RtrsCltSess>,
    permit: NonNull<ffi::RtrsPermit>,
}

// SAFETY: Only a token; using it needs its session.
unsafe impl Send for RawPermit {}
