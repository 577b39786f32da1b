// SPDX-License-Identifier: GPL-2.0

//! The show and store handlers of `/sys/class/rnbd-client/ctl/map_device`
//! and `/sys/block/rnbdN/rnbd/`, called from c/rnbd_rs.c, and the block
//! device's open, release and geometry.

use core::ffi::{c_char, c_int, c_void};

use kernel::{
    error::{code::*, Error, Result},
    prelude::*,
    sync::{Arc, ArcBorrow},
};

use crate::dev::{disk_open, Dev};
use crate::ffi::{self, SysfsAttr};
use crate::rnbd_core::dev::{remap_opt, resize_opt, unmap_opt, usage};
use crate::rnbd_core::map_opts::{parse_map_options, Lossy};
use crate::rtrs_api::PathAddr;
use crate::sess::Clt;

/// `PAGE_SIZE`: a sysfs buffer.
const PAGE: usize = 4096;

/// Copies `s` into the sysfs buffer: its length.
fn emit(buf: *mut c_char, parts: &[&[u8]]) -> isize {
    let mut n = 0;
    for p in parts {
        let k = p.len().min(PAGE - 1 - n);
        // SAFETY: `buf` is the PAGE_SIZE buffer of a show; `n + k` stays
        // below it.
        unsafe { core::ptr::copy_nonoverlapping(p.as_ptr(), buf.cast::<u8>().add(n), k) };
        n += k;
    }
    n as isize
}

/// The bytes of a store, up to its first NUL.
///
/// # Safety
///
/// `buf` is readable for `count` bytes.
unsafe fn store_bytes<'a>(buf: *const c_char, count: usize) -> &'a [u8] {
    // SAFETY: By the function's contract.
    let b = unsafe { core::slice::from_raw_parts(buf.cast::<u8>(), count) };
    b.split(|&c| c == 0).next().unwrap_or(&[])
}

fn result_count(r: Result, count: usize) -> isize {
    match r {
        Ok(()) => count as isize,
        Err(e) => ffi::errno_ssize(e),
    }
}

#[no_mangle]
extern "C" fn rnbd_rs_map_device_show(buf: *mut c_char) -> isize {
    emit(buf, &[usage::MAP_DEVICE.as_bytes()])
}

/// # Safety
///
/// `clt` is the module's `Clt` (the ctl device's data), `buf` readable for
/// `count` bytes.
#[no_mangle]
unsafe extern "C" fn rnbd_rs_map_device_store(
    clt: *mut c_void,
    buf: *const c_char,
    count: usize,
) -> isize {
    // SAFETY: The ctl device's data is an `Arc<Clt>` the module holds for
    // as long as the device exists.
    let clt: Arc<Clt> = unsafe { ArcBorrow::<Clt>::from_raw(clt.cast()) }.into();
    // SAFETY: By the function's contract.
    let b = unsafe { store_bytes(buf, count) };
    let (_, cpus) = ffi::cpus();
    let o = match parse_map_options(b, cpus, |p, port| {
        let mut s = KVec::with_capacity(p.len() + 1, GFP_KERNEL).map_err(|_| -12)?;
        s.extend_from_slice(p, GFP_KERNEL).map_err(|_| -12)?;
        s.push(0, GFP_KERNEL).map_err(|_| -12)?;
        let c = kernel::str::CStr::from_bytes_with_nul(&s).map_err(|_| -22)?;
        PathAddr::parse(c, port).map_err(|e| e.to_errno())
    }) {
        Ok(o) => o,
        Err(e) => {
            pr_err!("{}\n", e);
            return e.errno() as isize;
        }
    };
    result_count(Dev::map(&clt, o), count)
}

/// The device of a kobject's show or store: a reference for the call.
///
/// # Safety
///
/// `dev` is the `rnbd/` kobject's data, valid while its files run.
unsafe fn dev_of(dev: *mut c_void) -> Arc<Dev> {
    // SAFETY: By the function's contract.
    unsafe { ArcBorrow::<Dev>::from_raw(dev.cast()) }.into()
}

/// # Safety
///
/// From c/rnbd_rs.c: `dev` valid, `buf` a PAGE_SIZE buffer.
#[no_mangle]
unsafe extern "C" fn rnbd_rs_dev_attr_show(dev: *mut c_void, id: c_int, buf: *mut c_char) -> isize {
    // SAFETY: By the function's contract.
    let d = unsafe { dev_of(dev) };
    let mut num = [0u8; 12];
    match id {
        0 => emit(buf, &[usage::UNMAP_DEVICE.as_bytes()]),
        1 => emit(buf, &[usage::RESIZE.as_bytes()]),
        2 => emit(buf, &[usage::REMAP_DEVICE.as_bytes()]),
        3 => emit(buf, &[d.pathname.as_bytes(), b"\n"]),
        4 => emit(buf, &[d.state().sysfs_str().as_bytes(), b"\n"]),
        5 => emit(buf, &[d.sess.name.as_bytes(), b"\n"]),
        6 => emit(buf, &[d.access_mode.as_str().as_bytes(), b"\n"]),
        7 => emit(buf, &[fmt_u32(d.nr_poll_queues, &mut num), b"\n"]),
        _ => ffi::errno_ssize(EINVAL),
    }
}

fn fmt_u32(mut v: u32, buf: &mut [u8; 12]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    &buf[i..]
}

/// # Safety
///
/// From c/rnbd_rs.c: `dev` valid, `buf` readable for `count`, `attr` the
/// running store's attribute.
#[no_mangle]
unsafe extern "C" fn rnbd_rs_dev_attr_store(
    dev: *mut c_void,
    id: c_int,
    buf: *const c_char,
    count: usize,
    attr: *const kernel::bindings::attribute,
) -> isize {
    // SAFETY: By the function's contract.
    let (d, b) = unsafe { (dev_of(dev), store_bytes(buf, count)) };
    let r = match id {
        0 => match unmap_opt(b) {
            Some(force) => {
                d.log_info(format_args!(
                    "Unmapping device, option: {}.\n",
                    if force { "force" } else { "normal" }
                ));
                // SAFETY: `attr` is this store's own attribute.
                let own = unsafe { SysfsAttr::new(attr) };
                let r = Dev::unmap(&d, force, own);
                if let Err(e) = r {
                    if e.to_errno() != -(kernel::bindings::EALREADY as i32) {
                        d.log_err(format_args!("unmap_device: {}\n", e.to_errno()));
                    }
                }
                r
            }
            None => {
                d.log_err(format_args!(
                    "unmap_device: Invalid value: {}\n",
                    Lossy(trim(b))
                ));
                Err(EINVAL)
            }
        },
        1 => resize_opt(b)
            .map_err(Error::from_errno)
            .and_then(|n| d.resize(n)),
        2 => {
            if remap_opt(b) {
                d.remap()
            } else {
                d.log_err(format_args!(
                    "remap_device: Invalid value: {}\n",
                    Lossy(trim(b))
                ));
                Err(EINVAL)
            }
        }
        _ => Err(EINVAL),
    };
    result_count(r, count)
}

/// The value as C prints it back (white space stripped).
fn trim(b: &[u8]) -> &[u8] {
    let sp = |c: &u8| c.is_ascii_whitespace();
    let s = b.iter().position(|c| !sp(c)).unwrap_or(b.len());
    let e = b.iter().rposition(|c| !sp(c)).map_or(s, |e| e + 1);
    &b[s..e]
}

/// # Safety
///
/// From c/rnbd_rs.c: `dev` is the disk's private data.
#[no_mangle]
unsafe extern "C" fn rnbd_rs_disk_open(dev: *mut c_void, _write: bool) -> c_int {
    // SAFETY: The disk's private data is its device, alive while the disk
    // is (the disk's queue holds a reference).
    let d = unsafe { ArcBorrow::<Dev>::from_raw(dev.cast()) };
    match disk_open(d) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// # Safety
///
/// From c/rnbd_rs.c: an opener's release.
#[no_mangle]
unsafe extern "C" fn rnbd_rs_disk_release(dev: *mut c_void) {
    // SAFETY: `rnbd_rs_disk_open` took this reference.
    let d = unsafe { Arc::<Dev>::from_raw(dev.cast()) };
    d.release();
}

/// # Safety
///
/// From c/rnbd_rs.c: `dev` is the disk's private data.
#[no_mangle]
unsafe extern "C" fn rnbd_rs_disk_geo_size(dev: *mut c_void) -> u64 {
    // SAFETY: As in `rnbd_rs_disk_open`.
    unsafe { ArcBorrow::<Dev>::from_raw(dev.cast()) }.geo_size()
}
