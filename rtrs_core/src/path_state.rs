// SPDX-License-Identifier: GPL-2.0

//! Path state machine and the bookkeeping around it, as pure logic.
//!
//! Mirrors `rtrs_clt_change_state` and friends (rtrs-clt.c), the reconnect
//! decisions of `rtrs_clt_reconnect_work` / `rtrs_clt_err_recovery_work`,
//! the heartbeat miss counter of `hb_work` (rtrs.c) and the session link
//! events of `rtrs_clt_path_up` / `rtrs_clt_path_down`. The functions are
//! pure: the caller makes each move atomic, under the lock C uses for the
//! same fields (`paths_ev_mutex`, ...) or, for the path state, by a
//! compare-and-swap of the old state it decided on.

use super::proto::RTRS_RECONNECT_SEED;

// ---------------------------------------------------------------------------
// States and transitions
// ---------------------------------------------------------------------------

/// `enum rtrs_clt_state`, with the C values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RtrsCltState {
    /// `RTRS_CLT_CONNECTING`; the initial state set by `alloc_path`.
    #[default]
    Connecting = 0,
    /// `RTRS_CLT_CONNECTING_ERR`.
    ConnectingErr = 1,
    /// `RTRS_CLT_RECONNECTING`.
    Reconnecting = 2,
    /// `RTRS_CLT_CONNECTED`.
    Connected = 3,
    /// `RTRS_CLT_CLOSING`.
    Closing = 4,
    /// `RTRS_CLT_CLOSED`.
    Closed = 5,
    /// `RTRS_CLT_DEAD`.
    Dead = 6,
}

impl RtrsCltState {
    #[cfg(test)]
    /// Every state, in C value order.
    pub const ALL: [RtrsCltState; 7] = [
        RtrsCltState::Connecting,
        RtrsCltState::ConnectingErr,
        RtrsCltState::Reconnecting,
        RtrsCltState::Connected,
        RtrsCltState::Closing,
        RtrsCltState::Closed,
        RtrsCltState::Dead,
    ];

    /// The state for a C enum value, if valid.
    pub const fn from_raw(v: u32) -> Option<Self> {
        Some(match v {
            0 => RtrsCltState::Connecting,
            1 => RtrsCltState::ConnectingErr,
            2 => RtrsCltState::Reconnecting,
            3 => RtrsCltState::Connected,
            4 => RtrsCltState::Closing,
            5 => RtrsCltState::Closed,
            6 => RtrsCltState::Dead,
            _ => return None,
        })
    }

    #[cfg(test)]
    /// The C enum value.
    pub const fn as_raw(self) -> u32 {
        self as u32
    }

    #[cfg(test)]
    /// The name the C tracepoints print for the state.
    pub const fn name(self) -> &'static str {
        match self {
            RtrsCltState::Connecting => "CONNECTING",
            RtrsCltState::ConnectingErr => "CONNECTING_ERR",
            RtrsCltState::Reconnecting => "RECONNECTING",
            RtrsCltState::Connected => "CONNECTED",
            RtrsCltState::Closing => "CLOSING",
            RtrsCltState::Closed => "CLOSED",
            RtrsCltState::Dead => "DEAD",
        }
    }

    /// Whether `rtrs_clt_change_state` lets a path in `self` move to `new`.
    ///
    /// A move to the same state is refused, as in C.
    pub const fn can_change_to(self, new: RtrsCltState) -> bool {
        use RtrsCltState::*;
        match new {
            Connecting => matches!(self, Reconnecting),
            ConnectingErr => matches!(self, Connecting),
            Reconnecting => matches!(self, Connected | ConnectingErr | Closed),
            Connected => matches!(self, Connecting),
            Closing => matches!(self, Connecting | ConnectingErr | Reconnecting | Connected),
            Closed => matches!(self, Closing),
            Dead => matches!(self, Closed),
        }
    }
}

/// `rtrs_clt_change_state`: moves `*cur` to `new` if the table allows it.
///
/// Returns whether the state changed; on `true` the caller wakes `state_wq`.
pub fn change_state(cur: &mut RtrsCltState, new: RtrsCltState) -> bool {
    let changed = cur.can_change_to(new);
    if changed {
        *cur = new;
    }
    changed
}

/// `rtrs_clt_change_state_from_to`: [`change_state`] only if `*cur == old`.
pub fn change_state_from_to(cur: &mut RtrsCltState, old: RtrsCltState, new: RtrsCltState) -> bool {
    *cur == old && change_state(cur, new)
}

/// `rtrs_clt_change_state_get_old`: [`change_state`], also returning the
/// state seen before the attempt.
pub fn change_state_get_old(cur: &mut RtrsCltState, new: RtrsCltState) -> (bool, RtrsCltState) {
    let old = *cur;
    (change_state(cur, new), old)
}

/// What `rtrs_rdma_error_recovery` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorRecovery {
    /// CONNECTED -> RECONNECTING: the caller queues `err_recovery_work`.
    Reconnecting,
    /// CONNECTING -> CONNECTING_ERR: the connecting thread will notice.
    ConnectingErr,
    /// Any other state: nothing changed.
    Nothing,
}

/// `rtrs_rdma_error_recovery`: the state move made on a path error.
pub fn rdma_error_recovery(cur: &mut RtrsCltState) -> ErrorRecovery {
    if change_state_from_to(cur, RtrsCltState::Connected, RtrsCltState::Reconnecting) {
        ErrorRecovery::Reconnecting
    } else if change_state_from_to(cur, RtrsCltState::Connecting, RtrsCltState::ConnectingErr) {
        ErrorRecovery::ConnectingErr
    } else {
        ErrorRecovery::Nothing
    }
}

// ---------------------------------------------------------------------------
// Reconnect
// ---------------------------------------------------------------------------

/// `rtrs_clt_set_max_reconnect_attempts`: the user's int (-1 = infinite,
/// 0 = none, N) as the `unsigned int` C stores; -1 becomes `u32::MAX`.
pub const fn max_reconnect_attempts_from_user(value: i32) -> u32 {
    value as u32
}

#[cfg(test)]
/// `rtrs_clt_get_max_reconnect_attempts`: the stored value read back as int.
pub const fn max_reconnect_attempts_to_user(stored: u32) -> i32 {
    stored as i32
}

/// `err_recovery_work` delay before `reconnect_dwork` runs, in ms:
/// `reconnect_delay_sec * 1000` plus `rand` reduced below
/// `RTRS_RECONNECT_SEED` (0..=7 **ms**, whatever the C comment says).
///
/// `rand` is any random `u32` (or a `get_random_u32_below(SEED)` result).
/// The arithmetic wraps in `u32` like C's; `rtrs_clt_open` takes the delay
/// as a `u8`, so it never does in practice.
pub const fn reconnect_delay_ms(reconnect_delay_sec: u32, rand: u32) -> u32 {
    reconnect_delay_sec
        .wrapping_mul(1000)
        .wrapping_add(rand % RTRS_RECONNECT_SEED)
}

/// What `rtrs_clt_reconnect_work` decided at its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReconnectDecision {
    /// The path is not RECONNECTING: return without doing anything.
    NotReconnecting,
    /// `reconnect_attempts >= max_reconnect_attempts`: call
    /// `rtrs_clt_close_conns` (the path ends CLOSED) and stop.
    GiveUp,
    /// The attempt was counted: sleep `RTRS_RECONNECT_BACKOFF`, then try
    /// RECONNECTING -> CONNECTING and `init_path`.
    Attempt,
}

/// What a sysfs `reconnect` write (`rtrs_clt_reconnect_from_sysfs`) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SysfsReconnect {
    /// Moved to RECONNECTING and reset the attempts: the caller stops and
    /// destroys the connections, queues `reconnect_dwork` at once and
    /// flushes it; the result is 0 if CONNECTED afterwards, else -ENOTCONN.
    Started,
    /// Already RECONNECTING: the caller only flushes `reconnect_dwork`,
    /// then answers as for [`SysfsReconnect::Started`].
    Flush,
    /// Any other state: -EBUSY.
    Busy,
}

/// Per-path reconnect and link bookkeeping: the fields of
/// `struct rtrs_clt_path` that the reconnect and link-event logic touches.
/// (The successful and failed reconnect counts are statistics, kept with
/// the path's other counters.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RtrsCltPathLink {
    /// `established`: the path is counted in the session's `paths_up`.
    pub established: bool,
    /// `reconnect_attempts` (`unsigned int`; -1 is `u32::MAX`).
    pub reconnect_attempts: u32,
}

impl RtrsCltPathLink {
    /// A fresh path, as after `alloc_path`.
    pub const fn new() -> Self {
        Self {
            established: false,
            reconnect_attempts: 0,
        }
    }

    /// Start of `rtrs_clt_reconnect_work` with the path in `state` and the
    /// session's stored `max_reconnect_attempts` (see
    /// [`max_reconnect_attempts_from_user`]). Counts the attempt on
    /// [`ReconnectDecision::Attempt`].
    ///
    /// The comparison is unsigned as in C: `max` 0 never tries, N tries N
    /// times, `u32::MAX` (-1) is effectively unlimited.
    pub fn reconnect_work(
        &mut self,
        state: RtrsCltState,
        max_reconnect_attempts: u32,
    ) -> ReconnectDecision {
        if state != RtrsCltState::Reconnecting {
            return ReconnectDecision::NotReconnecting;
        }
        if self.reconnect_attempts >= max_reconnect_attempts {
            return ReconnectDecision::GiveUp;
        }
        // reconnect_attempts < max <= u32::MAX, so this never saturates.
        self.reconnect_attempts = self.reconnect_attempts.saturating_add(1);
        ReconnectDecision::Attempt
    }

    /// The server's queue depth changed on a reconnect: C sets
    /// `reconnect_attempts = -1`, so the next reconnect work gives up and
    /// only a sysfs `reconnect` revives the path.
    pub fn disable_auto_reconnect(&mut self) {
        self.reconnect_attempts = u32::MAX;
    }

    /// A sysfs `reconnect` started one ([`SysfsReconnect::Started`]): a
    /// fresh count, which also overrides a disabled auto-reconnect.
    pub fn sysfs_reconnect_started(&mut self) {
        self.reconnect_attempts = 0;
    }
}

/// A connect attempt failed (`init_conns`, `rtrs_send_path_info`, any
/// stage): CONNECTING_ERR, the one state a failed attempt may leave, since
/// [`reconnect_failed`] cannot take a path out of CONNECTING. Refused if
/// the path is no longer CONNECTING (closed meanwhile). Returns whether it
/// moved.
pub fn connect_failed(state: &mut RtrsCltState) -> bool {
    change_state(state, RtrsCltState::ConnectingErr)
}

/// `reconnect_again` in `rtrs_clt_reconnect_work`, after `init_path`
/// failed: back to RECONNECTING (refused if the path is CLOSING now).
/// Returns whether the caller counts a failed reconnect and queues
/// `err_recovery_work`.
pub fn reconnect_failed(state: &mut RtrsCltState) -> bool {
    change_state(state, RtrsCltState::Reconnecting)
}

/// The state move of `rtrs_clt_reconnect_from_sysfs`; on
/// [`SysfsReconnect::Started`] the caller also calls
/// [`RtrsCltPathLink::sysfs_reconnect_started`].
pub fn sysfs_reconnect(state: &mut RtrsCltState) -> SysfsReconnect {
    let (changed, old) = change_state_get_old(state, RtrsCltState::Reconnecting);
    if changed {
        SysfsReconnect::Started
    } else if old == RtrsCltState::Reconnecting {
        SysfsReconnect::Flush
    } else {
        SysfsReconnect::Busy
    }
}

// ---------------------------------------------------------------------------
// Session link events
// ---------------------------------------------------------------------------

/// `enum rtrs_clt_link_ev`, with the C values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtrsCltLinkEv {
    /// `RTRS_CLT_LINK_EV_RECONNECTED`.
    Reconnected = 0,
    /// `RTRS_CLT_LINK_EV_DISCONNECTED`.
    Disconnected = 1,
}

/// `rtrs_clt_path_down` found the session's count at 0 already (C WARNs
/// and goes to -1; here the count stays at 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathsUpUnderflow;

/// The session's `paths_up` counter (guarded by `paths_ev_mutex`).
///
/// Unlike C, which starts it at `MAX_PATHS_NUM` and rebases it once all the
/// paths given to `rtrs_clt_open` are up (so that a path dropping during
/// open loses every later DISCONNECTED and RECONNECTED), the count is
/// exact from the start; while the session opens ([`RtrsCltPathsUp::opening`]
/// until [`RtrsCltPathsUp::opened`]) paths are counted without events. No
/// event is lost, and none fires during open, as in C.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtrsCltPathsUp {
    paths_up: u32,
    opening: bool,
}

impl RtrsCltPathsUp {
    /// A session being opened: no events yet.
    pub const fn opening() -> Self {
        Self {
            paths_up: 0,
            opening: true,
        }
    }

    /// `rtrs_clt_open` returns: events from now on.
    pub fn opened(&mut self) {
        self.opening = false;
    }

    #[cfg(test)]
    /// The count (`clt->paths_up`).
    pub const fn paths_up(&self) -> u32 {
        self.paths_up
    }

    /// `rtrs_clt_path_up`: marks the path established, resets its
    /// reconnect attempts; RECONNECTED when it is the first one up.
    pub fn path_up(&mut self, path: &mut RtrsCltPathLink) -> Option<RtrsCltLinkEv> {
        path.established = true;
        path.reconnect_attempts = 0;
        self.paths_up = self.paths_up.saturating_add(1);
        (self.paths_up == 1 && !self.opening).then_some(RtrsCltLinkEv::Reconnected)
    }

    /// `rtrs_clt_path_down`: only an established path counts; DISCONNECTED
    /// when it was the last one up.
    pub fn path_down(
        &mut self,
        path: &mut RtrsCltPathLink,
    ) -> Result<Option<RtrsCltLinkEv>, PathsUpUnderflow> {
        if !path.established {
            return Ok(None);
        }
        path.established = false;
        if self.paths_up == 0 {
            return Err(PathsUpUnderflow);
        }
        self.paths_up -= 1;
        Ok((self.paths_up == 0 && !self.opening).then_some(RtrsCltLinkEv::Disconnected))
    }
}

// ---------------------------------------------------------------------------
// Heartbeat
// ---------------------------------------------------------------------------

/// What one run of `hb_work` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HbAction {
    /// `hb_missed_cnt > hb_missed_max`: call the error handler (path goes to
    /// RECONNECTING) and do not reschedule.
    ErrHandler,
    /// A heartbeat is still unanswered: reschedule without sending.
    Reschedule,
    /// Set `hb_last_sent`, post HB_MSG, reschedule (a post failure calls
    /// the error handler instead).
    Send,
}

/// One run of `hb_work` on the path's `hb_missed_cnt`: what to do, and the
/// new count. Any receive completion (IO response, HB_MSG, HB_ACK) and
/// `rtrs_stop_hb` set the count to 0. With a silent peer and the client's
/// maximum of 5, the error handler runs on the 7th tick after the last
/// reception; it leaves the count as it is (the work is not rescheduled).
pub const fn hb_tick(hb_missed_cnt: u32, hb_missed_max: u32) -> (HbAction, u32) {
    if hb_missed_cnt > hb_missed_max {
        (HbAction::ErrHandler, hb_missed_cnt)
    } else if hb_missed_cnt != 0 {
        (HbAction::Reschedule, hb_missed_cnt.wrapping_add(1))
    } else {
        (HbAction::Send, 1)
    }
}

/// `hb_cur_latency` on HB_ACK: `now - hb_last_sent` in ns (`ktime_sub`).
pub const fn hb_cur_latency(now_ns: i64, hb_last_sent_ns: i64) -> i64 {
    now_ns.wrapping_sub(hb_last_sent_ns)
}

/// An HB_ACK: the round trip of the heartbeat it answers, or `None` when
/// none was outstanding (`hb_outstanding`: set by a send, cleared by the
/// first ack). Beyond C, which takes any ack: one nobody asked for would set
/// `cur_latency`, which min-latency picks paths by, to the time since the
/// last heartbeat; it is ignored and logged instead.
pub const fn hb_ack_latency(
    hb_outstanding: bool,
    now_ns: i64,
    hb_last_sent_ns: i64,
) -> Option<i64> {
    if hb_outstanding {
        Some(hb_cur_latency(now_ns, hb_last_sent_ns))
    } else {
        None
    }
}

/// HB_MSGs from the peer in one heartbeat interval of this path above
/// which they are logged as a flood. A server sends one per its own
/// interval (seconds) and this interval is at least 100 ms: a handful is
/// normal. Each is still acknowledged, as C does.
pub const HB_FLOOD_MIN: u32 = 64;

/// Whether `hb_msgs` HB_MSGs received in one interval are a flood.
pub const fn hb_flood(hb_msgs: u32) -> bool {
    hb_msgs > HB_FLOOD_MIN
}

/// The heartbeat's period and how many replies may go missing before the
/// path recovers: C's fixed `RTRS_HB_INTERVAL_MS` and `RTRS_HB_MISSED_MAX`
/// by default, tunable here at module load (a silent peer is found after
/// about `interval_ms * (missed_max + 1)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HbParams {
    pub interval_ms: u32,
    pub missed_max: u32,
}

/// Bounds of [`HbParams`]: faster than 100 ms would load the link, slower
/// than a minute or more than 100 misses would hide a dead path for hours.
pub const HB_INTERVAL_MS_MIN: u32 = 100;
pub const HB_INTERVAL_MS_MAX: u32 = 60_000;
pub const HB_MISSED_MAX_MIN: u32 = 1;
pub const HB_MISSED_MAX_MAX: u32 = 100;

impl Default for HbParams {
    fn default() -> Self {
        Self {
            interval_ms: super::proto::RTRS_HB_INTERVAL_MS,
            missed_max: super::proto::RTRS_HB_MISSED_MAX,
        }
    }
}

/// Why module parameters were refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HbParamError {
    /// `hb_interval_ms` outside `HB_INTERVAL_MS_MIN..=HB_INTERVAL_MS_MAX`.
    Interval(u32),
    /// `hb_missed_max` outside `HB_MISSED_MAX_MIN..=HB_MISSED_MAX_MAX`.
    MissedMax(u32),
}

impl HbParams {
    /// The parameters from the module's `hb_interval_ms` and
    /// `hb_missed_max`, checked (the module refuses to load with -EINVAL).
    pub const fn new(interval_ms: u32, missed_max: u32) -> Result<Self, HbParamError> {
        if interval_ms < HB_INTERVAL_MS_MIN || interval_ms > HB_INTERVAL_MS_MAX {
            return Err(HbParamError::Interval(interval_ms));
        }
        if missed_max < HB_MISSED_MAX_MIN || missed_max > HB_MISSED_MAX_MAX {
            return Err(HbParamError::MissedMax(missed_max));
        }
        Ok(Self {
            interval_ms,
            missed_max,
        })
    }

    /// The longest a silent peer goes unnoticed, in ms: the misses allowed,
    /// one more tick to see the last, and up to a period before the first.
    pub const fn detect_ms(&self) -> u64 {
        (self.missed_max as u64 + 2) * self.interval_ms as u64
    }
}

// ---------------------------------------------------------------------------
// Device and port events (not in C, which only logs them)
// ---------------------------------------------------------------------------

/// An asynchronous event of a connected path's device (`enum ib_event_type`,
/// the kinds a path cares about).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DevEventKind {
    /// `IB_EVENT_PORT_ERR`: the port went down (link lost).
    PortErr,
    /// `IB_EVENT_PORT_ACTIVE`: the port came up.
    PortActive,
    /// `IB_EVENT_GID_CHANGE`: the port's GID table changed.
    GidChange,
    /// `IB_EVENT_DEVICE_FATAL`: the device is unusable.
    DeviceFatal,
    /// Anything else.
    Other,
}

impl DevEventKind {
    /// The name the `rtrs_clt_port_event` trace event prints.
    pub const fn name(self) -> &'static str {
        match self {
            DevEventKind::PortErr => "port_err",
            DevEventKind::PortActive => "port_active",
            DevEventKind::GidChange => "gid_change",
            DevEventKind::DeviceFatal => "device_fatal",
            DevEventKind::Other => "other",
        }
    }
}

/// What a connected path does about a device event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DevEventAction {
    /// Start error recovery now, as a failed completion would (the path
    /// leaves CONNECTED at once instead of when the heartbeat or the RC
    /// retry timeout notices).
    Recover,
    /// Nothing to do.
    Ignore,
}

/// The decision on `kind` reported for `event_port` of the device of a
/// path connected through `path_port`. `src_gid_present` tells whether the
/// path's source GID is still in the port's table; it is asked only for
/// a GID change on the path's port.
///
/// The device going fatal and the path's port going down end the path.
/// A GID change ends it only if its own source GID is gone (adding or
/// removing other addresses leaves it alone). PORT_ACTIVE needs nothing of
/// a connected path.
pub fn dev_event_action(
    kind: DevEventKind,
    event_port: u32,
    path_port: u32,
    src_gid_present: impl FnOnce() -> bool,
) -> DevEventAction {
    match kind {
        DevEventKind::DeviceFatal => DevEventAction::Recover,
        DevEventKind::PortErr if event_port == path_port => DevEventAction::Recover,
        DevEventKind::GidChange if event_port == path_port && !src_gid_present() => {
            DevEventAction::Recover
        }
        _ => DevEventAction::Ignore,
    }
}

// ---------------------------------------------------------------------------
// Trace reasons (not in C)
// ---------------------------------------------------------------------------

/// Why a path's state moved: the `reason` of the `rtrs_clt_state_change`
/// trace event. Each names the step that asked for the move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateReason {
    /// A reconnect attempt starts (`rtrs_clt_reconnect_work`).
    Reconnect,
    /// Every connection and the INFO exchange are done (`init_path`).
    Connected,
    /// Setting up a connection or the INFO exchange failed.
    ConnectFailed,
    /// An error on a connection (`rtrs_rdma_error_recovery`).
    ErrorRecovery,
    /// The device reported a port or GID event on the path's port.
    PortEvent,
    /// A reconnect attempt failed (`reconnect_again`).
    ReconnectFailed,
    /// A write to the path's `reconnect` file.
    SysfsReconnect,
    /// The path closes (`rtrs_clt_close_conns`).
    Close,
    /// The close work finished.
    Closed,
    /// The path is removed from its session (`remove_path`).
    Removed,
}

impl StateReason {
    /// The name the trace event prints.
    pub const fn name(self) -> &'static str {
        match self {
            StateReason::Reconnect => "reconnect",
            StateReason::Connected => "connected",
            StateReason::ConnectFailed => "connect_failed",
            StateReason::ErrorRecovery => "error_recovery",
            StateReason::PortEvent => "port_event",
            StateReason::ReconnectFailed => "reconnect_failed",
            StateReason::SysfsReconnect => "sysfs_reconnect",
            StateReason::Close => "close",
            StateReason::Closed => "closed",
            StateReason::Removed => "removed",
        }
    }
}

/// How far a connection attempt of a path got: the `stage` of the
/// `rtrs_clt_connect` trace event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectStage {
    /// Creating a connection's cm id, resolving and connecting it
    /// (`create_cm`), up to ESTABLISHED.
    CreateCm,
    /// The INFO_REQ/INFO_RSP exchange (`rtrs_send_path_info`).
    PathInfo,
    /// Allocating the request slots (`alloc_path_reqs`).
    AllocReqs,
    /// All done: the path is CONNECTED.
    Done,
}

impl ConnectStage {
    /// The name the trace event prints.
    pub const fn name(self) -> &'static str {
        match self {
            ConnectStage::CreateCm => "create_cm",
            ConnectStage::PathInfo => "path_info",
            ConnectStage::AllocReqs => "alloc_reqs",
            ConnectStage::Done => "done",
        }
    }
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::super::proto::RTRS_HB_MISSED_MAX;
    use super::*;
    use RtrsCltState::*;

    #[test]
    fn dev_event_decisions() {
        use DevEventAction::{Ignore, Recover};
        use DevEventKind::*;
        let never = || -> bool { panic!("GID looked up") };
        assert_eq!(dev_event_action(PortErr, 1, 1, never), Recover);
        assert_eq!(dev_event_action(PortErr, 2, 1, never), Ignore);
        assert_eq!(dev_event_action(DeviceFatal, 0, 1, never), Recover);
        assert_eq!(dev_event_action(PortActive, 1, 1, never), Ignore);
        assert_eq!(dev_event_action(Other, 1, 1, never), Ignore);
        assert_eq!(dev_event_action(GidChange, 1, 1, || false), Recover);
        assert_eq!(dev_event_action(GidChange, 1, 1, || true), Ignore);
        assert_eq!(dev_event_action(GidChange, 2, 1, never), Ignore);
        let kinds = [PortErr, PortActive, GidChange, DeviceFatal, Other];
        for (i, k) in kinds.iter().enumerate() {
            assert!(k
                .name()
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'_'));
            assert!(!kinds[..i].iter().any(|o| o.name() == k.name()));
        }
    }

    #[test]
    fn trace_names_are_distinct_words() {
        use StateReason as R;
        let reasons = [
            R::Reconnect,
            R::Connected,
            R::ConnectFailed,
            R::ErrorRecovery,
            R::PortEvent,
            R::ReconnectFailed,
            R::SysfsReconnect,
            R::Close,
            R::Closed,
            R::Removed,
        ];
        let stages = [
            ConnectStage::CreateCm,
            ConnectStage::PathInfo,
            ConnectStage::AllocReqs,
            ConnectStage::Done,
        ];
        let names: Vec<&str> = reasons
            .iter()
            .map(|r| r.name())
            .chain(stages.iter().map(|s| s.name()))
            .collect();
        for (i, n) in names.iter().enumerate() {
            assert!(!n.is_empty());
            assert!(
                n.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{n}"
            );
            assert!(!names[..i].contains(n), "{n} twice");
        }
    }

    #[test]
    fn hb_ack_outstanding_only() {
        assert_eq!(hb_ack_latency(true, 1_500, 1_000), Some(500));
        assert_eq!(hb_ack_latency(false, 1_500, 1_000), None);
        assert!(!hb_flood(0) && !hb_flood(HB_FLOOD_MIN));
        assert!(hb_flood(HB_FLOOD_MIN + 1) && hb_flood(u32::MAX));
    }

    #[test]
    fn hb_params_bounds() {
        let d = HbParams::default();
        assert_eq!((d.interval_ms, d.missed_max), (5000, 5));
        assert_eq!(HbParams::new(5000, 5), Ok(d));
        assert_eq!(d.detect_ms(), 35_000);
        assert_eq!(HbParams::new(1000, 3).map(|p| p.detect_ms()), Ok(5_000));
        assert!(HbParams::new(100, 1).is_ok());
        assert!(HbParams::new(60_000, 100).is_ok());
        assert_eq!(HbParams::new(99, 3), Err(HbParamError::Interval(99)));
        assert_eq!(HbParams::new(0, 3), Err(HbParamError::Interval(0)));
        assert_eq!(
            HbParams::new(60_001, 3),
            Err(HbParamError::Interval(60_001))
        );
        assert_eq!(HbParams::new(1000, 0), Err(HbParamError::MissedMax(0)));
        assert_eq!(HbParams::new(1000, 101), Err(HbParamError::MissedMax(101)));
        assert_eq!(
            HbParams::new(u32::MAX, u32::MAX),
            Err(HbParamError::Interval(u32::MAX))
        );
    }

    /// The C table, written out independently of `can_change_to`.
    fn c_allows(old: RtrsCltState, new: RtrsCltState) -> bool {
        let allowed: &[RtrsCltState] = match new {
            Connecting => &[Reconnecting],
            ConnectingErr => &[Connecting],
            Reconnecting => &[Connected, ConnectingErr, Closed],
            Connected => &[Connecting],
            Closing => &[Connecting, ConnectingErr, Reconnecting, Connected],
            Closed => &[Closing],
            Dead => &[Closed],
        };
        allowed.contains(&old)
    }

    #[test]
    fn raw_values_and_names() {
        for (i, s) in RtrsCltState::ALL.iter().enumerate() {
            assert_eq!(s.as_raw() as usize, i);
            assert_eq!(RtrsCltState::from_raw(i as u32), Some(*s));
        }
        assert_eq!(RtrsCltState::from_raw(7), None);
        assert_eq!(RtrsCltState::from_raw(u32::MAX), None);
        assert_eq!(RtrsCltState::default(), Connecting);
        assert_eq!(ConnectingErr.name(), "CONNECTING_ERR");
        assert_eq!(Dead.name(), "DEAD");
    }

    #[test]
    fn full_transition_table() {
        let mut allowed = 0;
        for old in RtrsCltState::ALL {
            for new in RtrsCltState::ALL {
                let want = c_allows(old, new);
                assert_eq!(old.can_change_to(new), want, "{old:?} -> {new:?}");
                let mut cur = old;
                assert_eq!(change_state(&mut cur, new), want, "{old:?} -> {new:?}");
                assert_eq!(cur, if want { new } else { old });
                let mut cur = old;
                assert_eq!(change_state_get_old(&mut cur, new), (want, old));
                if want {
                    allowed += 1;
                }
            }
        }
        assert_eq!(allowed, 12);
        // No self-transition is allowed.
        for s in RtrsCltState::ALL {
            assert!(!s.can_change_to(s));
        }
    }

    #[test]
    fn from_to_requires_matching_old() {
        for cur0 in RtrsCltState::ALL {
            for old in RtrsCltState::ALL {
                for new in RtrsCltState::ALL {
                    let mut cur = cur0;
                    let want = cur0 == old && c_allows(old, new);
                    assert_eq!(change_state_from_to(&mut cur, old, new), want);
                    assert_eq!(cur, if want { new } else { cur0 });
                }
            }
        }
    }

    #[test]
    fn error_recovery() {
        for s in RtrsCltState::ALL {
            let mut cur = s;
            let r = rdma_error_recovery(&mut cur);
            match s {
                Connected => assert_eq!((r, cur), (ErrorRecovery::Reconnecting, Reconnecting)),
                Connecting => assert_eq!((r, cur), (ErrorRecovery::ConnectingErr, ConnectingErr)),
                _ => assert_eq!((r, cur), (ErrorRecovery::Nothing, s)),
            }
        }
    }

    #[test]
    fn full_lifecycle() {
        let mut st = RtrsCltState::default();
        assert!(change_state(&mut st, Connected));
        assert!(change_state(&mut st, Reconnecting));
        assert!(change_state(&mut st, Connecting));
        assert!(change_state(&mut st, ConnectingErr));
        assert!(change_state(&mut st, Reconnecting));
        assert!(change_state(&mut st, Closing));
        assert!(!change_state(&mut st, Dead));
        assert!(change_state(&mut st, Closed));
        assert!(change_state(&mut st, Reconnecting)); // sysfs revive
        assert!(change_state(&mut st, Closing));
        assert!(change_state(&mut st, Closed));
        assert!(change_state(&mut st, Dead));
        for s in RtrsCltState::ALL {
            assert!(!change_state(&mut st, s));
        }
    }

    #[test]
    fn max_reconnect_attempts_conversions() {
        assert_eq!(max_reconnect_attempts_from_user(-1), u32::MAX);
        assert_eq!(max_reconnect_attempts_from_user(0), 0);
        assert_eq!(max_reconnect_attempts_from_user(9999), 9999);
        for v in [-1, 0, 1, 2, 9999] {
            assert_eq!(
                max_reconnect_attempts_to_user(max_reconnect_attempts_from_user(v)),
                v
            );
        }
        // rtrs_clt_open takes an s16: -1 sign-extends the same way.
        assert_eq!(max_reconnect_attempts_from_user(i32::from(-1i16)), u32::MAX);
    }

    /// Runs reconnect work until it gives up (or `limit` attempts), every
    /// attempt failing; returns the number of attempts made.
    fn attempts_until_give_up(max_user: i32, limit: u32) -> (u32, RtrsCltState) {
        let max = max_reconnect_attempts_from_user(max_user);
        let mut link = RtrsCltPathLink::new();
        let mut st = Connected;
        assert_eq!(rdma_error_recovery(&mut st), ErrorRecovery::Reconnecting);
        let mut n = 0;
        loop {
            match link.reconnect_work(st, max) {
                ReconnectDecision::GiveUp => {
                    assert!(change_state(&mut st, Closing));
                    assert!(change_state(&mut st, Closed));
                    return (n, st);
                }
                ReconnectDecision::Attempt => {
                    n += 1;
                    assert_eq!(link.reconnect_attempts, n);
                    assert!(change_state(&mut st, Connecting));
                    assert!(change_state(&mut st, ConnectingErr)); // init_path failed
                    assert!(reconnect_failed(&mut st));
                    assert_eq!(st, Reconnecting);
                    if n >= limit {
                        return (n, st);
                    }
                }
                ReconnectDecision::NotReconnecting => unreachable!(),
            }
        }
    }

    #[test]
    fn reconnect_give_up() {
        assert_eq!(attempts_until_give_up(0, 1000), (0, Closed));
        assert_eq!(attempts_until_give_up(1, 1000), (1, Closed));
        assert_eq!(attempts_until_give_up(2, 1000), (2, Closed));
        assert_eq!(attempts_until_give_up(7, 1000), (7, Closed));
        assert_eq!(attempts_until_give_up(9999, 100_000), (9999, Closed));
        // -1: still trying after many failures.
        assert_eq!(attempts_until_give_up(-1, 5000), (5000, Reconnecting));
    }

    #[test]
    fn reconnect_work_edges() {
        let mut link = RtrsCltPathLink::new();
        for s in RtrsCltState::ALL {
            if s != Reconnecting {
                assert_eq!(
                    link.reconnect_work(s, u32::MAX),
                    ReconnectDecision::NotReconnecting
                );
            }
        }
        assert_eq!(link.reconnect_attempts, 0);
        // Near the top of the unsigned range.
        link.reconnect_attempts = u32::MAX - 1;
        assert_eq!(
            link.reconnect_work(Reconnecting, u32::MAX),
            ReconnectDecision::Attempt
        );
        assert_eq!(link.reconnect_attempts, u32::MAX);
        assert_eq!(
            link.reconnect_work(Reconnecting, u32::MAX),
            ReconnectDecision::GiveUp
        );
        // Queue depth changed: even "infinite" gives up next time.
        let mut link = RtrsCltPathLink::new();
        link.disable_auto_reconnect();
        assert_eq!(
            link.reconnect_work(Reconnecting, u32::MAX),
            ReconnectDecision::GiveUp
        );
        // A successful path_up resets the attempts, opening or not.
        let mut up = RtrsCltPathsUp::opening();
        link.reconnect_attempts = 3;
        up.path_up(&mut link);
        assert_eq!(link.reconnect_attempts, 0);
        up.opened();
        link.reconnect_attempts = 3;
        up.path_up(&mut link);
        assert_eq!(link.reconnect_attempts, 0);
        // A sysfs reconnect overrides a disabled auto-reconnect.
        link.disable_auto_reconnect();
        link.sysfs_reconnect_started();
        assert_eq!(
            link.reconnect_work(Reconnecting, 2),
            ReconnectDecision::Attempt
        );
    }

    #[test]
    fn reconnect_failed_refused_when_closing() {
        let mut st = Closing;
        assert!(!reconnect_failed(&mut st));
        assert_eq!(st, Closing);
        // After a failed init_path the path is CONNECTING_ERR (or CLOSED by
        // a close meanwhile): it goes back to RECONNECTING as the table says.
        for s in RtrsCltState::ALL {
            let mut st = s;
            let moved = reconnect_failed(&mut st);
            assert_eq!(moved, s.can_change_to(Reconnecting), "{s:?}");
            assert_eq!(st, if moved { Reconnecting } else { s });
        }
        let mut st = ConnectingErr;
        assert!(reconnect_failed(&mut st));
    }

    #[test]
    fn failed_connect_goes_through_connecting_err() {
        // Left CONNECTING, a failed attempt could not be retried: the
        // reconnect work cannot requeue it and a sysfs reconnect is -EBUSY.
        let mut st = Connecting;
        assert!(!reconnect_failed(&mut st));
        assert_eq!(sysfs_reconnect(&mut st), SysfsReconnect::Busy);
        // Through CONNECTING_ERR both work.
        let mut st = Connecting;
        assert!(connect_failed(&mut st));
        assert_eq!(st, ConnectingErr);
        assert!(reconnect_failed(&mut st));
        assert_eq!(st, Reconnecting);
        let mut st = ConnectingErr;
        assert_eq!(sysfs_reconnect(&mut st), SysfsReconnect::Started);
        // Only from CONNECTING: a close meanwhile wins.
        for s in RtrsCltState::ALL {
            let mut st = s;
            assert_eq!(connect_failed(&mut st), s == Connecting, "{s:?}");
            assert_eq!(st, if s == Connecting { ConnectingErr } else { s });
        }
    }

    #[test]
    fn sysfs_reconnect_moves() {
        for s in RtrsCltState::ALL {
            let mut st = s;
            let r = sysfs_reconnect(&mut st);
            match s {
                Connected | ConnectingErr | Closed => {
                    assert_eq!((r, st), (SysfsReconnect::Started, Reconnecting));
                }
                Reconnecting => assert_eq!((r, st), (SysfsReconnect::Flush, s)),
                _ => assert_eq!((r, st), (SysfsReconnect::Busy, s)),
            }
            // Pure: the module may run it again after a race.
            let mut again = s;
            assert_eq!(sysfs_reconnect(&mut again), r);
        }
    }

    #[test]
    fn reconnect_delays() {
        assert_eq!(RTRS_RECONNECT_SEED, 8);
        assert_eq!(super::super::proto::RTRS_RECONNECT_BACKOFF, 1000);
        for sec in [0u32, 1, 30, 255] {
            let mut x = 0x1234_5678u32;
            for _ in 0..1000 {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let d = reconnect_delay_ms(sec, x);
                assert!(d >= sec * 1000 && d < sec * 1000 + 8, "{sec} {d}");
            }
            assert_eq!(reconnect_delay_ms(sec, 0), sec * 1000);
            assert_eq!(reconnect_delay_ms(sec, 7), sec * 1000 + 7);
            assert_eq!(reconnect_delay_ms(sec, 8), sec * 1000);
            assert_eq!(reconnect_delay_ms(sec, u32::MAX), sec * 1000 + 7);
        }
        // Wraps like C's unsigned arithmetic rather than panicking.
        assert_eq!(reconnect_delay_ms(u32::MAX, 0), u32::MAX.wrapping_mul(1000));
    }

    /// Ticks from `cnt`, as `hb_work` would run them: the actions, and the
    /// count after them.
    fn ticks(mut cnt: u32, max: u32, n: usize) -> (std::vec::Vec<HbAction>, u32) {
        let mut v = std::vec::Vec::new();
        for _ in 0..n {
            let (a, next) = hb_tick(cnt, max);
            v.push(a);
            cnt = next;
        }
        (v, cnt)
    }

    #[test]
    fn hb_silent_peer_detected_on_7th_tick() {
        use HbAction::*;
        let (actions, cnt) = ticks(0, RTRS_HB_MISSED_MAX, 7);
        assert_eq!(
            actions,
            [Send, Reschedule, Reschedule, Reschedule, Reschedule, Reschedule, ErrHandler]
        );
        assert_eq!(cnt, 6);
        // The work is not rescheduled, but repeated calls stay in error.
        assert_eq!(hb_tick(cnt, RTRS_HB_MISSED_MAX), (ErrHandler, 6));
    }

    #[test]
    fn hb_live_peer_sends_every_tick() {
        // Each HB_ACK (any receive) sets the count back to 0.
        for _ in 0..100 {
            assert_eq!(hb_tick(0, RTRS_HB_MISSED_MAX), (HbAction::Send, 1));
        }
    }

    #[test]
    fn hb_reset_by_any_traffic() {
        let (_, cnt) = ticks(0, RTRS_HB_MISSED_MAX, 6);
        assert_eq!(cnt, 6);
        // An IO response (or rtrs_stop_hb on a reconnect) resets it: the
        // same limit applies again.
        let (actions, _) = ticks(0, RTRS_HB_MISSED_MAX, 7);
        assert_eq!(actions.first(), Some(&HbAction::Send));
        assert_eq!(actions.last(), Some(&HbAction::ErrHandler));
    }

    #[test]
    fn hb_edge_maxima() {
        use HbAction::*;
        assert_eq!(ticks(0, 0, 2).0, [Send, ErrHandler]);
        let (actions, cnt) = ticks(0, u32::MAX, 10);
        assert!(!actions.contains(&ErrHandler));
        assert_eq!(cnt, 10);
        // At u32::MAX the count wraps, as C's unsigned one does.
        assert_eq!(hb_tick(u32::MAX, u32::MAX), (Reschedule, 0));
        assert_eq!(hb_cur_latency(1_000, 400), 600);
        assert_eq!(hb_cur_latency(i64::MIN, 1), i64::MAX);
    }

    #[test]
    fn link_events_open_then_flap() {
        // rtrs_clt_open: the paths come up while the session opens; no
        // events, and the count is exact when it has opened.
        let mut p = [RtrsCltPathLink::new(); 3];
        let mut up = RtrsCltPathsUp::opening();
        for l in p.iter_mut() {
            assert_eq!(up.path_up(l), None);
            assert!(l.established);
        }
        up.opened();
        assert_eq!(up.paths_up(), 3);
        assert_eq!(up.path_down(&mut p[0]), Ok(None));
        assert_eq!(up.path_down(&mut p[1]), Ok(None));
        // Not established: ignored.
        assert_eq!(up.path_down(&mut p[1]), Ok(None));
        assert_eq!(up.paths_up(), 1);
        assert_eq!(
            up.path_down(&mut p[2]),
            Ok(Some(RtrsCltLinkEv::Disconnected))
        );
        assert_eq!(up.paths_up(), 0);
        assert_eq!(up.path_up(&mut p[1]), Some(RtrsCltLinkEv::Reconnected));
        assert_eq!(up.path_up(&mut p[0]), None);
        assert_eq!(up.path_down(&mut p[0]), Ok(None));
        assert_eq!(
            up.path_down(&mut p[1]),
            Ok(Some(RtrsCltLinkEv::Disconnected))
        );
    }

    #[test]
    fn link_events_single_path_and_close() {
        let mut p = RtrsCltPathLink::new();
        let mut up = RtrsCltPathsUp::opening();
        assert_eq!(up.path_up(&mut p), None);
        up.opened();
        assert_eq!(up.paths_up(), 1);
        for _ in 0..3 {
            assert_eq!(up.path_down(&mut p), Ok(Some(RtrsCltLinkEv::Disconnected)));
            assert_eq!(up.path_up(&mut p), Some(RtrsCltLinkEv::Reconnected));
        }
        // rtrs_clt_close also fires DISCONNECTED for the last one.
        assert_eq!(up.path_down(&mut p), Ok(Some(RtrsCltLinkEv::Disconnected)));
    }

    #[test]
    fn link_events_drop_during_open_keeps_events() {
        // C loses every later event when a path drops while open brings up
        // the others (paths_up never rebases); here nothing is lost.
        let mut p = [RtrsCltPathLink::new(); 2];
        let mut up = RtrsCltPathsUp::opening();
        assert_eq!(up.path_up(&mut p[0]), None);
        // Went down during open: no event either.
        assert_eq!(up.path_down(&mut p[0]), Ok(None));
        assert_eq!(up.path_up(&mut p[1]), None);
        up.opened();
        assert_eq!(up.paths_up(), 1);
        assert_eq!(
            up.path_down(&mut p[1]),
            Ok(Some(RtrsCltLinkEv::Disconnected))
        );
        assert_eq!(up.path_up(&mut p[0]), Some(RtrsCltLinkEv::Reconnected));
    }

    #[test]
    fn link_events_added_path_after_all_down() {
        let mut a = RtrsCltPathLink::new();
        let mut up = RtrsCltPathsUp::opening();
        assert_eq!(up.path_up(&mut a), None);
        up.opened();
        assert_eq!(up.path_down(&mut a), Ok(Some(RtrsCltLinkEv::Disconnected)));
        // add_path: the new path fires RECONNECTED.
        let mut b = RtrsCltPathLink::new();
        assert_eq!(up.path_up(&mut b), Some(RtrsCltLinkEv::Reconnected));
    }

    #[test]
    fn link_events_max_paths_and_underflow() {
        let mut up = RtrsCltPathsUp::opening();
        up.opened();
        let mut p = [RtrsCltPathLink::new(); 128];
        for (i, l) in p.iter_mut().enumerate() {
            let ev = up.path_up(l);
            assert_eq!(ev.is_some(), i == 0, "{i}");
        }
        assert_eq!(up.paths_up(), 128);
        // An established path going down with the count at 0: refused, the
        // count stays at 0 and the path is no longer established.
        let mut up = RtrsCltPathsUp::opening();
        up.opened();
        let mut q = RtrsCltPathLink::new();
        q.established = true;
        assert_eq!(up.path_down(&mut q), Err(PathsUpUnderflow));
        assert_eq!(up.paths_up(), 0);
        assert!(!q.established);
        assert_eq!(up.path_down(&mut q), Ok(None));
    }
}
