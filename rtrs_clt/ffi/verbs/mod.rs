// SPDX-License-Identifier: GPL-2.0

//! Owning wrappers over ib_verbs: the ib_client, the per-device PD pool,
//! completion queues, queue pairs and DMA-mapped information units (IUs),
//! and the work requests posted on a QP.
//!
//! Each wrapper releases its object in `Drop`. A QP is drained before it is
//! destroyed; every post goes through its `PostGate`, which refuses posts
//! once a drain has begun, so a drained QP stays drained. A ring buffer is
//! posted at most once at a time (its `held` flag), and only a successful
//! receive hands it back to its handler, as a [`RingIu`] that a repost
//! consumes. [`QpRing`] holds a connection's QP with its CQ and its
//! receive buffers in the order that keeps everything posted alive until
//! the drain (QP, then buffers, then CQ). The order between a QP ring, its
//! cm id and its device (ring before cm id, device reference last) is kept
//! by their owner, `path::conns::ConSlot`, and written down there.
//!
//! The files: `ib_client` (the client), `cqe` (completions and their
//! trampolines), `pd_pool` (`DevPool`, `DevRef`), `cq`, `sg` (a caller's
//! scatterlist and its mapping), `mr`, `iu`, `qp` (`Qp`, its `PostGate`,
//! `HeldQp` and work requests) and `ring` (`QpRing`).

mod cq;
mod cqe;
mod ib_client;
mod iu;
mod mr;
mod pd_pool;
mod qp;
mod ring;
mod sg;

pub(crate) use cq::Cq;
pub(crate) use cqe::{static_cqe, wc_imm_data, wc_status_msg, Cqe, CqeFirst, CqeHandler};
pub(crate) use ib_client::IbClient;
pub(crate) use iu::{Iu, IuDone};
pub(crate) use mr::Mr;
pub(crate) use pd_pool::{DevPool, DevRef};
pub(crate) use qp::{Qp, QpOwner, QpSizes};
pub(crate) use ring::{QpRing, RingDone, RingIu, RingIus};
pub(crate) use sg::{MappedSg, SgList};
