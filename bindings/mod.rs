// SPDX-License-Identifier: GPL-2.0

//! Raw bindings to ib_verbs, rdma_cm, the driver core and the C helpers.
//!
//! `rdma_generated.rs` is produced by bindgen at build time from
//! `bindings_helper.h` with this kernel's own clang flags (see `Kbuild`).
//! `safe.rs` declares by hand, as `safe fn`, the C functions that are sound
//! for every argument (bindgen skips them). Only the thin wrappers in
//! `rtrs_clt/` use these items directly.

/// bindgen's output, as it comes: only here are its lints off.
#[allow(
    dead_code,
    missing_docs,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    improper_ctypes,
    unreachable_pub,
    unsafe_op_in_unsafe_fn,
    clippy::all,
    clippy::undocumented_unsafe_blocks
)]
mod generated {
    // The kernel maps these to `usize`/`isize` by hand; bindgen is told to
    // skip them.
    type __kernel_size_t = usize;
    type __kernel_ssize_t = isize;
    type __kernel_ptrdiff_t = isize;

    include!("rdma_generated.rs");
}

pub(crate) use generated::*;

// Checked like the rest of the module.
include!("safe.rs");
