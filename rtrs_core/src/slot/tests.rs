// SPDX-License-Identifier: GPL-2.0

//! Host tests of `slot`.

use super::*;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

fn submit(s: &SlotWord) -> SlotOwner {
    s.take(SlotTaker::Submit).expect("free slot")
}

#[test]
fn request_cycle() {
    let s = SlotWord::new();
    assert_eq!(s.state(), SlotState::Free);
    let o = submit(&s);
    assert_eq!(s.state(), SlotState::Owned);
    // The permit used twice: the slot is not free.
    assert!(s.take(SlotTaker::Submit).is_none());
    s.post(o);
    assert_eq!(s.state(), SlotState::Posted);
    assert!(s.take(SlotTaker::Submit).is_none());
    assert!(s.take(SlotTaker::Invalidated).is_none());
    let o = s.take(SlotTaker::Response).expect("posted");
    // A second response finds it taken.
    assert!(s.take(SlotTaker::Response).is_none());
    s.free(o);
    assert_eq!(s.state(), SlotState::Free);
    assert!(s.take(SlotTaker::Response).is_none());
    assert!(s.take(SlotTaker::Drain).is_none());
}

#[test]
fn generation_per_request() {
    let s = SlotWord::new();
    let a = submit(&s);
    s.free(a);
    let b = submit(&s);
    assert_ne!(a, b);
    assert_eq!(b.0 & STATE_MASK, OWNED);
    assert_eq!(b.0 >> 2, 2);
    // The last generation wraps to the first.
    assert_eq!(take_word(!STATE_MASK, SlotTaker::Submit), Some(OWNED));
}

/// A response while the MR is being invalidated (a peer answering twice)
/// does not complete the request: only the invalidation does.
#[test]
fn invalidation_owns_the_slot() {
    let s = SlotWord::new();
    let o = submit(&s);
    s.post(o);
    let o = s.take(SlotTaker::Response).expect("posted");
    s.post_inv(o);
    assert_eq!(s.state(), SlotState::Invalidating);
    assert!(s.take(SlotTaker::Response).is_none());
    assert!(s.take(SlotTaker::Submit).is_none());
    let o = s.take(SlotTaker::Invalidated).expect("invalidating");
    assert!(s.take(SlotTaker::Invalidated).is_none());
    s.free(o);
    assert!(s.take(SlotTaker::Invalidated).is_none());
}

#[test]
fn failed_post_takes_back_its_request() {
    let s = SlotWord::new();
    let o = submit(&s);
    let t = s.post(o);
    let o = s.take(SlotTaker::PostFailed(t)).expect("its own post");
    assert!(s.take(SlotTaker::PostFailed(t)).is_none());
    s.free(o);
}

/// A (bogus) response took the request whose post failed and is having
/// its MR invalidated: the failed post leaves it to the invalidation.
#[test]
fn failed_post_after_response_awaiting_invalidation() {
    let s = SlotWord::new();
    let o = submit(&s);
    let t = s.post(o);
    let o = s.take(SlotTaker::Response).expect("posted");
    s.post_inv(o);
    assert!(s.take(SlotTaker::PostFailed(t)).is_none());
    assert!(s.take(SlotTaker::Invalidated).is_some());
}

/// A (bogus) response completed the request whose post failed, and a new
/// request was posted in the slot before the failed post looked: that one
/// is not the failed post's to take.
#[test]
fn failed_post_after_reuse() {
    let s = SlotWord::new();
    let o = submit(&s);
    let t = s.post(o);
    let o = s.take(SlotTaker::Response).expect("posted");
    s.free(o);
    let o = submit(&s);
    let t2 = s.post(o);
    assert_ne!(t, t2);
    assert!(s.take(SlotTaker::PostFailed(t)).is_none());
    assert!(s.take(SlotTaker::Response).is_some());
}

#[test]
fn drain_takes_what_is_in_flight() {
    let s = SlotWord::new();
    assert!(s.take(SlotTaker::Drain).is_none());
    let o = submit(&s);
    assert!(s.take(SlotTaker::Drain).is_none());
    s.post(o);
    let o = s.take(SlotTaker::Drain).expect("posted");
    s.post_inv(o);
    let o = s.take(SlotTaker::Drain).expect("invalidating");
    s.free(o);
}

/// Two submitters (a permit freed by one completion and taken by another
/// caller) whose posts all fail, and a peer answering every request,
/// invalidating half of them: every request ends exactly once, and a
/// failed post only ever takes back its own request.
#[test]
fn each_request_ends_once() {
    const PER_THREAD: u64 = 100_000;
    const IDS: usize = 2 * PER_THREAD as usize + 1;
    struct Shared {
        slot: SlotWord,
        /// The request in the slot, written by its submitter while it owns it.
        req: AtomicU64,
        ended: Vec<AtomicU64>,
        done: AtomicU64,
    }
    let sh = Arc::new(Shared {
        slot: SlotWord::new(),
        req: AtomicU64::new(0),
        ended: (0..IDS).map(|_| AtomicU64::new(0)).collect(),
        done: AtomicU64::new(0),
    });
    /// Counts a submitter as done, even if it panicked.
    struct Done(Arc<Shared>);
    impl Drop for Done {
        fn drop(&mut self) {
            self.0.done.fetch_add(1, Ordering::Release);
        }
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let submitter = |base: u64| {
        let sh = Arc::clone(&sh);
        std::thread::spawn(move || {
            let _done = Done(Arc::clone(&sh));
            for i in 1..=PER_THREAD {
                let id = base + i;
                let o = loop {
                    if let Some(o) = sh.slot.take(SlotTaker::Submit) {
                        break o;
                    }
                    // A slot never freed (a broken rule lost a request).
                    assert!(std::time::Instant::now() < deadline, "slot never freed");
                    std::hint::spin_loop();
                };
                sh.req.store(id, Ordering::Relaxed);
                let t = sh.slot.post(o);
                // The post takes a while, then fails: time for the peer to
                // answer and for the other submitter to post again.
                for _ in 0..(i % 256) {
                    std::hint::spin_loop();
                }
                if let Some(o) = sh.slot.take(SlotTaker::PostFailed(t)) {
                    assert_eq!(sh.req.load(Ordering::Relaxed), id, "took another request");
                    sh.ended[id as usize].fetch_add(1, Ordering::Relaxed);
                    sh.slot.free(o);
                }
            }
        })
    };
    let a = submitter(0);
    let b = submitter(PER_THREAD);
    let peer = {
        let sh = Arc::clone(&sh);
        std::thread::spawn(move || {
            let mut n = 0u64;
            while sh.done.load(Ordering::Acquire) < 2 {
                if let Some(o) = sh.slot.take(SlotTaker::Response) {
                    n += 1;
                    let o = if n.is_multiple_of(2) {
                        sh.slot.post_inv(o);
                        // A second response must not take it.
                        assert!(sh.slot.take(SlotTaker::Response).is_none());
                        sh.slot.take(SlotTaker::Invalidated).expect("invalidating")
                    } else {
                        o
                    };
                    let id = sh.req.load(Ordering::Relaxed);
                    sh.ended[id as usize].fetch_add(1, Ordering::Relaxed);
                    sh.slot.free(o);
                }
            }
            n
        })
    };
    a.join().expect("submitter a");
    b.join().expect("submitter b");
    let answered = peer.join().expect("peer");
    // Both sides took requests: the race ran.
    assert!(
        answered > 0 && answered < 2 * PER_THREAD,
        "{answered} answered"
    );
    for id in 1..IDS {
        assert_eq!(sh.ended[id].load(Ordering::Relaxed), 1, "request {id}");
    }
    assert_eq!(sh.slot.state(), SlotState::Free);
}
