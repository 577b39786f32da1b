// SPDX-License-Identifier: GPL-2.0

//! A `struct completion` wrapper (6.12's kernel crate has none), RCU read
//! sections, an RCU-published box (`RcuBox`), an RCU-published array
//! (`RcuArray`), a box set once (`OnceBox`), and the cell that hands a
//! request slot between submitter and completion (`SlotCell`).
//!
//! `complete` may be called from any context, including softirq CQE
//! callbacks; the waits sleep and are for process context only.

use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::mem::ManuallyDrop;
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

use kernel::prelude::*;
use kernel::sync::lock::{mutex::MutexBackend, Guard};
use kernel::sync::{Arc, ArcBorrow, Mutex};
use kernel::time::msecs_to_jiffies;
use kernel::types::Opaque;

use crate::bindings;
use crate::rtrs_core::slot::{PostTicket, SlotOwner, SlotTaker, SlotWord};

/// What a wait on a [`Completion`] ended with.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum WaitResult {
    /// `complete` was called.
    Done,
    /// The timeout expired first.
    TimedOut,
    /// A signal arrived first (interruptible waits only).
    Interrupted,
}

/// A kernel `struct completion`.
///
/// # Invariants
///
/// `c` was initialised by `init_completion` and stays pinned until dropped.
#[pin_data]
pub(crate) struct Completion {
    #[pin]
    c: Opaque<bindings::completion>,
}

// SAFETY: A completion is meant to be shared between threads; every operation
// on it is serialised by its internal wait-queue lock.
unsafe impl Send for Completion {}
// SAFETY: As above: `&Completion` only allows the thread-safe operations.
unsafe impl Sync for Completion {}

impl Completion {
    /// An initialiser for a completion that is not done.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            // SAFETY: `p` points to pinned, writable memory for a completion.
            c <- Opaque::ffi_init(|p| unsafe { bindings::rtrs_rs_init_completion(p) }),
        })
    }

    /// Marks one waiter's worth of "done" and wakes a waiter. Any context.
    pub(crate) fn complete(&self) {
        // SAFETY: By the type invariant `c` is initialised.
        unsafe { bindings::complete(self.c.get()) };
    }

    /// Resets the done count to zero.
    pub(crate) fn reinit(&self) {
        // SAFETY: By the type invariant `c` is initialised.
        unsafe { bindings::rtrs_rs_reinit_completion(self.c.get()) };
    }

    /// Sleeps until done, `ms` milliseconds pass, or a signal arrives.
    pub(crate) fn wait_interruptible_timeout(&self, ms: u32) -> WaitResult {
        // SAFETY: By the type invariant `c` is initialised; this may sleep,
        // which the callers (process context only) allow.
        let ret = unsafe {
            bindings::wait_for_completion_interruptible_timeout(self.c.get(), msecs_to_jiffies(ms))
        };
        match ret {
            r if r > 0 => WaitResult::Done,
            0 => WaitResult::TimedOut,
            _ => WaitResult::Interrupted,
        }
    }

    /// Sleeps (uninterruptibly) until done or `ms` milliseconds pass.
    pub(crate) fn wait_timeout(&self, ms: u32) -> WaitResult {
        // SAFETY: By the type invariant `c` is initialised; process context only.
        let ret =
            unsafe { bindings::wait_for_completion_timeout(self.c.get(), msecs_to_jiffies(ms)) };
        if ret > 0 {
            WaitResult::Done
        } else {
            WaitResult::TimedOut
        }
    }
}

// `rcu_read_lock()` and `rcu_read_unlock()`: with preemptible RCU and no
// lockdep they are the out-of-line `__rcu_read_lock()` and
// `__rcu_read_unlock()` alone, which the guard calls directly (the IO path
// takes two or three guards per request); else through the C helpers.
#[cfg(all(CONFIG_PREEMPT_RCU, not(CONFIG_DEBUG_LOCK_ALLOC)))]
use {bindings::__rcu_read_lock as rcu_lock, kernel::bindings::__rcu_read_unlock as rcu_unlock};
#[cfg(not(all(CONFIG_PREEMPT_RCU, not(CONFIG_DEBUG_LOCK_ALLOC))))]
use {
    bindings::rtrs_rs_rcu_read_lock as rcu_lock, bindings::rtrs_rs_rcu_read_unlock as rcu_unlock,
};

/// An RCU read-side critical section (`rcu_read_lock` until drop). Never
/// sleep while holding one.
pub(crate) struct RcuGuard(core::marker::PhantomData<*mut ()>);

impl RcuGuard {
    /// `rcu_read_lock()`.
    #[inline]
    pub(crate) fn new() -> Self {
        // Paired with the unlock in drop.
        rcu_lock();
        Self(core::marker::PhantomData)
    }
}

impl Drop for RcuGuard {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: Paired with the lock in `new`, on the same task (the guard
        // is not `Send`).
        unsafe { rcu_unlock() };
    }
}

/// `synchronize_rcu()`: every `RcuGuard` taken before this call has been
/// dropped when it returns. Sleeps.
pub(crate) fn synchronize_rcu() {
    // Process context (callers are works and sysfs/API paths).
    bindings::rtrs_rs_synchronize_rcu();
}

/// A `KBox<T>` published to RCU readers: readers see it through
/// [`RcuBox::get`] under an [`RcuGuard`]; the owner replaces it and gets the
/// old box back only after a grace period ([`Retired::wait`]), when no
/// reader can hold it any more.
///
/// # Invariants
///
/// A box taken out of `p` by [`RcuBox::replace`] is freed (or handed back)
/// only after `synchronize_rcu` returned.
pub(crate) struct RcuBox<T> {
    p: OwnedPtr<T>,
}

// SAFETY: The box is owned (as a `KBox<T>`) and moves with the `RcuBox`.
unsafe impl<T: Send> Send for RcuBox<T> {}
// SAFETY: Through `&RcuBox` readers get `&T` (so `T: Sync`) and writers
// move boxes in and out across threads (so `T: Send`).
unsafe impl<T: Send + Sync> Sync for RcuBox<T> {}

impl<T> RcuBox<T> {
    /// Nothing published.
    pub(crate) const fn empty() -> Self {
        Self {
            p: OwnedPtr::null(),
        }
    }

    /// The published value, for as long as `_g` is held.
    pub(crate) fn get<'a>(&'a self, _g: &'a RcuGuard) -> Option<&'a T> {
        let p = self.p.load();
        // SAFETY: A non-null `p` is a live box (`OwnedPtr`), and once taken
        // out it is freed only after a grace period (type invariant), which
        // `_g` holds off.
        unsafe { p.as_ref() }
    }

    /// Publishes `new` (or nothing) and returns what was published, which
    /// readers may still hold until a grace period has passed.
    pub(crate) fn replace(&self, new: Option<KBox<T>>) -> Retired<T> {
        // INVARIANT: `Retired` frees it only after `synchronize_rcu`.
        Retired(self.p.swap(new))
    }
}

/// What [`RcuBox::replace`] took out: readers may still see it until a grace
/// period has passed.
#[must_use]
pub(crate) struct Retired<T>(Option<NonNull<T>>);

impl<T> Retired<T> {
    /// Whether something was taken out.
    pub(crate) fn is_some(&self) -> bool {
        self.0.is_some()
    }

    /// Waits for a grace period (always: the caller may rely on it for
    /// readers of other state too) and returns the box, now only ours.
    /// Sleeps.
    pub(crate) fn wait(self) -> Option<KBox<T>> {
        Self::wait_all(Some(self)).next().flatten()
    }

    /// [`Retired::wait`] for several at once: one grace period for all,
    /// then each box in order. Sleeps.
    pub(crate) fn wait_all(
        v: impl IntoIterator<Item = Self>,
    ) -> impl Iterator<Item = Option<KBox<T>>> {
        synchronize_rcu();
        v.into_iter().map(|mut r| {
            // SAFETY: The pointer is the box an `RcuBox` owned (from
            // `KBox::into_raw`, see `OwnedPtr`), taken out before the grace
            // period above started, so no reader holds it any more.
            r.0.take().map(|p| unsafe { KBox::from_raw(p.as_ptr()) })
        })
    }
}

impl<T> Drop for Retired<T> {
    /// Nothing to do when nothing was taken out; else as [`Retired::wait`].
    fn drop(&mut self) {
        if self.0.is_some() {
            // Not waited for: free it safely all the same (this sleeps).
            drop(Retired(self.0.take()).wait());
        }
    }
}

/// An ordered array of `Arc<T>` published to RCU readers, with the mutex
/// that serialises its writers (C's `paths_list` with `paths_mutex` and
/// `paths_num`).
///
/// Readers take an [`RcuSnapshot`] under an [`RcuGuard`]: the entries
/// listed when it was taken (later appends are not in it), unchanged for
/// the whole read section. A removal never shifts what a reader reads: it
/// writes the shorter list into the spare buffer, makes that the current
/// one, and waits for a grace period before it reuses the old one, so a
/// reader walking the list cannot miss the entry that moved down (as C's
/// `list_del_rcu` keeps the next entry reachable).
/// Writers hold [`RcuArray::lock`], which also guards a `W` of the owner's
/// and lets them walk the entries while sleeping.
///
/// # Invariants
///
/// - The current buffer (`cur` says which) lists the entries: its first
///   `num` slots hold pointers from `Arc::into_raw`, each owning one
///   reference; its other slots are null.
/// - The spare buffer lists nothing (null slots, `num` 0) and no reader
///   reads it; only `remove` fills it, under `writer`, before making it
///   current. From then until `remove` returns, the old buffer is read by
///   readers that found it current; its slots are copies, save the removed
///   entry's, which still owns the reference `remove` returns.
/// - Slots, `num` and `cur` change only under `writer`; once a reader
///   has read a buffer's `num` in a read section, that buffer's slots below
///   it keep their values until the section ends; and a reference taken
///   out of the list is given up only after a grace period that started
///   once no reader could reach it.
#[pin_data(PinnedDrop)]
pub(crate) struct RcuArray<T, W> {
    bufs: [Slots<T>; 2],
    /// Whether `bufs[1]` is the current buffer.
    cur: AtomicBool,
    #[pin]
    writer: Mutex<W>,
    _own: PhantomData<Arc<T>>,
}

/// One buffer of an [`RcuArray`].
struct Slots<T> {
    slots: KVec<AtomicPtr<T>>,
    num: AtomicUsize,
}

impl<T> Slots<T> {
    /// `cap` null slots.
    fn new(cap: usize) -> Result<Self> {
        let mut slots = KVec::with_capacity(cap, GFP_KERNEL)?;
        for _ in 0..cap {
            slots.push(AtomicPtr::new(core::ptr::null_mut()), GFP_KERNEL)?;
        }
        Ok(Self {
            slots,
            num: AtomicUsize::new(0),
        })
    }

    /// The pointer in slot `i`, null past the end.
    fn load(&self, i: usize) -> *mut T {
        self.slots
            .get(i)
            .map_or(core::ptr::null_mut(), |s| s.load(Ordering::Acquire))
    }

    /// The first `num` slots (all of them if fewer), bounds checked once.
    #[inline]
    fn listed(&self, num: usize) -> &[AtomicPtr<T>] {
        self.slots.get(..num).unwrap_or(&self.slots)
    }

    /// Nulls every slot; the buffer lists nothing.
    fn clear(&self) {
        self.num.store(0, Ordering::Release);
        for s in self.slots.iter() {
            s.store(core::ptr::null_mut(), Ordering::Relaxed);
        }
    }
}

/// An [`RcuArray`]'s list as one reader sees it for `'a`: the slots that
/// listed its entries when it was taken (of the buffer then current).
///
/// # Invariants
///
/// For `'a`, the slots of `slots` keep their values, and each non-null one
/// points to an entry that is not freed: `'a` is an RCU read section or the
/// array's writers' lock is held for it.
pub(crate) struct RcuSnapshot<'a, T> {
    slots: &'a [AtomicPtr<T>],
}

impl<'a, T> RcuSnapshot<'a, T> {
    /// `paths_num` as this reader sees it.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// The entry at `i`.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<ArcBorrow<'a, T>> {
        let p = self.slots.get(i)?.load(Ordering::Acquire);
        // SAFETY: By the type invariant a non-null slot of `slots` points
        // to an entry from `Arc::into_raw` that is not freed for `'a`.
        (!p.is_null()).then(|| unsafe { ArcBorrow::from_raw(p) })
    }

    /// The entries in order, with their index.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (usize, ArcBorrow<'a, T>)> + '_ {
        (0..self.len()).filter_map(move |i| self.get(i).map(|e| (i, e)))
    }
}

/// Made only where no reader can reach an [`RcuArray`]'s slots any more:
/// while it is dropped, and by `take_all` (nothing listed, after a grace
/// period, writers locked out).
struct NoReaders(());

impl<T, W> RcuArray<T, W> {
    /// Buffer 1 if `one`, else buffer 0.
    fn buf(&self, one: bool) -> &Slots<T> {
        let [b0, b1] = &self.bufs;
        if one {
            b1
        } else {
            b0
        }
    }

    /// The buffer that lists the entries now.
    fn current(&self) -> &Slots<T> {
        self.buf(self.cur.load(Ordering::Acquire))
    }

    /// Takes the current buffer's references out, nulling its slots.
    fn drain(&self, _no_readers: NoReaders) -> impl Iterator<Item = Arc<T>> + '_ {
        let buf = self.current();
        buf.num.store(0, Ordering::Release);
        buf.slots.iter().filter_map(|s| {
            let p = s.swap(core::ptr::null_mut(), Ordering::AcqRel);
            // SAFETY: By the type invariant a non-null slot of the current
            // buffer owns a reference from `Arc::into_raw`, which now leaves
            // it; no reader can hold it (`NoReaders`).
            (!p.is_null()).then(|| unsafe { Arc::from_raw(p) })
        })
    }
}

impl<T: Send + Sync, W> RcuArray<T, W> {
    /// An empty array of `cap` slots, with `writer` as its writers' lock.
    pub(crate) fn new(cap: usize, writer: impl PinInit<Mutex<W>>) -> Result<impl PinInit<Self>> {
        let bufs = [Slots::new(cap)?, Slots::new(cap)?];
        Ok(pin_init!(Self {
            bufs,
            cur: AtomicBool::new(false),
            writer <- writer,
            _own: PhantomData,
        }))
    }

    /// The list as it is now, for as long as `g` is held.
    #[inline]
    pub(crate) fn snapshot<'a>(&'a self, _g: &'a RcuGuard) -> RcuSnapshot<'a, T> {
        let buf = self.current();
        // INVARIANT: `g` is a read section: a buffer this reader found
        // current keeps its slots below the `num` read here until the
        // section ends (a removal waits for a grace period before it
        // reuses the buffer, an append writes past `num`), and an entry
        // leaves the list at least a grace period before it is given up.
        RcuSnapshot {
            slots: buf.listed(buf.num.load(Ordering::Acquire)),
        }
    }

    /// The writers' mutex, for `LockedBy` data that it guards.
    pub(crate) fn writer(&self) -> &Mutex<W> {
        &self.writer
    }

    /// Locks out other writers.
    pub(crate) fn lock(&self) -> RcuArrayGuard<'_, T, W> {
        RcuArrayGuard {
            a: self,
            g: self.writer.lock(),
        }
    }
}

#[pinned_drop]
impl<T, W> PinnedDrop for RcuArray<T, W> {
    fn drop(self: Pin<&mut Self>) {
        // Being dropped, the array has no reader left.
        self.drain(NoReaders(())).for_each(drop);
    }
}

/// A writer of an [`RcuArray`]: holds its mutex, and derefs to the `W` it
/// guards.
pub(crate) struct RcuArrayGuard<'a, T, W> {
    a: &'a RcuArray<T, W>,
    g: Guard<'a, W, MutexBackend>,
}

impl<T, W> Deref for RcuArrayGuard<'_, T, W> {
    type Target = W;
    fn deref(&self) -> &W {
        &self.g
    }
}

impl<T, W> DerefMut for RcuArrayGuard<'_, T, W> {
    fn deref_mut(&mut self) -> &mut W {
        &mut self.g
    }
}

impl<'a, T: Send + Sync, W> RcuArrayGuard<'a, T, W> {
    /// The list, which only this writer changes; the caller may sleep.
    fn snapshot(&self) -> RcuSnapshot<'_, T> {
        let buf = self.a.current();
        // INVARIANT: Slots and `num` change only under the writers' lock,
        // which `self` holds for as long as the snapshot borrows it.
        RcuSnapshot {
            slots: buf.listed(buf.num.load(Ordering::Acquire)),
        }
    }

    /// `paths_num`: entries listed.
    pub(crate) fn len(&self) -> usize {
        self.snapshot().len()
    }

    /// The entries in order; the caller may sleep (no writer runs).
    pub(crate) fn iter(&self) -> impl Iterator<Item = ArcBorrow<'_, T>> + '_ {
        let s = self.snapshot();
        (0..s.len()).filter_map(move |i| s.get(i))
    }

    /// A reference to the first entry for which `is` holds.
    pub(crate) fn find(&self, is: impl Fn(&T) -> bool) -> Option<Arc<T>> {
        self.iter().find(|e| is(&**e)).map(Arc::from)
    }

    /// `rtrs_clt_add_path_to_arr`: appends `e`; gives it back when full.
    pub(crate) fn push(&mut self, e: Arc<T>) -> core::result::Result<(), Arc<T>> {
        let buf = self.a.current();
        let n = buf.num.load(Ordering::Acquire);
        let Some(slot) = buf.slots.get(n) else {
            return Err(e);
        };
        // Past `num`: no reader looks at it before `num` grows.
        slot.store(Arc::into_raw(e).cast_mut(), Ordering::Release);
        buf.num.store(n.saturating_add(1), Ordering::Release);
        Ok(())
    }

    /// `rtrs_clt_remove_path_from_arr`: unlists the first entry for which
    /// `is` holds (later entries move down one index), and waits for a
    /// grace period. Returns its former index and the list's reference.
    pub(crate) fn remove(&mut self, is: impl Fn(&T) -> bool) -> Option<(usize, Arc<T>)> {
        let a = self.a;
        let i = self.iter().position(|e| is(&*e))?;
        let was_one = a.cur.load(Ordering::Acquire);
        let (old, new) = (a.buf(was_one), a.buf(!was_one));
        let n = old.num.load(Ordering::Acquire);
        let p = old.load(i);
        if p.is_null() {
            return None;
        }
        // The spare has no reader: it gets the list without entry `i`.
        for (j, s) in new.slots.iter().enumerate() {
            let from = if j < i { j } else { j.saturating_add(1) };
            s.store(
                if from < n {
                    old.load(from)
                } else {
                    core::ptr::null_mut()
                },
                Ordering::Release,
            );
        }
        new.num.store(n.saturating_sub(1), Ordering::Release);
        a.cur.store(!was_one, Ordering::Release);
        // Readers that found the old buffer current are gone after this;
        // none can reach the entry any more.
        synchronize_rcu();
        old.clear();
        // SAFETY: The reference slot `i` of the then current buffer owned
        // (type invariant), unlisted and past a grace period; the other
        // references moved to the new current buffer with its slots.
        Some((i, unsafe { Arc::from_raw(p) }))
    }

    /// Unlists every entry (after a grace period) and returns them.
    pub(crate) fn take_all(&mut self) -> KVec<Arc<T>> {
        let a = self.a;
        a.current().num.store(0, Ordering::Release);
        synchronize_rcu();
        let mut v = KVec::new();
        // Readers that saw entries listed are gone; writers are locked out.
        for e in a.drain(NoReaders(())) {
            // On ENOMEM the entry is dropped right here.
            let _ = v.push(e, GFP_KERNEL);
        }
        v
    }
}

/// Data of a request slot, handed between its submitter, its completion
/// and its invalidation by an atomic word instead of a lock (submission
/// may run in atomic context and completion in softirq). Who may take the
/// slot when is `rtrs_core::slot`'s rule; whoever took it has the data
/// alone until it hands it on.
///
/// # Invariants
///
/// `v` is accessed only through a [`SlotMut`], of which at most one exists
/// at a time: one is created only by a successful `SlotWord::take` (the
/// word then says `Owned`), and it moves the word away from `Owned` when
/// it goes. Nothing else touches `word`.
pub(crate) struct SlotCell<T> {
    word: SlotWord,
    v: UnsafeCell<T>,
}

// SAFETY: `T` moves between threads with the ownership of the slot.
unsafe impl<T: Send> Send for SlotCell<T> {}
// SAFETY: Only one thread at a time has `&mut T` (type invariant), handed
// over with acquire/release on `word`.
unsafe impl<T: Send> Sync for SlotCell<T> {}

impl<T> SlotCell<T> {
    /// A free slot holding `v`.
    pub(crate) const fn new(v: T) -> Self {
        Self {
            word: SlotWord::new(),
            v: UnsafeCell::new(v),
        }
    }

    #[inline]
    fn take(&self, by: SlotTaker) -> Option<SlotMut<'_, T>> {
        // INVARIANT: `take` succeeded, so this is the only `SlotMut`.
        self.word.take(by).map(|own| SlotMut { c: self, own })
    }

    /// A free slot, for a new request (submission).
    #[inline]
    pub(crate) fn take_free(&self) -> Option<SlotMut<'_, T>> {
        self.take(SlotTaker::Submit)
    }

    /// A posted slot, for its response.
    #[inline]
    pub(crate) fn take_posted(&self) -> Option<SlotMut<'_, T>> {
        self.take(SlotTaker::Response)
    }

    /// The request of `ticket`'s post, which failed, if nothing took it.
    pub(crate) fn take_failed_post(&self, ticket: PostTicket) -> Option<SlotMut<'_, T>> {
        self.take(SlotTaker::PostFailed(ticket))
    }

    /// A slot whose MR is being invalidated, for the invalidation's end.
    #[inline]
    pub(crate) fn take_invalidated(&self) -> Option<SlotMut<'_, T>> {
        self.take(SlotTaker::Invalidated)
    }

    /// A slot in flight (posted or invalidating), for failover once the
    /// path's QPs are drained.
    pub(crate) fn take_in_flight(&self) -> Option<SlotMut<'_, T>> {
        self.take(SlotTaker::Drain)
    }
}

/// The owner of a [`SlotCell`]'s data. Dropping it frees the slot.
pub(crate) struct SlotMut<'a, T> {
    c: &'a SlotCell<T>,
    own: SlotOwner,
}

impl<T> SlotMut<'_, T> {
    /// Gives the slot to the response of the request about to be posted
    /// (call it before posting: the response may come at once). If the post
    /// fails, the ticket takes back this request, unless its response did.
    #[inline]
    pub(crate) fn post(self) -> PostTicket {
        let (c, own) = (self.c, self.own);
        core::mem::forget(self);
        c.word.post(own)
    }

    /// Gives the slot to the completion of the LOCAL_INV about to be posted.
    #[inline]
    pub(crate) fn post_inv(self) {
        let (c, own) = (self.c, self.own);
        core::mem::forget(self);
        c.word.post_inv(own);
    }
}

impl<T> Drop for SlotMut<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.c.word.free(self.own);
    }
}

impl<T> Deref for SlotMut<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: We own the slot (type invariant of `SlotCell`).
        unsafe { &*self.c.v.get() }
    }
}

impl<T> DerefMut for SlotMut<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: As above, and `&mut self` is unique.
        unsafe { &mut *self.c.v.get() }
    }
}

/// A value its owner sets once, after it was shared, and then reads
/// without a lock (a session's limits, known once its first paths are up).
///
/// # Invariants
///
/// Once `p` is set (non-null) it is not changed again until drop.
pub(crate) struct OnceBox<T> {
    p: OwnedPtr<T>,
}

impl<T: Send + Sync> OnceBox<T> {
    /// Not set.
    pub(crate) const fn empty() -> Self {
        Self {
            p: OwnedPtr::null(),
        }
    }

    /// Sets the value; gives it back if one was set already.
    pub(crate) fn set(&self, v: KBox<T>) -> core::result::Result<(), KBox<T>> {
        // INVARIANT: only ever set from null.
        self.p.set_if_null(v)
    }

    /// The value, once set.
    pub(crate) fn get(&self) -> Option<&T> {
        // SAFETY: A non-null `p` is a live box (`OwnedPtr`) that is never
        // changed again (type invariant), so it lives as long as `self`.
        unsafe { self.p.load().as_ref() }
    }
}

/// The owning pointer of [`RcuBox`] and [`OnceBox`]: nothing, or a box.
///
/// # Invariants
///
/// `p` is null or is the pointer of a `KBox` whose ownership this value
/// took (`KBox::into_raw`, or the box's pointer with the box never dropped).
struct OwnedPtr<T> {
    p: AtomicPtr<T>,
    _own: PhantomData<KBox<T>>,
}

impl<T> OwnedPtr<T> {
    const fn null() -> Self {
        Self {
            p: AtomicPtr::new(core::ptr::null_mut()),
            _own: PhantomData,
        }
    }

    /// The box, or null (acquire: its contents are visible).
    fn load(&self) -> *mut T {
        self.p.load(Ordering::Acquire)
    }

    /// Stores `new` (or nothing) and gives up the box that was stored: its
    /// owner is now the caller.
    fn swap(&self, new: Option<KBox<T>>) -> Option<NonNull<T>> {
        let n = new.map_or(core::ptr::null_mut(), KBox::into_raw);
        NonNull::new(self.p.swap(n, Ordering::AcqRel))
    }

    /// Stores `v` if nothing is stored; else gives it back.
    fn set_if_null(&self, v: KBox<T>) -> core::result::Result<(), KBox<T>> {
        // Not dropped here: stored, the box is owned through its pointer;
        // refused, it is handed back whole, never rebuilt from a pointer.
        let mut v = ManuallyDrop::new(v);
        // What `KBox::into_raw` would return.
        let p: *mut T = &mut **v;
        match self.p.compare_exchange(
            core::ptr::null_mut(),
            p,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            // INVARIANT: `p` is the box's, and the box is never dropped
            // (`ManuallyDrop`): `self` owns it now.
            Ok(_) => Ok(()),
            Err(_) => Err(ManuallyDrop::into_inner(v)),
        }
    }
}

impl<T> Drop for OwnedPtr<T> {
    fn drop(&mut self) {
        let p = *self.p.get_mut();
        if !p.is_null() {
            // SAFETY: By the type invariant; `&mut self` means no borrow of
            // it is alive.
            drop(unsafe { KBox::from_raw(p) });
        }
    }
}
