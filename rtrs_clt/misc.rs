// SPDX-License-Identifier: GPL-2.0

//! Thin safe wrappers over small kernel services the 6.12 kernel crate
//! does not cover: uuid generation, nr_cpu_ids.

use crate::bindings;

/// `uuid_gen`: a random (version 4) UUID.
pub(crate) fn uuid_gen() -> [u8; 16] {
    let mut u = bindings::uuid_t::default();
    // SAFETY: `u` is a valid, writable uuid_t.
    unsafe { bindings::uuid_gen(&mut u) };
    u.b
}

/// `nr_cpu_ids`.
pub(crate) fn nr_cpu_ids() -> u32 {
    // SAFETY: No preconditions; reads a variable fixed after boot.
    unsafe { bindings::rtrs_rs_nr_cpu_ids() }
}

/// `ktime_get()` in nanoseconds.
pub(crate) fn ktime_get_ns() -> i64 {
    // SAFETY: No preconditions; reads the monotonic clock.
    unsafe { kernel::bindings::ktime_get() }
}
