// SPDX-License-Identifier: GPL-2.0

//! TEST-ONLY SCAFFOLDING: the `debug_connect` module parameter.
//!
//! Kept for the VM test of a bare path (no session, no IO). With `debug_connect=<sessname>@ip:<addr>` at insmod, module init connects
//! one path to `<addr>`, port 1234, and logs what the server sent (or the
//! errno); module exit tears it down. The parameter itself is declared in C
//! (`bindings/rtrs_debug.c`), since 6.12's `module!` has no parameters.
//!
//! Remove this file, `bindings/rtrs_debug.c` and its Kbuild line once that
//! test maps through `rtrs_clt_open` instead.

use kernel::fmt;
use kernel::prelude::*;
use kernel::str::{BStr, CString};
use kernel::sync::Arc;

use crate::bindings;
use crate::clt::{Path, RTRS_PORT};
use crate::misc::inet_pton;
use crate::rtrs_core::names::check_sessname;
use crate::verbs::DevPool;

/// Splits "sessname@ip:addr"; only the "ip:" form of C's
/// rtrs_addr_to_sockaddr is accepted here.
fn parse(param: &[u8]) -> Option<(&[u8], &[u8])> {
    let at = param.iter().position(|&b| b == b'@')?;
    let sess = param.get(..at)?;
    let rest = param.get(at.checked_add(1)?..)?;
    let addr = rest.strip_prefix(b"ip:")?;
    if addr.is_empty() {
        return None;
    }
    Some((sess, addr))
}

/// Connects the path named by `debug_connect`, if set. Failures are logged
/// and give `None`: the module still loads.
pub(crate) fn debug_connect(pool: &Arc<DevPool>) -> Option<Path> {
    // SAFETY: The parameter buffer is a static NUL-terminated string, only
    // written by the module loader before init (permissions 0444).
    let param = unsafe { CStr::from_char_ptr(bindings::rtrs_rs_debug_connect()) };
    let bytes = param.as_bytes();
    if bytes.is_empty() {
        return None;
    }
    let Some((sess, addr)) = parse(bytes) else {
        pr_err!(
            "debug_connect: expected \"sessname@ip:addr\", got \"{}\"\n",
            param
        );
        return None;
    };
    if check_sessname(sess).is_err() {
        pr_err!(
            "debug_connect: invalid session name \"{}\": {:?}\n",
            BStr::from_bytes(sess),
            EINVAL
        );
        return None;
    }
    let res = (|| -> Result<Path> {
        let sessname = CString::try_from_fmt(fmt!("{}", BStr::from_bytes(sess)))?;
        let addr_c = CString::try_from_fmt(fmt!("{}", BStr::from_bytes(addr)))?;
        let port = CString::try_from_fmt(fmt!("{}", RTRS_PORT))?;
        let dst = inet_pton(&addr_c, &port)?;
        Path::connect(pool, &sessname, &dst)
    })();
    match res {
        Ok(path) => {
            if let Some(i) = path.info() {
                pr_info!(
                    "path {} connected: queue_depth={} max_io_size={} chunks={}\n",
                    path.sessname(),
                    i.queue_depth,
                    i.max_io_size,
                    i.chunks
                );
                pr_info!(
                    "path {}: cons={} max_hdr_size={} new_rkey={} hca_port={} max_pages_per_mr={} chunk[0]=(addr {:#x} rkey {:#x}) chunk[{}]=(addr {:#x} rkey {:#x})\n",
                    path.sessname(),
                    i.con_num,
                    i.max_hdr_size,
                    i.new_rkey,
                    i.hca_port,
                    i.max_pages_per_mr,
                    i.first.addr,
                    i.first.rkey,
                    i.chunks.saturating_sub(1),
                    i.last.addr,
                    i.last.rkey
                );
            }
            Some(path)
        }
        Err(e) => {
            pr_err!(
                "path {} connect failed: errno {}\n",
                BStr::from_bytes(sess),
                e.to_errno()
            );
            None
        }
    }
}
