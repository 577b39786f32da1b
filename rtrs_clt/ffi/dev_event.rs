// SPDX-License-Identifier: GPL-2.0

//! Asynchronous events of an RDMA device (`ib_register_event_handler`):
//! port up and down, GID table changes, fatal errors. A connected path
//! watches its device through a [`DevEvents`] so that it leaves CONNECTED
//! as soon as its port goes down, instead of when the heartbeat notices.
//! The handler itself is C (bindings/rtrs_dev_event.c), which also looks
//! the path's source GID up on a GID change.

use core::pin::Pin;

use kernel::ffi::c_void;
use kernel::prelude::*;
use kernel::types::Opaque;

use crate::bindings;
use crate::ffi::addr::SockAddr;
use crate::ffi::verbs::DevRef;
use crate::rtrs_core::path_state::DevEventKind;

/// One event of the device.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DevEvent {
    pub(crate) kind: DevEventKind,
    /// The port (0 for device-wide events).
    pub(crate) port: u32,
    /// For a GID change of the watched port: whether the source address's
    /// GID is still in the port's table (true otherwise).
    pub(crate) src_gid_present: bool,
}

/// What a [`DevEvents`] calls.
pub(crate) trait DevEventHandler: Send + Sync + 'static {
    /// One event of the watched device. Process context (the IB core's
    /// event work), with the device's handler list read-locked: it must
    /// not register or unregister a handler of that device, nor wait for
    /// anyone who does.
    fn event(&self, ev: DevEvent);
}

/// A watch on a device's events for `owner`, unregistered on drop (which
/// waits for a running call).
///
/// # Invariants
///
/// `w` is registered on `dev`'s device from `register` until drop, with
/// this object as its context and [`watch_fn::<T>`] as its callback.
#[pin_data(PinnedDrop)]
pub(crate) struct DevEvents<T: DevEventHandler> {
    #[pin]
    w: Opaque<bindings::rtrs_rs_dev_watch>,
    /// Keeps the device registered while the watch is.
    dev: DevRef,
    owner: T,
}

// SAFETY: The IB core serialises the handler list that `w` is on; `dev`
// and `owner` are `Send`.
unsafe impl<T: DevEventHandler> Send for DevEvents<T> {}
// SAFETY: `&DevEvents` hands out only `&T`, which is `Sync`.
unsafe impl<T: DevEventHandler> Sync for DevEvents<T> {}

impl<T: DevEventHandler> DevEvents<T> {
    /// Watches `port` of `dev`'s device for `owner`; `src` is the source
    /// address whose GID a GID change is checked against. Process context.
    pub(crate) fn register(
        dev: &DevRef,
        port: u32,
        src: &SockAddr,
        owner: T,
    ) -> Result<Pin<KBox<Self>>> {
        let dev = dev.try_clone()?;
        let this = KBox::pin_init(
            pin_init!(Self {
                w: Opaque::uninit(),
                dev,
                owner,
            }),
            GFP_KERNEL,
        )?;
        let ctx: *const Self = &*this;
        // SAFETY: `w` is pinned in its box until `drop` unregisters it,
        // `this.dev` keeps the device registered meanwhile, and `ctx` is
        // the box, which `watch_fn::<T>` expects.
        unsafe {
            bindings::rtrs_rs_dev_watch_register(
                this.w.get(),
                this.dev.ib_dev(),
                port,
                src.as_raw(),
                ctx.cast_mut().cast(),
                Some(watch_fn::<T>),
            )
        };
        // INVARIANT: registered just above.
        Ok(this)
    }
}

#[pinned_drop]
impl<T: DevEventHandler> PinnedDrop for DevEvents<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: By the type invariant `w` is registered; this waits for a
        // running callback (the core's handler lock).
        unsafe { bindings::rtrs_rs_dev_watch_unregister(self.w.get()) };
    }
}

/// The callback of a [`DevEvents<T>`].
///
/// # Safety
///
/// Called by `rtrs_rs_dev_watch_handler` only, with the context of a
/// registered, live `DevEvents<T>`.
unsafe extern "C" fn watch_fn<T: DevEventHandler>(
    ctx: *mut c_void,
    event: u32,
    port: u32,
    src_gid_present: bool,
) {
    // SAFETY: By the type invariant `ctx` is a live `DevEvents<T>`:
    // unregistering waits for this call.
    let this = unsafe { &*ctx.cast::<DevEvents<T>>() };
    let kind = match event {
        bindings::ib_event_type_IB_EVENT_PORT_ERR => DevEventKind::PortErr,
        bindings::ib_event_type_IB_EVENT_PORT_ACTIVE => DevEventKind::PortActive,
        bindings::ib_event_type_IB_EVENT_GID_CHANGE => DevEventKind::GidChange,
        bindings::ib_event_type_IB_EVENT_DEVICE_FATAL => DevEventKind::DeviceFatal,
        _ => DevEventKind::Other,
    };
    this.owner.event(DevEvent {
        kind,
        port,
        src_gid_present,
    });
}
