// SPDX-License-Identifier: GPL-2.0

//! The C types of rtrs.h that the exported API takes and gives, with C's
//! layout (`bindings/rtrs_export.c` checks the prototypes against rtrs.h).

use kernel::ffi::{c_int, c_void};

use crate::bindings;

/// rnbd's confirmation callback (`rtrs_clt_req_ops.conf_fn`).
pub(crate) type ConfFn = Option<unsafe extern "C" fn(*mut c_void, c_int)>;

/// `struct rtrs_clt_ops`.
#[repr(C)]
pub(crate) struct RtrsCltOps {
    pub(crate) priv_: *mut c_void,
    pub(crate) link_ev: Option<unsafe extern "C" fn(*mut c_void, c_int)>,
}

/// `struct rtrs_addr`.
#[repr(C)]
pub(crate) struct RtrsAddr {
    pub(crate) src: *mut bindings::__kernel_sockaddr_storage,
    pub(crate) dst: *mut bindings::__kernel_sockaddr_storage,
}

/// `struct rtrs_clt_req_ops`.
#[repr(C)]
pub(crate) struct RtrsCltReqOps {
    pub(crate) priv_: *mut c_void,
    pub(crate) conf_fn: ConfFn,
}

/// `struct rtrs_attrs`.
#[repr(C)]
pub(crate) struct RtrsAttrs {
    pub(crate) queue_depth: u32,
    pub(crate) max_io_size: u32,
    pub(crate) max_segments: u32,
}

/// `struct kvec`.
#[repr(C)]
pub(crate) struct Kvec {
    pub(crate) iov_base: *mut c_void,
    pub(crate) iov_len: usize,
}

/// `struct rtrs_permit`, same layout as C; `pdu_sz` bytes follow it.
#[repr(C)]
pub(crate) struct RtrsPermit {
    pub(crate) con_type: u32,
    pub(crate) cpu_id: u32,
    pub(crate) mem_id: u32,
    pub(crate) mem_off: u32,
}

/// `RTRS_ADMIN_CON`, `RTRS_IO_CON`.
pub(crate) const RTRS_IO_CON: u32 = 1;
