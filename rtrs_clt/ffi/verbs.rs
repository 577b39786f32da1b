// SPDX-License-Identifier: GPL-2.0

//! Owning wrappers over ib_verbs: the ib_client, the per-device PD pool,
//! completion queues, queue pairs and DMA-mapped information units (IUs),
//! and the work requests posted on a QP.
//!
//! Each wrapper releases its object in `Drop`. A QP is drained before it is
//! destroyed; every post goes through its `PostGate`, which refuses posts
//! once a drain has begun, so a drained QP stays drained. A ring buffer is
//! posted at most once at a time (its `held` flag), and only a successful
//! receive hands it back to its handler, as a [`RingIu`] that a repost
//! consumes. [`QpRing`] holds a connection's QP with its CQ and its
//! receive buffers in the order that keeps everything posted alive until
//! the drain (QP, then buffers, then CQ). The order between a QP ring, its
//! cm id and its device (ring before cm id, device reference last) is kept
//! by their owner, `conns::ConSlot`, and written down there.

use core::marker::PhantomData;
use core::pin::Pin;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};

use kernel::error::{from_err_ptr, to_result};
use kernel::ffi::c_int;
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};
use kernel::types::Opaque;

use crate::bindings;
use crate::ffi::error::econnaborted;
use crate::ffi::log::pr_err_rl;

/// `ib_client.add`: called for every RDMA device, present and future.
///
/// # Safety
///
/// Called by the IB core only, with a registered device.
unsafe extern "C" fn rtrs_rs_ib_add_one(ibdev: *mut bindings::ib_device) -> kernel::ffi::c_int {
    // SAFETY: The IB core calls `add` with a registered device, whose
    // NUL-terminated name lives as long as the device.
    let name = unsafe { CStr::from_char_ptr(bindings::rtrs_rs_ib_dev_name(ibdev)) };
    pr_info!("ib device {} added\n", name);
    0
}

/// `ib_client.remove`: called when a device goes away or the client unregisters.
///
/// # Safety
///
/// Called by the IB core only, with a device that is still live.
unsafe extern "C" fn rtrs_rs_ib_remove_one(
    ibdev: *mut bindings::ib_device,
    _client_data: *mut kernel::ffi::c_void,
) {
    // SAFETY: The IB core calls `remove` before the device is freed, and
    // its NUL-terminated name lives as long as the device.
    let name = unsafe { CStr::from_char_ptr(bindings::rtrs_rs_ib_dev_name(ibdev)) };
    pr_info!("ib device {} removed\n", name);
}

/// A registered `ib_client`, unregistered on drop.
///
/// # Invariants
///
/// `client` is registered with the IB core from `register` until `drop`, and
/// its `name` points to a `'static` string.
pub(crate) struct IbClient {
    client: Pin<KBox<Opaque<bindings::ib_client>>>,
}

// SAFETY: The IB core synchronises its use of the client; the box may move between threads.
unsafe impl Send for IbClient {}
// SAFETY: `&IbClient` exposes nothing.
unsafe impl Sync for IbClient {}

impl IbClient {
    /// Registers a client called `name`; `add` runs for every existing device before this returns.
    pub(crate) fn register(name: &'static CStr) -> Result<Self> {
        let client = KBox::pin(
            Opaque::new(bindings::ib_client {
                name: name.as_char_ptr(),
                add: Some(rtrs_rs_ib_add_one),
                remove: Some(rtrs_rs_ib_remove_one),
                ..Default::default()
            }),
            GFP_KERNEL,
        )?;
        // SAFETY: `client` is pinned in memory until `drop` unregisters it, and
        // its callbacks are valid for the life of the module.
        to_result(unsafe { bindings::ib_register_client(client.get()) })?;
        // INVARIANT: registered just above; `name` is static.
        Ok(Self { client })
    }
}

impl Drop for IbClient {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the client is registered; this waits for
        // every callback and calls `remove` for each device.
        unsafe { bindings::ib_unregister_client(self.client.get()) };
    }
}

/// `ib_wc_status_msg(status)`, for logs.
pub(crate) fn wc_status_msg(status: bindings::ib_wc_status) -> &'static CStr {
    // SAFETY: ib_wc_status_msg returns a static NUL-terminated string for
    // any value.
    unsafe { CStr::from_char_ptr(bindings::ib_wc_status_msg(status)) }
}

/// `be32_to_cpu(wc->ex.imm_data)`: the immediate of a completion with
/// IB_WC_WITH_IMM (the invalidated rkey with IB_WC_WITH_INVALIDATE).
pub(crate) fn wc_imm_data(wc: &bindings::ib_wc) -> u32 {
    // SAFETY: Both members of `ex` are 32-bit integers, valid for any bits.
    u32::from_be(unsafe { wc.ex.imm_data })
}

/// Completions of requests posted with the cqe [`static_cqe::<Self>`],
/// which carries nothing but its handler: the QP's owner (its
/// `qp_context`) is all `done` gets.
///
/// `done` runs in the CQ's context: softirq for IRQ connections, so it
/// must not sleep.
pub(crate) trait CqeHandler: 'static {
    /// The QP context type (`qp_context`, see [`Qp`]).
    type Ctx: Sync;
    /// Handles one work completion.
    fn done(ctx: &Self::Ctx, wc: &bindings::ib_wc);
}

/// The cqe of a [`CqeHandler`]: a constant, since it names only its
/// handler (the verbs core only reads a cqe, to call its `done`).
#[repr(C)]
struct StaticCqe<H> {
    cqe: bindings::ib_cqe,
    _h: PhantomData<fn(&H)>,
}

impl<H: CqeHandler> StaticCqe<H> {
    /// The one value of this type.
    const CQE: &'static Self = &Self {
        cqe: bindings::ib_cqe {
            done: Some(first_cqe_done::<Self>),
        },
        _h: PhantomData,
    };
}

// SAFETY: `StaticCqe` is `#[repr(C)]` with its `ib_cqe` first, whose `done`
// is this trampoline (`CQE` is its only value); it is posted only on a
// `Qp<H::Ctx>` (`static_cqe`'s contract) and, a constant, never goes away.
unsafe impl<H: CqeHandler> CqeFirst for StaticCqe<H> {
    type Ctx = H::Ctx;
    fn done(ctx: &H::Ctx, _this: &Self, wc: &bindings::ib_wc) {
        H::done(ctx, wc);
    }
}

/// The `wr_cqe` whose completions go to `H::done`: post it only on a
/// `Qp<H::Ctx>`. A constant, so it outlives any request.
pub(crate) fn static_cqe<H: CqeHandler>() -> *mut bindings::ib_cqe {
    let c: *const StaticCqe<H> = StaticCqe::<H>::CQE;
    // The verbs core does not write through it.
    c.cast_mut().cast()
}

/// The `ib_cqe` first in a [`CqeFirst`] type: set to the type's trampoline
/// when made, then only read, by the verbs core, to call it.
#[repr(transparent)]
pub(crate) struct Cqe(Opaque<bindings::ib_cqe>);

// SAFETY: Written only by `of`; afterwards nothing but the verbs core reads
// it (its `done`, a function pointer), from any CPU.
unsafe impl Send for Cqe {}
// SAFETY: As above: shared reads only.
unsafe impl Sync for Cqe {}

impl Cqe {
    /// The cqe of `T`: its `done` is `first_cqe_done::<T>`.
    pub(crate) fn of<T: CqeFirst>() -> Self {
        Self(Opaque::new(bindings::ib_cqe {
            done: Some(first_cqe_done::<T>),
        }))
    }

    /// The `wr_cqe` to post.
    pub(crate) fn as_ptr(&self) -> *mut bindings::ib_cqe {
        self.0.get()
    }
}

/// Types whose completions carry themselves: a `#[repr(C)]` struct with an
/// `ib_cqe` first, posted as `wr_cqe` (an [`Iu`], an IO request slot, a
/// [`CqeHandler`]'s constant cqe).
///
/// # Safety
///
/// `Self` is `#[repr(C)]` with an `ib_cqe` (or `Opaque<ib_cqe>`) first,
/// whose `done` is [`first_cqe_done::<Self>`]; it is posted only on a
/// `Qp<Self::Ctx>` and stays alive until its QP is drained.
pub(crate) unsafe trait CqeFirst: Sync + Sized {
    /// The QP context type (`qp_context`).
    type Ctx: Sync;
    /// Handles the work completion of `this`, in the CQ's context.
    fn done(ctx: &Self::Ctx, this: &Self, wc: &bindings::ib_wc);
}

/// The `ib_cqe.done` trampoline of a [`CqeFirst`] type.
///
/// # Safety
///
/// Called by the CQ core with a completion whose `wr_cqe` is the first
/// field of a live `T` (the `CqeFirst` contract).
pub(crate) unsafe extern "C" fn first_cqe_done<T: CqeFirst>(
    _cq: *mut bindings::ib_cq,
    wc: *mut bindings::ib_wc,
) {
    // SAFETY: The CQ core passes a valid work completion, with `qp` set to
    // the QP the request was posted on (for every completion, flushed ones
    // too: rtrs-clt.c's handlers read `wc->qp->qp_context` the same way);
    // by the `CqeFirst` contract `wr_cqe` points to the first field of a
    // live `T`, posted on a QP whose `qp_context` is a live `T::Ctx`.
    let (wc, this, ctx) = unsafe {
        let wc = &*wc;
        let this = &*wc.__bindgen_anon_1.wr_cqe.cast::<T>();
        (wc, this, &*(*wc.qp).qp_context.cast::<T::Ctx>())
    };
    T::done(ctx, this, wc);
}

// ---------------------------------------------------------------------------
// The PD pool: one PD per ib_device, shared and refcounted (rtrs_ib_dev_*).
// ---------------------------------------------------------------------------

/// A protection domain from `ib_alloc_pd`, deallocated on drop.
///
/// # Invariants
///
/// `pd` came from a successful `ib_alloc_pd` and is deallocated only in
/// `drop`; `local_dma_lkey` is its `local_dma_lkey`, which `ib_alloc_pd`
/// set and nothing changes.
struct Pd {
    pd: NonNull<bindings::ib_pd>,
    local_dma_lkey: u32,
}

impl Pd {
    fn alloc(ib_dev: *mut bindings::ib_device) -> Result<Self> {
        let mut local_dma_lkey = 0;
        // SAFETY: `ib_dev` is a registered device (the caller holds a cm id
        // bound to it); flags 0 as in the C client (no unsafe global rkey);
        // `local_dma_lkey` is writable.
        let pd =
            from_err_ptr(unsafe { bindings::rtrs_rs_ib_alloc_pd(ib_dev, 0, &mut local_dma_lkey) })?;
        let pd = NonNull::new(pd).ok_or(ENOMEM)?;
        // INVARIANT: just allocated; the helper copied its lkey.
        Ok(Self { pd, local_dma_lkey })
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the PD is live; every QP and MR that
        // used it is gone (users count reached zero, see `DevRef`).
        unsafe { bindings::rtrs_rs_ib_dealloc_pd(self.pd.as_ptr()) };
    }
}

/// A device's attributes (`ib_dev->attrs`) and `num_comp_vectors`, copied
/// when it joins the pool: they do not change while it is registered.
#[derive(Clone, Copy)]
struct DevInfo {
    attrs: bindings::ib_device_attr,
    num_comp_vectors: c_int,
}

/// One pool entry (`struct rtrs_ib_dev`): a device and its PD.
struct IbDev {
    ib_dev: *mut bindings::ib_device,
    node_guid: u64,
    info: DevInfo,
    pd: Pd,
    /// Number of live `DevRef`s on this entry (the kref of C).
    users: usize,
}

/// The per-device PD pool (`struct rtrs_rdma_dev_pd` of C).
///
/// Lock: `list` (see the lock order in the crate root).
#[pin_data]
pub(crate) struct DevPool {
    #[pin]
    list: Mutex<KVec<Option<IbDev>>>,
}

// SAFETY: The raw device and PD pointers in the list are only used under the
// mutex or through `DevRef`, and the verbs core allows any thread to use them.
unsafe impl Send for DevPool {}
// SAFETY: As above; all shared access goes through the mutex.
unsafe impl Sync for DevPool {}

impl DevPool {
    /// A new, empty pool.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                list <- new_mutex!(KVec::new(), "rtrs_rs_dev_pool"),
            }),
            GFP_KERNEL,
        )
    }

    /// `rtrs_ib_dev_find_or_add`: a reference to the PD of `ib_dev`,
    /// allocating it on first use. Devices are matched by node GUID, as in C.
    ///
    /// # Safety
    ///
    /// `ib_dev` must be a registered device that stays registered for as
    /// long as the returned reference lives (a cm id bound to it ensures this).
    pub(crate) unsafe fn find_or_add(
        self: &Arc<Self>,
        ib_dev: *mut bindings::ib_device,
    ) -> Result<DevRef> {
        // SAFETY: The caller guarantees `ib_dev` is live. These fields are
        // set before a device registers and then stay; they are copied out
        // (the rest of the device changes meanwhile).
        let (node_guid, info) = unsafe {
            (
                (*ib_dev).node_guid,
                DevInfo {
                    attrs: (*ib_dev).attrs,
                    num_comp_vectors: (*ib_dev).num_comp_vectors,
                },
            )
        };
        let cap_flags = info.attrs.device_cap_flags;
        let mut list = self.list.lock();
        for e in list.iter_mut().flatten() {
            if e.node_guid == node_guid {
                e.users = e.users.checked_add(1).ok_or(ENOMEM)?;
                return Ok(DevRef {
                    pool: self.clone(),
                    ib_dev: e.ib_dev,
                    pd: e.pd.pd,
                    local_dma_lkey: e.pd.local_dma_lkey,
                    info: e.info,
                });
            }
        }
        // The client's pool init callback (rtrs_clt_ib_dev_init) refuses
        // devices without fast registration; find_or_add then fails, and
        // create_con_cq_qp reports -ENOMEM.
        let mem_mgt = u64::try_from(bindings::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS)
            .map_err(|_| EINVAL)?;
        if cap_flags & mem_mgt == 0 {
            pr_err!("Memory registrations not supported.\n");
            return Err(ENOMEM);
        }
        let pd = Pd::alloc(ib_dev)?;
        let pd_ptr = pd.pd;
        let local_dma_lkey = pd.local_dma_lkey;
        let entry = IbDev {
            ib_dev,
            node_guid,
            info,
            pd,
            users: 1,
        };
        match list.iter_mut().find(|e| e.is_none()) {
            Some(slot) => *slot = Some(entry),
            None => list.push(Some(entry), GFP_KERNEL)?,
        }
        Ok(DevRef {
            pool: self.clone(),
            ib_dev,
            pd: pd_ptr,
            local_dma_lkey,
            info,
        })
    }
}

/// A counted reference to a pool entry: the device and its PD stay valid
/// while it lives; the last one deallocates the PD (`rtrs_ib_dev_put`).
///
/// # Invariants
///
/// The pool holds an entry for `ib_dev` whose `users` counts this reference,
/// and `pd` and `local_dma_lkey` are that entry's PD and its lkey.
pub(crate) struct DevRef {
    pool: Arc<DevPool>,
    ib_dev: *mut bindings::ib_device,
    pd: NonNull<bindings::ib_pd>,
    local_dma_lkey: u32,
    info: DevInfo,
}

// SAFETY: The pointers are to kernel objects usable from any thread; the
// count they rely on is changed under the pool mutex.
unsafe impl Send for DevRef {}
// SAFETY: `&DevRef` only hands out the pointers.
unsafe impl Sync for DevRef {}

impl DevRef {
    /// The ib_device.
    pub(crate) fn ib_dev(&self) -> *mut bindings::ib_device {
        self.ib_dev
    }

    /// The PD.
    pub(crate) fn pd(&self) -> *mut bindings::ib_pd {
        self.pd.as_ptr()
    }

    /// The PD's local DMA lkey, for SGEs over IU buffers (copied when the
    /// PD was allocated: it does not change).
    pub(crate) fn local_dma_lkey(&self) -> u32 {
        self.local_dma_lkey
    }

    /// Device attributes (`ib_dev->attrs`).
    pub(crate) fn attrs(&self) -> &bindings::ib_device_attr {
        &self.info.attrs
    }

    /// Number of completion vectors of the device.
    pub(crate) fn num_comp_vectors(&self) -> u32 {
        u32::try_from(self.info.num_comp_vectors)
            .unwrap_or(1)
            .max(1)
    }

    /// Another counted reference to the same entry (`dev_ref++` of C).
    pub(crate) fn try_clone(&self) -> Result<Self> {
        let mut list = self.pool.list.lock();
        let e = list
            .iter_mut()
            .flatten()
            .find(|e| e.ib_dev == self.ib_dev)
            .ok_or(EINVAL)?;
        e.users = e.users.checked_add(1).ok_or(ENOMEM)?;
        // INVARIANT: counted just above.
        Ok(Self {
            pool: self.pool.clone(),
            ib_dev: self.ib_dev,
            pd: self.pd,
            local_dma_lkey: self.local_dma_lkey,
            info: self.info,
        })
    }
}

impl Drop for DevRef {
    fn drop(&mut self) {
        let mut list = self.pool.list.lock();
        for slot in list.iter_mut() {
            let last = match slot {
                Some(e) if e.ib_dev == self.ib_dev => {
                    e.users = e.users.saturating_sub(1);
                    e.users == 0
                }
                _ => continue,
            };
            if last {
                // Drops the entry, which deallocates the PD under the pool lock.
                *slot = None;
            }
            break;
        }
    }
}

// ---------------------------------------------------------------------------
// Completion queues
// ---------------------------------------------------------------------------

/// A CQ: from the device's shared pool for IRQ connections, private for
/// poll connections, as rtrs.c's create_cq does. Released on drop.
///
/// # Invariants
///
/// `cq` is live until `drop`; `Pool` ones came from `ib_cq_pool_get` with
/// `nr_cqe` entries, `Own` ones from `ib_alloc_cq`.
pub(crate) enum Cq {
    /// `ib_cq_pool_get` (IB_POLL_SOFTIRQ connections).
    Pool {
        /// The CQ.
        cq: NonNull<bindings::ib_cq>,
        /// Entries taken from the pool CQ.
        nr_cqe: u32,
    },
    /// `ib_alloc_cq` (IB_POLL_DIRECT connections).
    Own {
        /// The CQ.
        cq: NonNull<bindings::ib_cq>,
        /// Held while a caller polls it: polls never run concurrently.
        busy: AtomicBool,
    },
}

// SAFETY: A CQ may be used and released from any thread.
unsafe impl Send for Cq {}
// SAFETY: `&Cq` only hands out the pointer.
unsafe impl Sync for Cq {}

impl Cq {
    /// `ib_cq_pool_get(dev, nr_cqe, vector, poll_ctx)`.
    pub(crate) fn pool_get(
        dev: &DevRef,
        nr_cqe: u32,
        vector: u32,
        poll_ctx: bindings::ib_poll_context,
    ) -> Result<Self> {
        let vec = kernel::ffi::c_int::try_from(vector).map_err(|_| EINVAL)?;
        // SAFETY: `dev` keeps the device registered.
        let cq =
            from_err_ptr(unsafe { bindings::ib_cq_pool_get(dev.ib_dev(), nr_cqe, vec, poll_ctx) })?;
        let cq = NonNull::new(cq).ok_or(ENOMEM)?;
        // INVARIANT: just taken from the pool with `nr_cqe` entries.
        Ok(Cq::Pool { cq, nr_cqe })
    }

    /// `ib_alloc_cq(dev, NULL, nr_cqe, vector, poll_ctx)`.
    pub(crate) fn alloc(
        dev: &DevRef,
        nr_cqe: u32,
        vector: u32,
        poll_ctx: bindings::ib_poll_context,
    ) -> Result<Self> {
        let vec = kernel::ffi::c_int::try_from(vector).map_err(|_| EINVAL)?;
        let n = kernel::ffi::c_int::try_from(nr_cqe).map_err(|_| EINVAL)?;
        // SAFETY: `dev` keeps the device registered; no private context is used
        // (completions find their owner through `wc->qp->qp_context`).
        let cq = from_err_ptr(unsafe {
            bindings::rtrs_rs_ib_alloc_cq(dev.ib_dev(), core::ptr::null_mut(), n, vec, poll_ctx)
        })?;
        let cq = NonNull::new(cq).ok_or(ENOMEM)?;
        // INVARIANT: just allocated.
        Ok(Cq::Own {
            cq,
            busy: AtomicBool::new(false),
        })
    }

    /// The raw CQ, for the QP attributes.
    pub(crate) fn as_ptr(&self) -> *mut bindings::ib_cq {
        match self {
            Cq::Pool { cq, .. } | Cq::Own { cq, .. } => cq.as_ptr(),
        }
    }

    /// `ib_process_cq_direct(cq, -1)` of an IB_POLL_DIRECT CQ: the number
    /// of completions processed; 0 for a pool CQ (the core polls it) or
    /// while another caller polls this one.
    pub(crate) fn process_direct(&self) -> kernel::ffi::c_int {
        let Cq::Own { cq, busy } = self else {
            return 0;
        };
        if busy.swap(true, Ordering::Acquire) {
            return 0;
        }
        // SAFETY: By the type invariant the CQ is live, allocated with
        // IB_POLL_DIRECT; `busy` keeps other polls out.
        let n = unsafe { bindings::ib_process_cq_direct(cq.as_ptr(), -1) };
        busy.store(false, Ordering::Release);
        n
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        match self {
            // SAFETY: By the type invariant the CQ came from the pool with
            // `nr_cqe` entries; the QP using it is already destroyed (owner's order).
            Cq::Pool { cq, nr_cqe } => unsafe { bindings::ib_cq_pool_put(cq.as_ptr(), *nr_cqe) },
            // SAFETY: By the type invariant the CQ is ours; its QP is gone.
            Cq::Own { cq, .. } => unsafe { bindings::ib_free_cq(cq.as_ptr()) },
        }
    }
}

// ---------------------------------------------------------------------------
// A caller's scatterlist and the fast-registration MR
// ---------------------------------------------------------------------------

/// The scatterlist of a request (`struct scatterlist *` and its entries),
/// owned by whoever is answerable for the request: mapping consumes it,
/// unmapping gives it back.
///
/// # Invariants
///
/// `sg` points to `nents` entries that stay valid, and are DMA-mapped by
/// nobody else, until the request is confirmed (rtrs.h's contract for
/// `rtrs_clt_request`); `nents` is 0 for a request without data.
pub(crate) struct SgList {
    sg: *mut bindings::scatterlist,
    nents: u32,
}

// SAFETY: The list may be mapped and unmapped from any thread (rtrs.h).
unsafe impl Send for SgList {}

impl SgList {
    /// No data.
    pub(crate) const EMPTY: Self = Self {
        sg: core::ptr::null_mut(),
        nents: 0,
    };

    /// # Safety
    ///
    /// As the type invariant: `sg` has `nents` entries, valid and not
    /// mapped elsewhere until the request is confirmed.
    pub(crate) unsafe fn new(sg: *mut bindings::scatterlist, nents: u32) -> Self {
        if sg.is_null() {
            return Self::EMPTY;
        }
        Self { sg, nents }
    }

    /// The number of entries.
    pub(crate) fn nents(&self) -> u32 {
        self.nents
    }

    /// `ib_dma_map_sg` on `dev`; the list back if it has no entries or
    /// the mapping failed.
    pub(crate) fn dma_map(
        self,
        dev: &DevRef,
        dir: bindings::dma_data_direction,
    ) -> core::result::Result<MappedSg, SgList> {
        let Some(n) = c_int::try_from(self.nents).ok().filter(|&n| n > 0) else {
            return Err(self);
        };
        // SAFETY: By the type invariant the list has `n` valid entries,
        // mapped by nobody else (we own it); the device is registered (`dev`).
        let count = unsafe { bindings::rtrs_rs_ib_dma_map_sg(dev.ib_dev(), self.sg, n, dir) };
        if count <= 0 {
            return Err(self);
        }
        Ok(MappedSg {
            sg: self,
            count,
            dir,
            dev: dev.ib_dev(),
        })
    }
}

/// An [`SgList`] mapped for DMA on `dev`, with `count` mapped entries.
pub(crate) struct MappedSg {
    sg: SgList,
    count: c_int,
    dir: bindings::dma_data_direction,
    dev: *mut bindings::ib_device,
}

// SAFETY: As `SgList`; `dev` is only compared.
unsafe impl Send for MappedSg {}

impl MappedSg {
    /// The number of mapped entries (what `Mr::map_sg` must map).
    pub(crate) fn count(&self) -> c_int {
        self.count
    }

    /// `ib_dma_unmap_sg` on `dev`, the device it was mapped on; the list
    /// back. (On another device it stays mapped, and this logs.)
    pub(crate) fn unmap(self, dev: &DevRef) -> SgList {
        if dev.ib_dev() != self.dev {
            pr_err_rl!("rtrs: scatterlist unmapped on another device; left mapped\n");
            return self.sg;
        }
        let n = c_int::try_from(self.sg.nents).unwrap_or(0);
        // SAFETY: Mapped by `SgList::dma_map` with these arguments on this
        // device, once (`self` is consumed); the list is valid until
        // confirmed (`SgList` invariant).
        unsafe { bindings::rtrs_rs_ib_dma_unmap_sg(dev.ib_dev(), self.sg.sg, n, self.dir) };
        self.sg
    }
}

/// A fast-registration MR (`ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, pages)`),
/// deregistered on drop.
///
/// # Invariants
///
/// `mr` is live until drop; its PD is kept by whoever owns the `Mr` (a
/// path's `IoCtx` keeps its `DevRef`).
pub(crate) struct Mr {
    mr: NonNull<bindings::ib_mr>,
}

// SAFETY: An MR may be used and deregistered from any thread; it is changed
// only through `&mut self`.
unsafe impl Send for Mr {}
// SAFETY: As above; `&self` only reads it.
unsafe impl Sync for Mr {}

impl Mr {
    /// `ib_alloc_mr` on the PD of `dev`.
    pub(crate) fn alloc(dev: &DevRef, max_pages: u32) -> Result<Self> {
        // SAFETY: The PD is live (`dev`).
        let mr = from_err_ptr(unsafe {
            bindings::ib_alloc_mr(dev.pd(), bindings::ib_mr_type_IB_MR_TYPE_MEM_REG, max_pages)
        })?;
        Ok(Self {
            mr: NonNull::new(mr).ok_or(ENOMEM)?,
        })
    }

    /// The `struct ib_mr` (iova, length, lkey, rkey).
    pub(crate) fn get(&self) -> &bindings::ib_mr {
        // SAFETY: By the type invariant the MR is live; it changes only
        // through `&mut self`.
        unsafe { self.mr.as_ref() }
    }

    /// For an IB_WR_REG_MR work request.
    pub(crate) fn as_ptr(&self) -> *mut bindings::ib_mr {
        self.mr.as_ptr()
    }

    /// `rtrs_map_sg_fr`: `ib_map_mr_sg(mr, sg, count, NULL, SZ_4K)`, then,
    /// if it mapped them all, a new key (`ib_update_fast_reg_key(mr,
    /// ib_inc_rkey(mr->rkey))`). Returns the number of entries mapped (or
    /// C's negative errno).
    pub(crate) fn map_sg(&mut self, sg: &MappedSg) -> c_int {
        // SAFETY: The MR is live and ours (`&mut self`); `sg` is mapped.
        unsafe { bindings::rtrs_rs_ib_map_mr_sg_fr(self.mr.as_ptr(), sg.sg.sg, sg.count) }
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        // SAFETY: By the type invariant; no posted request uses it (its
        // owner drains the QPs first).
        unsafe { bindings::rtrs_rs_ib_dereg_mr(self.mr.as_ptr()) };
    }
}

// ---------------------------------------------------------------------------
// Information units
// ---------------------------------------------------------------------------

/// What runs when a work request posted with an [`Iu`] completes.
///
/// `Ctx` is the QP's owner, found through `wc->qp->qp_context` as C's
/// `to_clt_con(wc->qp->qp_context)` does. `done` runs in the CQ's context:
/// softirq for IRQ connections, so it must not sleep.
pub(crate) trait IuDone {
    /// The QP context type (`qp_context`).
    type Ctx: Sync;
    /// What each IU keeps for its handler (`()` but for a [`QpRing`]'s
    /// receive buffers, which keep their ring's [`PostGate`] and whether
    /// they are posted).
    type State: Send + Sync;
    /// Handles the work completion of `iu`.
    fn done(ctx: &Self::Ctx, iu: &Iu<Self>, wc: &bindings::ib_wc)
    where
        Self: Sized;
}

/// `struct rtrs_iu`: a kmalloc'ed buffer, DMA-mapped for `dir`, and the
/// `ib_cqe` whose `done` calls `D::done`.
///
/// A path has thousands of receive IUs (C's `rtrs_iu_alloc` counts), each
/// boxed: `Iu<Ring<_>>` is 64 bytes, one kmalloc-64 object (see the
/// assertion below), so the buffer is held by its pointer, not a `KVec`.
///
/// # Invariants
///
/// `buf` is the zeroed `size`-byte buffer of a `KVec<u8>` of capacity
/// `size` (from `KVec::into_raw_parts`), owned by this value and freed in
/// `drop`; it is mapped at `dma_addr` on `dev` for `dir` until `drop`;
/// `cqe.done` is `first_cqe_done::<Self>`; `cqe` is the first field, so a
/// `wr_cqe` pointer to it is a pointer to the `Iu`.
#[repr(C)]
pub(crate) struct Iu<D: IuDone> {
    cqe: Opaque<bindings::ib_cqe>,
    buf: NonNull<u8>,
    size: usize,
    dma_addr: u64,
    dir: bindings::dma_data_direction,
    dev: *mut bindings::ib_device,
    state: D::State,
    _done: PhantomData<fn(&D)>,
}

// SAFETY: The buffer and mapping may be used and released from any thread.
unsafe impl<D: IuDone> Send for Iu<D> {}
// SAFETY: Shared access only reads the buffer (after the device wrote it and
// the completion ran) or passes `cqe` to the verbs core.
unsafe impl<D: IuDone> Sync for Iu<D> {}

// SAFETY: `Iu` is `#[repr(C)]` with `cqe` first, set to this trampoline
// (type invariant); its owners drain the QP before dropping it.
unsafe impl<D: IuDone> CqeFirst for Iu<D> {
    type Ctx = D::Ctx;
    fn done(ctx: &D::Ctx, iu: &Self, wc: &bindings::ib_wc) {
        D::done(ctx, iu, wc);
    }
}

impl<D: IuDone> Iu<D> {
    /// `rtrs_iu_alloc` for one IU: `size` zeroed bytes mapped for `dir`.
    pub(crate) fn alloc(
        dev: &DevRef,
        size: usize,
        dir: bindings::dma_data_direction,
    ) -> Result<Pin<KBox<Self>>>
    where
        D::State: Default,
    {
        Self::alloc_with(dev, size, dir, D::State::default())
    }

    /// [`Iu::alloc`] with the handler's `state`.
    fn alloc_with(
        dev: &DevRef,
        size: usize,
        dir: bindings::dma_data_direction,
        state: D::State,
    ) -> Result<Pin<KBox<Self>>> {
        let mut buf = KVec::from_elem(0u8, size, GFP_KERNEL)?;
        // (An empty vector reserves exactly what `from_elem` asks for.)
        if buf.capacity() != size {
            return Err(EINVAL);
        }
        let mut dma_addr = 0u64;
        // SAFETY: `buf` is `size` bytes of kmalloc memory that stays put until
        // unmapped in `drop`; the device is registered (`dev`); `dma_addr`
        // is writable.
        to_result(unsafe {
            bindings::rtrs_rs_ib_dma_map_single(
                dev.ib_dev(),
                buf.as_mut_ptr().cast(),
                size,
                dir,
                &mut dma_addr,
            )
        })?;
        let (ptr, _, _) = buf.into_raw_parts();
        let iu = Iu {
            cqe: Opaque::new(bindings::ib_cqe {
                done: Some(first_cqe_done::<Self>),
            }),
            // A vector's pointer is never null (dangling when empty).
            buf: NonNull::new(ptr).ok_or(EINVAL)?,
            size,
            dma_addr,
            dir,
            dev: dev.ib_dev(),
            state,
            _done: PhantomData,
        };
        // INVARIANT: mapped just above; `done` set to the trampoline of `D`.
        Ok(KBox::pin(iu, GFP_KERNEL)?)
    }

    /// The buffer, for the CPU (`ib_dma_sync_single_for_cpu` first): after
    /// a receive completed into it, or a send buffer once its send is done.
    pub(crate) fn data_for_cpu(&self) -> &[u8] {
        // SAFETY: By the type invariant the buffer is mapped on `dev`, and
        // `buf` is `size` initialised bytes this value owns, which change
        // only through `&mut self` (or the device, before this sync).
        unsafe {
            bindings::rtrs_rs_ib_dma_sync_single_for_cpu(
                self.dev,
                self.dma_addr,
                self.size,
                self.dir,
            );
            core::slice::from_raw_parts(self.buf.as_ptr(), self.size)
        }
    }

    /// Fills the buffer with `f` and hands it back to the device
    /// (`ib_dma_sync_single_for_device`). The IU must not be posted.
    pub(crate) fn fill_for_device<R>(
        mut self: Pin<&mut Self>,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> R {
        let r = f(self.as_mut().buf_mut());
        self.sync_for_device();
        r
    }

    /// The IU's cqe, for `wr_cqe`.
    pub(crate) fn cqe_ptr(&self) -> *mut bindings::ib_cqe {
        self.cqe.get()
    }

    /// A receive into the whole buffer, to be posted through `gate`.
    fn recv_wr<'g>(&self, gate: &'g PostGate, lkey: u32) -> Result<RecvWr<'g>> {
        let len = u32::try_from(self.size).map_err(|_| EINVAL)?;
        if len == 0 {
            return Err(EINVAL);
        }
        Ok(RecvWr {
            gate,
            cqe: NonNull::new(self.cqe_ptr()).ok_or(EINVAL)?,
            addr: self.dma_addr,
            len,
            lkey,
        })
    }

    /// The buffer's DMA address.
    pub(crate) fn dma_addr(&self) -> u64 {
        self.dma_addr
    }

    /// `ib_dma_sync_single_for_device` of the first `len` bytes.
    pub(crate) fn sync_for_device_len(&self, len: usize) {
        // SAFETY: By the type invariant the buffer is mapped on `dev`.
        unsafe {
            bindings::rtrs_rs_ib_dma_sync_single_for_device(
                self.dev,
                self.dma_addr,
                len.min(self.size),
                self.dir,
            )
        };
    }

    /// `ib_dma_sync_single_for_device` of the whole buffer.
    pub(crate) fn sync_for_device(&self) {
        self.sync_for_device_len(self.size);
    }

    /// The buffer, writable (no DMA sync: see `sync_for_device_len`). The
    /// IU must not be posted.
    pub(crate) fn buf_mut(self: Pin<&mut Self>) -> &mut [u8] {
        // SAFETY: By the type invariant `buf` is `size` initialised bytes
        // this value owns; `&mut self` makes this borrow the only one.
        unsafe { core::slice::from_raw_parts_mut(self.buf.as_ptr(), self.size) }
    }
}

impl<D: IuDone> Drop for Iu<D> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the mapping is live and this is its
        // only unmap, and `buf` is the raw parts of a `KVec` of length and
        // capacity `size`, freed here once, after the unmap; no posted
        // request still uses it (owner's order: drained).
        unsafe {
            bindings::rtrs_rs_ib_dma_unmap_single(self.dev, self.dma_addr, self.size, self.dir);
            drop(KVec::from_raw_parts(
                self.buf.as_ptr(),
                self.size,
                self.size,
            ));
        };
    }
}

// ---------------------------------------------------------------------------
// Work requests
// ---------------------------------------------------------------------------

/// Who may post on a QP, shared by the QP and its ring's receive buffers:
/// the QP, and a gate that is open from the QP's creation until its drain
/// begins. Every post goes through [`PostGate::post`], so nothing is posted
/// once a drain has started, and a drain waits for the posts that passed
/// the gate before it closed: everything posted is flushed by the drain.
///
/// # Invariants
///
/// `qp` is null until `QpRing::create` stores the QP it created; that QP
/// is destroyed only after `close` has returned. The low bits of `state`
/// count the posts in progress (each between its `fetch_add` and its
/// `fetch_sub` in `post`); `GATE_CLOSED` is set by the first `close` and
/// never cleared.
struct PostGate {
    qp: AtomicPtr<bindings::ib_qp>,
    state: AtomicU32,
}

/// `PostGate::state`'s closed bit; the bits below it count posts.
const GATE_CLOSED: u32 = 1 << 31;

impl PostGate {
    /// An open gate without a QP yet.
    fn new() -> Result<Arc<Self>> {
        Ok(Arc::new(
            Self {
                qp: AtomicPtr::new(core::ptr::null_mut()),
                state: AtomicU32::new(0),
            },
            GFP_KERNEL,
        )?)
    }

    /// Runs `post` with the QP while the gate is open; ECONNABORTED once a
    /// drain has begun (as once teardown took the QP), EINVAL before the QP
    /// exists. Any context.
    fn post(&self, post: impl FnOnce(NonNull<bindings::ib_qp>) -> Result) -> Result {
        // Counted before looking: a `close` after this waits for the
        // `fetch_sub` below (both are read-modify-writes of `state`).
        let prev = self.state.fetch_add(1, Ordering::Acquire);
        let res = if prev & GATE_CLOSED != 0 {
            Err(econnaborted())
        } else {
            NonNull::new(self.qp.load(Ordering::Acquire))
                .ok_or(EINVAL)
                .and_then(post)
        };
        self.state.fetch_sub(1, Ordering::Release);
        res
    }

    /// Closes the gate and waits until no post is in progress: every
    /// request posted on the QP is on it when this returns. Process context.
    fn close(&self) {
        self.state.fetch_or(GATE_CLOSED, Ordering::AcqRel);
        // Posts do not sleep: this hardly ever waits (teardown unpublished
        // the QP a grace period ago; only ring reposts can still run).
        while self.state.load(Ordering::Acquire) != GATE_CLOSED {
            bindings::rtrs_rs_msleep(1);
        }
    }
}

/// One receive ready to be posted: `len` bytes at `addr` (no SGE if `len`
/// is 0), completing on `cqe`.
///
/// # Invariants
///
/// `cqe`, whose `done` expects the `qp_context` of `gate`'s QP, and the
/// buffer (mapped for the device, and not read by the CPU until the
/// receive completes) stay valid until the receive completes or the QP is
/// drained.
struct RecvWr<'g> {
    gate: &'g PostGate,
    cqe: NonNull<bindings::ib_cqe>,
    addr: u64,
    len: u32,
    lkey: u32,
}

impl RecvWr<'_> {
    /// `ib_post_recv`, through the gate.
    fn post(self) -> Result {
        let mut sge = bindings::ib_sge {
            addr: self.addr,
            length: self.len,
            lkey: self.lkey,
        };
        let wr = bindings::ib_recv_wr {
            next: core::ptr::null_mut(),
            __bindgen_anon_1: bindings::ib_recv_wr__bindgen_ty_1 {
                wr_cqe: self.cqe.as_ptr(),
            },
            sg_list: if self.len == 0 {
                core::ptr::null_mut()
            } else {
                &mut sge
            },
            num_sge: i32::from(self.len != 0),
        };
        self.gate.post(|qp| {
            // SAFETY: The gate is open, so `qp` is live until this returns
            // (`PostGate`); what the request names outlives it (type
            // invariant); `wr` and `sge` live across the call, and the core
            // copies them.
            to_result(unsafe {
                bindings::rtrs_rs_ib_post_recv(qp.as_ptr(), &wr, core::ptr::null_mut())
            })
        })
    }
}

/// A chain of send work requests ready to be posted.
///
/// # Invariants
///
/// `wr` points to a valid chain until `post` returns (for RDMA opcodes,
/// the `wr` members of `ib_rdma_wr`s, for REG_MR of an `ib_reg_wr`); every
/// buffer and cqe it names (each cqe's `done` expects the `qp_context` of
/// `gate`'s QP) stays valid until the request completes or the QP is
/// drained.
struct SendWr<'g> {
    gate: &'g PostGate,
    wr: *const bindings::ib_send_wr,
}

impl SendWr<'_> {
    /// `ib_post_send`, through the gate.
    fn post(self) -> Result {
        self.gate.post(|qp| {
            // SAFETY: The gate is open, so `qp` is live until this returns
            // (`PostGate`); the chain by the type invariant; the core copies
            // it.
            to_result(unsafe {
                bindings::rtrs_rs_ib_post_send(qp.as_ptr(), self.wr, core::ptr::null_mut())
            })
        })
    }
}

// ---------------------------------------------------------------------------
// Queue pairs
// ---------------------------------------------------------------------------

/// The owner of a QP, its `qp_context`.
pub(crate) trait QpOwner: Sync {
    /// An asynchronous QP event (`ib_event.event`); process or atomic context.
    fn qp_event(&self, event: bindings::ib_event_type);
}

/// The QP event handler trampoline (rtrs.c's qp_event_handler).
///
/// # Safety
///
/// Called by the verbs core with a valid event and the `qp_context` given to
/// `QpRing::<C, _>::create`, which points to a live `C`.
unsafe extern "C" fn qp_event_handler<C: QpOwner>(
    ev: *mut bindings::ib_event,
    ctx: *mut kernel::ffi::c_void,
) {
    // SAFETY: By the function's contract: the core passes a valid event,
    // and `ctx` is a live `C`.
    let (event, owner) = unsafe { ((*ev).event, &*ctx.cast::<C>()) };
    owner.qp_event(event);
}

/// An RC QP created on a cm id with `rdma_create_qp` (by [`QpRing::create`],
/// the only place one is made), drained and destroyed on drop.
///
/// Every post goes through its [`PostGate`]: once a drain has begun nothing
/// more is posted, so a drained QP stays drained.
///
/// # Invariants
///
/// `gate`'s QP is `cm_id->qp`, live until `drop`; `cm_id`, the CQ and the
/// `C` given to `QpRing::create` outlive this value; `qp_context` is that
/// `C`. `drained` is set only after an `ib_drain_qp` that began with the
/// gate closed. The QP is drained before it is destroyed, so every request
/// posted on it has completed (or was flushed) by then.
pub(crate) struct Qp<C: QpOwner> {
    gate: Arc<PostGate>,
    cm_id: NonNull<bindings::rdma_cm_id>,
    drained: AtomicBool,
    _owner: PhantomData<*const C>,
}

// SAFETY: A QP may be used and destroyed from any thread.
unsafe impl<C: QpOwner> Send for Qp<C> {}
// SAFETY: Posting and draining are thread safe in the verbs core.
unsafe impl<C: QpOwner> Sync for Qp<C> {}

/// Sizes of a QP (`create_qp` arguments of rtrs.c).
pub(crate) struct QpSizes {
    /// `cap.max_send_wr`.
    pub(crate) max_send_wr: u32,
    /// `cap.max_recv_wr`.
    pub(crate) max_recv_wr: u32,
    /// `cap.max_send_sge`.
    pub(crate) max_send_sge: u32,
}

impl<C: QpOwner> Qp<C> {
    /// `rdma_notify(cm_id, event)` on the cm id the QP was created on (the
    /// QP event handler's COMM_EST).
    pub(crate) fn notify_cm(&self, event: bindings::ib_event_type) -> Result {
        // SAFETY: By the type invariant the cm id outlives the QP.
        to_result(unsafe { bindings::rdma_notify(self.cm_id.as_ptr(), event) })
    }

    /// Posts a chain of send work requests; ECONNABORTED once the QP is
    /// being drained.
    ///
    /// # Safety
    ///
    /// `wr` and what it points to are valid for the call; the buffers and
    /// cqes the requests name stay alive until they complete or the QP is
    /// drained, and each cqe's `done` expects a `C` as `qp_context`.
    pub(crate) unsafe fn post_send_wr(&self, wr: *const bindings::ib_send_wr) -> Result {
        // INVARIANT: The caller's guarantee.
        SendWr {
            gate: &self.gate,
            wr,
        }
        .post()
    }

    /// `ib_drain_qp`: closes the gate, then moves the QP to error and waits
    /// until every posted request has completed (flushed), unless a drain
    /// did so already. Process context.
    fn drain(&self) {
        self.gate.close();
        // A finished drain began with the gate closed: nothing was posted
        // since, so there is nothing left to flush.
        if self.drained.load(Ordering::Acquire) {
            return;
        }
        let qp = self.gate.qp.load(Ordering::Acquire);
        // SAFETY: By the type invariant the QP is live (not destroyed
        // before drop) and its CQ outlives it.
        unsafe { bindings::ib_drain_qp(qp) };
        // INVARIANT: the gate was closed before this drain began.
        self.drained.store(true, Ordering::Release);
    }

    /// `rtrs_post_recv_empty`: a receive without buffer whose completion
    /// goes to `H`; ECONNABORTED once the QP is being drained.
    pub(crate) fn post_recv_empty<H: CqeHandler<Ctx = C>>(&self) -> Result {
        // INVARIANT: No buffer, and the cqe is a constant whose handler
        // expects a `C`.
        RecvWr {
            gate: &self.gate,
            cqe: NonNull::new(static_cqe::<H>()).ok_or(EINVAL)?,
            addr: 0,
            len: 0,
            lkey: 0,
        }
        .post()
    }

    /// `rtrs_post_rdma_write_imm_empty`: an RDMA_WRITE_WITH_IMM without
    /// data carrying `imm`, whose completion (if `flags` signal it) goes to
    /// `H`; ECONNABORTED once the QP is being drained.
    pub(crate) fn post_imm_empty<H: CqeHandler<Ctx = C>>(&self, imm: u32, flags: c_int) -> Result {
        let wr = bindings::ib_rdma_wr {
            wr: bindings::ib_send_wr {
                __bindgen_anon_1: bindings::ib_send_wr__bindgen_ty_1 {
                    wr_cqe: static_cqe::<H>(),
                },
                opcode: bindings::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM,
                send_flags: flags,
                ex: bindings::ib_send_wr__bindgen_ty_2 {
                    imm_data: imm.to_be(),
                },
                ..Default::default()
            },
            ..Default::default()
        };
        // INVARIANT: `wr` is one RDMA request in an `ib_rdma_wr`, live
        // across the call, without SGE, and its cqe is a constant whose
        // handler expects a `C`.
        SendWr {
            gate: &self.gate,
            wr: core::ptr::addr_of!(wr).cast(),
        }
        .post()
    }

    /// `rtrs_iu_post_recv`: posts a receive into the whole of `iu`;
    /// ECONNABORTED once the QP is being drained.
    ///
    /// # Safety
    ///
    /// `iu` must stay alive until the receive completes or the QP is
    /// drained, and its buffer must not be read (`data_for_cpu`) before
    /// the receive has completed.
    pub(crate) unsafe fn post_recv<D: IuDone<Ctx = C>>(&self, iu: &Iu<D>, lkey: u32) -> Result {
        // INVARIANT: The caller keeps `iu` alive and unread; its
        // `cqe.done` matches `D`, whose context type is this QP's owner
        // type.
        iu.recv_wr(&self.gate, lkey)?.post()
    }

    /// `rtrs_iu_post_send`: a signaled SEND of the first `len` bytes of
    /// `iu`; ECONNABORTED once the QP is being drained.
    ///
    /// # Safety
    ///
    /// `iu` must stay alive, and its buffer unwritten, until the send
    /// completes or the QP is drained.
    pub(crate) unsafe fn post_send<D: IuDone<Ctx = C>>(
        &self,
        iu: &Iu<D>,
        len: usize,
        lkey: u32,
    ) -> Result {
        if len == 0 || len > iu.size {
            return Err(EINVAL);
        }
        let mut sge = bindings::ib_sge {
            addr: iu.dma_addr,
            length: u32::try_from(len).map_err(|_| EINVAL)?,
            lkey,
        };
        let wr = bindings::ib_send_wr {
            __bindgen_anon_1: bindings::ib_send_wr__bindgen_ty_1 {
                wr_cqe: iu.cqe_ptr(),
            },
            sg_list: &mut sge,
            num_sge: 1,
            opcode: bindings::ib_wr_opcode_IB_WR_SEND,
            send_flags: bindings::ib_send_flags_IB_SEND_SIGNALED as kernel::ffi::c_int,
            ..Default::default()
        };
        // INVARIANT: `wr` and `sge` live across the call; the caller keeps
        // `iu` (buffer and cqe, whose `done` expects a `C`) alive.
        SendWr {
            gate: &self.gate,
            wr: &wr,
        }
        .post()
    }
}

impl<C: QpOwner> Drop for Qp<C> {
    fn drop(&mut self) {
        // Always: a drain that already ran leaves nothing to flush, and
        // after this nothing can be posted.
        self.drain();
        // SAFETY: By the type invariant the cm id outlives the QP and this is
        // the QP's only destroy; it is drained.
        unsafe { bindings::rdma_destroy_qp(self.cm_id.as_ptr()) };
    }
}

// ---------------------------------------------------------------------------
// A connection's QP with its CQ and receive buffers
// ---------------------------------------------------------------------------

/// What runs when a receive into a [`QpRing`]'s buffer completes; it may
/// post the buffer again ([`RingIu::post_recv`]).
///
/// `done` runs in the CQ's context: softirq for IRQ connections, so it
/// must not sleep.
pub(crate) trait RingDone: Sized + 'static {
    /// The QP context type (`qp_context`).
    type Ctx: Sync;
    /// Handles the work completion `wc` of a receive into a ring buffer:
    /// `iu` is the buffer if the receive succeeded (`IB_WC_SUCCESS`), and
    /// `None` for a flushed or failed one (`wc.status` says which).
    fn done(ctx: &Self::Ctx, iu: Option<RingIu<'_, Self>>, wc: &bindings::ib_wc);
}

/// The `IuDone` of a ring buffer: its completion hands `D` a [`RingIu`].
struct Ring<D>(PhantomData<D>);

// A path has thousands of ring buffers (`Iu`): each is one kmalloc-64
// object, whatever `D` (the size does not depend on it).
const _: () = {
    struct Probe;
    impl RingDone for Probe {
        type Ctx = ();
        fn done(&(): &(), _: Option<RingIu<'_, Self>>, _: &bindings::ib_wc) {}
    }
    assert!(core::mem::size_of::<Iu<Ring<Probe>>>() <= 64);
};

/// A ring buffer's own state.
///
/// # Invariants
///
/// `held` is set while the buffer is posted or a [`RingIu`] holds it,
/// and clear otherwise: it is set only by a `compare_exchange` from clear
/// (`QpRing::post_ring_recv`), and cleared by the completion of a failed
/// or flushed receive, or by the `RingIu` that held it unless it posted it.
struct RingState {
    /// The gate of the ring's QP, the only QP the buffer is posted on.
    gate: Arc<PostGate>,
    held: AtomicBool,
}

impl<D: RingDone> IuDone for Ring<D> {
    type Ctx = D::Ctx;
    type State = RingState;
    fn done(ctx: &D::Ctx, iu: &Iu<Self>, wc: &bindings::ib_wc) {
        let iu = if wc.status == bindings::ib_wc_status_IB_WC_SUCCESS {
            // INVARIANT: The receive posted into `iu` (once: `held`) has
            // completed: the buffer passes from the device to this value,
            // with `held` still set.
            Some(RingIu { iu })
        } else {
            // Flushed or failed: the device is done with the buffer, and
            // it is not posted again from here.
            iu.state.held.store(false, Ordering::Release);
            None
        };
        D::done(ctx, iu, wc);
    }
}

/// The receive buffers of a [`QpRing`], allocated before it, with the
/// gate its QP will post through.
pub(crate) struct RingIus<D: RingDone> {
    gate: Arc<PostGate>,
    ius: KVec<Pin<KBox<Iu<Ring<D>>>>>,
}

impl<D: RingDone> RingIus<D> {
    /// None (a ring that receives without buffers).
    pub(crate) fn none() -> Result<Self> {
        Ok(Self {
            gate: PostGate::new()?,
            ius: KVec::new(),
        })
    }

    /// `rtrs_iu_alloc(n, size, DMA_FROM_DEVICE)`.
    pub(crate) fn alloc(dev: &DevRef, n: usize, size: usize) -> Result<Self> {
        let gate = PostGate::new()?;
        let mut ius = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            let state = RingState {
                gate: gate.clone(),
                held: AtomicBool::new(false),
            };
            let iu = Iu::alloc_with(
                dev,
                size,
                bindings::dma_data_direction_DMA_FROM_DEVICE,
                state,
            )?;
            ius.push(iu, GFP_KERNEL)?;
        }
        Ok(Self { gate, ius })
    }
}

/// A buffer of a [`QpRing`] that a receive completed into, handed to
/// [`RingDone::done`]: the buffer is this value's (the device does not
/// write it) until it is posted again ([`RingIu::post_recv`], which
/// consumes it) or dropped (then it stays unposted).
///
/// # Invariants
///
/// `iu` is a buffer of a `QpRing` with `held` set, and this value is the
/// only holder of it (see `RingState`): it is not posted.
pub(crate) struct RingIu<'a, D: RingDone> {
    iu: &'a Iu<Ring<D>>,
}

impl<D: RingDone> RingIu<'_, D> {
    /// `rtrs_iu_post_recv`: a receive into the whole buffer, on its ring's
    /// QP; ECONNABORTED once that QP is being drained.
    pub(crate) fn post_recv(self, lkey: u32) -> Result {
        let iu = self.iu;
        // `held` goes with the posted receive; it is cleared below if
        // nothing was posted.
        core::mem::forget(self);
        // INVARIANT: The buffer is not posted (`RingIu`'s invariant: it is
        // posted once), it lives until its ring's QP is drained (field
        // order of `QpRing`), nothing reads it until the receive completes
        // (`self` is consumed: no `data_for_cpu` borrow is left), and its
        // cqe expects the `qp_context` of that QP, whose gate this is.
        let res = iu.recv_wr(&iu.state.gate, lkey).and_then(RecvWr::post);
        if res.is_err() {
            iu.state.held.store(false, Ordering::Release);
        }
        res
    }

    /// The buffer, for the CPU (see [`Iu::data_for_cpu`]), borrowed from
    /// this value: it cannot outlive a repost.
    pub(crate) fn data_for_cpu(&self) -> &[u8] {
        self.iu.data_for_cpu()
    }

    /// The buffer back to the device (see [`Iu::sync_for_device`]).
    pub(crate) fn sync_for_device(&self) {
        self.iu.sync_for_device();
    }
}

impl<D: RingDone> Drop for RingIu<'_, D> {
    /// Not posted again: the buffer stays out of the receive queue.
    fn drop(&mut self) {
        self.iu.state.held.store(false, Ordering::Release);
    }
}

/// A connection's QP with the CQ it completes on and the receive buffers
/// only it posts into (`create_con_cq_qp`). Fields drop in order: the QP
/// (drained first), its buffers, then the CQ, so nothing posted outlives
/// what it uses.
///
/// # Invariants
///
/// The IUs of `ring` carry `qp`'s gate, and are posted only through it.
pub(crate) struct QpRing<C: QpOwner, D: RingDone<Ctx = C>> {
    qp: Qp<C>,
    ring: KVec<Pin<KBox<Iu<Ring<D>>>>>,
    cq: Cq,
    lkey: u32,
}

impl<C: QpOwner, D: RingDone<Ctx = C>> QpRing<C, D> {
    /// `rdma_create_qp` as rtrs.c's create_qp: RC, `cq` for both queues,
    /// `IB_SIGNAL_REQ_WR`, one receive SGE; `ring` are its receive buffers,
    /// posted with `lkey`.
    ///
    /// # Safety
    ///
    /// `cm_id` must be a live cm id with a bound device; it and `owner`
    /// must outlive the returned value.
    pub(crate) unsafe fn create(
        cm_id: *mut bindings::rdma_cm_id,
        dev: &DevRef,
        cq: Cq,
        ring: RingIus<D>,
        owner: *const C,
        sizes: &QpSizes,
        lkey: u32,
    ) -> Result<Self> {
        let mut attr = bindings::ib_qp_init_attr {
            event_handler: Some(qp_event_handler::<C>),
            qp_context: owner.cast_mut().cast(),
            send_cq: cq.as_ptr(),
            recv_cq: cq.as_ptr(),
            cap: bindings::ib_qp_cap {
                max_send_wr: sizes.max_send_wr,
                max_recv_wr: sizes.max_recv_wr,
                max_send_sge: sizes.max_send_sge,
                max_recv_sge: 1,
                ..Default::default()
            },
            sq_sig_type: bindings::ib_sig_type_IB_SIGNAL_REQ_WR,
            qp_type: bindings::ib_qp_type_IB_QPT_RC,
            ..Default::default()
        };
        let cm = NonNull::new(cm_id).ok_or(EINVAL)?;
        // SAFETY: The caller guarantees `cm_id`; the PD is live (`dev`);
        // `attr` is valid for the call.
        let qp =
            from_err_ptr(unsafe { bindings::rtrs_rs_rdma_create_qp(cm_id, dev.pd(), &mut attr) })?;
        // No fallible step from here on: the QP is owned by the `Qp` below
        // (the helper returns `id->qp`, never NULL, or an ERR_PTR).
        ring.gate.qp.store(qp, Ordering::Release);
        // INVARIANT: created just above with `owner` as its context; the
        // caller guarantees the cm id and the owner, and `cq` is dropped
        // after the QP (field order). The ring is new: nothing posted yet,
        // and its buffers carry this gate.
        Ok(Self {
            qp: Qp {
                gate: ring.gate,
                cm_id: cm,
                drained: AtomicBool::new(false),
                _owner: PhantomData,
            },
            ring: ring.ius,
            cq,
            lkey,
        })
    }

    /// The QP.
    pub(crate) fn qp(&self) -> &Qp<C> {
        &self.qp
    }

    /// The CQ.
    pub(crate) fn cq(&self) -> &Cq {
        &self.cq
    }

    /// `ib_drain_qp`: every request posted is flushed when it returns, and
    /// nothing can be posted on the QP any more. Process context.
    pub(crate) fn drain(&self) {
        self.qp.drain();
    }

    /// A receive into buffer `i` (`rtrs_iu_post_recv`); EBUSY if it is
    /// posted already (or a completion holds it), ECONNABORTED once the QP
    /// is being drained.
    pub(crate) fn post_ring_recv(&self, i: usize) -> Result {
        let iu = self.ring.get(i).ok_or(EINVAL)?;
        iu.state
            .held
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .map_err(|_| EBUSY)?;
        // INVARIANT: one of our buffers, taken from clear `held` just above.
        RingIu { iu }.post_recv(self.lkey)
    }
}
