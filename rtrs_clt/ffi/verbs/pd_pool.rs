// SPDX-License-Identifier: GPL-2.0

//! The PD pool: one PD per ib_device, shared and refcounted (rtrs_ib_dev_*).

use core::ptr::NonNull;

use kernel::error::from_err_ptr;
use kernel::ffi::c_int;
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};

use crate::bindings;

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
    /// `ib_uses_virt_dma`: DMA addresses are kernel addresses (rxe, siw),
    /// so syncs and unmaps have nothing to do.
    virt_dma: bool,
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
                    virt_dma: bindings::rtrs_rs_ib_uses_virt_dma(ib_dev),
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

    /// `ib_uses_virt_dma(dev)`: DMA syncs and unmaps are no-ops.
    pub(crate) fn virt_dma(&self) -> bool {
        self.info.virt_dma
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
