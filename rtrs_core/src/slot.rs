// SPDX-License-Identifier: GPL-2.0

//! Who holds a request slot (C's `req->in_use`, with `need_inv_comp` and
//! a failed post told apart): one atomic word per slot. Its low two bits
//! are the state, the rest a generation that each new request bumps, so
//! that a submitter whose post failed takes back only its own request.
//!
//! The transitions:
//! - `Free` → `Owned`: a new request, under its permit (`Submit`);
//! - `Owned` → `Posted` (`post`), `Invalidating` (`post_inv`) or `Free`;
//! - `Posted` → `Owned`: its response, the post's failure with the ticket
//!   of that post, or the drain;
//! - `Invalidating` → `Owned`: the LOCAL_INV's completion (or its failed
//!   post), or the drain.
//!
//! A response never takes a slot whose MR is being invalidated: the request
//! completes when the invalidation does, whatever else the peer sends.

use core::sync::atomic::{AtomicU32, Ordering};

/// What a slot is doing (for tests: the module acts only through `take`).
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotState {
    /// No request: the holder of its permit may take it.
    Free,
    /// Held by one thread: the submitter, or whoever completes the request.
    Owned,
    /// Posted; its response takes it.
    Posted,
    /// Answered, the MR being invalidated; the LOCAL_INV's completion takes it.
    Invalidating,
}

/// Who wants a slot.
#[derive(Clone, Copy, Debug)]
pub enum SlotTaker {
    /// A new request, under the slot's permit.
    Submit,
    /// An IO response naming the slot.
    Response,
    /// The submitter whose post failed: only the request it posted.
    PostFailed(PostTicket),
    /// The completion (or the failed post) of the slot's LOCAL_INV.
    Invalidated,
    /// Failover, once the path's QPs are drained: any request in flight.
    Drain,
}

/// The word a submitter left in the slot when posting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PostTicket(u32);

/// The word a holder took a slot at; `SlotWord::post`, `post_inv` and
/// `free` hand the slot on from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotOwner(u32);

const STATE_MASK: u32 = 0b11;
const FREE: u32 = 0;
const OWNED: u32 = 1;
const POSTED: u32 = 2;
const INVALIDATING: u32 = 3;
/// One generation (the bits above the state).
const GEN_ONE: u32 = STATE_MASK + 1;

/// The state of word `w`.
#[cfg(test)]
const fn state_of(w: u32) -> SlotState {
    match w & STATE_MASK {
        FREE => SlotState::Free,
        OWNED => SlotState::Owned,
        POSTED => SlotState::Posted,
        _ => SlotState::Invalidating,
    }
}

/// The word after `by` takes a slot whose word is `w`, if it may: the
/// state `Owned`, the generation one up for a new request.
pub const fn take_word(w: u32, by: SlotTaker) -> Option<u32> {
    let s = w & STATE_MASK;
    let gen = w & !STATE_MASK;
    let next_gen = match by {
        SlotTaker::Submit if s == FREE => gen.wrapping_add(GEN_ONE),
        SlotTaker::Response if s == POSTED => gen,
        SlotTaker::PostFailed(t) if w == t.0 => gen,
        SlotTaker::Invalidated if s == INVALIDATING => gen,
        SlotTaker::Drain if s == POSTED || s == INVALIDATING => gen,
        _ => return None,
    };
    Some(next_gen | OWNED)
}

/// A slot's word: free, generation 0, at first.
pub struct SlotWord(AtomicU32);

impl Default for SlotWord {
    fn default() -> Self {
        Self::new()
    }
}

impl SlotWord {
    /// A free slot.
    pub const fn new() -> Self {
        Self(AtomicU32::new(FREE))
    }

    /// The slot for `by`, if `by` may take it now (acquire: what its last
    /// holder wrote is visible).
    #[inline]
    pub fn take(&self, by: SlotTaker) -> Option<SlotOwner> {
        let mut cur = self.0.load(Ordering::Relaxed);
        loop {
            let next = take_word(cur, by)?;
            // On a change since the load (another taker, or a load older
            // than the word), decide again on the word as it is.
            match self
                .0
                .compare_exchange(cur, next, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return Some(SlotOwner(next)),
                Err(now) => cur = now,
            }
        }
    }

    /// What the slot is doing (a snapshot).
    #[cfg(test)]
    pub fn state(&self) -> SlotState {
        state_of(self.0.load(Ordering::Relaxed))
    }

    /// Hands the slot to the response of the request about to be posted;
    /// the ticket lets a failed post take back that request only.
    #[inline]
    pub fn post(&self, o: SlotOwner) -> PostTicket {
        let w = (o.0 & !STATE_MASK) | POSTED;
        self.0.store(w, Ordering::Release);
        PostTicket(w)
    }

    /// Hands the slot to the completion of the LOCAL_INV about to be posted.
    #[inline]
    pub fn post_inv(&self, o: SlotOwner) {
        self.0
            .store((o.0 & !STATE_MASK) | INVALIDATING, Ordering::Release);
    }

    /// Frees the slot.
    #[inline]
    pub fn free(&self, o: SlotOwner) {
        self.0.store(o.0 & !STATE_MASK, Ordering::Release);
    }
}

#[cfg(test)]
mod tests;
