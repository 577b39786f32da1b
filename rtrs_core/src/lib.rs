// SPDX-License-Identifier: GPL-2.0

//! RTRS client logic with no kernel dependency.
//!
//! The same files are compiled twice: as this `no_std` crate for host tests
//! (`cargo test` in the repository root), and as the `rtrs_core` module inside
//! the kernel module's crate (`rtrs_clt/rtrs_clt_rs.rs` lists the files with a
//! `#[path]` attribute). Hence two rules for code in here:
//! - only `core` is available (no `alloc`, no `std` outside `#[cfg(test)]`);
//! - sibling modules are named through `super::`, never `crate::`.

#![cfg_attr(not(test), no_std)]

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

#[cfg(test)]
mod test_rng;
