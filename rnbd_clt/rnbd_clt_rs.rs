// SPDX-License-Identifier: GPL-2.0

//! rnbd-client-rs: the RNBD client (RDMA Network Block Device) in Rust.
//!
//! A drop-in beside C's rnbd-client: the same `/sys/class/rnbd-client` and
//! `/sys/block/rnbdN/rnbd/` files, the same RNBD protocol 2.0 to the
//! unmodified rnbd-server, on an RTRS client (this repository's
//! rtrs-client-rs or C's rtrs-client) through `rtrs_api`. It owns the
//! `rnbd-client` class and the `rnbd` block major, so it and C's module
//! are not loaded together.
//!
//! Layers, lowest first (each file imports only from those before it):
//! - `rnbd_core` (pure, host-tested): messages, `map_device` options, a
//!   device's rules; `rtrs_api`: the RTRS session;
//! - `ffi`: blk-mq, the disk and sysfs (c/rnbd_rs.c), the `unsafe`;
//! - `sess`: the client (its map lock, the sessions, device indexes) and a
//!   session with its link events;
//! - `dev`: a device: map, unmap, remap, resize; `io`: its requests;
//!   `work`: the answers processed in process context;
//! - `sysfs`: the files' show and store, and the block device's fops.
//!
//! Lock order (outer first): `Clt::map`, a session's device list
//! (`SessEv::devs`), a device's `inner`; `Clt::idx` alone; a session's
//! `Requeue::list` alone, with interrupts off (`queue_rq`, completions).

use kernel::{prelude::*, sync::Arc};

#[path = "../rnbd_core/src"]
#[allow(unreachable_pub)]
mod rnbd_core {
    pub mod dev;
    pub mod map_opts;
    pub mod proto;
    pub mod requeue;
}

// rtrs_core's rate limiting, for the log lines of IO and completions.
#[path = "../rtrs_core/src"]
#[allow(unreachable_pub)]
mod rtrs_core {
    pub mod ratelimit;
}

// A library: this module uses a part of it.
#[path = "../rtrs_api/rtrs_api.rs"]
#[allow(dead_code, unreachable_pub)]
mod rtrs_api;

mod dev;
mod ffi;
mod io;
mod sess;
mod sysfs;
mod work;

module! {
    type: RnbdClientModule,
    name: "rnbd_client_rs",
    author: "rtrs-rs developers",
    description: "RDMA Network Block Device client (Rust)",
    license: "GPL",
}

struct RnbdClientModule {
    ctl: Option<ffi::Ctl>,
    clt: Arc<sess::Clt>,
}

impl kernel::Module for RnbdClientModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let major = ffi::Major::register().inspect_err(|_| {
            pr_err!("Failed to load module, block device registration failed\n")
        })?;
        let clt = sess::Clt::new(major)?;
        let ctl = ffi::Ctl::new((&*clt as *const sess::Clt).cast()).inspect_err(|e| {
            pr_err!(
                "Failed to load module, creating sysfs device files failed, err: {}\n",
                e.to_errno()
            )
        })?;
        Ok(RnbdClientModule {
            ctl: Some(ctl),
            clt,
        })
    }
}

impl Drop for RnbdClientModule {
    fn drop(&mut self) {
        // No map runs once `ctl` is gone; then every device goes, without
        // a CLOSE (as C, which closes the sessions first).
        drop(self.ctl.take());
        self.clt.destroy_sessions();
    }
}
