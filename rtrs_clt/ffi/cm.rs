// SPDX-License-Identifier: GPL-2.0

//! An owning wrapper over an rdma_cm id, with its event handler trampolined
//! into Rust.
//!
//! The id's `context` is its owner `T: CmHandler`, which the `CmId` holds;
//! the C handler recovers it and calls `T::cm_event`. rdma_cm serialises the
//! events of one id (its handler mutex) and runs them in process context, so
//! handlers may sleep and take mutexes. `rdma_destroy_id` waits for a
//! running handler, so destroying the id before the owner goes (`CmId`'s
//! drop, then its fields) keeps `context` valid.

use core::marker::PhantomData;
use core::pin::Pin;
use core::ptr::NonNull;

use kernel::error::{from_err_ptr, to_result};
use kernel::prelude::*;

use crate::bindings;
use crate::ffi::addr::SockAddr;

fn ms_to_c_ulong(ms: u32) -> kernel::ffi::c_ulong {
    kernel::ffi::c_ulong::try_from(ms).unwrap_or(kernel::ffi::c_ulong::MAX)
}

/// The owner of a cm id: gets its events.
pub(crate) trait CmHandler: Sync {
    /// One CM event, in process context, under rdma_cm's handler mutex.
    fn cm_event(&self, id: &CmIdRef<'_>, ev: &CmEvent<'_>);
}

/// The id as seen from inside its event handler.
///
/// # Invariants
///
/// `id` is live and its handler mutex is held for `'a`.
pub(crate) struct CmIdRef<'a> {
    id: NonNull<bindings::rdma_cm_id>,
    _l: PhantomData<&'a bindings::rdma_cm_id>,
}

impl CmIdRef<'_> {
    /// The raw id.
    pub(crate) fn as_ptr(&self) -> *mut bindings::rdma_cm_id {
        self.id.as_ptr()
    }

    /// What address and route resolution bound the id to, as of now.
    pub(crate) fn binding(&self) -> CmBinding {
        let id = self.id.as_ptr();
        // SAFETY: By the type invariant the id is live. These fields are
        // plain data that rdma_cm writes while it resolves, before it
        // delivers the events that read them; they are copied out (other
        // parts of the id change meanwhile).
        unsafe {
            CmBinding {
                device: (*id).device,
                port_num: (*id).port_num,
                src_addr: SockAddr::from_raw((*id).route.addr.src_addr),
            }
        }
    }

    /// The name of the bound device (`cm_id->device->name`), once bound.
    pub(crate) fn device_name(&self) -> Option<&CStr> {
        let d = self.binding().device;
        // SAFETY: A bound id's device stays registered while the id lives
        // (rdma_cm waits for the id's destruction on removal), and its
        // NUL-terminated name lives as long as the device.
        (!d.is_null()).then(|| unsafe { CStr::from_char_ptr(bindings::rtrs_rs_ib_dev_name(d)) })
    }

    /// `rdma_resolve_route(id, timeout_ms)`.
    pub(crate) fn resolve_route(&self, timeout_ms: u32) -> Result {
        // SAFETY: By the type invariant the id is live.
        to_result(unsafe {
            bindings::rdma_resolve_route(self.id.as_ptr(), ms_to_c_ulong(timeout_ms))
        })
    }

    /// `rdma_connect_locked` with `private_data` and the retry counts given.
    /// Only valid from the handler (the handler mutex is held: invariant).
    pub(crate) fn connect_locked(
        &self,
        private_data: &[u8],
        retry_count: u8,
        rnr_retry_count: u8,
    ) -> Result {
        let len = u8::try_from(private_data.len()).map_err(|_| EINVAL)?;
        let mut param = bindings::rdma_conn_param {
            private_data: private_data.as_ptr().cast(),
            private_data_len: len,
            retry_count,
            rnr_retry_count,
            ..Default::default()
        };
        // SAFETY: The id is live and its handler mutex held (invariant);
        // `param` and the private data live across the call, which copies them.
        to_result(unsafe { bindings::rdma_connect_locked(self.id.as_ptr(), &mut param) })
    }
}

/// An id's binding (see [`CmIdRef::binding`]).
pub(crate) struct CmBinding {
    /// The bound device (`cm_id->device`); set from ADDR_RESOLVED on.
    pub(crate) device: *mut bindings::ib_device,
    /// The bound port (`cm_id->port_num`).
    pub(crate) port_num: u32,
    /// The source address the route resolved to
    /// (`cm_id->route.addr.src_addr`), final once ESTABLISHED is delivered.
    pub(crate) src_addr: SockAddr,
}

/// One CM event.
///
/// # Invariants
///
/// `ev` is the event being delivered to `id`, with `'a` the delivery.
pub(crate) struct CmEvent<'a> {
    ev: &'a bindings::rdma_cm_event,
    id: NonNull<bindings::rdma_cm_id>,
}

impl CmEvent<'_> {
    fn ev(&self) -> &bindings::rdma_cm_event {
        self.ev
    }

    /// `ev->event`.
    pub(crate) fn event(&self) -> bindings::rdma_cm_event_type {
        self.ev().event
    }

    /// `ev->status`.
    pub(crate) fn status(&self) -> i32 {
        self.ev().status
    }

    /// `rdma_event_msg(ev->event)`, for logs.
    pub(crate) fn event_msg(&self) -> &CStr {
        // SAFETY: rdma_event_msg returns a static NUL-terminated string.
        unsafe { CStr::from_char_ptr(bindings::rdma_event_msg(self.ev().event)) }
    }

    /// The connection private data (`ev->param.conn`), for ESTABLISHED.
    pub(crate) fn conn_private_data(&self) -> &[u8] {
        // SAFETY: For connection events `param.conn` is the active member.
        let conn = unsafe { &self.ev().param.conn };
        if conn.private_data.is_null() {
            return &[];
        }
        // SAFETY: rdma_cm guarantees `private_data_len` readable bytes for the
        // duration of the event.
        unsafe {
            core::slice::from_raw_parts(
                conn.private_data.cast::<u8>(),
                usize::from(conn.private_data_len),
            )
        }
    }

    /// `rdma_consumer_reject_data`, for REJECTED: the peer's reject private
    /// data, if it sent any.
    pub(crate) fn consumer_reject_data(&self) -> Option<&[u8]> {
        let ev = core::ptr::from_ref(self.ev).cast_mut();
        let mut len: u8 = 0;
        // SAFETY: The id and event are live (invariant) and only read; `len`
        // is writable. What it returns, if not null, is `len` readable bytes
        // valid during the event.
        unsafe {
            let p = bindings::rdma_consumer_reject_data(self.id.as_ptr(), ev, &mut len);
            (!p.is_null()).then(|| core::slice::from_raw_parts(p.cast::<u8>(), usize::from(len)))
        }
    }

    /// `rdma_reject_msg(id, ev->status)`, for logs.
    pub(crate) fn reject_msg(&self) -> &CStr {
        // SAFETY: The id is live; the result is a static NUL-terminated string.
        unsafe {
            CStr::from_char_ptr(bindings::rdma_reject_msg(
                self.id.as_ptr(),
                self.ev().status,
            ))
        }
    }
}

/// The C event handler: recovers `T` from `cm_id->context`.
///
/// # Safety
///
/// Called by rdma_cm for an id created by `CmId::<T>::create`, whose
/// `context` is a `T` that outlives the id, with an event valid for the
/// call.
unsafe extern "C" fn cm_handler<T: CmHandler>(
    id: *mut bindings::rdma_cm_id,
    ev: *mut bindings::rdma_cm_event,
) -> kernel::ffi::c_int {
    let Some(idp) = NonNull::new(id) else {
        return 0;
    };
    if ev.is_null() {
        return 0;
    }
    // SAFETY: By the function's contract: `context` is a live `T`, and the
    // event is valid (and not changed) for the call.
    let (owner, ev) = unsafe { (&*(*id).context.cast::<T>(), &*ev) };
    // INVARIANT: rdma_cm holds the handler mutex during the callback.
    let idref = CmIdRef {
        id: idp,
        _l: PhantomData,
    };
    // INVARIANT: the event rdma_cm delivers to `id` in this callback.
    let cmev = CmEvent { ev, id: idp };
    owner.cm_event(&idref, &cmev);
    // Never ask rdma_cm to destroy the id: the owner does that.
    0
}

/// An rdma_cm id and its owner, the id's `context`; the id is destroyed on
/// drop, then the owner.
///
/// # Invariants
///
/// `id` came from a successful `rdma_create_id` with `cm_handler::<T>` and
/// `owner` as its `context`; it is destroyed only in `drop`, before `owner`
/// (a field, dropped after `drop` ran).
pub(crate) struct CmId<T: CmHandler> {
    id: NonNull<bindings::rdma_cm_id>,
    owner: Pin<KBox<T>>,
}

// SAFETY: rdma_cm ids may be used and destroyed from any thread; the owner
// moves with the id (`T: Send`).
unsafe impl<T: CmHandler + Send> Send for CmId<T> {}
// SAFETY: The methods on `&CmId` are thread safe in rdma_cm, and hand out
// only `&T` (`CmHandler: Sync`).
unsafe impl<T: CmHandler> Sync for CmId<T> {}

impl<T: CmHandler> CmId<T> {
    /// `rdma_create_id(&init_net, handler, owner, ps, qp_type)`: an id whose
    /// events go to `owner`.
    pub(crate) fn create(
        owner: Pin<KBox<T>>,
        ps: bindings::rdma_ucm_port_space,
        qp_type: bindings::ib_qp_type,
    ) -> Result<Self> {
        let context: *const T = &*owner;
        // SAFETY: The handler matches `T`; `context` is pinned in `owner`,
        // which the id holds until it is destroyed (type invariant).
        let id = from_err_ptr(unsafe {
            bindings::rtrs_rs_rdma_create_id(
                Some(cm_handler::<T>),
                context.cast_mut().cast(),
                ps,
                qp_type,
            )
        })?;
        let id = NonNull::new(id).ok_or(ENOMEM)?;
        // INVARIANT: just created, with `owner` as its context.
        Ok(Self { id, owner })
    }

    /// The owner, the id's `context`.
    pub(crate) fn owner(&self) -> &T {
        &self.owner
    }

    /// `rdma_set_reuseaddr(id, reuse)`.
    pub(crate) fn set_reuseaddr(&self, reuse: bool) -> Result {
        // SAFETY: By the type invariant the id is live.
        to_result(unsafe { bindings::rdma_set_reuseaddr(self.id.as_ptr(), i32::from(reuse)) })
    }

    /// `rdma_resolve_addr(id, src, dst, timeout_ms)`; an all-zero `src`
    /// (family 0) means any source, as in C.
    pub(crate) fn resolve_addr(&self, src: &SockAddr, dst: &SockAddr, timeout_ms: u32) -> Result {
        let src: *const bindings::__kernel_sockaddr_storage = src.as_raw();
        let dst: *const bindings::__kernel_sockaddr_storage = dst.as_raw();
        // SAFETY: The id is live; `src` and `dst` are valid sockaddr_storage
        // that rdma_cm copies.
        to_result(unsafe {
            bindings::rdma_resolve_addr(
                self.id.as_ptr(),
                src.cast_mut().cast(),
                dst.cast(),
                ms_to_c_ulong(timeout_ms),
            )
        })
    }

    /// `rdma_disconnect(id)`; errors (not connected) are ignored, as in C.
    pub(crate) fn disconnect(&self) {
        // SAFETY: By the type invariant the id is live.
        let _ = unsafe { bindings::rdma_disconnect(self.id.as_ptr()) };
    }
}

impl<T: CmHandler> Drop for CmId<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the id is live and destroyed only here;
        // rdma_destroy_id waits for a running handler (the owner goes after
        // this), and its QP was destroyed first by the owner.
        unsafe { bindings::rdma_destroy_id(self.id.as_ptr()) };
    }
}
