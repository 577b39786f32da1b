// SPDX-License-Identifier: GPL-2.0

//! Work items: what a confirmation (softirq) leaves to process context.

use core::sync::atomic::{AtomicI32, Ordering};

use kernel::{
    alloc::{flags::GFP_KERNEL, KBox},
    error::{Error, Result},
    impl_has_work, new_work,
    prelude::*,
    sync::Arc,
    workqueue::{Work, WorkItem},
};

use crate::dev::OpenLater;
use crate::ffi::BoxSlot;
use crate::ffi::Wq;
use crate::rtrs_api::Request;
use crate::sess::Clt;

/// Where an OPEN_RSP that came on a reconnect is processed: on the
/// module's queue (it takes the device's lock), as C does with its message
/// work. Made with the OPEN, so that nothing is allocated, and no device
/// dropped, in the confirmation.
#[pin_data]
pub(crate) struct OpenRspWork {
    /// The queue it goes to.
    wq: Arc<Wq>,
    /// The request, with the answer, from its confirmation.
    req: BoxSlot<Request<OpenLater>>,
    /// Its errno.
    result: AtomicI32,
    #[pin]
    work: Work<OpenRspWork>,
}

impl_has_work! {
    impl HasWork<Self> for OpenRspWork { self.work }
}

impl WorkItem for OpenRspWork {
    type Pointer = Pin<KBox<OpenRspWork>>;

    fn run(this: Pin<KBox<OpenRspWork>>) {
        let errno = this.result.load(Ordering::Relaxed);
        let r = if errno == 0 {
            Ok(())
        } else {
            Err(Error::from_errno(errno))
        };
        if let Some(req) = this.req.take() {
            req.c.process(r);
        }
    }
}

impl OpenRspWork {
    /// A work item for one OPEN.
    pub(crate) fn new(clt: &Arc<Clt>) -> Result<Pin<KBox<Self>>> {
        KBox::pin_init(
            pin_init!(OpenRspWork {
                wq: clt.wq.clone(),
                req: BoxSlot::new(),
                result: AtomicI32::new(0),
                work <- new_work!("rnbd_client_rs::open_rsp"),
            }),
            GFP_KERNEL,
        )
    }
}

/// The confirmation of a reconnect's OPEN: its answer goes to its work
/// item.
pub(crate) fn open_rsp_later(mut req: KBox<Request<OpenLater>>, result: Result) {
    let Some(w) = req.c.take_work() else {
        // (Every OPEN is sent with its work item.) Kept, not dropped here.
        core::mem::forget(req);
        return;
    };
    w.result.store(
        match result {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        },
        Ordering::Relaxed,
    );
    w.req.put(req);
    // (A reference for the call, the item moving in. Never the last: the
    // client holds the queue until after every session closed, and this
    // runs before its session's close returns.)
    let wq = w.wq.clone();
    wq.queue().enqueue(w);
}
