// SPDX-License-Identifier: GPL-2.0

//! rtrs-client-rs: the RTRS (RDMA Transport) client in Rust.
//!
//! A drop-in replacement for the in-tree C `rtrs-client` that talks RTRS wire
//! protocol 2.0 to the in-kernel `rtrs-server`. It has its own module name,
//! `rtrs_client_rs`, so both can be installed; only one can be loaded at a
//! time, since both own the `rtrs-client` class.
//!
//! Layout of the crate:
//! - `bindings`: bindgen output for ib_verbs, rdma_cm and the C helpers;
//! - `rtrs_core`: the kernel-independent logic, shared with host tests;
//! - `verbs`, `wq`: owning wrappers over the verbs layer and the workqueue;
//! - `sysfs`: the `/sys/class/rtrs-client` tree.
//!
//! Lock order: none yet (no lock is taken by this skeleton).

use kernel::c_str;
use kernel::prelude::*;

#[path = "../bindings/mod.rs"]
mod bindings;

#[path = "../rtrs_core/src"]
#[allow(dead_code, unreachable_pub)]
mod rtrs_core {
    pub mod imm;
    pub mod names;
    pub mod proto;
    pub mod sysfs_fmt;
}

#[path = "../sysfs/mod.rs"]
mod sysfs;

mod verbs;
mod wq;

module! {
    type: RtrsClientModule,
    name: "rtrs_client_rs",
    author: "rtrs-rs developers",
    description: "RDMA Transport Client (Rust)",
    license: "GPL",
}

/// Module state, created at load and released at unload.
///
/// Fields drop in declaration order, which is the reverse of the order
/// `init` creates them in: the ib_client goes first, the workqueue last.
struct RtrsClientModule {
    _ib_client: verbs::IbClient,
    _class: sysfs::Class,
    _wq: wq::Workqueue,
}

impl kernel::Module for RtrsClientModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let wq = wq::Workqueue::new(c_str!("rtrs_client_wq"))?;
        let class = sysfs::Class::new(c_str!("rtrs-client"))?;
        let ib_client = verbs::IbClient::register(c_str!("rtrs_client_rs"))?;
        pr_info!("loaded\n");
        Ok(Self {
            _ib_client: ib_client,
            _class: class,
            _wq: wq,
        })
    }
}

impl Drop for RtrsClientModule {
    fn drop(&mut self) {
        pr_info!("unloading\n");
    }
}
