// SPDX-License-Identifier: GPL-2.0

//! A per-CPU area (`alloc_percpu`), which 6.12's kernel crate lacks: one
//! zeroed `T` per possible CPU, shared by reference.

use core::marker::PhantomData;
use core::ptr::NonNull;

use kernel::ffi::c_void;
use kernel::prelude::*;

use crate::bindings;
use crate::ffi::misc;

/// Types for which all-zero bytes are a valid value (integers, atomics).
///
/// # Safety
///
/// The all-zero bit pattern is a valid `Self`.
pub(crate) unsafe trait Zeroed: Sync {}

/// One zeroed `T` per possible CPU.
///
/// # Invariants
///
/// `p` is a per-CPU area from `rtrs_rs_alloc_percpu` sized and aligned for
/// a `T`, zeroed (a valid `T`, see [`Zeroed`]) and freed only in `drop`.
pub(crate) struct PerCpu<T: Zeroed> {
    p: NonNull<c_void>,
    _t: PhantomData<T>,
}

// SAFETY: Only `&T` is handed out, and `T: Sync`.
unsafe impl<T: Zeroed> Send for PerCpu<T> {}
// SAFETY: As above.
unsafe impl<T: Zeroed> Sync for PerCpu<T> {}

impl<T: Zeroed> PerCpu<T> {
    /// `alloc_percpu(T)`, zeroed.
    pub(crate) fn new() -> Result<Self> {
        // A null return is an allocation failure.
        let p =
            bindings::rtrs_rs_alloc_percpu(core::mem::size_of::<T>(), core::mem::align_of::<T>());
        // INVARIANT: sized and aligned for `T`, zeroed, and ours.
        Ok(Self {
            p: NonNull::new(p).ok_or(ENOMEM)?,
            _t: PhantomData,
        })
    }

    /// `per_cpu_ptr(p, cpu)`; `None` if `cpu` is not a possible CPU.
    pub(crate) fn get(&self, cpu: u32) -> Option<&T> {
        if !misc::cpu_possible(cpu) {
            return None;
        }
        let c = i32::try_from(cpu).ok()?;
        // SAFETY: By the type invariant the area holds a valid `T` for every
        // possible CPU, live as long as `self`.
        Some(unsafe { &*bindings::rtrs_rs_per_cpu_ptr(self.p.as_ptr(), c).cast::<T>() })
    }

    /// `raw_cpu_ptr(p)`: the slot of the CPU this runs on (which may change
    /// right after: the caller only updates atomics in it).
    #[inline]
    pub(crate) fn this_cpu(&self) -> &T {
        #[cfg(all(CONFIG_X86_64, CONFIG_SMP))]
        let p = self
            .p
            .as_ptr()
            .wrapping_byte_add(misc::this_cpu_off())
            .cast::<T>();
        #[cfg(not(all(CONFIG_X86_64, CONFIG_SMP)))]
        let p = bindings::rtrs_rs_raw_cpu_ptr(self.p.as_ptr()).cast::<T>();
        // SAFETY: By the type invariant the area holds a valid `T` for every
        // possible CPU, and the one this runs on is possible: `p` is its
        // slot (`raw_cpu_ptr`: the area plus the CPU's per-CPU offset).
        unsafe { &*p }
    }

    /// Every possible CPU's slot, as `for_each_possible_cpu`.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u32, &T)> + '_ {
        misc::possible_cpus().filter_map(move |c| Some((c, self.get(c)?)))
    }
}

impl<T: Zeroed> Drop for PerCpu<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant; `&mut self` means no `&T` is alive.
        unsafe { bindings::rtrs_rs_free_percpu(self.p.as_ptr()) };
    }
}
