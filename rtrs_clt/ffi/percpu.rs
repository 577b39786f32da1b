// SPDX-License-Identifier: GPL-2.0

//! A per-CPU area (`alloc_percpu`), which 6.12's kernel crate lacks: one
//! zeroed `T` per possible CPU, shared by reference.

use core::marker::PhantomData;
use core::ptr::NonNull;
use core::sync::atomic::AtomicU64;

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
/// `slots[cpu]` is `per_cpu_ptr(p, cpu)` for each possible CPU below
/// `nr_cpu_ids`, and null for the others.
pub(crate) struct PerCpu<T: Zeroed> {
    p: NonNull<c_void>,
    /// Each CPU's slot, so that another CPU's is found without a call.
    slots: KVec<*const T>,
    _t: PhantomData<T>,
}

// SAFETY: Only `&T` is handed out, and `T: Sync`.
unsafe impl<T: Zeroed> Send for PerCpu<T> {}
// SAFETY: As above.
unsafe impl<T: Zeroed> Sync for PerCpu<T> {}

impl<T: Zeroed> PerCpu<T> {
    /// `alloc_percpu(T)`, zeroed.
    pub(crate) fn new() -> Result<Self> {
        let n = misc::nr_cpu_ids();
        let mut slots = KVec::with_capacity(usize::try_from(n)?, GFP_KERNEL)?;
        for _ in 0..n {
            slots.push(core::ptr::null(), GFP_KERNEL)?;
        }
        // A null return is an allocation failure.
        let p = NonNull::new(bindings::rtrs_rs_alloc_percpu(
            core::mem::size_of::<T>(),
            core::mem::align_of::<T>(),
        ))
        .ok_or(ENOMEM)?;
        for (cpu, slot) in (0..n).zip(slots.iter_mut()) {
            // Null for a CPU that is not possible.
            *slot = bindings::rtrs_rs_per_cpu_ptr(p.as_ptr(), cpu)
                .cast_const()
                .cast::<T>();
        }
        // INVARIANT: sized and aligned for `T`, zeroed, and ours; `slots`
        // as `per_cpu_ptr` gave them.
        Ok(Self {
            p,
            slots,
            _t: PhantomData,
        })
    }

    /// `per_cpu_ptr(p, cpu)`; `None` if `cpu` is not a possible CPU.
    #[inline]
    pub(crate) fn get(&self, cpu: u32) -> Option<&T> {
        let slot = *self.slots.get(usize::try_from(cpu).ok()?)?;
        if slot.is_null() {
            return None;
        }
        // SAFETY: By the type invariant a non-null slot is a possible CPU's
        // valid `T` in the area, live as long as `self`.
        Some(unsafe { &*slot })
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

    /// `this_cpu_add(field, v)` on the running CPU's slot, for a counter
    /// that only its own CPU adds to (readers sum all slots with atomic
    /// loads; a reset's store from another CPU may be undone by a
    /// concurrent add, as in C): an unlocked `%gs`-relative add on x86-64,
    /// as C's; a relaxed `fetch_add` elsewhere. A `field` outside the slot
    /// is ignored.
    #[inline(always)]
    pub(crate) fn this_cpu_add(&self, field: impl FnOnce(&T) -> &AtomicU64, v: u64) {
        let slot = self.this_cpu();
        let f = field(slot);
        #[cfg(all(CONFIG_X86_64, CONFIG_SMP))]
        {
            // A field projection: the offset is a constant, and the slot's
            // address is not needed (its read goes).
            let off = (f as *const AtomicU64 as usize).wrapping_sub(slot as *const T as usize);
            if off
                .checked_add(core::mem::size_of::<AtomicU64>())
                .is_some_and(|end| end <= core::mem::size_of::<T>())
            {
                // SAFETY: `p + off` is the per-CPU address of `f`'s field,
                // an `AtomicU64` inside the slot (checked just above; an
                // `AtomicU64` field of a `T` is 8-byte aligned as the area
                // is aligned for `T`), in an area live as long as `self`
                // (type invariant), whose counters only their own CPU
                // changes (this method's contract).
                unsafe { misc::this_cpu_add_u64((self.p.as_ptr() as usize).wrapping_add(off), v) };
            }
        }
        #[cfg(not(all(CONFIG_X86_64, CONFIG_SMP)))]
        f.fetch_add(v, core::sync::atomic::Ordering::Relaxed);
    }

    /// Every possible CPU's slot, as `for_each_possible_cpu`.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u32, &T)> + '_ {
        (0..self.slots.len()).filter_map(move |c| {
            let c = u32::try_from(c).ok()?;
            Some((c, self.get(c)?))
        })
    }
}

impl<T: Zeroed> Drop for PerCpu<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant; `&mut self` means no `&T` is alive.
        unsafe { bindings::rtrs_rs_free_percpu(self.p.as_ptr()) };
    }
}
