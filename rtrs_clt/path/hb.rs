// SPDX-License-Identifier: GPL-2.0

//! The heartbeat of a path (`hb_work` of rtrs.c) on its cid 0 connection:
//! rtrs_core's `hb_tick` decides, this sends or starts error recovery. The
//! path owns the work (`SessPath::hb_work`).

use core::sync::atomic::Ordering;

use kernel::prelude::*;

use crate::con::Con;
use crate::ffi::trace;
use crate::io::IoCon;
use crate::rtrs_core::imm;
use crate::rtrs_core::path_state::{self, HbAction};

/// One run of `hb_work` of rtrs.c on cid 0 (the path owns the work): sends
/// HB_MSG unless the last one is still unanswered (any receive clears the
/// count), or starts error recovery once too many went unanswered. True if
/// the work is to run again after `PathShared::hb.interval_ms`. Runs under RCU.
pub(crate) fn hb_work(con: &Con) -> bool {
    let path = con.path();
    let msgs = path.hb_msgs_rx.swap(0, Ordering::Relaxed);
    if path_state::hb_flood(msgs) {
        pr_warn!(
            "{}: heartbeat flood: {} HB_MSG from the server in {} ms\n",
            con.sess(),
            msgs,
            path.hb.interval_ms
        );
    }
    let mut act = HbAction::Reschedule;
    let mut missed = 0;
    // A receive completion may reset the count meanwhile: the tick then
    // runs again on the new count.
    let _ = path
        .hb_missed_cnt
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |cnt| {
            let (a, next) = path_state::hb_tick(cnt, path.hb.missed_max);
            act = a;
            missed = cnt;
            (a != HbAction::ErrHandler).then_some(next)
        });
    // The last heartbeat has gone unanswered for `missed` periods.
    if act != HbAction::Send && trace::on(trace::Kind::HbMiss) {
        trace::emit(&trace::Event::HbMiss {
            path: path.name().as_bytes(),
            missed,
            max: path.hb.missed_max,
        });
    }
    match act {
        HbAction::ErrHandler => {
            pr_err!("{}: HB missed max reached.\n", con.sess());
            con.error_recovery();
            return false;
        }
        HbAction::Reschedule => {}
        HbAction::Send => {
            path.hb_last_sent_ns
                .store(crate::ffi::misc::ktime_get_ns(), Ordering::Relaxed);
            path.hb_outstanding.store(true, Ordering::Release);
            if let Err(e) = con.post_imm_empty(imm::RTRS_HB_MSG_IMM_VAL) {
                // rtrs_clt_hb_err_handler, as C: the path recovers.
                pr_err!("{}: HB send failed, errno: {}\n", con.sess(), e.to_errno());
                con.error_recovery();
                return false;
            }
        }
    }
    true
}
