// SPDX-License-Identifier: GPL-2.0

//! Trace events, system `rtrs_clt` (bindings/rtrs_clt_trace.h): the C
//! client's `rtrs_clt_reconnect_work`, `rtrs_clt_close_conns` and
//! `rtrs_rdma_error_recovery` with its fields and output, and this module's
//! own state change, failover, connect, heartbeat miss, policy change and
//! port event. Any context.
//!
//! Callers build an event only when someone listens: [`on`] is a static-key
//! test, so a disabled event costs a call and a branch.

use crate::bindings;

/// Which event (`enum rtrs_rs_trace_ev`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    /// C's `rtrs_clt_reconnect_work`.
    ReconnectWork,
    /// C's `rtrs_clt_close_conns`.
    CloseConns,
    /// C's `rtrs_rdma_error_recovery`.
    ErrorRecovery,
    /// `rtrs_clt_state_change`.
    StateChange,
    /// `rtrs_clt_failover`.
    Failover,
    /// `rtrs_clt_connect`.
    Connect,
    /// `rtrs_clt_hb_miss`.
    HbMiss,
    /// `rtrs_clt_mp_policy`.
    MpPolicy,
    /// `rtrs_clt_port_event`.
    PortEvent,
}

impl Kind {
    fn raw(self) -> bindings::rtrs_rs_trace_ev {
        match self {
            Kind::ReconnectWork => bindings::rtrs_rs_trace_ev_RTRS_RS_TRACE_RECONNECT_WORK,
            Kind::CloseConns => bindings::rtrs_rs_trace_ev_RTRS_RS_TRACE_CLOSE_CONNS,
            Kind::ErrorRecovery => bindings::rtrs_rs_trace_ev_RTRS_RS_TRACE_ERROR_RECOVERY,
            Kind::StateChange => bindings::rtrs_rs_trace_ev_RTRS_RS_TRACE_STATE_CHANGE,
            Kind::Failover => bindings::rtrs_rs_trace_ev_RTRS_RS_TRACE_FAILOVER,
            Kind::Connect => bindings::rtrs_rs_trace_ev_RTRS_RS_TRACE_CONNECT,
            Kind::HbMiss => bindings::rtrs_rs_trace_ev_RTRS_RS_TRACE_HB_MISS,
            Kind::MpPolicy => bindings::rtrs_rs_trace_ev_RTRS_RS_TRACE_MP_POLICY,
            Kind::PortEvent => bindings::rtrs_rs_trace_ev_RTRS_RS_TRACE_PORT_EVENT,
        }
    }
}

/// The fields of C's `rtrs_clt_conn_class` for one path.
#[derive(Clone, Copy)]
pub(crate) struct ConnFields<'a> {
    /// The path's name ("src@dst", its sysfs directory).
    pub(crate) path: &'a [u8],
    /// `enum rtrs_clt_state` value.
    pub(crate) state: u8,
    pub(crate) reconnect_attempts: u32,
    pub(crate) max_reconnect_attempts: i32,
    pub(crate) fail_cnt: i32,
    pub(crate) success_cnt: i32,
}

/// One event and its fields.
pub(crate) enum Event<'a> {
    /// One of C's three (`kind` is ReconnectWork, CloseConns or ErrorRecovery).
    Conn(Kind, ConnFields<'a>),
    /// A path's state moved from `old` to `new` because of `reason`.
    StateChange {
        path: &'a [u8],
        old: u8,
        new: u8,
        reason: &'static str,
    },
    /// A request left path `from` for path `to` (empty and `err` < 0 if no
    /// path took it).
    Failover {
        sess: &'a [u8],
        from: &'a [u8],
        to: &'a [u8],
        err: i32,
    },
    /// A connection attempt of a path ended at `stage` (`err` 0: connected).
    Connect {
        path: &'a [u8],
        stage: &'static str,
        cid: u16,
        err: i32,
        reconnect_attempts: u32,
    },
    /// The path's heartbeat went unanswered `missed` times in a row.
    HbMiss {
        path: &'a [u8],
        missed: u32,
        max: u32,
    },
    /// The session's multipath policy changed.
    MpPolicy {
        sess: &'a [u8],
        old: &'static str,
        new: &'static str,
    },
    /// The path's device reported `event` on `port`; `state` is the path's
    /// state after the path reacted.
    Device {
        path: &'a [u8],
        event: &'static str,
        port: u32,
        state: u8,
    },
}

/// Whether anyone listens to `kind`. Any context.
pub(crate) fn on(kind: Kind) -> bool {
    bindings::rtrs_rs_trace_enabled(kind.raw())
}

fn s(b: &[u8]) -> bindings::rtrs_rs_trace_str {
    bindings::rtrs_rs_trace_str {
        p: b.as_ptr().cast(),
        len: u32::try_from(b.len()).unwrap_or(u32::MAX),
    }
}

/// Fires `ev`. Any context.
pub(crate) fn emit(ev: &Event<'_>) {
    let mut r = bindings::rtrs_rs_trace_rec::default();
    match *ev {
        Event::Conn(kind, f) => {
            r.ev = kind.raw();
            r.name = s(f.path);
            r.state = i32::from(f.state);
            r.reconnect_attempts = f.reconnect_attempts as i32;
            r.max_reconnect_attempts = f.max_reconnect_attempts;
            r.fail_cnt = f.fail_cnt;
            r.success_cnt = f.success_cnt;
        }
        Event::StateChange {
            path,
            old,
            new,
            reason,
        } => {
            r.ev = Kind::StateChange.raw();
            r.name = s(path);
            r.old_state = i32::from(old);
            r.state = i32::from(new);
            r.what = s(reason.as_bytes());
        }
        Event::Failover {
            sess,
            from,
            to,
            err,
        } => {
            r.ev = Kind::Failover.raw();
            r.name = s(sess);
            r.from = s(from);
            r.to = s(to);
            r.err = err;
        }
        Event::Connect {
            path,
            stage,
            cid,
            err,
            reconnect_attempts,
        } => {
            r.ev = Kind::Connect.raw();
            r.name = s(path);
            r.what = s(stage.as_bytes());
            r.cid = i32::from(cid);
            r.err = err;
            r.reconnect_attempts = reconnect_attempts as i32;
        }
        Event::HbMiss { path, missed, max } => {
            r.ev = Kind::HbMiss.raw();
            r.name = s(path);
            r.count = missed;
            r.max = max;
        }
        Event::MpPolicy { sess, old, new } => {
            r.ev = Kind::MpPolicy.raw();
            r.name = s(sess);
            r.from = s(old.as_bytes());
            r.to = s(new.as_bytes());
        }
        Event::Device {
            path,
            event,
            port,
            state,
        } => {
            r.ev = Kind::PortEvent.raw();
            r.name = s(path);
            r.what = s(event.as_bytes());
            r.count = port;
            r.state = i32::from(state);
        }
    }
    // SAFETY: `r` and the strings it points to are valid for the call; the
    // event copies what it keeps.
    unsafe { bindings::rtrs_rs_trace_emit(&r) };
}
