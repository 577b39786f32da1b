// SPDX-License-Identifier: GPL-2.0

//! The block layer and sysfs, for the layers above: the `unsafe` of this
//! module lives here, each type with its invariant written once.
//!
//! 6.12's `kernel::block::mq` gives `queue_rq` no queue data and requests
//! no driver data (see docs/rnbd-rs-design.md), so this is a thin blk-mq
//! of its own on `kernel::bindings` and c/rnbd_rs.c:
//! - [`TagSet`]: a tag set whose requests carry a [`QueueOps::Pdu`];
//! - [`Disk`]: a gendisk whose queue's data is an `Arc` of its device;
//! - [`Rq`] and [`InFlight`]: a request being queued, and one the driver
//!   owns until it completes it;
//! - [`Requeue`] and [`HwQueue`]: the hardware queues waiting for a
//!   permit, on a lock taken with interrupts off ([`IrqSpinLock`]);
//! - [`Ctl`] and [`DevKobj`]: `/sys/class/rnbd-client/ctl` and
//!   `/sys/block/rnbdN/rnbd/`.

use core::{
    ffi::{c_char, c_int, c_ulong, c_void},
    marker::PhantomData,
    ptr::NonNull,
    sync::atomic::{AtomicU32, AtomicUsize, Ordering},
};

use kernel::{
    alloc::{flags::GFP_KERNEL, KBox},
    bindings,
    error::{from_err_ptr, to_result, Error, Result},
    init::InPlaceInit,
    list::{
        impl_has_list_links, impl_list_arc_safe, impl_list_item, AtomicTracker, List, ListArc,
        ListLinks, TryNewListArc,
    },
    pin_init,
    prelude::pin_data,
    str::{CStr, CString},
    sync::{lock::Backend, Arc, ArcBorrow},
    types::Opaque,
};

use crate::rnbd_core::{
    dev::DiskLimits,
    proto::BlkOp,
    requeue::{no_permit, rerun_another, NoPermit},
};
use crate::rtrs_api::{Completion, Request, RequestOwner};

/// c/rnbd_rs.c.
mod sys {
    use super::*;

    #[repr(C)]
    pub(super) struct RnbdRsCtl {
        _p: [u8; 0],
    }
    #[repr(C)]
    pub(super) struct RnbdRsDevKobj {
        _p: [u8; 0],
    }

    // (Pointers to bindgen's structs: those with zero-sized members such
    // as `dev_archdata` are flagged, though only pointers cross.)
    #[allow(improper_ctypes)]
    extern "C" {
        pub(super) static rnbd_rs_sts_ok: u8;
        pub(super) static rnbd_rs_sts_ioerr: u8;
        pub(super) static rnbd_rs_sts_resource: u8;
        pub(super) static rnbd_rs_sts_notsupp: u8;
        pub(super) static rnbd_rs_feat_write_cache: u32;
        pub(super) static rnbd_rs_feat_fua: u32;

        pub(super) fn rnbd_rs_rq_to_pdu(rq: *mut bindings::request) -> *mut c_void;
        pub(super) fn rnbd_rs_rq_from_pdu(pdu: *mut c_void) -> *mut bindings::request;
        pub(super) fn rnbd_rs_rq_op(rq: *mut bindings::request) -> u32;
        pub(super) fn rnbd_rs_rq_is_sync(rq: *mut bindings::request) -> bool;
        pub(super) fn rnbd_rs_rq_is_flush(rq: *mut bindings::request) -> bool;
        pub(super) fn rnbd_rs_rq_is_write(rq: *mut bindings::request) -> bool;
        pub(super) fn rnbd_rs_rq_ioprio(rq: *mut bindings::request) -> u16;
        pub(super) fn rnbd_rs_rq_pos(rq: *mut bindings::request) -> u64;
        pub(super) fn rnbd_rs_rq_bytes(rq: *mut bindings::request) -> u32;
        pub(super) fn rnbd_rs_rq_nr_phys_segments(rq: *mut bindings::request) -> u16;
        pub(super) fn rnbd_rs_rq_map_sg(
            rq: *mut bindings::request,
            sgl: *mut bindings::scatterlist,
        ) -> c_int;
        pub(super) fn rnbd_rs_rq_queuedata(rq: *mut bindings::request) -> *mut c_void;
        pub(super) fn rnbd_rs_hctx_queuedata(hctx: *mut bindings::blk_mq_hw_ctx) -> *mut c_void;
        pub(super) fn rnbd_rs_spin_lock_irqsave(lock: *mut bindings::spinlock_t) -> c_ulong;
        pub(super) fn rnbd_rs_spin_unlock_irqrestore(
            lock: *mut bindings::spinlock_t,
            flags: c_ulong,
        );
        pub(super) fn rnbd_rs_register_blkdev(name: *const c_char) -> c_int;
        pub(super) fn rnbd_rs_num_online_cpus() -> u32;
        pub(super) fn rnbd_rs_alloc_wq() -> *mut bindings::workqueue_struct;
        pub(super) fn rnbd_rs_nr_cpu_ids() -> u32;
        pub(super) fn rnbd_rs_disk_uevent(gd: *mut bindings::gendisk, online: bool);
        pub(super) fn rnbd_rs_alloc_disk(
            set: *mut bindings::blk_mq_tag_set,
            lim: *mut bindings::queue_limits,
            queuedata: *mut c_void,
        ) -> *mut bindings::gendisk;
        pub(super) fn rnbd_rs_add_disk(
            gd: *mut bindings::gendisk,
            major: c_int,
            idx: c_int,
            nsectors: u64,
            ro: bool,
            dev: *mut c_void,
        ) -> c_int;
        pub(super) fn rnbd_rs_ctl_create(clt: *mut c_void) -> *mut RnbdRsCtl;
        pub(super) fn rnbd_rs_ctl_destroy(ctl: *mut RnbdRsCtl);
        pub(super) fn rnbd_rs_ctl_link(gd: *mut bindings::gendisk, name: *const c_char) -> c_int;
        pub(super) fn rnbd_rs_ctl_unlink(name: *const c_char);
        pub(super) fn rnbd_rs_dev_kobj_create(
            gd: *mut bindings::gendisk,
            dev: *mut c_void,
        ) -> *mut RnbdRsDevKobj;
        pub(super) fn rnbd_rs_dev_kobj_destroy(
            dk: *mut RnbdRsDevKobj,
            self_: *const bindings::attribute,
        );
    }
}

/// The name of the block major and of its devices' prefix.
const BLKDEV_NAME: &CStr = kernel::c_str!("rnbd");

/// A block status.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Status(u8);

impl Status {
    /// `BLK_STS_OK`.
    pub(crate) fn ok() -> Self {
        // SAFETY: A constant of c/rnbd_rs.c.
        Status(unsafe { sys::rnbd_rs_sts_ok })
    }
    /// `BLK_STS_IOERR`.
    pub(crate) fn ioerr() -> Self {
        // SAFETY: As above.
        Status(unsafe { sys::rnbd_rs_sts_ioerr })
    }
    /// `BLK_STS_RESOURCE`: requeued.
    pub(crate) fn resource() -> Self {
        // SAFETY: As above.
        Status(unsafe { sys::rnbd_rs_sts_resource })
    }
    /// `BLK_STS_NOTSUPP`.
    pub(crate) fn notsupp() -> Self {
        // SAFETY: As above.
        Status(unsafe { sys::rnbd_rs_sts_notsupp })
    }
    /// `errno_to_blk_status`.
    pub(crate) fn from_errno(errno: i32) -> Self {
        // SAFETY: A pure function.
        Status(unsafe { bindings::errno_to_blk_status(errno) })
    }
}

/// The block major, registered for the module's life.
pub(crate) struct Major(u32);

impl Major {
    /// `register_blkdev(0, "rnbd")`.
    pub(crate) fn register() -> Result<Self> {
        // SAFETY: A NUL-terminated name.
        let m = unsafe { sys::rnbd_rs_register_blkdev(BLKDEV_NAME.as_char_ptr().cast()) };
        if m <= 0 {
            return Err(kernel::error::code::EBUSY);
        }
        Ok(Major(m as u32))
    }

    /// The number.
    pub(crate) fn get(&self) -> u32 {
        self.0
    }
}

impl Drop for Major {
    fn drop(&mut self) {
        // SAFETY: Registered by `register`; no disk of it is left.
        unsafe { bindings::unregister_blkdev(self.0, BLKDEV_NAME.as_char_ptr().cast()) };
    }
}

/// A device's queue operations; `Self` is the data of the device's queue.
pub(crate) trait QueueOps: Send + Sync + Sized + 'static {
    /// The driver's part of each request (its PDU), made with the tag set.
    type Pdu: Send + 'static;

    /// A new request's driver part.
    fn new_pdu() -> Self::Pdu;

    /// The list its hardware queues wait on for a permit.
    fn requeue(&self) -> &Arc<Requeue>;

    /// `queue_rq` on hardware queue `hq` (atomic context).
    fn queue_rq(&self, hq: ArcBorrow<'_, HwQueue>, rq: Rq<'_, Self>, last: bool) -> Status;

    /// `complete`: the end of a request the driver passed to
    /// [`InFlight::complete`] (softirq or IPI context).
    fn complete(&self, rq: Rq<'_, Self>);

    /// `poll` of poll queue `i` (0-based among the tag set's poll
    /// queues): the completions found, or -1 to stop polling.
    fn poll(&self, i: u32) -> i32;
}

/// What an [`Rq`] borrows: the request's driver part, for the call.
type RqBorrow<'a, Q> = (&'a mut <Q as QueueOps>::Pdu, fn(Q));

/// A request the block layer handed to the driver, for the call.
pub(crate) struct Rq<'a, Q: QueueOps> {
    rq: NonNull<bindings::request>,
    _p: PhantomData<RqBorrow<'a, Q>>,
}

impl<Q: QueueOps> Rq<'_, Q> {
    /// The operation.
    pub(crate) fn op(&self) -> BlkOp {
        // SAFETY: `rq` is valid for the call (the type's invariant).
        let op = unsafe { sys::rnbd_rs_rq_op(self.rq.as_ptr()) };
        match op {
            bindings::req_op_REQ_OP_READ => BlkOp::Read,
            bindings::req_op_REQ_OP_WRITE => BlkOp::Write,
            bindings::req_op_REQ_OP_FLUSH => BlkOp::Flush,
            bindings::req_op_REQ_OP_DISCARD => BlkOp::Discard,
            bindings::req_op_REQ_OP_SECURE_ERASE => BlkOp::SecureErase,
            bindings::req_op_REQ_OP_WRITE_ZEROES => BlkOp::WriteZeroes,
            _ => BlkOp::Other,
        }
    }

    /// `op_is_sync` and `op_is_flush` of its flags.
    pub(crate) fn sync_flush(&self) -> (bool, bool) {
        // SAFETY: As in `op`.
        unsafe {
            (
                sys::rnbd_rs_rq_is_sync(self.rq.as_ptr()),
                sys::rnbd_rs_rq_is_flush(self.rq.as_ptr()),
            )
        }
    }

    /// `rq_data_dir` is WRITE.
    pub(crate) fn is_write(&self) -> bool {
        // SAFETY: As in `op`.
        unsafe { sys::rnbd_rs_rq_is_write(self.rq.as_ptr()) }
    }

    /// Its first sector, length in bytes and I/O priority.
    pub(crate) fn pos_bytes_prio(&self) -> (u64, u32, u16) {
        // SAFETY: As in `op`.
        unsafe {
            (
                sys::rnbd_rs_rq_pos(self.rq.as_ptr()),
                sys::rnbd_rs_rq_bytes(self.rq.as_ptr()),
                sys::rnbd_rs_rq_ioprio(self.rq.as_ptr()),
            )
        }
    }

    /// Its physical segments.
    pub(crate) fn nr_phys_segments(&self) -> u16 {
        // SAFETY: As in `op`.
        unsafe { sys::rnbd_rs_rq_nr_phys_segments(self.rq.as_ptr()) }
    }

    /// The driver's part.
    pub(crate) fn pdu(&mut self) -> &mut Q::Pdu {
        // SAFETY: The PDU was written by `init_request` and is the
        // request's; the driver has the request, and `&mut self` it alone.
        unsafe { &mut *sys::rnbd_rs_rq_to_pdu(self.rq.as_ptr()).cast::<Q::Pdu>() }
    }

    /// Maps its data into the [`SgTable`] that `sel` picks in its PDU,
    /// which must be freed ([`SgTable::free`]) before the request ends:
    /// the entries used.
    pub(crate) fn map_data(
        &mut self,
        sel: impl FnOnce(&mut Q::Pdu) -> &mut SgTable,
    ) -> Result<u32> {
        let rq = self.rq.as_ptr();
        let nents = u32::from(self.nr_phys_segments()).max(1);
        let t = sel(self.pdu());
        // SAFETY: The table and its inline entries are in the request's
        // PDU, which does not move while the request lives; `free` undoes
        // this before the request ends. The table starts at its inline
        // entries (the allocator uses them when they are enough).
        to_result(unsafe {
            (*t.sgt.get()).sgl = t.first[0].get();
            bindings::sg_alloc_table_chained(
                t.sgt.get(),
                nents as c_int,
                t.first[0].get(),
                SgTable::INLINE,
            )
        })?;
        t.used = true;
        // SAFETY: Allocated just above with room for the request's
        // segments; the request is ours.
        let n = unsafe { sys::rnbd_rs_rq_map_sg(rq, (*t.sgt.get()).sgl) };
        Ok(n as u32)
    }

    /// `blk_mq_start_request`, and the request is the driver's until it
    /// completes it.
    pub(crate) fn start(self) -> InFlight<Q> {
        // SAFETY: The request is ours to start, once.
        unsafe { bindings::blk_mq_start_request(self.rq.as_ptr()) };
        InFlight {
            rq: self.rq,
            _p: PhantomData,
        }
    }

    /// `blk_mq_end_request`: done (from `complete`).
    pub(crate) fn end(self, s: Status) {
        // SAFETY: The request is started and ours; this ends it once.
        unsafe { bindings::blk_mq_end_request(self.rq.as_ptr(), s.0) };
    }
}

/// A started request, the driver's until [`InFlight::complete`].
pub(crate) struct InFlight<Q: QueueOps> {
    rq: NonNull<bindings::request>,
    _p: PhantomData<fn(Q)>,
}

// SAFETY: A started request may be completed from any context and CPU.
unsafe impl<Q: QueueOps> Send for InFlight<Q> {}

impl<Q: QueueOps> InFlight<Q> {
    /// The data of the request's queue.
    pub(crate) fn queue(&self) -> ArcBorrow<'_, Q> {
        // SAFETY: As in `queue_rq_tramp`: the queue's data outlives its
        // requests, and this one is not ended while it is borrowed.
        unsafe { ArcBorrow::from_raw(sys::rnbd_rs_rq_queuedata(self.rq.as_ptr()).cast()) }
    }

    /// The driver's part.
    pub(crate) fn pdu(&mut self) -> &mut Q::Pdu {
        // SAFETY: As in `Rq::pdu`: the started request is ours.
        unsafe { &mut *sys::rnbd_rs_rq_to_pdu(self.rq.as_ptr()).cast::<Q::Pdu>() }
    }

    /// `blk_mq_complete_request`: [`QueueOps::complete`] follows.
    pub(crate) fn complete(self) {
        // SAFETY: Started, ours, completed once.
        unsafe { bindings::blk_mq_complete_request(self.rq.as_ptr()) };
    }
}

/// A spinlock taken with interrupts off (`spin_lock_irqsave`), for what
/// `queue_rq` shares with completions, which run in softirq or hardirq
/// context. (6.12's `SpinLock` leaves them on.)
pub(crate) type IrqSpinLock<T> = kernel::sync::lock::Lock<T, IrqSpinLockBackend>;

/// The backend of [`IrqSpinLock`].
pub(crate) struct IrqSpinLockBackend;

// SAFETY: `lock` is `spin_lock_irqsave` on the spinlock `init` set up and
// `unlock` its `spin_unlock_irqrestore`, with the flags `lock` returned
// (kept in the guard): a lock that excludes every other holder.
unsafe impl Backend for IrqSpinLockBackend {
    type State = bindings::spinlock_t;
    type GuardState = c_ulong;

    unsafe fn init(
        ptr: *mut Self::State,
        name: *const kernel::ffi::c_char,
        key: *mut bindings::lock_class_key,
    ) {
        // SAFETY: By the trait's contract, `ptr` is writable and `name`
        // and `key` live for ever.
        unsafe { bindings::__spin_lock_init(ptr, name, key) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> c_ulong {
        // SAFETY: Initialised, by the trait's contract.
        unsafe { sys::rnbd_rs_spin_lock_irqsave(ptr) }
    }

    unsafe fn unlock(ptr: *mut Self::State, flags: &c_ulong) {
        // SAFETY: The caller holds the lock, taken with these flags.
        unsafe { sys::rnbd_rs_spin_unlock_irqrestore(ptr, *flags) }
    }
}

/// A hardware queue's entry on its session's [`Requeue`] list (C's
/// `struct rnbd_queue`): the hctx's driver data from `init_hctx` to
/// `exit_hctx`.
///
/// # Invariants
///
/// `hctx` is valid while the hctx is between `init_hctx` and `exit_hctx`,
/// and it is used only then: in `queue_rq` and under the list's lock
/// while this is on the list or just taken off it (`exit_hctx` takes it
/// off under that lock first). It is
/// only ever put on `requeue`'s list.
#[pin_data]
pub(crate) struct HwQueue {
    hctx: NonNull<bindings::blk_mq_hw_ctx>,
    requeue: Arc<Requeue>,
    #[pin]
    links: ListLinks,
    #[pin]
    tracker: AtomicTracker,
}

// SAFETY: The hctx is used under the invariant above, where the block
// layer lets any context run it; the rest is `Send` and `Sync`.
unsafe impl Send for HwQueue {}
// SAFETY: As above.
unsafe impl Sync for HwQueue {}

impl_has_list_links! {
    impl HasListLinks<0> for HwQueue { self.links }
}
impl_list_arc_safe! {
    impl ListArcSafe<0> for HwQueue { tracked_by tracker: AtomicTracker; }
}
impl_list_item! {
    impl ListItem<0> for HwQueue { using ListLinks; }
}

impl HwQueue {
    /// No permit was free for this queue: lists it to be rerun when one
    /// comes back, or has the block layer rerun it later if no permit is
    /// held (`rnbd_core::requeue::no_permit`).
    pub(crate) fn wait_for_permit(self: ArcBorrow<'_, Self>) {
        // Already listed: a permit given back reruns it.
        let Some(entry) = ListArc::try_from_arc_borrow(self) else {
            return;
        };
        let r = &self.requeue;
        let verdict = {
            let mut list = r.list.lock();
            list.push_back(entry);
            // Paired with `Requeue::put_permit` (all four accesses SeqCst):
            // count it listed, then read `busy`.
            r.listed.fetch_add(1, Ordering::SeqCst);
            let v = no_permit(r.busy.load(Ordering::SeqCst));
            if v != NoPermit::Listed {
                // SAFETY: It is on this list, the only one it goes on.
                drop(unsafe { list.remove(&*self) });
                r.listed.fetch_sub(1, Ordering::Relaxed);
            }
            v
        };
        if let NoPermit::RunAfterMs(ms) = verdict {
            self.run_after(ms);
        }
    }

    /// Has the block layer rerun the queue after `ms` ms. From `queue_rq`
    /// on this queue (which holds an `ArcBorrow` of it), where it lives.
    pub(crate) fn run_after(&self, ms: u32) {
        // SAFETY: In `queue_rq` on this hctx, which lives (the invariant).
        unsafe { bindings::blk_mq_delay_run_hw_queue(self.hctx.as_ptr(), ms as usize) };
    }
}

/// A session's hardware queues that found no permit free, rerun one by
/// one as permits come back (C's requeue lists, in one FIFO: queues are
/// listed only while every permit is taken), and the permits its IO holds.
#[pin_data]
pub(crate) struct Requeue {
    #[pin]
    list: IrqSpinLock<List<HwQueue>>,
    /// Entries on `list`, read without the lock.
    listed: AtomicUsize,
    /// Permits the session's IO holds (C's `sess->busy`, which counts
    /// SESS_INFO, OPEN and CLOSE too; while only those hold permits, a
    /// queue is rerun after `RERUN_MS`).
    busy: AtomicU32,
}

impl Requeue {
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Requeue {
                list <- kernel::sync::lock::Lock::new(
                    List::new(),
                    kernel::c_str!("Requeue::list"),
                    kernel::static_lock_class!()
                ),
                listed: AtomicUsize::new(0),
                busy: AtomicU32::new(0),
            }),
            GFP_KERNEL,
        )
    }

    /// A permit was taken for an IO.
    pub(crate) fn got_permit(&self) {
        self.busy.fetch_add(1, Ordering::Relaxed);
    }

    /// The permit of an IO was given back: reruns a listed queue, or all
    /// of them if it was the last held.
    pub(crate) fn put_permit(&self) {
        // Paired with `HwQueue::wait_for_permit`: drop `busy`, then read
        // `listed` (in `rerun_one`). SeqCst accesses, not a fence: on x86
        // the give-back of every IO costs one locked op and no `mfence`.
        self.busy.fetch_sub(1, Ordering::SeqCst);
        loop {
            let rerun = self.rerun_one();
            if !rerun_another(self.busy.load(Ordering::Relaxed), rerun) {
                break;
            }
        }
    }

    /// Reruns the first listed queue; false if none was.
    fn rerun_one(&self) -> bool {
        if self.listed.load(Ordering::SeqCst) == 0 {
            return false;
        }
        let mut list = self.list.lock();
        let Some(entry) = list.pop_front() else {
            return false;
        };
        self.listed.fetch_sub(1, Ordering::Relaxed);
        // SAFETY: It was on the list, so its hctx lives (`exit_hctx` takes
        // it off under this lock first). `true`: run from kblockd.
        unsafe { bindings::blk_mq_run_hw_queue(entry.hctx.as_ptr(), true) };
        // Unlisted under the lock, as C clears `in_list`: a `queue_rq` that
        // sees it still listed is sure of this rerun.
        drop(entry);
        drop(list);
        true
    }

    /// `exit_hctx`: takes the queue off the list.
    fn remove(&self, hq: &HwQueue) {
        let mut list = self.list.lock();
        // SAFETY: `hq` only goes on its own `requeue`'s list, this one.
        if unsafe { list.remove(hq) }.is_some() {
            self.listed.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

// SAFETY: A request's PDU is the block layer's memory for that request: it
// does not move, and while the request is started nothing but its owner
// (the `InFlight`) uses it; the pointer is the PDU's, and `from_raw` finds
// the request from it.
unsafe impl<Q, C> RequestOwner for InFlight<Q>
where
    Q: QueueOps<Pdu = Request<C>>,
    C: Completion<Owner = InFlight<Q>>,
{
    type C = C;

    fn request_mut(&mut self) -> &mut Request<C> {
        self.pdu()
    }

    fn into_raw(mut self) -> NonNull<Request<C>> {
        NonNull::from(self.pdu())
    }

    unsafe fn from_raw(p: NonNull<Request<C>>) -> Self {
        // SAFETY: `p` is a PDU (from `into_raw`).
        let rq = unsafe { sys::rnbd_rs_rq_from_pdu(p.as_ptr().cast()) };
        InFlight {
            // SAFETY: The request of a PDU is not null.
            rq: unsafe { NonNull::new_unchecked(rq) },
            _p: PhantomData,
        }
    }
}

/// The vtable of `Q`'s tag sets.
struct Vtable<Q>(PhantomData<Q>);

impl<Q: QueueOps> Vtable<Q> {
    const OPS: bindings::blk_mq_ops = bindings::blk_mq_ops {
        queue_rq: Some(queue_rq_tramp::<Q>),
        commit_rqs: None,
        queue_rqs: None,
        get_budget: None,
        put_budget: None,
        set_rq_budget_token: None,
        get_rq_budget_token: None,
        timeout: None,
        poll: Some(poll_tramp::<Q>),
        complete: Some(complete_tramp::<Q>),
        init_hctx: Some(init_hctx_tramp::<Q>),
        exit_hctx: Some(exit_hctx_tramp),
        init_request: Some(init_request_tramp::<Q>),
        exit_request: Some(exit_request_tramp::<Q>),
        cleanup_rq: None,
        busy: None,
        map_queues: Some(map_queues_tramp),
        show_rq: None,
    };
}

/// How a tag set's hardware queues split: `default` queues (reads and
/// writes share them), then `poll` ones; and the session's name, for the
/// log line. The tag set's driver data.
struct QueueSplit {
    default: u32,
    poll: u32,
    sessname: CString,
}

/// # Safety
///
/// The block layer's `map_queues` of a [`TagSet`] (its driver data a
/// `QueueSplit`, its maps `nr_maps`).
unsafe extern "C" fn map_queues_tramp(set: *mut bindings::blk_mq_tag_set) {
    // SAFETY: By the function's contract: the set and its split are ours
    // for the call.
    unsafe {
        let split = &*(*set).driver_data.cast::<QueueSplit>();
        let maps = &mut (*set).map;
        let n = (*set).nr_maps as usize;
        let mut offset = 0;
        for (t, m) in maps.iter_mut().enumerate().take(n) {
            let nr = if t == bindings::hctx_type_HCTX_TYPE_POLL as usize {
                split.poll
            } else {
                split.default
            };
            m.nr_queues = nr;
            m.queue_offset = offset;
            if t == bindings::hctx_type_HCTX_TYPE_READ as usize {
                // Reads share the default queues.
                offset = split.default;
            }
            if nr > 0 {
                bindings::blk_mq_map_queues(m);
            }
        }
        // C's line (its maps are always default and read, then poll).
        if split.poll > 0 {
            kernel::pr_info!(
                "[session={}] mapped {}/{}/{} default/read/poll queues.\n",
                &*split.sessname,
                split.default,
                split.default,
                split.poll
            );
        } else {
            kernel::pr_info!(
                "[session={}] mapped {}/{} default/read queues.\n",
                &*split.sessname,
                split.default,
                split.default
            );
        }
    }
}

/// # Safety
///
/// The block layer's `poll` on a poll queue of a [`Disk<Q>`].
unsafe extern "C" fn poll_tramp<Q: QueueOps>(
    hctx: *mut bindings::blk_mq_hw_ctx,
    _iob: *mut bindings::io_comp_batch,
) -> c_int {
    // SAFETY: As in `queue_rq_tramp`; the hctx and its set are valid for
    // the call.
    unsafe {
        let q = ArcBorrow::<Q>::from_raw(sys::rnbd_rs_hctx_queuedata(hctx).cast());
        let split = &*(*(*(*hctx).queue).tag_set).driver_data.cast::<QueueSplit>();
        q.poll((*hctx).queue_num.saturating_sub(split.default))
    }
}

/// # Safety
///
/// The block layer's `queue_rq` on a queue of a [`Disk<Q>`].
unsafe extern "C" fn queue_rq_tramp<Q: QueueOps>(
    hctx: *mut bindings::blk_mq_hw_ctx,
    bd: *const bindings::blk_mq_queue_data,
) -> bindings::blk_status_t {
    // SAFETY: The queue's data is the `Arc<Q>` its `Disk` holds, which
    // outlives the queue's requests (`del_gendisk` drains them).
    let q = unsafe { ArcBorrow::<Q>::from_raw(sys::rnbd_rs_hctx_queuedata(hctx).cast()) };
    // SAFETY: `init_hctx_tramp` set the driver data, which lives until
    // `exit_hctx_tramp`, after the hctx's last `queue_rq`.
    let hq = unsafe { ArcBorrow::<HwQueue>::from_raw((*hctx).driver_data.cast()) };
    // SAFETY: `bd` is valid for the call, with a request handed to us.
    let (rq, last) = unsafe { ((*bd).rq, (*bd).last) };
    let Some(rq) = NonNull::new(rq) else {
        return Status::ioerr().0;
    };
    q.queue_rq(
        hq,
        Rq {
            rq,
            _p: PhantomData,
        },
        last,
    )
    .0
}

/// # Safety
///
/// The block layer's `init_hctx` on a queue of a [`Disk<Q>`].
unsafe extern "C" fn init_hctx_tramp<Q: QueueOps>(
    hctx: *mut bindings::blk_mq_hw_ctx,
    _data: *mut c_void,
    _hctx_idx: u32,
) -> c_int {
    let Some(h) = NonNull::new(hctx) else {
        return kernel::error::code::EINVAL.to_errno();
    };
    // SAFETY: `blk_mq_alloc_disk` sets the queue's data (the `Arc<Q>` the
    // `Disk` holds) before it sets up the hctxs.
    let q = unsafe { ArcBorrow::<Q>::from_raw(sys::rnbd_rs_hctx_queuedata(hctx).cast()) };
    let init = pin_init!(HwQueue {
        hctx: h,
        requeue: q.requeue().clone(),
        links <- ListLinks::new(),
        tracker <- AtomicTracker::new(),
    });
    match Arc::pin_init(init, GFP_KERNEL) {
        Ok(hq) => {
            // SAFETY: The hctx is ours for the call; the driver data is
            // the driver's. Taken back by `exit_hctx_tramp`.
            unsafe { (*hctx).driver_data = Arc::into_raw(hq).cast_mut().cast() };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// # Safety
///
/// The block layer's `exit_hctx` of an hctx `init_hctx_tramp` set up.
unsafe extern "C" fn exit_hctx_tramp(hctx: *mut bindings::blk_mq_hw_ctx, _hctx_idx: u32) {
    // SAFETY: The hctx is ours for the call; its driver data is the
    // `Arc<HwQueue>` `init_hctx_tramp` left there, taken back once.
    let p = unsafe { core::mem::take(&mut (*hctx).driver_data) };
    if p.is_null() {
        return;
    }
    // SAFETY: As above: `init_hctx_tramp`'s `Arc`, taken back once.
    let hq = unsafe { Arc::<HwQueue>::from_raw(p.cast()) };
    // Off the list before the hctx goes (`HwQueue`'s invariant).
    hq.requeue.remove(&hq);
}

/// # Safety
///
/// The block layer's `complete` on a request of a [`Disk<Q>`].
unsafe extern "C" fn complete_tramp<Q: QueueOps>(rq: *mut bindings::request) {
    let Some(rq) = NonNull::new(rq) else {
        return;
    };
    // SAFETY: As in `queue_rq_tramp`: the queue outlives its requests.
    let q = unsafe { ArcBorrow::<Q>::from_raw(sys::rnbd_rs_rq_queuedata(rq.as_ptr()).cast()) };
    q.complete(Rq {
        rq,
        _p: PhantomData,
    });
}

/// # Safety
///
/// The block layer's `init_request` of a [`TagSet<Q>`] (PDU of
/// `size_of::<Q::Pdu>()`).
unsafe extern "C" fn init_request_tramp<Q: QueueOps>(
    _set: *mut bindings::blk_mq_tag_set,
    rq: *mut bindings::request,
    _hctx_idx: u32,
    _numa: u32,
) -> c_int {
    // SAFETY: The PDU is `cmd_size` bytes of the request's memory,
    // aligned as the request's end (8 bytes, enough for `Q::Pdu`, which
    // `TagSet::new` checks), and not yet initialised.
    unsafe {
        sys::rnbd_rs_rq_to_pdu(rq)
            .cast::<Q::Pdu>()
            .write(Q::new_pdu())
    };
    0
}

/// # Safety
///
/// The block layer's `exit_request` of a [`TagSet<Q>`].
unsafe extern "C" fn exit_request_tramp<Q: QueueOps>(
    _set: *mut bindings::blk_mq_tag_set,
    rq: *mut bindings::request,
    _hctx_idx: u32,
) {
    // SAFETY: Written by `init_request_tramp`, dropped once here.
    unsafe { core::ptr::drop_in_place(sys::rnbd_rs_rq_to_pdu(rq).cast::<Q::Pdu>()) };
}

/// A tag set of `Q`'s requests (one per session, shared by its disks).
pub(crate) struct TagSet<Q: QueueOps> {
    set: KBox<Opaque<bindings::blk_mq_tag_set>>,
    /// Its driver data.
    _split: KBox<QueueSplit>,
    _p: PhantomData<fn(Q)>,
}

// SAFETY: The tag set is used through the block layer's own locking.
unsafe impl<Q: QueueOps> Send for TagSet<Q> {}
// SAFETY: As above: `&TagSet` only hands its pointer to the block layer.
unsafe impl<Q: QueueOps> Sync for TagSet<Q> {}

impl<Q: QueueOps> TagSet<Q> {
    /// `queue_depth` tags on `default` hardware queues and `poll` polled
    /// ones, for session `sessname`.
    pub(crate) fn new(default: u32, poll: u32, queue_depth: u32, sessname: &CStr) -> Result<Self> {
        // The PDU follows the request at its 8-byte alignment.
        if core::mem::align_of::<Q::Pdu>() > 8 {
            return Err(kernel::error::code::EINVAL);
        }
        let split = KBox::new(
            QueueSplit {
                default,
                poll,
                sessname: CString::try_from(sessname)?,
            },
            GFP_KERNEL,
        )?;
        let set = KBox::new(Opaque::<bindings::blk_mq_tag_set>::uninit(), GFP_KERNEL)?;
        let p = set.get();
        // SAFETY: `p` is the box's, not yet shared; all-zero is the tag
        // set's starting state, and the fields set are the driver's.
        unsafe {
            p.write_bytes(0, 1);
            (*p).ops = &Vtable::<Q>::OPS;
            (*p).nr_hw_queues = default + poll;
            (*p).queue_depth = queue_depth;
            (*p).cmd_size = core::mem::size_of::<Q::Pdu>() as u32;
            (*p).numa_node = bindings::NUMA_NO_NODE;
            (*p).flags = bindings::BLK_MQ_F_SHOULD_MERGE | bindings::BLK_MQ_F_TAG_QUEUE_SHARED;
            // Default and read (sharing default), then poll if any: C's.
            (*p).nr_maps = if poll > 0 {
                bindings::hctx_type_HCTX_MAX_TYPES
            } else {
                2
            };
            (*p).driver_data = (&*split as *const QueueSplit).cast_mut().cast();
        }
        // SAFETY: Set up above; it stays in its box until `drop`.
        to_result(unsafe { bindings::blk_mq_alloc_tag_set(p) })?;
        Ok(TagSet {
            set,
            _split: split,
            _p: PhantomData,
        })
    }
}

impl<Q: QueueOps> Drop for TagSet<Q> {
    fn drop(&mut self) {
        // SAFETY: Allocated by `new`; every disk on it is gone (a `Disk`
        // holds an `Arc` of its session, which holds the tag set).
        unsafe { bindings::blk_mq_free_tag_set(self.set.get()) };
    }
}

/// A gendisk on a [`TagSet<Q>`] whose queue's data is an `Arc<Q>`.
pub(crate) struct Disk<Q: QueueOps> {
    gd: NonNull<bindings::gendisk>,
    q: *const Q,
    added: bool,
}

// SAFETY: The gendisk is used through the block layer's own locking; `q`
// is an `Arc<Q>`'s, and `Q` is `Send + Sync`.
unsafe impl<Q: QueueOps> Send for Disk<Q> {}
// SAFETY: As above.
unsafe impl<Q: QueueOps> Sync for Disk<Q> {}

impl<Q: QueueOps> Disk<Q> {
    /// A disk with these limits on `set`, its queue's data `q`.
    pub(crate) fn new(set: &TagSet<Q>, l: &DiskLimits, q: Arc<Q>) -> Result<Self> {
        // SAFETY: All-zero limits are the block layer's defaults.
        let mut lim: bindings::queue_limits = unsafe { core::mem::zeroed() };
        lim.logical_block_size = l.logical_block_size;
        lim.physical_block_size = l.physical_block_size;
        lim.max_hw_sectors = l.max_hw_sectors;
        lim.io_opt = l.io_opt;
        lim.max_segments = l.max_segments.min(u32::from(u16::MAX)) as u16;
        lim.virt_boundary_mask = l.virt_boundary_mask as _;
        lim.max_hw_discard_sectors = l.max_hw_discard_sectors;
        lim.discard_granularity = l.discard_granularity;
        lim.discard_alignment = l.discard_alignment;
        lim.max_write_zeroes_sectors = l.max_write_zeroes_sectors;
        lim.max_secure_erase_sectors = l.max_secure_erase_sectors;
        // SAFETY: Constants of c/rnbd_rs.c.
        unsafe {
            if l.write_cache {
                lim.features |= sys::rnbd_rs_feat_write_cache;
            }
            if l.fua {
                lim.features |= sys::rnbd_rs_feat_fua;
            }
        }
        let q = Arc::into_raw(q);
        // SAFETY: `set` is allocated; `lim` is read during the call; `q`
        // stays valid until this disk is dropped (it owns that reference).
        let gd = unsafe { sys::rnbd_rs_alloc_disk(set.set.get(), &mut lim, q.cast_mut().cast()) };
        let gd = match from_err_ptr(gd).map(NonNull::new) {
            Ok(Some(gd)) => gd,
            Ok(None) | Err(_) => {
                // SAFETY: From `into_raw` above, not shared.
                drop(unsafe { Arc::from_raw(q) });
                return Err(from_err_ptr(gd)
                    .err()
                    .unwrap_or(kernel::error::code::ENOMEM));
            }
        };
        Ok(Disk {
            gd,
            q,
            added: false,
        })
    }

    /// `add_disk` as rnbdN: its minors, size, read-only flag, and `dev`
    /// the fops' private data.
    ///
    /// `dev` must be valid whenever the fops may run: from here until
    /// the disk is dropped and for each opener until its release.
    pub(crate) fn add(
        &mut self,
        major: &Major,
        idx: u32,
        nsectors: u64,
        ro: bool,
        dev: *const c_void,
    ) -> Result {
        // SAFETY: The disk is allocated and not yet added; the name is
        // made by C from `idx`; `dev` as this function's contract says.
        to_result(unsafe {
            sys::rnbd_rs_add_disk(
                self.gd.as_ptr(),
                major.get() as c_int,
                idx as c_int,
                nsectors,
                ro,
                dev.cast_mut(),
            )
        })?;
        self.added = true;
        Ok(())
    }

    /// The disk's online (or offline) uevent.
    pub(crate) fn uevent(&self, online: bool) {
        // SAFETY: The disk is allocated.
        unsafe { sys::rnbd_rs_disk_uevent(self.gd.as_ptr(), online) };
    }

    /// `set_capacity_and_notify`.
    pub(crate) fn set_capacity(&self, nsectors: u64) {
        // SAFETY: The disk is allocated.
        unsafe { bindings::set_capacity_and_notify(self.gd.as_ptr(), nsectors) };
    }

    fn as_ptr(&self) -> *mut bindings::gendisk {
        self.gd.as_ptr()
    }
}

impl<Q: QueueOps> Drop for Disk<Q> {
    fn drop(&mut self) {
        // SAFETY: Allocated by `new`, added or not; `del_gendisk` drains
        // the queue, so no request is left when the queue's reference
        // goes.
        unsafe {
            if self.added {
                bindings::del_gendisk(self.gd.as_ptr());
            }
            bindings::put_disk(self.gd.as_ptr());
            drop(Arc::from_raw(self.q));
        }
    }
}

/// `/sys/class/rnbd-client/ctl` with `map_device` and `devices/`.
pub(crate) struct Ctl(NonNull<sys::RnbdRsCtl>);

// SAFETY: sysfs calls are thread-safe.
unsafe impl Send for Ctl {}
// SAFETY: As above.
unsafe impl Sync for Ctl {}

impl Ctl {
    /// Creates it; `clt` is what `map_device`'s store gets, valid until
    /// this is dropped.
    pub(crate) fn new(clt: *const c_void) -> Result<Self> {
        // SAFETY: As the function says of `clt`.
        let p = from_err_ptr(unsafe { sys::rnbd_rs_ctl_create(clt.cast_mut()) })?;
        Ok(Ctl(NonNull::new(p).ok_or(kernel::error::code::ENOMEM)?))
    }
}

/// A link `ctl/devices/<name>` to a disk, removed on drop (or with
/// `devices/`, at module exit, when the [`Ctl`] goes first).
pub(crate) struct DevLink(CString);

impl DevLink {
    /// `devices/<name>` to the disk.
    pub(crate) fn new<Q: QueueOps>(d: &Disk<Q>, name: CString) -> Result<Self> {
        // SAFETY: The disk is added; the name is NUL-terminated.
        to_result(unsafe { sys::rnbd_rs_ctl_link(d.as_ptr(), name.as_char_ptr().cast()) })?;
        Ok(DevLink(name))
    }
}

impl Drop for DevLink {
    fn drop(&mut self) {
        // SAFETY: Made by `new`, while the ctl device exists.
        unsafe { sys::rnbd_rs_ctl_unlink(self.0.as_char_ptr().cast()) };
    }
}

impl Drop for Ctl {
    fn drop(&mut self) {
        // SAFETY: Created by `new`; returns once no store runs.
        unsafe { sys::rnbd_rs_ctl_destroy(self.0.as_ptr()) };
    }
}

/// The `attribute` of a running store of `rnbd/`: only the store
/// trampoline has one, for [`DevKobj::destroy`] from inside it.
pub(crate) struct SysfsAttr<'a>(NonNull<bindings::attribute>, PhantomData<&'a ()>);

impl SysfsAttr<'_> {
    /// # Safety
    ///
    /// `attr` is the attribute of the store running on this thread, for
    /// the store's duration.
    pub(crate) unsafe fn new(attr: *const bindings::attribute) -> Option<Self> {
        NonNull::new(attr.cast_mut()).map(|a| SysfsAttr(a, PhantomData))
    }
}

/// `/sys/block/rnbdN/rnbd/`.
pub(crate) struct DevKobj(NonNull<sys::RnbdRsDevKobj>);

// SAFETY: sysfs calls are thread-safe.
unsafe impl Send for DevKobj {}
// SAFETY: As above.
unsafe impl Sync for DevKobj {}

impl DevKobj {
    /// Creates it under the disk; `dev` is what its show and store get,
    /// valid until [`DevKobj::destroy`] returns.
    pub(crate) fn new<Q: QueueOps>(d: &Disk<Q>, dev: *const c_void) -> Result<Self> {
        // SAFETY: The disk is added; `dev` as said.
        let p = from_err_ptr(unsafe { sys::rnbd_rs_dev_kobj_create(d.as_ptr(), dev.cast_mut()) })?;
        Ok(DevKobj(NonNull::new(p).ok_or(kernel::error::code::ENOMEM)?))
    }

    /// Takes it out of sysfs (from its own store with that store's
    /// attribute); no show or store runs on it after.
    pub(crate) fn destroy(self, own: Option<SysfsAttr<'_>>) {
        let a = own.map_or(core::ptr::null(), |a| a.0.as_ptr().cast_const());
        let p = self.0;
        core::mem::forget(self);
        // SAFETY: Created by `new`, destroyed once (`self` is gone); `a`
        // is the running store's own attribute or null.
        unsafe { sys::rnbd_rs_dev_kobj_destroy(p.as_ptr(), a) };
    }
}

impl Drop for DevKobj {
    fn drop(&mut self) {
        // SAFETY: Created by `new`; not destroyed (`destroy` forgets it).
        unsafe { sys::rnbd_rs_dev_kobj_destroy(self.0.as_ptr(), core::ptr::null()) };
    }
}

/// A request's scatterlist: two entries inline, chained to more when the
/// request has more segments (`sg_alloc_table_chained`). It lives in a
/// request's PDU, which does not move; the table points into itself.
pub(crate) struct SgTable {
    sgt: Opaque<bindings::sg_table>,
    first: [Opaque<bindings::scatterlist>; SgTable::INLINE as usize],
    used: bool,
}

// SAFETY: Only the request owning the PDU uses it.
unsafe impl Send for SgTable {}

impl SgTable {
    /// Entries inline (`RNBD_INLINE_SG_CNT`).
    const INLINE: u32 = 2;

    /// An empty table.
    pub(crate) fn new() -> Self {
        SgTable {
            sgt: Opaque::uninit(),
            first: [Opaque::uninit(), Opaque::uninit()],
            used: false,
        }
    }

    /// The first entry, while mapped.
    pub(crate) fn first(&self) -> Option<NonNull<bindings::scatterlist>> {
        if !self.used {
            return None;
        }
        // SAFETY: Set up by `Rq::map_data`.
        NonNull::new(unsafe { (*self.sgt.get()).sgl })
    }

    /// Frees what `Rq::map_data` allocated.
    pub(crate) fn free(&mut self) {
        if core::mem::take(&mut self.used) {
            // SAFETY: Allocated by `map` with the same inline count.
            unsafe { bindings::sg_free_table_chained(self.sgt.get(), Self::INLINE) };
        }
    }
}

/// Removes element `i` of a vector (its last element takes the place; 6.12's
/// `KVec` has no `remove`).
pub(crate) fn vec_remove<T>(v: &mut kernel::alloc::KVec<T>, i: usize) -> Option<T> {
    let n = v.len();
    if i >= n {
        return None;
    }
    v.as_mut_slice().swap(i, n - 1);
    // SAFETY: `n - 1 < n` is initialised; it is read out once, and the
    // length shrinks past it, so it is never read or dropped again.
    unsafe {
        let last = v.as_ptr().add(n - 1).read();
        v.set_len(n - 1);
        Some(last)
    }
}

/// A box handed from one context to another without a lock (a
/// confirmation in softirq to its work item): the last one put, until
/// taken.
pub(crate) struct BoxSlot<T>(core::sync::atomic::AtomicPtr<T>);

// SAFETY: It owns at most one `KBox<T>`, moved between threads whole.
unsafe impl<T: Send> Send for BoxSlot<T> {}
// SAFETY: `put` and `take` swap atomically: one owner at a time.
unsafe impl<T: Send> Sync for BoxSlot<T> {}

impl<T> BoxSlot<T> {
    pub(crate) fn new() -> Self {
        BoxSlot(core::sync::atomic::AtomicPtr::new(core::ptr::null_mut()))
    }

    /// Puts `b` in (dropping what was there).
    pub(crate) fn put(&self, b: KBox<T>) {
        let old = self
            .0
            .swap(KBox::into_raw(b), core::sync::atomic::Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: Every non-null pointer in it came from `into_raw`
            // and was swapped out here, so it is ours alone.
            drop(unsafe { KBox::from_raw(old) });
        }
    }

    /// Takes what is in.
    pub(crate) fn take(&self) -> Option<KBox<T>> {
        let p = self
            .0
            .swap(core::ptr::null_mut(), core::sync::atomic::Ordering::AcqRel);
        // SAFETY: As in `put`.
        (!p.is_null()).then(|| unsafe { KBox::from_raw(p) })
    }
}

impl<T> Drop for BoxSlot<T> {
    fn drop(&mut self) {
        drop(self.take());
    }
}

/// `msleep`.
pub(crate) fn msleep(ms: u32) {
    // SAFETY: May sleep; the callers are in process context.
    unsafe { bindings::msleep(ms) };
}

/// The module's workqueue: dropping it waits for its work items (they
/// run module code).
pub(crate) struct Wq(NonNull<bindings::workqueue_struct>);

// SAFETY: A workqueue is used from any thread.
unsafe impl Send for Wq {}
// SAFETY: As above.
unsafe impl Sync for Wq {}

impl Wq {
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: No argument.
        let p = unsafe { sys::rnbd_rs_alloc_wq() };
        Ok(Wq(NonNull::new(p).ok_or(kernel::error::code::ENOMEM)?))
    }

    /// Waits for what is queued (not from one of its own items).
    pub(crate) fn flush(&self) {
        // SAFETY: Allocated by `new`.
        unsafe { bindings::__flush_workqueue(self.0.as_ptr()) };
    }

    /// The queue, to enqueue on.
    pub(crate) fn queue(&self) -> &kernel::workqueue::Queue {
        // SAFETY: Allocated by `new`, destroyed only when `self` drops.
        unsafe { kernel::workqueue::Queue::from_raw(self.0.as_ptr()) }
    }
}

impl Drop for Wq {
    fn drop(&mut self) {
        // SAFETY: Allocated by `new`; this drains it first.
        unsafe { bindings::destroy_workqueue(self.0.as_ptr()) };
    }
}

/// The `ratelimit_state` of one log call site (C's `_rl` log lines: at
/// most 10 per 5 s), rtrs_core's; any context.
pub(crate) struct RateLimit(crate::rtrs_core::ratelimit::AtomicRateLimit);

impl RateLimit {
    pub(crate) const fn new() -> Self {
        RateLimit(crate::rtrs_core::ratelimit::AtomicRateLimit::new())
    }

    /// Whether to print now: `Some(lines held back before)`, or `None`.
    pub(crate) fn check(&self) -> Option<u16> {
        // SAFETY: A plain clock read, any context.
        let now_ms = (unsafe { bindings::ktime_get() } / 1_000_000) as u32;
        self.0.check(now_ms)
    }
}

/// `num_online_cpus()` and `nr_cpu_ids`.
pub(crate) fn cpus() -> (u32, u32) {
    // SAFETY: Plain reads.
    unsafe { (sys::rnbd_rs_num_online_cpus(), sys::rnbd_rs_nr_cpu_ids()) }
}

/// An errno as the C callers of this module's sysfs files want it.
pub(crate) fn errno_ssize(e: Error) -> isize {
    e.to_errno() as isize
}
