// SPDX-License-Identifier: GPL-2.0

//! The kernel-facing layer: the FFI wrappers over C (ib_verbs, rdma_cm, a
//! device's events, workqueues, sysfs objects, trace events, per-CPU areas,
//! rtrs.h's types, the permits' memory and wait queue) and the ownership
//! types built on them (RCU-published boxes and arrays, a box set once, a
//! request slot cell), with the helpers beneath them (C's errnos, C
//! functions declared `safe`, rate-limited logs). The `unsafe` that touches
//! C lives here; the layers above use these types. The crate root lists
//! these modules in their layer order (scripts/check-unsafe.sh exempts this
//! folder; scripts/check-layers.sh checks the order).

pub(crate) mod abi;
pub(crate) mod addr;
pub(crate) mod cm;
pub(crate) mod dev_event;
pub(crate) mod error;
pub(crate) mod kobj;
pub(crate) mod log;
pub(crate) mod misc;
pub(crate) mod percpu;
pub(crate) mod permit_pool;
pub(crate) mod sync;
pub(crate) mod trace;
pub(crate) mod verbs;
pub(crate) mod wq;
