// SPDX-License-Identifier: GPL-2.0

//! The IO path's log lines: cold, rate-limited (completions log from
//! softirq), each with the errno its caller returns.

use kernel::ffi::c_int;
use kernel::prelude::*;

use crate::ffi::error::econnaborted;
use crate::ffi::log::{pr_err_rl, pr_warn_rl};
use crate::rtrs_core::proto::WireError;

/// A response unasked for, or a second one: C ignores it silently.
#[cold]
pub(super) fn not_in_flight(sess: &CStr, msg_id: u32) {
    pr_err_rl!(
        "{}: IO response for msg_id {} that is not in flight\n",
        sess,
        msg_id
    );
}

/// `rtrs_err_rl` of a failed `rtrs_inv_rkey` (C then leaves the request
/// hanging). Quiet once teardown took the QP: C's flush completes it so.
#[cold]
pub(super) fn inv_failed(sess: &CStr, rkey: u32, e: Error) {
    if e != econnaborted() {
        pr_err_rl!("{}: Send INV WR key={:#x}: {}\n", sess, rkey, e.to_errno());
    }
}

/// `rtrs_err_rl` of a request completed with an error.
#[cold]
pub(super) fn io_failed(sess: &CStr, read: bool, errno: i32) {
    pr_err_rl!(
        "{}: IO {} request failed: error={}\n",
        sess,
        if read { "read" } else { "write" },
        errno
    );
}

/// `pr_err_rl` of a request slot already in use (a permit used twice).
#[cold]
pub(super) fn slot_busy(sess: &CStr, mem_id: u32) -> Error {
    pr_err_rl!("{}: request slot {} busy\n", sess, mem_id);
    EBUSY
}

/// `rtrs_wrn` of a request too big for its chunk.
#[cold]
pub(super) fn io_refused(sess: &CStr, e: WireError) -> Error {
    pr_warn_rl!("{}: {}\n", sess, e);
    e.into()
}

/// `rtrs_wrn` of a failed `ib_dma_map_sg`.
#[cold]
pub(super) fn dma_map_failed(sess: &CStr, read: bool) -> Error {
    pr_warn_rl!("{}: {} request failed, dma map failed\n", sess, rw(read));
    EINVAL
}

/// `rtrs_err_rl` of a failed `rtrs_map_sg_fr`: its errno (`nr` if
/// negative, else EINVAL: not all entries mapped).
#[cold]
pub(super) fn fr_map_failed(sess: &CStr, read: bool, nr: c_int) -> Error {
    let e = if nr < 0 { nr } else { EINVAL.to_errno() };
    pr_err_rl!(
        "{}: {} request failed, failed to map fast reg. data, err: {}\n",
        sess,
        rw(read),
        e
    );
    Error::from_errno(e)
}

pub(super) fn rw(read: bool) -> &'static str {
    if read {
        "Read"
    } else {
        "Write"
    }
}
