// SPDX-License-Identifier: GPL-2.0

//! Work items: what a confirmation (softirq) leaves to process context.

use kernel::{
    alloc::{flags::GFP_ATOMIC, KBox},
    error::Result,
    impl_has_work, new_work, pr_err,
    prelude::*,
    workqueue::{Work, WorkItem},
};

use crate::dev::OpenLater;
use crate::rtrs_api::Request;

/// An OPEN_RSP that came on a reconnect, processed on the system queue
/// (it takes the device's lock), as C does with its message work.
#[pin_data]
struct OpenRspWork {
    req: KBox<Request<OpenLater>>,
    result: Result,
    #[pin]
    work: Work<OpenRspWork>,
}

impl_has_work! {
    impl HasWork<Self> for OpenRspWork { self.work }
}

impl WorkItem for OpenRspWork {
    type Pointer = Pin<KBox<OpenRspWork>>;

    fn run(this: Pin<KBox<OpenRspWork>>) {
        this.req.c.process(this.result);
    }
}

/// Processes the answer later; dropped with a log line if there is no
/// memory for the work item (the device stays as it was, C's answer to a
/// failed remap).
pub(crate) fn open_rsp_later(req: KBox<Request<OpenLater>>, result: Result) {
    match KBox::pin_init(
        pin_init!(OpenRspWork {
            req,
            result,
            work <- new_work!("rnbd_client_rs::open_rsp"),
        }),
        GFP_ATOMIC,
    ) {
        Ok(w) => {
            // (A reference for the call: `w` moves to the queue.)
            let clt = w.req.c.dev().sess.clt.clone();
            clt.wq.queue().enqueue(w);
        }
        Err(_) => pr_err!("no memory to process an OPEN_RSP\n"),
    }
}
