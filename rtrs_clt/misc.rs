// SPDX-License-Identifier: GPL-2.0

//! Thin safe wrappers over small kernel services the 6.12 kernel crate
//! does not cover: uuid generation, nr_cpu_ids, address parsing.

use kernel::error::to_result;
use kernel::prelude::*;

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

/// `inet_pton_with_scope(&init_net, AF_UNSPEC, addr, port, &ss)`: an IPv4 or
/// IPv6 address (with optional %scope) and a decimal port.
pub(crate) fn inet_pton(addr: &CStr, port: &CStr) -> Result<bindings::__kernel_sockaddr_storage> {
    let mut ss = bindings::__kernel_sockaddr_storage::default();
    // SAFETY: Both strings are NUL-terminated; `ss` is writable storage.
    to_result(unsafe {
        bindings::rtrs_rs_inet_pton(addr.as_char_ptr(), port.as_char_ptr(), &mut ss)
    })?;
    Ok(ss)
}

/// `ktime_get()` in nanoseconds.
pub(crate) fn ktime_get_ns() -> i64 {
    // SAFETY: No preconditions; reads the monotonic clock.
    unsafe { kernel::bindings::ktime_get() }
}
