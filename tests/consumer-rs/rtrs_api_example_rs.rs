// SPDX-License-Identifier: GPL-2.0

//! rtrs_api_example: a Rust module on the RTRS client through rtrs_api.
//!
//! At load it opens a session over `path=` to an rnbd-server, reads the
//! session's limits, exchanges RNBD's SESS_INFO (the server's protocol
//! version), then sends a burst of them at once on IO permits (as many as
//! the queue depth, at most 64) and checks every answer, and, with
//! `device=`, opens that device on the server and closes it again. The session stays open, reporting its link events,
//! until the module is removed. Any failure fails the load with its errno.
//!
//!   insmod rtrs_api_example.ko path=ip:10.0.0.2 device=/dev/ram0

use core::{
    ffi::c_char,
    sync::atomic::{AtomicU32, Ordering},
};

use kernel::{prelude::*, str::CStr, sync::Arc};

// A library: each consumer uses a part of it.
#[path = "../../rtrs_api/rtrs_api.rs"]
#[allow(dead_code, unreachable_pub)]
mod rtrs_api;

#[path = "../../rnbd_core/src"]
#[allow(unreachable_pub, dead_code)]
mod rnbd_core {
    pub mod proto;
}

use rnbd_core::proto::{AccessMode, MsgClose, MsgOpen, MsgOpenRsp, MsgSessInfo};
use rtrs_api::{
    Completion, ConType, Data, DataBuf, Dir, Done, LinkEvent, OpenParams, PathAddr, Permit,
    Request, Session, SessionOps, SessionRef, RTRS_PORT,
};

module! {
    type: RtrsApiExample,
    name: "rtrs_api_example",
    author: "rtrs-rs developers",
    description: "Example Rust consumer of the RTRS client (rtrs_api)",
    license: "GPL",
}

extern "C" {
    static rtrs_example_sessname: *const c_char;
    static rtrs_example_path: *const c_char;
    static rtrs_example_device: *const c_char;
}

/// A parameter's text, if set.
fn param(p: *const c_char) -> Option<&'static CStr> {
    // SAFETY: The parameters are NUL-terminated strings or NULL, and no
    // parameter is writable (0444), so they do not change.
    (!p.is_null()).then(|| unsafe { CStr::from_char_ptr(p.cast()) })
}

/// A control message's wait.
const MSG_TIMEOUT_MS: u32 = 30_000;

struct Events;

impl SessionOps for Events {
    fn link_event(&self, _sess: &SessionRef, ev: LinkEvent) {
        pr_info!("link event: {:?}\n", ev);
    }
}

/// What the requests of a burst share: how many are left, how many
/// failed, and the waiter's completion.
struct Burst {
    left: AtomicU32,
    bad: AtomicU32,
    done: Arc<Done>,
}

/// One SESS_INFO of a burst, with the buffer its answer lands in.
struct BurstReq {
    burst: Arc<Burst>,
    rsp: DataBuf,
}

impl Completion for BurstReq {
    type Owner = KBox<Request<Self>>;

    fn data(&mut self) -> Data<'_> {
        Data::Buf(&mut self.rsp)
    }

    fn complete(req: KBox<Request<Self>>, permit: Permit<'_>, result: Result) {
        drop(permit);
        let b = &req.c.burst;
        let ok = result.is_ok() && MsgSessInfo::decode_rsp(req.c.rsp.as_slice()).is_ok();
        if !ok {
            b.bad.fetch_add(1, Ordering::Relaxed);
        }
        if b.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            b.done.complete();
        }
    }
}

/// Sends `n` SESS_INFO requests at once and waits for their answers; the
/// number that failed.
fn burst(sess: &Session<Events>, n: u32) -> Result<u32> {
    let b = Arc::new(
        Burst {
            left: AtomicU32::new(n),
            bad: AtomicU32::new(0),
            done: Done::new()?,
        },
        GFP_KERNEL,
    )?;
    let msg = MsgSessInfo::new().encode();
    for _ in 0..n {
        let req = Request::new(BurstReq {
            burst: b.clone(),
            rsp: DataBuf::new(MsgSessInfo::LEN)?,
        })?;
        let permit = match sess.try_permit(ConType::Io) {
            Some(p) => p,
            None => sess.wait_permit(ConType::Io).ok_or(EINVAL)?,
        };
        if let Err(e) = sess.request(Dir::Read, permit, &[&msg], req) {
            pr_err!("burst: request failed: {}\n", e.error.to_errno());
            b.bad.fetch_add(1, Ordering::Relaxed);
            if b.left.fetch_sub(1, Ordering::AcqRel) == 1 {
                b.done.complete();
            }
        }
    }
    if !b.done.wait(MSG_TIMEOUT_MS) {
        pr_err!(
            "burst: {} of {} not answered\n",
            b.left.load(Ordering::Relaxed),
            n
        );
        return Err(EINVAL);
    }
    Ok(b.bad.load(Ordering::Relaxed))
}

struct RtrsApiExample {
    _sess: Session<Events>,
}

impl kernel::Module for RtrsApiExample {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // SAFETY: Reading the parameters' pointers, set before init.
        let (name, path, device) = unsafe {
            (
                param(rtrs_example_sessname),
                param(rtrs_example_path),
                param(rtrs_example_device),
            )
        };
        let (Some(name), Some(path)) = (name, path) else {
            pr_err!("path= is required\n");
            return Err(EINVAL);
        };
        let addr = PathAddr::parse(path, RTRS_PORT).inspect_err(|e| {
            pr_err!("cannot parse path {}: {}\n", path, e.to_errno());
        })?;
        let paths = [&*addr];
        let sess = Session::open(&OpenParams::new(name, &paths), Events)?;
        let a = sess.query()?;
        pr_info!(
            "{}: queue_depth {}, max_io_size {}, max_segments {}\n",
            name,
            a.queue_depth,
            a.max_io_size,
            a.max_segments
        );

        let mut rsp = [0u8; MsgSessInfo::LEN];
        sess.request_wait(
            Dir::Read,
            &[&MsgSessInfo::new().encode()],
            &mut rsp,
            Some(MSG_TIMEOUT_MS),
        )?;
        let info = MsgSessInfo::decode_rsp(&rsp).map_err(|e| {
            pr_err!("bad SESS_INFO_RSP: {}\n", e);
            Error::from_errno(e.errno())
        })?;
        pr_info!("{}: rnbd protocol version {}\n", name, info.negotiated());

        let n = a.queue_depth.min(64);
        let bad = burst(&sess, n)?;
        pr_info!("{}: burst of {} SESS_INFO, {} failed\n", name, n, bad);
        if bad != 0 {
            return Err(EINVAL);
        }

        if let Some(dev) = device {
            let open = MsgOpen::new(AccessMode::Ro, dev.as_bytes())
                .map_err(|e| Error::from_errno(e.errno()))?;
            let mut rsp = [0u8; MsgOpenRsp::LEN];
            sess.request_wait(Dir::Read, &[&open.encode()], &mut rsp, Some(MSG_TIMEOUT_MS))
                .inspect_err(|e| pr_err!("open of {} failed: {}\n", dev, e.to_errno()))?;
            let o = MsgOpenRsp::decode(&rsp).map_err(|e| {
                pr_err!("bad OPEN_RSP: {}\n", e);
                Error::from_errno(e.errno())
            })?;
            pr_info!(
                "{}: opened {} as device {}: {} sectors, logical block {}\n",
                name,
                dev,
                o.device_id,
                o.nsectors,
                o.logical_block_size
            );
            let close = MsgClose {
                device_id: o.device_id,
            }
            .encode();
            sess.request_wait(Dir::Write, &[&close], &mut [], Some(MSG_TIMEOUT_MS))?;
            pr_info!("{}: closed device {}\n", name, o.device_id);
        }
        Ok(RtrsApiExample { _sess: sess })
    }
}
