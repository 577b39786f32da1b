// SPDX-License-Identifier: GPL-2.0

//! Show and store of the files under /sys/class/rtrs-client/<sessname>/,
//! called by `bindings/rtrs_sysfs.c` with the file's id. Formats and
//! parsing are `rtrs_core::sysfs_fmt`'s; errnos and log lines are C's.

use core::sync::atomic::Ordering;

use kernel::ffi::{c_char, c_int, c_void};
use kernel::prelude::*;
use kernel::str::BStr;
use kernel::sync::{Arc, ArcBorrow};

use crate::bindings;
use crate::ffi::addr::dev_ifindex;
use crate::ffi::kobj::PathStore;
use crate::rtrs_core::sysfs_fmt::{self, ReconnAttRefused};
use crate::sess::Sess;
use crate::sess::SessPath;

fn shown(n: usize) -> isize {
    isize::try_from(n).unwrap_or(0)
}

/// A store's return: `count`, or the errno (the one conversion to C's).
fn stored(r: Result, count: usize) -> isize {
    match r {
        Ok(()) => isize::try_from(count).unwrap_or(isize::MAX),
        Err(e) => e.to_errno() as isize,
    }
}

/// Up to the first NUL and without one trailing newline, for log lines.
fn trimmed(b: &[u8]) -> &BStr {
    let b = sysfs_fmt::c_str(b);
    BStr::from_bytes(b.strip_suffix(b"\n").unwrap_or(b))
}

/// A Rust enum over one of the id enums of `bindings/rtrs_sysfs_files.h`:
/// duplicate ids do not build (`repr(u32)` discriminants), nor does a list
/// whose length differs from the C one; the dispatch below matches the enum
/// without a catch-all, so every file of the C list is handled.
macro_rules! sysfs_files {
    ($(#[$m:meta])* enum $name:ident (count $count:path) { $($variant:ident = $id:path,)* }) => {
        $(#[$m])*
        #[derive(Clone, Copy)]
        #[repr(u32)]
        enum $name {
            $($variant = $id,)*
        }

        impl $name {
            /// The file of `id`, as the C table passes it.
            fn from_id(id: c_int) -> Option<Self> {
                let id = u32::try_from(id).ok()?;
                $(if id == $id {
                    return Some(Self::$variant);
                })*
                None
            }
        }

        const _: () = assert!([$($id),*].len() == $count as usize);
    };
}

sysfs_files! {
    /// A file of a path directory or of its stats/.
    enum PathFile (count bindings::rtrs_rs_path_attr_id_RTRS_RS_PA_COUNT) {
        HcaName = bindings::rtrs_rs_path_attr_id_RTRS_RS_PA_HCA_NAME,
        HcaPort = bindings::rtrs_rs_path_attr_id_RTRS_RS_PA_HCA_PORT,
        SrcAddr = bindings::rtrs_rs_path_attr_id_RTRS_RS_PA_SRC_ADDR,
        DstAddr = bindings::rtrs_rs_path_attr_id_RTRS_RS_PA_DST_ADDR,
        State = bindings::rtrs_rs_path_attr_id_RTRS_RS_PA_STATE,
        Reconnect = bindings::rtrs_rs_path_attr_id_RTRS_RS_PA_RECONNECT,
        Disconnect = bindings::rtrs_rs_path_attr_id_RTRS_RS_PA_DISCONNECT,
        RemovePath = bindings::rtrs_rs_path_attr_id_RTRS_RS_PA_REMOVE_PATH,
        CurLatency = bindings::rtrs_rs_path_attr_id_RTRS_RS_PA_CUR_LATENCY,
        CpuMigrationFrom = bindings::rtrs_rs_path_attr_id_RTRS_RS_PA_CPU_MIGRATION_FROM,
        CpuMigrationTo = bindings::rtrs_rs_path_attr_id_RTRS_RS_PA_CPU_MIGRATION_TO,
        Reconnects = bindings::rtrs_rs_path_attr_id_RTRS_RS_PA_RECONNECTS,
        Rdma = bindings::rtrs_rs_path_attr_id_RTRS_RS_PA_RDMA,
        ResetAll = bindings::rtrs_rs_path_attr_id_RTRS_RS_PA_RESET_ALL,
        LatencyHist = bindings::rtrs_rs_path_attr_id_RTRS_RS_PA_LATENCY_HIST,
    }
}

sysfs_files! {
    /// A file of the session directory.
    enum SessFile (count bindings::rtrs_rs_sess_attr_id_RTRS_RS_SA_COUNT) {
        MaxReconnectAttempts = bindings::rtrs_rs_sess_attr_id_RTRS_RS_SA_MAX_RECONNECT_ATTEMPTS,
        MpathPolicy = bindings::rtrs_rs_sess_attr_id_RTRS_RS_SA_MPATH_POLICY,
        AddPath = bindings::rtrs_rs_sess_attr_id_RTRS_RS_SA_ADD_PATH,
    }
}

/// `show` of a path file (`enum rtrs_rs_path_attr_id`).
///
/// # Safety
///
/// `path` is the `SessPath` the path directory was created for, in an
/// `Arc` that lives while the directory is in sysfs; `buf` is a sysfs page.
#[no_mangle]
pub(crate) unsafe extern "C" fn rtrs_rs_path_attr_show(
    path: *const c_void,
    id: c_int,
    buf: *mut c_char,
) -> isize {
    // SAFETY: By the function's contract: a live path and a sysfs page
    // that nothing else uses during this call.
    let (sp, page) = unsafe {
        (
            ArcBorrow::from_raw(path.cast::<SessPath>()),
            core::slice::from_raw_parts_mut(buf.cast::<u8>(), kernel::page::PAGE_SIZE),
        )
    };
    let path = sp.shared();
    let Some(file) = PathFile::from_id(id) else {
        return EINVAL.to_errno() as isize;
    };
    let n = match file {
        PathFile::HcaName => {
            let (name, _) = path.hca();
            sysfs_fmt::rtrs_clt_hca_name_show(page, name.as_bytes())
        }
        PathFile::HcaPort => {
            let (_, port) = path.hca();
            sysfs_fmt::rtrs_clt_hca_port_show(page, u8::try_from(port).unwrap_or(u8::MAX))
        }
        PathFile::SrcAddr => {
            let s = path.src_addr();
            sysfs_fmt::rtrs_clt_src_addr_show(page, s.parsed().as_ref())
        }
        PathFile::DstAddr => {
            let (_, d) = path.addrs();
            sysfs_fmt::rtrs_clt_dst_addr_show(page, d.parsed().as_ref())
        }
        PathFile::State => sysfs_fmt::rtrs_clt_state_show(page, path.state()),
        PathFile::CurLatency => {
            let ns = path.hb_cur_latency_ns.load(Ordering::Relaxed);
            sysfs_fmt::rtrs_clt_cur_latency_show(page, ns)
        }
        PathFile::CpuMigrationFrom => {
            sysfs_fmt::rtrs_clt_stats_migration_from_cnt_to_str(page, path.stats.migr_from())
        }
        PathFile::CpuMigrationTo => {
            sysfs_fmt::rtrs_clt_stats_migration_to_cnt_to_str(page, path.stats.migr_to())
        }
        PathFile::Reconnects => {
            sysfs_fmt::rtrs_clt_stats_reconnects_to_str(page, &path.stats.reconnects())
        }
        PathFile::Rdma => sysfs_fmt::rtrs_clt_stats_rdma_to_str(page, &path.stats.rdma()),
        PathFile::ResetAll => sysfs_fmt::rtrs_clt_reset_all_help(page),
        PathFile::LatencyHist => sysfs_fmt::latency_hist_to_str(page, &path.stats.latency_hist()),
        PathFile::Reconnect => sysfs_fmt::rtrs_clt_reconnect_show(page),
        PathFile::Disconnect => sysfs_fmt::rtrs_clt_disconnect_show(page),
        PathFile::RemovePath => sysfs_fmt::rtrs_clt_remove_path_show(page),
    };
    shown(n)
}

/// `store` of a path file (`attr` is its `struct attribute`):
/// `reconnect`, `disconnect` and `remove_path` take "1"; the
/// stats files reset on "1" and refuse anything else (including "0") with
/// -EINVAL, as STAT_STORE_FUNC.
///
/// # Safety
///
/// As `rtrs_rs_path_attr_show`; `buf` has `count` bytes; this is the store
/// on `attr`, a file of the directory made for `path`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rtrs_rs_path_attr_store(
    path: *const c_void,
    id: c_int,
    buf: *const c_char,
    count: usize,
    attr: *const c_void,
) -> isize {
    // SAFETY: By the function's contract: a live path and `count`
    // readable bytes.
    let (sp, b) = unsafe {
        (
            ArcBorrow::from_raw(path.cast::<SessPath>()),
            core::slice::from_raw_parts(buf.cast::<u8>(), count),
        )
    };
    let path_ptr = path;
    let path = sp.shared();
    let Some(file) = PathFile::from_id(id) else {
        return EINVAL.to_errno() as isize;
    };
    let reset: fn(&crate::stats::PathStats) = match file {
        PathFile::Reconnect => {
            let r = match sysfs_fmt::rtrs_clt_reconnect_store(b) {
                Ok(()) => sp.reconnect_from_sysfs(),
                Err(e) => {
                    pr_err!(
                        "{}: reconnect: unknown value: '{}'\n",
                        path.sessname(),
                        trimmed(b)
                    );
                    Err(e.into())
                }
            };
            return stored(r, count);
        }
        PathFile::Disconnect => {
            let r = sysfs_fmt::rtrs_clt_disconnect_store(b);
            match r {
                Ok(()) => sp.disconnect_from_sysfs(),
                Err(_) => pr_err!(
                    "{}: disconnect: unknown value: '{}'\n",
                    path.sessname(),
                    trimmed(b)
                ),
            }
            return stored(r.map_err(Error::from), count);
        }
        PathFile::RemovePath => {
            let r = sysfs_fmt::rtrs_clt_remove_path_store(b);
            if r.is_err() {
                pr_err!(
                    "{}: remove_path: unknown value: '{}'\n",
                    path.sessname(),
                    trimmed(b)
                );
                return stored(r.map_err(Error::from), count);
            }
            // `sp` (and `path`) may be freed by this call: not used after.
            let sess = sp.sess().clone();
            // SAFETY: This is the store on `attr`, a file of the directory
            // made for `path` (the function's contract).
            let store = unsafe { PathStore::new(path_ptr, attr) };
            return stored(sess.remove_path(store), count);
        }
        PathFile::CpuMigrationFrom | PathFile::CpuMigrationTo => {
            crate::stats::PathStats::reset_cpu_migr
        }
        PathFile::Reconnects => crate::stats::PathStats::reset_reconnects,
        PathFile::Rdma => crate::stats::PathStats::reset_rdma,
        PathFile::ResetAll => crate::stats::PathStats::reset_all,
        PathFile::LatencyHist => crate::stats::PathStats::reset_latency_hist,
        // Read-only files have no store.
        PathFile::HcaName
        | PathFile::HcaPort
        | PathFile::SrcAddr
        | PathFile::DstAddr
        | PathFile::State
        | PathFile::CurLatency => return EINVAL.to_errno() as isize,
    };
    let r = sysfs_fmt::rtrs_clt_stats_store(b);
    if r.is_ok() {
        reset(&path.stats);
    }
    stored(r.map_err(Error::from), count)
}

/// `show` of a session file (`enum rtrs_rs_sess_attr_id`).
///
/// # Safety
///
/// `sess` is the session handle (from `Arc::into_raw`) published with
/// `rtrs_rs_sess_dev_set_sess`, live while its device is registered; `buf`
/// is a sysfs page.
#[no_mangle]
pub(crate) unsafe extern "C" fn rtrs_rs_sess_attr_show(
    sess: *mut c_void,
    id: c_int,
    buf: *mut c_char,
) -> isize {
    // SAFETY: By the function's contract: a live session and a sysfs page
    // that nothing else uses during this call.
    let (sess, page) = unsafe {
        (
            &*sess.cast::<Sess>(),
            core::slice::from_raw_parts_mut(buf.cast::<u8>(), kernel::page::PAGE_SIZE),
        )
    };
    let Some(file) = SessFile::from_id(id) else {
        return EINVAL.to_errno() as isize;
    };
    let n = match file {
        SessFile::MaxReconnectAttempts => {
            sysfs_fmt::max_reconnect_attempts_show(page, sess.max_reconnect_attempts())
        }
        SessFile::MpathPolicy => sysfs_fmt::mpath_policy_show(page, sess.mp_policy_raw()),
        SessFile::AddPath => sysfs_fmt::add_path_show(page),
    };
    shown(n)
}

/// `store` of a session file.
///
/// # Safety
///
/// As `rtrs_rs_sess_attr_show`; `buf` has `count` bytes.
#[no_mangle]
pub(crate) unsafe extern "C" fn rtrs_rs_sess_attr_store(
    sess: *mut c_void,
    id: c_int,
    buf: *const c_char,
    count: usize,
) -> isize {
    // SAFETY: By the function's contract: a live session and `count`
    // readable bytes.
    let (sess, b) = unsafe {
        (
            ArcBorrow::from_raw(sess.cast_const().cast::<Sess>()),
            core::slice::from_raw_parts(buf.cast::<u8>(), count),
        )
    };
    let Some(file) = SessFile::from_id(id) else {
        return EINVAL.to_errno() as isize;
    };
    let name = sess.sessname();
    let r = match file {
        SessFile::MaxReconnectAttempts => match sysfs_fmt::max_reconnect_attempts_store(b) {
            Ok(v) => {
                sess.set_max_reconnect_attempts(v);
                Ok(())
            }
            Err(e @ ReconnAttRefused::NotInt(_)) => {
                pr_err!(
                    "{}: max_reconnect_attempts: failed to convert string '{}' to int\n",
                    name,
                    trimmed(b)
                );
                Err(e.errno().into())
            }
            Err(e @ ReconnAttRefused::OutOfRange) => {
                pr_err!(
                    "{}: max_reconnect_attempts: invalid range (provided: '{}', accepted: min: {}, max: {})\n",
                    name,
                    trimmed(b),
                    sysfs_fmt::MIN_MAX_RECONN_ATT,
                    sysfs_fmt::MAX_MAX_RECONN_ATT
                );
                Err(e.errno().into())
            }
        },
        SessFile::MpathPolicy => match sysfs_fmt::mpath_policy_store(b) {
            Ok(v) => {
                sess.set_mp_policy_raw(v);
                Ok(())
            }
            Err(e) => Err(e.into()),
        },
        SessFile::AddPath => match sysfs_fmt::add_path_store(b, sess.port(), dev_ifindex) {
            Ok(addr) => Arc::from(sess).add_path(&addr),
            Err(e) => Err(e.into()),
        },
    };
    stored(r, count)
}
