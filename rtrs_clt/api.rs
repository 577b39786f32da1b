// SPDX-License-Identifier: GPL-2.0

//! The exported API (prototypes in rtrs.h; exported by rtrs_export.c):
//! checks the caller's pointers and hands over to [`Sess`].

use kernel::ffi::{c_char, c_int};
use kernel::prelude::*;
use kernel::str::BStr;
use kernel::sync::Arc;

use crate::bindings;
use crate::ffi::abi::{
    Confirm, Kvec, Kvecs, LinkEvCb, PathAddr, RtrsAddr, RtrsAttrs, RtrsCltOps, RtrsCltReqOps,
    RtrsPermit,
};
use crate::ffi::error::err_ptr;
use crate::ffi::verbs::SgList;
use crate::sess::Sess;

/// `rtrs_clt_open`.
///
/// # Safety
///
/// Arguments as rtrs.h documents them: `ops` and `pathname` valid, `paths`
/// an array of `path_cnt` entries.
#[no_mangle]
pub(crate) unsafe extern "C" fn rtrs_clt_open(
    ops: *mut RtrsCltOps,
    pathname: *const c_char,
    paths: *const RtrsAddr,
    path_cnt: usize,
    port: u16,
    pdu_sz: usize,
    reconnect_delay_sec: u8,
    max_reconnect_attempts: i16,
    nr_poll_queues: u32,
) -> *mut Sess {
    if ops.is_null() || pathname.is_null() || (paths.is_null() && path_cnt > 0) {
        return err_ptr(EINVAL);
    }
    // SAFETY: By the function's contract: a NUL-terminated name, `ops`
    // (checked non-null) valid for the call and for the session's life,
    // and `path_cnt` entries whose addresses are null or valid for the
    // call, which `PathAddr` (the layout of `RtrsAddr`) states.
    let (name, addrs, link_ev) = unsafe {
        (
            CStr::from_char_ptr(pathname),
            if path_cnt == 0 {
                &[][..]
            } else {
                core::slice::from_raw_parts(paths.cast::<PathAddr<'_>>(), path_cnt)
            },
            LinkEvCb::new(&*ops),
        )
    };
    match Sess::open(
        link_ev,
        name,
        addrs,
        port,
        pdu_sz,
        reconnect_delay_sec,
        max_reconnect_attempts,
        nr_poll_queues,
    ) {
        Ok(s) => {
            // rnbd's handle: this reference, given back to `rtrs_clt_close`.
            let raw = Arc::into_raw(s);
            // SAFETY: From `into_raw`; only `rtrs_clt_close` takes it back.
            unsafe { Sess::show_files(raw) };
            raw.cast_mut()
        }
        Err(e) => {
            pr_err!(
                "{}: rtrs_clt_open failed: {}\n",
                BStr::from_bytes(name.as_bytes()),
                e.to_errno()
            );
            err_ptr(e)
        }
    }
}

/// `rtrs_clt_close`: waits for every permit, then frees the session.
///
/// # Safety
///
/// `clt` came from `rtrs_clt_open` and is not used afterwards.
#[no_mangle]
pub(crate) unsafe extern "C" fn rtrs_clt_close(clt: *mut Sess) {
    if clt.is_null() {
        return;
    }
    // SAFETY: By the function's contract.
    let s = unsafe { Arc::from_raw(clt) };
    Sess::close(s);
}

/// `rtrs_clt_get_permit`.
///
/// # Safety
///
/// `clt` is an open session. May sleep if `can_wait` is RTRS_PERMIT_WAIT.
#[no_mangle]
pub(crate) unsafe extern "C" fn rtrs_clt_get_permit(
    clt: *mut Sess,
    con_type: c_int,
    can_wait: c_int,
) -> *mut RtrsPermit {
    // SAFETY: By the function's contract.
    let Some(s) = (unsafe { clt.as_ref() }) else {
        return core::ptr::null_mut();
    };
    s.get_permit(u32::try_from(con_type).unwrap_or(0), can_wait != 0)
}

/// `rtrs_clt_put_permit`: frees the permit and wakes a waiter.
///
/// # Safety
///
/// `clt` is an open session; `permit` came from it.
#[no_mangle]
pub(crate) unsafe extern "C" fn rtrs_clt_put_permit(clt: *mut Sess, permit: *mut RtrsPermit) {
    // SAFETY: By the function's contract.
    let Some(s) = (unsafe { clt.as_ref() }) else {
        return;
    };
    s.put_permit(permit);
}

/// `rtrs_clt_request`: 0 if the request was posted (its `conf_fn` will be
/// called once), else the errno (and `conf_fn` is never called).
///
/// # Safety
///
/// As rtrs.h: valid session, ops, permit, `nr` kvecs, `sg_cnt` entries.
#[no_mangle]
pub(crate) unsafe extern "C" fn rtrs_clt_request(
    dir: c_int,
    ops: *mut RtrsCltReqOps,
    clt: *mut Sess,
    permit: *mut RtrsPermit,
    vec: *const Kvec,
    nr: usize,
    data_len: usize,
    sg: *mut bindings::scatterlist,
    sg_cnt: u32,
) -> c_int {
    // SAFETY: By the function's contract: the session, ops and permit are
    // null or valid for the call, `vec` has `nr` readable kvecs, and `sg`
    // has `sg_cnt` entries valid until `conf_fn` is called.
    let (s, conf, permit, usr, sg) = unsafe {
        (
            clt.as_ref(),
            ops.as_ref().map(|o| Confirm::new(o)),
            permit.as_ref(),
            Kvecs::new(if nr == 0 || vec.is_null() {
                &[]
            } else {
                core::slice::from_raw_parts(vec, nr)
            }),
            SgList::new(sg, sg_cnt),
        )
    };
    let (Some(s), Some(conf), Some(permit)) = (s, conf, permit) else {
        return EINVAL.to_errno();
    };
    // READ is 0 in the kernel.
    match s.request(dir == 0, conf, permit, usr, data_len, sg) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `rtrs_clt_rdma_cq_direct`: polls connection `index + 1` (rnbd's poll
/// hctx `queue_num`) of the connected paths until one yields completions.
/// -1 when no path is connected, so that the block layer stops polling.
///
/// # Safety
///
/// `clt` is an open session.
#[no_mangle]
pub(crate) unsafe extern "C" fn rtrs_clt_rdma_cq_direct(clt: *mut Sess, index: u32) -> c_int {
    // SAFETY: By the function's contract.
    let Some(s) = (unsafe { clt.as_ref() }) else {
        return -1;
    };
    s.cq_direct(index)
}

/// `rtrs_clt_query`.
///
/// # Safety
///
/// `clt` is an open session, `attr` writable.
#[no_mangle]
pub(crate) unsafe extern "C" fn rtrs_clt_query(clt: *mut Sess, attr: *mut RtrsAttrs) -> c_int {
    // SAFETY: By the function's contract: each pointer is null or valid,
    // and nothing else uses `attr` during the call.
    let (Some(s), Some(attr)) = (unsafe { (clt.as_ref(), attr.as_mut()) }) else {
        return EINVAL.to_errno();
    };
    match s.query(attr) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}
