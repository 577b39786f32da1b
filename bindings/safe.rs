// SPDX-License-Identifier: GPL-2.0

// C functions that Rust calls without `unsafe`: each is sound for every
// argument value, because it takes no pointer, only a reference whose type
// states all that the function needs of it, or a raw pointer it only does
// arithmetic on (the per-CPU pointers). So their one declaration
// says `safe`; bindgen leaves them out (`rtrs_bindgen_block` in Kbuild), and
// this is the only declaration of each symbol. Included into `bindings`
// (mod.rs).
//
// Some of them sleep: `msleep`, `synchronize_rcu`, and the GFP_KERNEL
// allocations (`rtrs_rs_alloc_percpu`, `rtrs_rs_waitq_alloc`). Each is sound
// memory-wise on its own, but sleeping inside an RCU read-side section (an
// `RcuGuard`, or a CQ callback in softirq) or any other atomic context is a
// bug: a sleep there may end the grace period that keeps what the reader
// holds alive. The type system does not prevent it; the kernel reports it
// (might_sleep with CONFIG_DEBUG_ATOMIC_SLEEP, lockdep's RCU checks). The
// kernel crate treats its own sleeping functions the same way: they are safe
// and documented as not for atomic context (`Mutex::lock`, `CondVar::wait`,
// and upstream's `kernel::sync::rcu::synchronize_rcu`, "one of the RCU
// primitives which must not be called in atomic context"). Callers here keep
// them out of `RcuGuard` sections and completion handlers.

unsafe extern "C" {
    /// `nr_cpu_ids`: reads a variable that is fixed after boot.
    pub(crate) safe fn rtrs_rs_nr_cpu_ids() -> kernel::ffi::c_uint;

    /// `raw_smp_processor_id()`: reads the running CPU's id (x86-64 reads
    /// it inline).
    #[cfg(not(all(CONFIG_X86_64, CONFIG_SMP)))]
    pub(crate) safe fn rtrs_rs_raw_smp_processor_id() -> kernel::ffi::c_uint;

    /// `&pcpu_hot.cpu_number` as a per-CPU (%gs-relative) address: a
    /// constant, set at link time.
    #[cfg(all(CONFIG_X86_64, CONFIG_SMP))]
    pub(crate) safe static rtrs_rs_pcpu_cpu_number: kernel::ffi::c_ulong;

    /// `raw_cpu_ptr(p)`: pointer arithmetic only (`p` plus the running
    /// CPU's per-CPU offset), never a dereference, so any `p` is fine.
    #[cfg(not(all(CONFIG_X86_64, CONFIG_SMP)))]
    pub(crate) safe fn rtrs_rs_raw_cpu_ptr(p: *mut kernel::ffi::c_void)
        -> *mut kernel::ffi::c_void;

    /// `&this_cpu_off` as a per-CPU (%gs-relative) address: a constant.
    #[cfg(all(CONFIG_X86_64, CONFIG_SMP))]
    pub(crate) safe static rtrs_rs_pcpu_this_cpu_off: kernel::ffi::c_ulong;

    /// `per_cpu_ptr(p, cpu)`, or NULL for a `cpu` that is not possible (the
    /// helper checks it against `nr_cpu_ids` and the mask first): pointer
    /// arithmetic only, never a dereference, so any `p` is fine.
    pub(crate) safe fn rtrs_rs_per_cpu_ptr(
        p: *mut kernel::ffi::c_void,
        cpu: kernel::ffi::c_uint,
    ) -> *mut kernel::ffi::c_void;

    /// The module parameter `hb_interval_ms`: reads a variable (0444).
    pub(crate) safe fn rtrs_rs_param_hb_interval_ms() -> kernel::ffi::c_uint;

    /// The module parameter `hb_missed_max`: reads a variable (0444).
    pub(crate) safe fn rtrs_rs_param_hb_missed_max() -> kernel::ffi::c_uint;

    /// `msleep(ms)`: no argument is invalid.
    pub(crate) safe fn rtrs_rs_msleep(ms: kernel::ffi::c_uint);

    /// `get_random_u32_below(ceil)`: the out-of-line version the helper
    /// calls is defined for every `ceil` (0 gives 0).
    pub(crate) safe fn rtrs_rs_get_random_u32_below(ceil: u32) -> u32;

    /// `rcu_read_lock()`: no requirement (the unlock has one: it must pair
    /// with a lock on the same task, so it stays `unsafe`).
    #[cfg(not(all(CONFIG_PREEMPT_RCU, not(CONFIG_DEBUG_LOCK_ALLOC))))]
    pub(crate) safe fn rtrs_rs_rcu_read_lock();

    /// `__rcu_read_lock()`: all that `rcu_read_lock()` does with preemptible
    /// RCU and without lockdep (its other parts are lockdep and sparse
    /// annotations); no requirement, as the helper's.
    #[cfg(all(CONFIG_PREEMPT_RCU, not(CONFIG_DEBUG_LOCK_ALLOC)))]
    pub(crate) safe fn __rcu_read_lock();

    /// `synchronize_rcu()`: waits for a grace period.
    pub(crate) safe fn rtrs_rs_synchronize_rcu();

    /// `__alloc_percpu(size, align)`: refuses (NULL) a size or alignment it
    /// cannot serve; the caller owns what it returns.
    pub(crate) safe fn rtrs_rs_alloc_percpu(size: usize, align: usize) -> *mut kernel::ffi::c_void;

    /// kmalloc and `init_waitqueue_head` of a wait queue head, or NULL; the
    /// caller owns what it returns.
    pub(crate) safe fn rtrs_rs_waitq_alloc() -> *mut wait_queue_head;

    /// `dev_get_by_name(&init_net, name)`'s ifindex, 0 if none: the helper
    /// reads exactly the 16 bytes (IFNAMSIZ) and terminates its own copy.
    pub(crate) safe fn rtrs_rs_dev_ifindex(name: &[u8; 16]) -> kernel::ffi::c_int;

    /// `uuid_gen(u)`: writes the 16 bytes of `*u`.
    pub(crate) safe fn uuid_gen(u: &mut uuid_t);

    /// Whether trace event `ev` is enabled (bindings/rtrs_trace.c): a
    /// switch over static-key tests. `ev` reaches C as the `unsigned int`
    /// bindgen maps the enum to; a value no case names falls through to
    /// `return false` (a C enum may hold any value of its integer type).
    pub(crate) safe fn rtrs_rs_trace_enabled(ev: rtrs_rs_trace_ev) -> bool;
}
