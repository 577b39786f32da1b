// SPDX-License-Identifier: GPL-2.0

//! Thin wrappers over small kernel services the 6.12 kernel crate does not
//! cover: uuid generation, CPU ids, the clock, msleep, random numbers. The
//! C functions behind them are sound for every argument, so they are
//! declared `safe` (bindings/safe.rs, where each says why).

use crate::bindings;

/// `uuid_gen`: a random (version 4) UUID.
pub(crate) fn uuid_gen() -> [u8; 16] {
    let mut u = bindings::uuid_t::default();
    bindings::uuid_gen(&mut u);
    u.b
}

/// `nr_cpu_ids`.
pub(crate) fn nr_cpu_ids() -> u32 {
    bindings::rtrs_rs_nr_cpu_ids()
}

/// `ktime_get()` in nanoseconds.
pub(crate) fn ktime_get_ns() -> i64 {
    kernel::time::Ktime::ktime_get().to_ns()
}

/// `raw_smp_processor_id()`: the CPU this runs on, which may change right
/// after unless preemption is off. Inline on x86-64, as C's.
#[inline]
pub(crate) fn this_cpu_id() -> u32 {
    #[cfg(all(CONFIG_X86_64, CONFIG_SMP))]
    {
        gs::read_u32(bindings::rtrs_rs_pcpu_cpu_number)
    }
    #[cfg(not(all(CONFIG_X86_64, CONFIG_SMP)))]
    {
        bindings::rtrs_rs_raw_smp_processor_id()
    }
}

/// `this_cpu_read(this_cpu_off)`: the running CPU's per-CPU offset, which
/// `raw_cpu_ptr` adds to a per-CPU pointer. x86-64 only.
#[cfg(all(CONFIG_X86_64, CONFIG_SMP))]
#[inline]
pub(crate) fn this_cpu_off() -> usize {
    gs::read_ulong(bindings::rtrs_rs_pcpu_this_cpu_off) as usize
}

/// `this_cpu_read` of the two per-CPU variables above, one `%gs`-relative
/// load each, as C's: a migration cannot split it.
#[cfg(all(CONFIG_X86_64, CONFIG_SMP))]
mod gs {
    use kernel::ffi::c_ulong;

    /// The `u32` at per-CPU address `at`, which must be one of the
    /// `rtrs_rs_pcpu_*` constants.
    #[inline(always)]
    pub(super) fn read_u32(at: c_ulong) -> u32 {
        let v: u32;
        // SAFETY: `at` is the per-CPU address of a `u32` variable of the
        // kernel's (`pcpu_hot.cpu_number`); in kernel mode `%gs` is the
        // running CPU's per-CPU area, where every per-CPU variable exists.
        // The load reads memory only.
        unsafe {
            core::arch::asm!(
                "mov {v:e}, gs:[{at}]",
                at = in(reg) at,
                v = out(reg) v,
                options(nostack, readonly, preserves_flags)
            )
        };
        v
    }

    /// The `unsigned long` at per-CPU address `at`, as `read_u32`; `pure`,
    /// so that an unused read goes (`PerCpu::this_cpu_add` computes a
    /// slot only for its field's offset).
    #[inline(always)]
    pub(super) fn read_ulong(at: c_ulong) -> c_ulong {
        let v: c_ulong;
        // SAFETY: As in `read_u32`: `at` is the per-CPU address of an
        // `unsigned long` (`this_cpu_off`).
        unsafe {
            core::arch::asm!(
                "mov {v}, gs:[{at}]",
                at = in(reg) at,
                v = out(reg) v,
                options(nostack, pure, readonly, preserves_flags)
            )
        };
        v
    }
}

/// `this_cpu_add` of a `u64`: one `%gs`-relative add, not locked, which
/// preemption and interrupts cannot split (C's `this_cpu_add`).
///
/// # Safety
///
/// `at` is the per-CPU address (a `__percpu` pointer) of an 8-byte aligned
/// `u64` in a live per-CPU area (an `AtomicU64`), which only its own CPU
/// adds to: a concurrent read-modify-write from another CPU could be lost.
/// (Another CPU's store, a reset, may be undone by a concurrent add, as in
/// C.)
#[cfg(all(CONFIG_X86_64, CONFIG_SMP))]
#[inline(always)]
pub(crate) unsafe fn this_cpu_add_u64(at: usize, v: u64) {
    // SAFETY: The caller's guarantee; the add touches only that `u64`.
    unsafe {
        core::arch::asm!(
            "add qword ptr gs:[{at}], {v}",
            at = in(reg) at,
            v = in(reg) v,
            options(nostack)
        )
    };
}

/// The module parameters `hb_interval_ms` and `hb_missed_max`, unchecked
/// (fixed after load: 0444).
pub(crate) fn hb_module_params() -> (u32, u32) {
    (
        bindings::rtrs_rs_param_hb_interval_ms(),
        bindings::rtrs_rs_param_hb_missed_max(),
    )
}

/// `msleep(ms)`. Process context only (callers are works and sysfs writes).
pub(crate) fn msleep(ms: u32) {
    bindings::rtrs_rs_msleep(ms);
}

/// `get_random_u32_below(ceil)`.
pub(crate) fn random_below(ceil: u32) -> u32 {
    bindings::rtrs_rs_get_random_u32_below(ceil)
}
