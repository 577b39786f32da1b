// SPDX-License-Identifier: GPL-2.0

//! Block IO: a request becomes an RNBD IO message on an IO permit, with its
//! data in the request's own scatterlist; the RTRS confirmation completes
//! it. Nothing is allocated per IO but the chained scatterlist of a request
//! with more than two segments.

use core::sync::atomic::{AtomicI32, Ordering};

use kernel::{
    error::{
        code::{EAGAIN, ENOMEM},
        Result,
    },
    sync::ArcBorrow,
};

use crate::dev::Dev;
use crate::ffi::{HwQueue, InFlight, RateLimit, Rq, SgTable, Status};
use crate::rnbd_core::{
    proto::{rnbd_rw, MsgIo},
    requeue::RERUN_MS,
};
use crate::rtrs_api::{Completion, ConType, Data, Dir, Permit, RequestError, SgList};

/// A request's driver part: its scatterlist, what it maps, its result.
pub(crate) struct IoDone {
    sg: SgTable,
    /// Entries and bytes of the data, 0 for a request without.
    cnt: u32,
    len: usize,
    errno: AtomicI32,
}

impl IoDone {
    pub(crate) fn new() -> Self {
        IoDone {
            sg: SgTable::new(),
            cnt: 0,
            len: 0,
            errno: AtomicI32::new(0),
        }
    }
}

impl Completion for IoDone {
    type Owner = InFlight<Dev>;

    fn data(&mut self) -> Data<'_> {
        if self.cnt == 0 {
            return Data::None;
        }
        match self.sg.first() {
            // SAFETY: The entries are in the request's PDU, over the block
            // request's pages; its `InFlight` owner keeps both until the
            // request ends, after this completion.
            Some(sg) => Data::Sg(unsafe { SgList::from_raw(sg, self.cnt, self.len) }),
            None => Data::None,
        }
    }

    fn complete(mut req: InFlight<Dev>, permit: Permit<'_>, result: Result) {
        drop(permit);
        req.queue().sess.requeue.put_permit();
        let errno = match result {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        };
        req.pdu().c.errno.store(errno, Ordering::Relaxed);
        req.complete();
    }
}

/// `queue_rq` on hardware queue `hq`.
pub(crate) fn queue_rq(dev: &Dev, hq: ArcBorrow<'_, HwQueue>, mut rq: Rq<'_, Dev>) -> Status {
    if !dev.state().takes_io() {
        return Status::ioerr();
    }
    let op = rq.op();
    let (sync, flush) = rq.sync_flush();
    let Some(rw) = rnbd_rw(op, sync, flush) else {
        return Status::notsupp();
    };
    let requeue = &dev.sess.requeue;
    let Some(permit) = dev.sess.rtrs.try_permit(ConType::Io) else {
        // A permit given back runs the queue again.
        hq.wait_for_permit();
        return Status::resource();
    };
    requeue.got_permit();
    let (sector, bytes, prio) = rq.pos_bytes_prio();
    let (cnt, len) = if op.has_segments() {
        match rq.map_data(|p| &mut p.c.sg) {
            Ok(n) => (n, bytes as usize),
            Err(e) => {
                static RL: RateLimit = RateLimit::new();
                dev.log_rl(
                    &RL,
                    true,
                    format_args!("sg_alloc_table_chained ret={}\n", e.to_errno()),
                );
                hq.run_after(RERUN_MS);
                drop(permit);
                requeue.put_permit();
                return Status::resource();
            }
        }
    } else {
        (0, 0)
    };
    let d = &mut rq.pdu().c;
    d.cnt = cnt;
    d.len = len;
    d.errno.store(0, Ordering::Relaxed);
    let msg = MsgIo {
        device_id: dev.device_id.load(Ordering::Relaxed),
        sector,
        rw,
        bi_size: bytes,
        prio,
    }
    .encode();
    let dir = if rq.is_write() { Dir::Write } else { Dir::Read };
    let inflight = rq.start();
    match dev.sess.rtrs.request(dir, permit, &[&msg], inflight) {
        Ok(()) => Status::ok(),
        Err(RequestError {
            error,
            permit,
            req: mut inflight,
        }) => {
            static RL: RateLimit = RateLimit::new();
            dev.log_rl(
                &RL,
                true,
                format_args!("RTRS failed to transfer IO, err: {}\n", error.to_errno()),
            );
            let busy = error == EAGAIN || error == ENOMEM;
            if busy {
                hq.run_after(RERUN_MS);
            }
            inflight.pdu().c.sg.free();
            drop(permit);
            requeue.put_permit();
            if busy {
                Status::resource()
            } else {
                Status::ioerr()
            }
        }
    }
}

/// `complete`: after the confirmation, on the submitting CPU.
pub(crate) fn complete(dev: &Dev, mut rq: Rq<'_, Dev>) {
    let d = &mut rq.pdu().c;
    d.sg.free();
    let errno = d.errno.load(Ordering::Relaxed);
    if errno != 0 {
        static RL: RateLimit = RateLimit::new();
        // (C's word: the RTRS direction, so a flush is a "read".)
        let dir = if rq.is_write() { "write" } else { "read" };
        dev.log_rl(
            &RL,
            false,
            format_args!("{} I/O failed with err: {}\n", dir, errno),
        );
    }
    rq.end(if errno == 0 {
        Status::ok()
    } else {
        Status::from_errno(errno)
    });
}
