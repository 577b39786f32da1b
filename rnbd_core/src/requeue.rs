// SPDX-License-Identifier: GPL-2.0

//! When a hardware queue that found no free permit runs again (the requeue
//! lists of rnbd-clt.c). A permit given back reruns one listed queue, so a
//! queue waits for a permit rather than for a timer; the last permit given
//! back reruns them all, as no later one will.

/// What `queue_rq` does with its hardware queue when no permit is free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoPermit {
    /// Stay listed: a permit given back reruns the queue.
    Listed,
    /// Nobody holds a permit that would rerun it: the block layer runs the
    /// queue again after this many ms.
    RunAfterMs(u32),
}

/// C's delay before the block layer reruns a queue nothing else would: no
/// permit is held, or the request failed for now (ENOMEM, EAGAIN). (The
/// block layer's own rerun after BLK_STS_RESOURCE, at once or after 3 ms,
/// comes later and sets the delay that holds.)
pub const RERUN_MS: u32 = 10;

/// The verdict for a queue just listed, given `busy`, the permits this
/// client's requests hold, read after listing it (a permit given back
/// after that read sees the queue listed).
pub const fn no_permit(busy: u32) -> NoPermit {
    if busy > 0 {
        NoPermit::Listed
    } else {
        NoPermit::RunAfterMs(RERUN_MS)
    }
}

/// After a permit came back and one listed queue was rerun (`rerun`) or
/// none was listed: whether to rerun another. Only when no permit is held
/// (`busy` 0): then no later give-back would rerun the rest.
pub const fn rerun_another(busy: u32, rerun: bool) -> bool {
    busy == 0 && rerun
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_waits_listed_only_while_a_permit_is_held() {
        assert_eq!(no_permit(1), NoPermit::Listed);
        assert_eq!(no_permit(u32::MAX), NoPermit::Listed);
        assert_eq!(no_permit(0), NoPermit::RunAfterMs(10));
    }

    #[test]
    fn the_last_permit_reruns_every_listed_queue() {
        assert!(rerun_another(0, true));
        assert!(!rerun_another(0, false));
        assert!(!rerun_another(1, true));
    }

    /// Every listed queue is rerun in the end: a model of M queues and N
    /// permits, where each give-back reruns one queue and the last reruns
    /// the rest.
    #[test]
    fn no_queue_is_left_listed_when_the_permits_are_back() {
        for permits in 1..6u32 {
            for queues in 0..8usize {
                let mut busy = permits;
                let mut listed = 0usize;
                for _ in 0..queues {
                    if no_permit(busy) == NoPermit::Listed {
                        listed += 1;
                    }
                }
                while busy > 0 {
                    busy -= 1;
                    loop {
                        let rerun = listed > 0;
                        if rerun {
                            listed -= 1;
                        }
                        if !rerun_another(busy, rerun) {
                            break;
                        }
                    }
                }
                assert_eq!(listed, 0, "{permits} permits, {queues} queues");
            }
        }
    }
}
