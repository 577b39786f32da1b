// SPDX-License-Identifier: GPL-2.0

//! A mapped device: its state (decided by `rnbd_core::dev`), its disk and
//! sysfs files, and map, unmap, remap, resize and the link events' part.

use core::{
    ffi::c_void,
    fmt,
    sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering},
};

use kernel::{
    alloc::{flags::GFP_KERNEL, KBox, KVec},
    error::{code::*, Error, Result},
    new_mutex, pr_err, pr_info,
    prelude::*,
    str::CString,
    sync::{Arc, ArcBorrow, Mutex},
};

use crate::ffi::{self, DevKobj, DevLink, Disk, SysfsAttr};
use crate::io::IoDone;
use crate::rnbd_core::dev::{DevState, DiskLimits, OpenRspVerdict, SymlinkName, UnmapError};
use crate::rnbd_core::map_opts::{Lossy, MapOpts, Name};
use crate::rnbd_core::proto::{AccessMode, MsgClose, MsgOpen, MsgOpenRsp};
use crate::rtrs_api::{
    Completion, ConType, Data, DataBuf, Dir, PathAddr, Permit, Request, SessionRef,
};
use crate::sess::{log_mapping, Clt, MapInner, Sess};

/// What a device's lock protects: the objects it has while mapped.
pub(crate) struct DevInner {
    disk: Option<Disk<Dev>>,
    kobj: Option<DevKobj>,
    link: Option<DevLink>,
}

/// A device mapped from the server.
#[pin_data(PinnedDrop)]
pub(crate) struct Dev {
    pub(crate) sess: Arc<Sess>,
    pub(crate) pathname: Name,
    pub(crate) access_mode: AccessMode,
    pub(crate) nr_poll_queues: u32,
    /// rnbdN.
    pub(crate) idx: u32,
    /// `DevState`, written under `inner`, read without it (IO).
    state: AtomicU8,
    /// The server's id of the device (IO and CLOSE).
    pub(crate) device_id: AtomicU32,
    /// Its size in sectors, and C's `dev->size` for the geometry.
    nsectors: AtomicU64,
    geo_size: AtomicU64,
    /// Openers of the block device.
    users: AtomicU32,
    #[pin]
    inner: Mutex<DevInner>,
}

const STATES: [DevState; 4] = [
    DevState::Init,
    DevState::Mapped,
    DevState::MappedDisconnected,
    DevState::Unmapped,
];

fn state_code(s: DevState) -> u8 {
    STATES.iter().position(|&x| x == s).unwrap_or(0) as u8
}

/// `<pathname@sessname> `, C's device prefix of its log lines.
struct Prefix<'a>(&'a Dev);

impl fmt::Display for Prefix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "<{}@{}> ",
            Lossy(self.0.pathname.as_bytes()),
            Lossy(self.0.sess.name.as_bytes())
        )
    }
}

impl Dev {
    /// The state.
    pub(crate) fn state(&self) -> DevState {
        STATES[self.state.load(Ordering::Acquire) as usize & 3]
    }

    fn set_state(&self, s: DevState) {
        self.state.store(state_code(s), Ordering::Release);
    }

    pub(crate) fn log_info(&self, a: fmt::Arguments<'_>) {
        pr_info!("{}{}", Prefix(self), a);
    }

    pub(crate) fn log_err(&self, a: fmt::Arguments<'_>) {
        pr_err!("{}{}", Prefix(self), a);
    }

    /// A log line of `rl`'s call site, if it is not held back (C's
    /// `rnbd_clt_err_rl` and `_info_rl`).
    pub(crate) fn log_rl(&self, rl: &ffi::RateLimit, err: bool, a: fmt::Arguments<'_>) {
        if let Some(held) = rl.check() {
            if held > 0 {
                kernel::pr_warn!("{} messages suppressed\n", held);
            }
            if err {
                self.log_err(a);
            } else {
                self.log_info(a);
            }
        }
    }

    /// The link is down: a mapped device stops taking IO.
    pub(crate) fn disconnected(&self) {
        self.log_err(format_args!("Device disconnected.\n"));
        let inner = self.inner.lock();
        let (s, offline) = self.state().disconnected();
        self.set_state(s);
        if offline {
            if let Some(d) = inner.disk.as_ref() {
                d.uevent(false);
            }
        }
    }

    /// `map_device`: maps the device the options name.
    pub(crate) fn map(clt: &Arc<Clt>, o: MapOpts<KBox<PathAddr>>) -> Result {
        log_mapping(&o);
        let (path, name) = (o.pathname.as_bytes(), o.sessname.as_bytes());
        taken(&clt.map.lock(), path, name)?;
        let sess = clt.get_sess(&o)?;
        let idx = match clt.alloc_idx() {
            Ok(i) => i,
            Err(e) => {
                pr_err!(
                    "map_device: failed to map device '{}' from session {}, can't initialize device, err: {}\n",
                    Lossy(path),
                    Lossy(name),
                    e.to_errno()
                );
                sess.put_dev();
                return Err(e);
            }
        };
        // The device takes the map's reservation over (its drop gives it
        // back, and its index).
        let s2 = sess.clone();
        let dev = match Arc::pin_init(
            try_pin_init!(Dev {
                sess: s2,
                pathname: o.pathname,
                access_mode: o.access_mode,
                nr_poll_queues: o.nr_poll_queues,
                idx,
                state: AtomicU8::new(state_code(DevState::Init)),
                device_id: AtomicU32::new(0),
                nsectors: AtomicU64::new(0),
                geo_size: AtomicU64::new(0),
                users: AtomicU32::new(0),
                inner <- new_mutex!(DevInner { disk: None, kobj: None, link: None }),
            }),
            GFP_KERNEL,
        ) {
            Ok(d) => d,
            Err(e) => {
                clt.free_idx(idx);
                sess.put_dev();
                return Err(e);
            }
        };
        // Listed on its session, if no other map took its name meanwhile.
        {
            let m = clt.map.lock();
            taken(&m, dev.pathname.as_bytes(), name)?;
            sess.devs().lock().push(dev.clone(), GFP_KERNEL)?;
        }
        if let Err(e) = dev.open_and_add(clt) {
            dev.forget();
            return Err(e);
        }
        // Sysfs last, as C: a failure there unmaps (with a CLOSE).
        if let Err(e) = dev.add_sysfs() {
            let _ = Dev::unmap(&dev, true, None);
            return Err(e);
        }
        Ok(())
    }

    /// OPEN on the server (waited for), then the disk.
    fn open_and_add(self: &Arc<Self>, clt: &Clt) -> Result {
        let open = MsgOpen::new(self.access_mode, self.pathname.as_bytes())
            .map_err(|e| Error::from_errno(e.errno()))?;
        let mut b = [0u8; MsgOpenRsp::LEN];
        let r = self
            .sess
            .rtrs
            .request_wait(Dir::Read, &[&open.encode()], &mut b, None)
            .and_then(|()| MsgOpenRsp::decode(&b).map_err(|e| Error::from_errno(e.errno())))
            .and_then(|rsp| self.process_open_rsp(&self.sess.rtrs, &rsp).map(|()| rsp));
        let rsp = match r {
            Ok(rsp) => rsp,
            Err(e) => {
                self.log_err(format_args!(
                    "map_device: failed, can't open remote device, err: {}\n",
                    e.to_errno()
                ));
                return Err(e);
            }
        };
        let l = DiskLimits::new(&rsp, self.sess.max_io_size, self.sess.max_segments);
        if let Err(e) = self.add_disk(clt, &l) {
            self.log_err(format_args!(
                "map_device: Failed to configure device, err: {}\n",
                e.to_errno()
            ));
            let _ = self.send_close(true);
            return Err(e);
        }
        self.log_info(format_args!(
            "map_device: Device mapped as rnbd{} (nsectors: {}, logical_block_size: {}, physical_block_size: {}, max_write_zeroes_sectors: {}, max_discard_sectors: {}, discard_granularity: {}, discard_alignment: {}, secure_discard: {}, max_segments: {}, max_hw_sectors: {}, wc: {}, fua: {})\n",
            self.idx,
            rsp.nsectors,
            rsp.logical_block_size,
            rsp.physical_block_size,
            // C prints these u32 with %d.
            rsp.max_write_zeroes_sectors as i32,
            rsp.max_discard_sectors as i32,
            rsp.discard_granularity as i32,
            rsp.discard_alignment as i32,
            rsp.secure_discard,
            l.max_segments,
            l.max_hw_sectors,
            u8::from(l.write_cache),
            u8::from(l.fua)
        ));
        Ok(())
    }

    fn add_disk(self: &Arc<Self>, clt: &Clt, l: &DiskLimits) -> Result {
        let mut disk = Disk::new(&self.sess.tag_set, l, self.clone())?;
        let ro = self.access_mode == AccessMode::Ro;
        disk.add(
            &clt.major,
            self.idx,
            l.nsectors,
            ro,
            (&**self as *const Dev).cast::<c_void>(),
        )?;
        self.inner.lock().disk = Some(disk);
        Ok(())
    }

    /// `rnbd/` and the `devices/` link.
    fn add_sysfs(self: &Arc<Self>) -> Result {
        let mut inner = self.inner.lock();
        let Some(disk) = inner.disk.as_ref() else {
            return Err(ENODEV);
        };
        let kobj = DevKobj::new(disk, (&**self as *const Dev).cast()).inspect_err(|e| {
            self.log_err(format_args!(
                "Failed to create device sysfs dir, err: {}\n",
                e.to_errno()
            ))
        })?;
        let n = SymlinkName {
            pathname: self.pathname.as_bytes(),
            sessname: self.sess.name.as_bytes(),
        };
        let mut name = KVec::with_capacity(n.byte_len() + 1, GFP_KERNEL)?;
        n.write_bytes(|c| {
            // (Room reserved above.)
            let _ = name.push(c, GFP_KERNEL);
        });
        name.push(0, GFP_KERNEL)?;
        let name = kernel::str::CStr::from_bytes_with_nul(&name).map_err(|_| EINVAL)?;
        let name = CString::try_from(name)?;
        let link = DevLink::new(disk, name).inspect_err(|e| {
            self.log_err(format_args!(
                "Creating /sys/block symlink failed, err: {}\n",
                e.to_errno()
            ))
        });
        inner.kobj = Some(kobj);
        inner.link = Some(link?);
        Ok(())
    }

    /// An OPEN_RSP for this device (at map, remap or reconnect), in
    /// process context.
    fn process_open_rsp(&self, sess: &SessionRef, rsp: &MsgOpenRsp) -> Result {
        let inner = self.inner.lock();
        let v = self.state().open_rsp(rsp);
        let online = match v {
            OpenRspVerdict::Unmapped => {
                self.log_info(format_args!(
                    "Ignoring Open-Response message from server for  unmapped device\n"
                ));
                drop(inner);
                let _ = send_close_id(sess, rsp.device_id, false);
                return Err(ENOENT);
            }
            OpenRspVerdict::BadBlockSize { online } | OpenRspVerdict::Mapped { online } => online,
        };
        if online {
            let old = self.nsectors.load(Ordering::Relaxed);
            if old != rsp.nsectors {
                self.log_info(format_args!(
                    "Device size changed from {} to {} sectors\n",
                    old, rsp.nsectors
                ));
            }
            self.set_size(rsp);
            if let Some(d) = inner.disk.as_ref() {
                d.set_capacity(rsp.nsectors);
                d.uevent(true);
            }
            self.log_info(format_args!(
                "Device online, device remapped successfully\n"
            ));
        }
        if let OpenRspVerdict::BadBlockSize { .. } = v {
            drop(inner);
            let _ = send_close_id(sess, rsp.device_id, false);
            return Err(EINVAL);
        }
        if self.state() == DevState::Init {
            self.set_size(rsp);
        }
        self.device_id.store(rsp.device_id, Ordering::Relaxed);
        self.set_state(DevState::Mapped);
        Ok(())
    }

    fn set_size(&self, rsp: &MsgOpenRsp) {
        self.nsectors.store(rsp.nsectors, Ordering::Relaxed);
        let lbs = u64::from(rsp.logical_block_size);
        // C's dev->size (nsectors * lbs), which getgeo scales by lbs/512.
        self.geo_size.store(
            rsp.nsectors.wrapping_mul(lbs).wrapping_mul(lbs / 512),
            Ordering::Relaxed,
        );
    }

    /// CLOSE on the server (waited for, or not).
    fn send_close(&self, wait: bool) -> Result {
        send_close_id(
            &self.sess.rtrs,
            self.device_id.load(Ordering::Relaxed),
            wait,
        )
    }

    /// An OPEN whose answer is processed when it comes (reconnect).
    pub(crate) fn send_open_nowait(self: &Arc<Self>, sess: &SessionRef) -> Result {
        let open = MsgOpen::new(self.access_mode, self.pathname.as_bytes())
            .map_err(|e| Error::from_errno(e.errno()))?;
        let req = Request::new(OpenLater {
            dev: self.clone(),
            rsp: DataBuf::new(MsgOpenRsp::LEN)?,
            work: Some(crate::work::OpenRspWork::new(&self.sess.clt)?),
        })?;
        // Not waiting, as C's RTRS_PERMIT_NOWAIT: this runs in the link
        // event, which must not block (C's remap_devs); none free is C's
        // -ENOMEM.
        let permit = sess.try_permit(ConType::Admin).ok_or(ENOMEM)?;
        // A user until its answer is processed (`OpenLater::process`).
        self.users.fetch_add(1, Ordering::Relaxed);
        sess.request(Dir::Read, permit, &[&open.encode()], req)
            .map_err(|e| {
                self.users.fetch_sub(1, Ordering::Relaxed);
                e.error
            })
    }

    /// Takes a device that never got mapped out of its session.
    fn forget(self: &Arc<Self>) {
        let mut devs = self.sess.devs().lock();
        if let Some(i) = devs.iter().position(|d| Arc::ptr_eq(d, self)) {
            drop(ffi::vec_remove(&mut devs, i));
        }
        drop(devs);
        let mut inner = self.inner.lock();
        self.set_state(DevState::Unmapped);
        inner.link = None;
        inner.kobj = None;
        inner.disk = None;
    }

    /// `unmap_device` (C's `rnbd_clt_unmap_device`); `own` is the store's
    /// attribute when it comes from the device's own file.
    pub(crate) fn unmap(dev: &Arc<Dev>, force: bool, own: Option<SysfsAttr<'_>>) -> Result {
        let (was_mapped, link, kobj, disk) = {
            let mut inner = dev.inner.lock();
            let users = dev.users.load(Ordering::Relaxed);
            match dev.state().unmap(force, users) {
                Ok(m) => {
                    dev.set_state(DevState::Unmapped);
                    (m, inner.link.take(), inner.kobj.take(), inner.disk.take())
                }
                Err(e @ UnmapError::Already) => {
                    dev.log_info(format_args!("{}\n", e));
                    return Err(Error::from_errno(e.errno()));
                }
                Err(e) => {
                    dev.log_err(format_args!("{}\n", e));
                    return Err(Error::from_errno(e.errno()));
                }
            }
        };
        {
            let mut devs = dev.sess.devs().lock();
            if let Some(i) = devs.iter().position(|d| Arc::ptr_eq(d, dev)) {
                drop(ffi::vec_remove(&mut devs, i));
            }
        }
        // Out of sysfs first, with no lock held: a store of this device
        // that runs meanwhile sees it unmapped and returns.
        drop(link);
        if let Some(k) = kobj {
            k.destroy(own);
        }
        drop(disk);
        if was_mapped && !dev.sess.clt.exiting.load(Ordering::Relaxed) {
            let _ = dev.send_close(true);
        }
        dev.log_info(format_args!("Device is unmapped\n"));
        Ok(())
    }

    /// `remap_device`.
    pub(crate) fn remap(self: &Arc<Self>) -> Result {
        self.state().remap().map_err(Error::from_errno)?;
        self.log_info(format_args!("Remapping device.\n"));
        let open = MsgOpen::new(self.access_mode, self.pathname.as_bytes())
            .map_err(|e| Error::from_errno(e.errno()))?;
        let mut b = [0u8; MsgOpenRsp::LEN];
        let sess = &self.sess.rtrs;
        // An OPEN in flight is a user (a normal unmap meanwhile: EBUSY).
        self.users.fetch_add(1, Ordering::Relaxed);
        let r = sess
            .request_wait(Dir::Read, &[&open.encode()], &mut b, None)
            .and_then(|()| MsgOpenRsp::decode(&b).map_err(|e| Error::from_errno(e.errno())))
            .and_then(|rsp| self.process_open_rsp(sess, &rsp));
        self.users.fetch_sub(1, Ordering::Relaxed);
        if let Err(e) = r {
            self.log_err(format_args!("remap_device: {}\n", e.to_errno()));
        }
        r
    }

    /// `resize`: a new size in sectors (no server round trip, as in C).
    pub(crate) fn resize(&self, nsectors: u64) -> Result {
        let inner = self.inner.lock();
        if self.state().resize().is_err() {
            pr_err!("{}\n", crate::rnbd_core::dev::RESIZE_NOT_OPEN);
            return Err(ENOENT);
        }
        let old = self.nsectors.load(Ordering::Relaxed);
        if old != nsectors {
            self.log_info(format_args!(
                "Device size changed from {} to {} sectors\n",
                old, nsectors
            ));
            self.nsectors.store(nsectors, Ordering::Relaxed);
            if let Some(d) = inner.disk.as_ref() {
                d.set_capacity(nsectors);
            }
        }
        Ok(())
    }

    /// The block device is opened: one more user.
    pub(crate) fn open(&self) -> Result {
        if !self.state().may_open() {
            return Err(EIO);
        }
        self.users.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// An opener is gone.
    pub(crate) fn release(&self) {
        self.users.fetch_sub(1, Ordering::Relaxed);
    }

    /// C's `dev->size` for getgeo.
    pub(crate) fn geo_size(&self) -> u64 {
        self.geo_size.load(Ordering::Relaxed)
    }
}

#[pinned_drop]
impl PinnedDrop for Dev {
    fn drop(self: Pin<&mut Self>) {
        // The index is free once the device is gone, openers included
        // (their disk keeps its numbers until then); so is its session.
        self.sess.clt.free_idx(self.idx);
        self.sess.put_dev();
    }
}

/// EEXIST if a map of `path` on session `name` would clash: the same
/// device of the same session (C: no log), or a device whose devices/
/// link has the same name (two paths that differ only in '/' and '!'; C
/// finds out when it links, after the server opened the device: here it
/// is refused before, with C's log line).
fn taken(m: &MapInner, path: &[u8], name: &[u8]) -> Result {
    let link = SymlinkName {
        pathname: path,
        sessname: name,
    };
    for s in Clt::sessions(m) {
        for d in s.devs().lock().iter() {
            let dp = d.pathname.as_bytes();
            if s.name.as_bytes() == name && dp == path {
                return Err(EEXIST);
            }
            if link.same_as(&SymlinkName {
                pathname: dp,
                sessname: s.name.as_bytes(),
            }) {
                pr_err!(
                    "<{}@{}> Creating /sys/block symlink failed, err: -17\n",
                    Lossy(path),
                    Lossy(name)
                );
                return Err(EEXIST);
            }
        }
    }
    Ok(())
}

fn send_close_id(sess: &SessionRef, device_id: u32, wait: bool) -> Result {
    let msg = MsgClose { device_id }.encode();
    if wait {
        return sess.request_wait(Dir::Write, &[&msg], &mut [], None);
    }
    let req = Request::new(CloseNowait)?;
    let permit = sess.wait_permit(ConType::Admin).ok_or(ENODEV)?;
    sess.request(Dir::Write, permit, &[&msg], req)
        .map_err(|e| e.error)
}

/// A CLOSE whose end nobody waits for.
struct CloseNowait;

impl Completion for CloseNowait {
    type Owner = KBox<Request<Self>>;

    fn data(&mut self) -> Data<'_> {
        Data::None
    }

    fn complete(_req: KBox<Request<Self>>, _permit: Permit<'_>, _result: Result) {}
}

/// An OPEN sent on a reconnect: its answer is processed in a work item
/// (it takes the device's lock).
pub(crate) struct OpenLater {
    dev: Arc<Dev>,
    rsp: DataBuf,
    work: Option<Pin<KBox<crate::work::OpenRspWork>>>,
}

impl Completion for OpenLater {
    type Owner = KBox<Request<Self>>;

    fn data(&mut self) -> Data<'_> {
        Data::Buf(&mut self.rsp)
    }

    fn complete(req: KBox<Request<Self>>, permit: Permit<'_>, result: Result) {
        drop(permit);
        crate::work::open_rsp_later(req, result);
    }
}

impl OpenLater {
    /// Its work item, once.
    pub(crate) fn take_work(&mut self) -> Option<Pin<KBox<crate::work::OpenRspWork>>> {
        self.work.take()
    }

    /// The answer, in process context.
    pub(crate) fn process(&self, result: Result) {
        let d = &self.dev;
        d.users.fetch_sub(1, Ordering::Relaxed);
        if let Err(e) = result {
            d.log_err(format_args!(
                "Opening failed, server responded: {}\n",
                e.to_errno()
            ));
            return;
        }
        match MsgOpenRsp::decode(self.rsp.as_slice()) {
            Ok(rsp) => {
                let _ = d.process_open_rsp(&d.sess.rtrs, &rsp);
            }
            Err(e) => d.log_err(format_args!("bad OPEN_RSP: {}\n", e)),
        }
    }
}

/// The block device's `open` (`dev` is the disk's private data): one more
/// user, and a reference that `release` gives back.
pub(crate) fn disk_open(dev: kernel::sync::ArcBorrow<'_, Dev>) -> Result {
    dev.open()?;
    let a: Arc<Dev> = dev.into();
    // Given back by `disk_release`.
    let _ = Arc::into_raw(a);
    Ok(())
}

/// The queue's data is the device; its requests carry an [`IoDone`].
impl ffi::QueueOps for Dev {
    type Pdu = Request<IoDone>;

    fn new_pdu() -> Request<IoDone> {
        Request::with(IoDone::new())
    }

    fn requeue(&self) -> &Arc<ffi::Requeue> {
        &self.sess.requeue
    }

    fn queue_rq(
        &self,
        hq: ArcBorrow<'_, ffi::HwQueue>,
        rq: ffi::Rq<'_, Self>,
        _last: bool,
    ) -> ffi::Status {
        crate::io::queue_rq(self, hq, rq)
    }

    fn complete(&self, rq: ffi::Rq<'_, Self>) {
        crate::io::complete(self, rq)
    }

    fn poll(&self, i: u32) -> i32 {
        match self.sess.rtrs.poll(i) {
            Ok(n) => n as i32,
            Err(_) => -1,
        }
    }
}
