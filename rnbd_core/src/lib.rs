// SPDX-License-Identifier: GPL-2.0

//! RNBD client logic with no kernel dependency, for the Rust rnbd-client.
//!
//! Built the way `rtrs_core` is: as this `no_std` crate for host tests
//! (`cargo test` in the repository root), and as a module of the kernel
//! module's crate through `#[path]`. So: only `core`, and siblings named
//! through `super::`, never `crate::`.

#![cfg_attr(not(test), no_std)]

pub mod dev;
pub mod map_opts;
pub mod proto;
pub mod requeue;
