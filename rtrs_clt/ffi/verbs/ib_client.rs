// SPDX-License-Identifier: GPL-2.0

//! The `ib_client` of this module: the IB core calls it for every RDMA
//! device that comes and goes (it logs them).

use core::pin::Pin;

use kernel::error::to_result;
use kernel::prelude::*;
use kernel::types::Opaque;

use crate::bindings;

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
