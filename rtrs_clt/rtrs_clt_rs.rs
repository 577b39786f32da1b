// SPDX-License-Identifier: GPL-2.0

//! rtrs-client-rs: the RTRS (RDMA Transport) client in Rust.
//!
//! A drop-in replacement for the in-tree C `rtrs-client` that talks RTRS wire
//! protocol 2.0 to the in-kernel `rtrs-server`. It has its own module name,
//! `rtrs_client_rs`, so both can be installed; only one can be loaded at a
//! time, since both own the `rtrs-client` class.
//!
//! Layout of the crate, in layers (the lowest first); a folder is one
//! layer, and `ffi`'s modules are layers within it:
//! - `bindings`: bindgen output for ib_verbs, rdma_cm and the C helpers;
//! - `rtrs_core`: the kernel-independent logic, shared with host tests;
//! - `ffi` (rtrs_clt/ffi/): the FFI wrappers and ownership types, where the
//!   `unsafe` that touches C lives:
//!   - `error`: C's errnos (the layers above use them, `verbs` first);
//!   - `misc`: uuid_gen, CPU ids, ktime, msleep, random numbers (C functions
//!     declared `safe` in `bindings/safe.rs`);
//!   - `log`: rate-limited logging for completion context;
//!   - `addr`: `SockAddr` (a `sockaddr_storage` by value) and its
//!     conversions to and from rtrs_core's parsed form;
//!   - `verbs` (ffi/verbs/, a file each): owning wrappers over ib_verbs
//!     (ib_client, the per-device PD pool, CQs, QPs, MRs, DMA-mapped IUs,
//!     scatterlists, work requests, `QpRing`: a connection's QP with its CQ
//!     and receive buffers, and the completion trampolines);
//!   - `cm`: an owning rdma_cm id wrapper, which holds the id's owner (its
//!     context), with its event handler trampoline;
//!   - `dev_event`: a device's asynchronous events (port, GID, fatal);
//!   - `sync`: `struct completion`, RCU read sections, and the ownership
//!     types: `RcuBox` and `RcuArray` (published to RCU readers, freed after
//!     a grace period), `OnceBox` (set once), `SlotCell` (a request slot
//!     handed between submitter, response and invalidation);
//!   - `percpu`: a zeroed per-CPU area (`PerCpu<T>`);
//!   - `trace`: the trace events (system `rtrs_clt`: C's three and this
//!     module's own);
//!   - `abi`: the C types of rtrs.h (ops, addresses, permits, kvecs) and
//!     rnbd's callbacks (`LinkEvCb`, `Confirm`);
//!   - `permit_pool`: the permits' memory, which rnbd gets pointers into,
//!     and their wait queue (`PermitPool`);
//!   - `wq`: the workqueue and the delayed work embedded in its owner
//!     (`DelayedWork`);
//!   - `kobj`: the sysfs objects (the class, session device, path
//!     directories, the token of a running path store);
//! - `stats`: per-CPU path statistics;
//! - `io`: request slots and MRs of a path, READ/WRITE submission, IO
//!   completion, local invalidation, and taking requests back for failover,
//!   on a connection seen through the narrow `IoCon` handle;
//! - `con` (rtrs_clt/con/): a connection (`Con`: its CM handler, its
//!   `ConQp`, completions) and what survives a path's reconnects
//!   (`PathShared`), one layer as each names the other;
//! - `path` (rtrs_clt/path/): a path across reconnects (`SessPath`), with
//!   its recovery, reconnect and close works; one generation of its
//!   connections (`PathConns`: init_conns, create_cm, the INFO exchange, and
//!   teardown); the heartbeat work on cid 0; it calls its session through
//!   `PathOwner`;
//! - `sess` (rtrs_clt/sess/): the session, its path list, policies and
//!   failover, adding and removing paths, and its permits (the lock-free
//!   bitmap over `ffi::permit_pool`: get, put and the waits);
//! - `api`: the exported `rtrs_clt_*` functions (exported by
//!   `bindings/rtrs_export.c`);
//! - `sysfs` (sysfs/, beside rtrs_clt/): the `/sys/class/rtrs-client` show
//!   and store handlers.
//!
//! Each file imports only from the layers listed before its own, and from
//! its own layer; within `ffi`, only from its own module and the ones
//! listed before it (scripts/check-layers.sh, run by tests/host/lint.sh).
//!
//! Lock order (outer first: holding one of these, a thread only takes locks
//! listed after it):
//! 1. `Sess::paths_mutex` (adding, removing paths; session close);
//! 2. `SessPath::init` (`init_mutex`: connect and teardown of a path);
//! 3. `Con::con_mutex` (`ConInner`: one connection's device ref; creating
//!    its QP);
//! 4. `PathShared::inner` (`PathInner`: device, server params, rbufs);
//! 5. `DevPool::list` (the per-device PD pool).
//!
//! `Sess::paths_ev` (`paths_up`) is taken by `path_up`/`path_down` (which
//! call rnbd's `link_ev` under it, as C does, once the session has opened)
//! and by `Sess::open` to end the opening.
//! `PathShared::link` (a path's `established` and `reconnect_attempts`) is
//! a leaf: taken after `paths_ev` or `inner`, or alone.
//!
//! No lock is taken in CQ callbacks (softirq for IRQ connections) or on the
//! IO submission path (blk-mq, may be atomic): they use atomics, the
//! lock-free permit bitmap, `complete()` and wake-ups only. IO reaches the
//! path list, a path's connections and a connection's QP (`Con::qp`)
//! inside an RCU read section; removal
//! and teardown unpublish first and free after `synchronize_rcu` (see
//! `path` and `ffi::sync::RcuArray`). `rtrs_clt_get_permit(WAIT)` and
//! `rtrs_clt_close` sleep on the permit wait queue holding no lock. CM
//! handlers run in process context under rdma_cm's per-id handler mutex, and
//! take locks 3 to 5. Nobody holds a lock while destroying a cm id (which
//! waits for its handler).

// pin-init's macros recurse once per field; `PathShared` has many.
#![recursion_limit = "320"]

use kernel::c_str;
use kernel::prelude::*;
use kernel::sync::Arc;

#[path = "../bindings/mod.rs"]
mod bindings;

#[path = "../rtrs_core/src"]
#[allow(unreachable_pub)]
mod rtrs_core {
    pub mod imm;
    pub mod latency;
    pub mod names;
    pub mod path_state;
    pub mod permit;
    pub mod policy;
    pub mod proto;
    pub mod ratelimit;
    pub mod slot;
    pub mod sysfs_fmt;
}

#[path = "../sysfs/mod.rs"]
mod sysfs;

mod api;
mod con;
mod ffi;
mod io;
mod path;
mod sess;
mod stats;

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
    /// The state the exported API uses; unpublished before the rest goes.
    _globals: sess::GlobalsGuard,
    _dev_pool: Arc<ffi::verbs::DevPool>,
    _ib_client: ffi::verbs::IbClient,
    _class: Arc<ffi::kobj::Class>,
    _wq: Arc<ffi::wq::Workqueue>,
}

impl kernel::Module for RtrsClientModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let hb = hb_params()?;
        let wq = ffi::wq::Workqueue::new(c_str!("rtrs_client_wq"))?;
        let class = Arc::new(ffi::kobj::Class::new(c_str!("rtrs-client"))?, GFP_KERNEL)?;
        let ib_client = ffi::verbs::IbClient::register(c_str!("rtrs_client_rs"))?;
        let dev_pool = ffi::verbs::DevPool::new()?;
        pr_info!(
            "loaded (heartbeat every {} ms, {} may be missed: a silent peer shows within {} ms)\n",
            hb.interval_ms,
            hb.missed_max,
            hb.detect_ms()
        );
        let globals = sess::GlobalsGuard::new(dev_pool.clone(), class.clone(), wq.clone(), hb)?;
        Ok(Self {
            _globals: globals,
            _dev_pool: dev_pool,
            _ib_client: ib_client,
            _class: class,
            _wq: wq,
        })
    }
}

/// The heartbeat module parameters, checked by rtrs_core: -EINVAL with a
/// log line names the bad one.
fn hb_params() -> Result<rtrs_core::path_state::HbParams> {
    use rtrs_core::path_state::{
        HbParamError, HbParams, HB_INTERVAL_MS_MAX, HB_INTERVAL_MS_MIN, HB_MISSED_MAX_MAX,
        HB_MISSED_MAX_MIN,
    };
    let (interval_ms, missed_max) = ffi::misc::hb_module_params();
    HbParams::new(interval_ms, missed_max).map_err(|e| {
        match e {
            HbParamError::Interval(v) => pr_err!(
                "hb_interval_ms={} is outside {}..={}\n",
                v,
                HB_INTERVAL_MS_MIN,
                HB_INTERVAL_MS_MAX
            ),
            HbParamError::MissedMax(v) => pr_err!(
                "hb_missed_max={} is outside {}..={}\n",
                v,
                HB_MISSED_MAX_MIN,
                HB_MISSED_MAX_MAX
            ),
        }
        EINVAL
    })
}

impl Drop for RtrsClientModule {
    fn drop(&mut self) {
        pr_info!("unloading\n");
    }
}
