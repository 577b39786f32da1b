// SPDX-License-Identifier: GPL-2.0

//! Multipath policies (`get_next_path_*` in rtrs-clt.c) as pure algorithms.
//!
//! The caller passes the session's paths in `paths_list` order as a
//! [`PathViews`] source (a slice of [`PathView`] snapshots in tests, the live
//! RCU path list in the module, read as C reads it); indexes name the paths.
//! Nothing here allocates. Only the first `MAX_PATHS_NUM` entries are ever
//! looked at (C never has more paths).
//!
//! Differences from C, all invisible in a consistent snapshot:
//! - the per-request skip set is a local bitmap ([`PathSkipSet`]) instead of
//!   per-CPU `mp_skip_entry` list heads, as the digest (§6.5) recommends;
//! - [`PathIt::next_connected_path`] never hands the same path out twice for one
//!   request, even for round-robin when `paths_num` exceeds the list length
//!   (C could then retry a path);
//! - min-latency's first pick may be the one cached from an earlier full
//!   scan ([`LatencyHint`]), valid while nothing it depends on changed.

use super::latency::svc_time_score;
use super::path_state::RtrsCltState;
use super::proto::MAX_PATHS_NUM;

/// `-ECONNABORTED` magnitude: the error of a request no path took.
pub const ECONNABORTED: i32 = 103;

/// `MAX_PATHS_NUM` as a `usize`: the most paths a policy looks at.
pub const MAX_PATHS: usize = MAX_PATHS_NUM as usize;

const SKIP_WORDS: usize = (MAX_PATHS + 63) >> 6;

/// `enum rtrs_mp_policy`, with the C values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MpPolicy {
    /// `MP_POLICY_RR`: round-robin.
    Rr = 0,
    /// `MP_POLICY_MIN_INFLIGHT`: fewest requests in flight (the default).
    #[default]
    MinInflight = 1,
    /// `MP_POLICY_MIN_LATENCY`: lowest heartbeat round trip.
    MinLatency = 2,
    /// Not in C: lowest expected service time, the completion-latency
    /// estimate times the requests in flight plus one (see `latency`).
    ServiceTime = 3,
}

/// Which keys of a [`PathView`] a scan reads ([`MpPolicy::keys`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathKeys {
    /// `inflight`.
    pub inflight: bool,
    /// `cur_latency_ns`.
    pub latency: bool,
    /// `svc_ns`.
    pub svc: bool,
}

impl MpPolicy {
    #[cfg(test)]
    /// Every policy, in C value order.
    pub const ALL: [MpPolicy; 4] = [
        MpPolicy::Rr,
        MpPolicy::MinInflight,
        MpPolicy::MinLatency,
        MpPolicy::ServiceTime,
    ];

    /// The policy for a C enum value (as sysfs uses it), if valid.
    pub const fn from_raw(v: i32) -> Option<Self> {
        match v {
            0 => Some(MpPolicy::Rr),
            1 => Some(MpPolicy::MinInflight),
            2 => Some(MpPolicy::MinLatency),
            3 => Some(MpPolicy::ServiceTime),
            _ => None,
        }
    }

    /// The C enum value.
    pub const fn as_raw(self) -> i32 {
        self as i32
    }

    /// The keys of a [`PathView`] this policy's scan reads; a source may
    /// leave the others at 0 ([`PathViews::view_for`]).
    pub const fn keys(self) -> PathKeys {
        let (inflight, latency, svc) = match self {
            MpPolicy::Rr => (false, false, false),
            MpPolicy::MinInflight => (true, false, false),
            MpPolicy::MinLatency => (false, true, false),
            MpPolicy::ServiceTime => (true, false, true),
        };
        PathKeys {
            inflight,
            latency,
            svc,
        }
    }

    /// The name `mpath_policy` shows and takes.
    pub const fn name(self) -> &'static str {
        match self {
            MpPolicy::Rr => "round-robin",
            MpPolicy::MinInflight => "min-inflight",
            MpPolicy::MinLatency => "min-latency",
            MpPolicy::ServiceTime => "service-time",
        }
    }
}

/// What a policy needs to know about one path, sampled by the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathView {
    /// `clt_path->state`.
    pub state: RtrsCltState,
    /// `atomic_read(&stats->inflight)`.
    pub inflight: i32,
    /// `s.hb_cur_latency` in ns; 0 until the first HB_ACK.
    pub cur_latency_ns: i64,
    /// The path's completion-latency estimate in ns as of now
    /// (`latency::svc_effective_ns`); 0 until its first completion. Only
    /// `service-time` reads it.
    pub svc_ns: u64,
}

impl PathView {
    /// A snapshot with the given fields.
    pub const fn new(state: RtrsCltState, inflight: i32, cur_latency_ns: i64) -> Self {
        Self {
            state,
            inflight,
            cur_latency_ns,
            svc_ns: 0,
        }
    }

    /// The snapshot with the service-time estimate `svc_ns`.
    pub const fn with_svc_ns(mut self, svc_ns: u64) -> Self {
        self.svc_ns = svc_ns;
        self
    }

    /// Whether the path is CONNECTED (the only state IO is sent on).
    pub const fn is_connected(&self) -> bool {
        matches!(self.state, RtrsCltState::Connected)
    }
}

/// Paths already tried by one request (C's `skip_list`): a bitmap over
/// path indexes `0..MAX_PATHS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PathSkipSet {
    bits: [u64; SKIP_WORDS],
}

impl PathSkipSet {
    /// The empty set.
    pub const fn new() -> Self {
        Self {
            bits: [0; SKIP_WORDS],
        }
    }

    /// Whether `idx` is in the set (never for `idx >= MAX_PATHS`).
    pub fn contains(&self, idx: usize) -> bool {
        match self.bits.get(idx >> 6) {
            Some(w) => w & (1u64 << (idx & 63)) != 0,
            None => false,
        }
    }

    /// Adds `idx`; returns whether it was newly added (`false` if already
    /// present or `idx >= MAX_PATHS`).
    pub fn insert(&mut self, idx: usize) -> bool {
        match self.bits.get_mut(idx >> 6) {
            Some(w) => {
                let bit = 1u64 << (idx & 63);
                let new = *w & bit == 0;
                *w |= bit;
                new
            }
            None => false,
        }
    }

    #[cfg(test)]
    /// Removes every entry (`path_it_deinit`).
    pub fn clear(&mut self) {
        self.bits = [0; SKIP_WORDS];
    }

    /// Number of paths in the set.
    pub fn count(&self) -> usize {
        self.bits
            .iter()
            .fold(0usize, |n, w| n.saturating_add(w.count_ones() as usize))
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.bits.iter().all(|w| *w == 0)
    }
}

/// The paths a policy's scan leaves out and adds its pick to: a walk's
/// [`PathSkipSet`], or [`NoneTried`] for its first pick.
pub trait Skip {
    /// Whether `idx` was tried.
    fn contains(&self, idx: usize) -> bool;
    /// Adds `idx`; whether it was newly added.
    fn insert(&mut self, idx: usize) -> bool;
    /// Whether nothing was tried.
    fn is_empty(&self) -> bool;
}

impl Skip for PathSkipSet {
    #[inline]
    fn contains(&self, idx: usize) -> bool {
        PathSkipSet::contains(self, idx)
    }
    #[inline]
    fn insert(&mut self, idx: usize) -> bool {
        PathSkipSet::insert(self, idx)
    }
    #[inline]
    fn is_empty(&self) -> bool {
        PathSkipSet::is_empty(self)
    }
}

/// The empty skip set of a walk's first pick ([`PathIt::first_path`]): it
/// keeps nothing, the pick is put in the walk's set by
/// [`PathIt::resume_after`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NoneTried;

impl Skip for NoneTried {
    #[inline]
    fn contains(&self, _: usize) -> bool {
        false
    }
    #[inline]
    fn insert(&mut self, idx: usize) -> bool {
        idx < MAX_PATHS
    }
    #[inline]
    fn is_empty(&self) -> bool {
        true
    }
}

/// The paths a policy walks: `len` entries, read one at a time. The
/// module's list is a snapshot (each entry's state and counters live); an
/// entry that reads `None` is skipped like a path that is not CONNECTED.
pub trait PathViews {
    /// What [`PathViews::connected`] gives for a CONNECTED entry: the
    /// caller's handle on it, which the walk hands to its offer (so that
    /// the offer need not look the entry up again).
    type Path;
    /// `paths_num`: entries `0..paths_num()` exist.
    fn paths_num(&self) -> usize;
    /// Entry `i`, if there is one.
    fn view(&self, i: usize) -> Option<PathView>;
    /// Entry `i` as `policy`'s scan reads it: the fields that policy does
    /// not read may be left at 0 (the module then does not load them).
    #[inline]
    fn view_for(&self, i: usize, policy: MpPolicy) -> Option<PathView> {
        let _ = policy;
        self.view(i)
    }
    /// Entry `i` if it is CONNECTED now (its state read once, as C's
    /// `READ_ONCE(path->state) != RTRS_CLT_CONNECTED`).
    fn connected(&self, i: usize) -> Option<Self::Path>;
}

/// [`PathViews::connected`] of a list of snapshots.
fn connected_view(v: Option<&PathView>) -> Option<PathView> {
    v.copied().filter(PathView::is_connected)
}

impl PathViews for [PathView] {
    type Path = PathView;
    fn paths_num(&self) -> usize {
        <[PathView]>::len(self)
    }
    fn view(&self, i: usize) -> Option<PathView> {
        self.get(i).copied()
    }
    fn connected(&self, i: usize) -> Option<PathView> {
        connected_view(self.get(i))
    }
}

impl<const N: usize> PathViews for [PathView; N] {
    type Path = PathView;
    fn paths_num(&self) -> usize {
        N
    }
    fn view(&self, i: usize) -> Option<PathView> {
        self.get(i).copied()
    }
    fn connected(&self, i: usize) -> Option<PathView> {
        connected_view(self.get(i))
    }
}

#[cfg(test)]
impl PathViews for Vec<PathView> {
    type Path = PathView;
    fn paths_num(&self) -> usize {
        Vec::len(self)
    }
    fn view(&self, i: usize) -> Option<PathView> {
        self.get(i).copied()
    }
    fn connected(&self, i: usize) -> Option<PathView> {
        connected_view(self.get(i))
    }
}

/// How many entries a policy looks at: at most `MAX_PATHS`.
fn visible<P: PathViews + ?Sized>(paths: &P) -> usize {
    paths.paths_num().min(MAX_PATHS)
}

/// `get_next_path_rr`: the path after this CPU's `cursor` (the last path
/// it used), wrapping to the first; the first path if `cursor` is `None`.
/// Stores the result back in `cursor`. Does not look at the state (the
/// caller skips non-CONNECTED paths) nor at any skip set; `None` only for
/// an empty list. A stale cursor past the end wraps to the first path.
pub fn get_next_path_rr<P: PathViews + ?Sized>(
    cursor: &mut Option<usize>,
    paths: &P,
) -> Option<usize> {
    let n = visible(paths);
    let next = match *cursor {
        _ if n == 0 => None,
        None => Some(0),
        Some(c) => match c.checked_add(1) {
            Some(c1) if c1 < n => Some(c1),
            _ => Some(0),
        },
    };
    *cursor = next;
    next
}

/// `rtrs_clt_remove_path_from_arr` for one CPU's round-robin cursor, after
/// the path at index `removed` left the list (`new_len` paths remain).
/// A cursor on the removed path moves to its successor (wrapping, `None`
/// if the list is now empty); later indexes shift down by one so they keep
/// naming the same path.
pub fn rr_cursor_on_remove(cursor: &mut Option<usize>, removed: usize, new_len: usize) {
    if let Some(c) = *cursor {
        if c == removed {
            *cursor = if removed < new_len {
                Some(removed)
            } else if new_len > 0 {
                Some(0)
            } else {
                None
            };
        } else if c > removed {
            *cursor = Some(c.saturating_sub(1));
        }
    }
}

/// Shared scan of min-inflight and min-latency: the CONNECTED, not skipped
/// path whose key is strictly below every earlier one and below `start`
/// (ties go to the earlier path); it is added to `skip`.
fn pick_min<K: Ord + Copy, P: PathViews + ?Sized, S: Skip>(
    paths: &P,
    skip: &mut S,
    policy: MpPolicy,
    start: K,
    key: impl Fn(&PathView) -> K,
) -> Option<usize> {
    let mut min = start;
    let mut min_path = None;
    for i in 0..visible(paths) {
        let Some(p) = paths.view_for(i, policy) else {
            continue;
        };
        if !p.is_connected() || skip.contains(i) {
            continue;
        }
        let k = key(&p);
        if k < min {
            min = k;
            min_path = Some(i);
        }
    }
    if let Some(i) = min_path {
        skip.insert(i);
    }
    min_path
}

/// `get_next_path_min_inflight`: among CONNECTED paths not in `skip`, the
/// one with the fewest requests in flight (ties: earliest in the list),
/// which is then added to `skip`. Starts from `INT_MAX` with a strict `<`
/// as C does, so a path at exactly `i32::MAX` is never picked.
pub fn get_next_path_min_inflight<P: PathViews + ?Sized, S: Skip>(
    paths: &P,
    skip: &mut S,
) -> Option<usize> {
    pick_min(paths, skip, MpPolicy::MinInflight, i32::MAX, |p| p.inflight)
}

/// `get_next_path_min_latency`: as [`get_next_path_min_inflight`], keyed by
/// the heartbeat round trip, starting from `KTIME_MAX` (`i64::MAX`). A path
/// without an HB_ACK yet has latency 0 and is therefore preferred.
pub fn get_next_path_min_latency<P: PathViews + ?Sized, S: Skip>(
    paths: &P,
    skip: &mut S,
) -> Option<usize> {
    pick_min(paths, skip, MpPolicy::MinLatency, i64::MAX, |p| {
        p.cur_latency_ns
    })
}

/// Bits of a packed hint word ([`pack_hint`]) that hold the path index
/// plus one (0: no hint); the generation takes the rest.
const HINT_IDX_BITS: u32 = 8;
const HINT_IDX_MASK: u64 = (1 << HINT_IDX_BITS) - 1;
const _: () = assert!(MAX_PATHS as u64 <= HINT_IDX_MASK);

/// A hint word that names no path, at any generation.
pub const HINT_NONE: u64 = 0;

/// One word for the cached min-latency pick: path `idx` as scanned at
/// generation `gen` (read before the scan). [`HINT_NONE`] for an index no
/// policy looks at. The generation only grows, so a word from an older
/// scan never matches a newer one (it is kept modulo 2^56).
pub fn pack_hint(gen: u64, idx: usize) -> u64 {
    match u64::try_from(idx) {
        Ok(i) if idx < MAX_PATHS => (gen << HINT_IDX_BITS) | i.saturating_add(1),
        _ => HINT_NONE,
    }
}

/// The path of a hint word if it was scanned at generation `gen`.
pub fn unpack_hint(word: u64, gen: u64) -> Option<usize> {
    let idx = (word & HINT_IDX_MASK).checked_sub(1)?;
    let same = word >> HINT_IDX_BITS == gen & (u64::MAX >> HINT_IDX_BITS);
    usize::try_from(idx).ok().filter(|_| same)
}

/// The min-latency pick cached across requests. A path's key (its
/// heartbeat latency) and state change rarely, so the full scan's pick
/// holds until one of them, or the list, changes; the caller tracks that
/// with a generation (see [`pack_hint`]). The other policies' keys change
/// with every request or CPU, so they always scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LatencyHint {
    /// In: the pick of a full scan at the current generation, if known.
    pub cached: Option<usize>,
    /// Out: the pick of a full scan made for the first pick, to cache.
    pub scanned: Option<usize>,
}

impl LatencyHint {
    /// A hint with the cached pick `cached`.
    pub const fn new(cached: Option<usize>) -> Self {
        Self {
            cached,
            scanned: None,
        }
    }
}

/// [`get_next_path_min_latency`] that first tries `hint.cached` (taken by
/// the first call): it is the pick if it is in the list, CONNECTED and not
/// in `skip`. Otherwise the full scan runs; with `skip` empty, its pick goes
/// to `hint.scanned`. From a scan at the current generation, the hint is
/// the scan's own pick, so the order is C's either way.
pub fn get_next_path_min_latency_hinted<P: PathViews + ?Sized, S: Skip>(
    paths: &P,
    skip: &mut S,
    hint: &mut LatencyHint,
) -> Option<usize> {
    if let Some(h) = hint.cached.take() {
        let ok = h < visible(paths) && !skip.contains(h) && paths.connected(h).is_some();
        if ok {
            skip.insert(h);
            return Some(h);
        }
    }
    let full = skip.is_empty();
    let p = get_next_path_min_latency(paths, skip);
    if full {
        hint.scanned = p;
    }
    p
}

/// The `service-time` policy: as [`get_next_path_min_inflight`], keyed by
/// [`svc_time_score`] (ties: earliest in the list). Paths without a sample
/// yet score 0 and are tried first.
pub fn get_next_path_service_time<P: PathViews + ?Sized, S: Skip>(
    paths: &P,
    skip: &mut S,
) -> Option<usize> {
    pick_min(paths, skip, MpPolicy::ServiceTime, u128::MAX, |p| {
        u128::from(svc_time_score(p.svc_ns, p.inflight))
    })
}

/// `struct path_it`: one request's walk over the paths, with the policy
/// sampled once at `path_it_init`. Used the same way by
/// `rtrs_clt_request`, `rtrs_clt_failover_req` and `rtrs_clt_rdma_cq_direct`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathIt {
    i: usize,
    skip: PathSkipSet,
    policy: MpPolicy,
    hint: LatencyHint,
    started: bool,
    done: bool,
}

impl PathIt {
    /// `path_it_init` with the session's current policy.
    pub const fn new(policy: MpPolicy) -> Self {
        Self {
            i: 0,
            skip: PathSkipSet::new(),
            policy,
            hint: LatencyHint::new(None),
            started: false,
            done: false,
        }
    }

    #[cfg(test)]
    /// The walk with min-latency's cached pick `cached` (unused by the
    /// other policies).
    pub const fn with_hint(mut self, cached: Option<usize>) -> Self {
        self.hint = LatencyHint::new(cached);
        self
    }

    /// The pick of the full min-latency scan this walk made for its first
    /// pick, if it made one.
    pub const fn scanned(&self) -> Option<usize> {
        self.hint.scanned
    }

    #[cfg(test)]
    /// The policy this walk uses.
    pub const fn policy(&self) -> MpPolicy {
        self.policy
    }

    #[cfg(test)]
    /// `it.i`: loop iterations completed so far.
    pub const fn i(&self) -> usize {
        self.i
    }

    #[cfg(test)]
    /// The paths visited so far (by the policy for min-inflight and
    /// min-latency, by [`PathIt::next_connected_path`] for round-robin).
    pub const fn skip(&self) -> &PathSkipSet {
        &self.skip
    }

    /// `it.next_path(&it)`: one raw step of the policy, no bound and no
    /// state check for round-robin. `rr_cursor` is this CPU's round-robin
    /// cursor; only [`MpPolicy::Rr`] uses it.
    pub fn next_path<P: PathViews + ?Sized>(
        &mut self,
        paths: &P,
        rr_cursor: &mut Option<usize>,
    ) -> Option<usize> {
        Self::step(
            self.policy,
            paths,
            &mut self.skip,
            &mut self.hint,
            rr_cursor,
        )
    }

    /// `it.next_path(&it)` of `policy` over the tried paths `skip`.
    // Always inline: with a constant `policy` only its scan is built.
    #[inline(always)]
    fn step<P: PathViews + ?Sized, S: Skip>(
        policy: MpPolicy,
        paths: &P,
        skip: &mut S,
        hint: &mut LatencyHint,
        rr_cursor: &mut Option<usize>,
    ) -> Option<usize> {
        match policy {
            MpPolicy::Rr => get_next_path_rr(rr_cursor, paths),
            MpPolicy::MinInflight => get_next_path_min_inflight(paths, skip),
            MpPolicy::MinLatency => get_next_path_min_latency_hinted(paths, skip, hint),
            MpPolicy::ServiceTime => get_next_path_service_time(paths, skip),
        }
    }

    /// The first [`PathIt::next_path`] of a walk
    /// `PathIt::new(policy).with_hint(hint.cached)`, without the walk: the
    /// same pick, cursor and `hint` (its cached pick taken, its scan set).
    /// [`PathIt::resume_after`] makes the walk that follows.
    #[inline(always)]
    pub fn first_path<P: PathViews + ?Sized>(
        policy: MpPolicy,
        paths: &P,
        rr_cursor: &mut Option<usize>,
        hint: &mut LatencyHint,
    ) -> Option<usize> {
        Self::step(policy, paths, &mut NoneTried, hint, rr_cursor)
    }

    /// The walk after its first pass of [`PathIt::next_connected_path`]
    /// picked `first` ([`PathIt::first_path`], within `paths_num`), with
    /// `hint` as that pick left it: `first` tried, the loop at `it.i` 0.
    pub fn resume_after(policy: MpPolicy, first: usize, hint: LatencyHint) -> Self {
        let mut it = Self::new(policy);
        it.skip.insert(first);
        it.hint = hint;
        it.started = true;
        it
    }

    /// The next CONNECTED path of C's loop
    /// `for (init; (p = next_path(&it)) && it.i < paths_num; it.i++)
    /// { if (p->state != CONNECTED) continue; ... }`,
    /// or `None` once the loop ends (and from then on): its index, and
    /// the caller's handle on it ([`PathViews::connected`]).
    ///
    /// Call it again after a failed try: that is the loop's `continue`.
    /// As in C, `next_path` runs before the bound check, so a full walk
    /// advances the round-robin cursor `paths_num + 1` times. A path is
    /// never returned twice for one walk.
    pub fn next_connected_path<P: PathViews + ?Sized>(
        &mut self,
        paths: &P,
        paths_num: usize,
        rr_cursor: &mut Option<usize>,
    ) -> Option<(usize, P::Path)> {
        while !self.done {
            if self.started {
                self.i = self.i.saturating_add(1);
            }
            self.started = true;
            let Some(p) = self.next_path(paths, rr_cursor) else {
                break;
            };
            if self.i >= paths_num {
                break;
            }
            if self.policy == MpPolicy::Rr && !self.skip.insert(p) {
                // Round-robin came back to a path already visited: once
                // every path has been, the walk is over.
                if self.skip.count() >= visible(paths) {
                    break;
                }
                continue;
            }
            if let Some(path) = paths.connected(p) {
                return Some((p, path));
            }
        }
        self.done = true;
        None
    }

    #[cfg(test)]
    /// [`PathIt::next_connected_path`]'s index.
    pub fn next_connected<P: PathViews + ?Sized>(
        &mut self,
        paths: &P,
        paths_num: usize,
        rr_cursor: &mut Option<usize>,
    ) -> Option<usize> {
        self.next_connected_path(paths, paths_num, rr_cursor)
            .map(|(i, _)| i)
    }
}

/// What offering a request to one path gave (see [`failover_req`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// Posted on this path: done.
    Posted,
    /// The path could not take it now (it went down meanwhile, say): try
    /// the next one, no error recorded.
    Skipped,
    /// Posting failed with this negative errno: try the next path.
    Failed(i32),
    /// The request cannot go on any path (too big, say): stop with this
    /// negative errno.
    Abort(i32),
}

/// `rtrs_clt_failover_req` (and the loop of `rtrs_clt_request`): offers the
/// request to each CONNECTED path in policy order, at most `paths_num`
/// loop iterations and each path at most once, until one takes it.
///
/// Returns the path that took it, or the last error: that of an
/// [`Offer::Abort`], else of the last [`Offer::Failed`], else
/// `-ECONNABORTED` (no path tried it). `hint` is min-latency's cached pick
/// in (taken), and its new one out (see [`get_next_path_min_latency_hinted`]);
/// its `scanned` is `None` on entry, and stays so if no scan ran.
///
/// The first pass of the walk runs without it ([`PathIt::first_path`]);
/// the walk is made ([`PathIt::resume_after`]) only if that pass did not
/// end it. One call site of `offer`, so that it inlines; inlined always,
/// so that a constant `policy` ([`PolicyKind`]) leaves only its scan.
#[inline(always)]
pub fn failover_req<P: PathViews + ?Sized>(
    policy: MpPolicy,
    paths: &P,
    paths_num: usize,
    rr_cursor: &mut Option<usize>,
    hint: &mut LatencyHint,
    mut offer: impl FnMut(usize, P::Path) -> Offer,
) -> Result<usize, i32> {
    let mut err = -ECONNABORTED;
    let Some(first) = PathIt::first_path(policy, paths, rr_cursor, hint) else {
        return Err(err);
    };
    // `it.i < paths_num` at `it.i` 0.
    if paths_num == 0 {
        return Err(err);
    }
    let mut it = None;
    let mut next = paths.connected(first).map(|path| (first, path));
    loop {
        if let Some((p, path)) = next {
            if let Some(out) = settle(offer(p, path), p, &mut err) {
                return out;
            }
        }
        next = walk_on(&mut it, policy, first, paths, paths_num, rr_cursor, hint);
        if next.is_none() {
            return Err(err);
        }
    }
}

/// The next path of [`failover_req`]'s walk after its first pass: `it`,
/// made by the first call.
#[cold]
#[inline(never)]
fn walk_on<P: PathViews + ?Sized>(
    it: &mut Option<PathIt>,
    policy: MpPolicy,
    first: usize,
    paths: &P,
    paths_num: usize,
    rr_cursor: &mut Option<usize>,
    hint: &mut LatencyHint,
) -> Option<(usize, P::Path)> {
    let it = it.get_or_insert_with(|| PathIt::resume_after(policy, first, *hint));
    let next = it.next_connected_path(paths, paths_num, rr_cursor);
    hint.scanned = it.scanned();
    next
}

/// The walk after offering path `p` `o`: its verdict if it ends there;
/// a failure's errno goes to `err`.
#[inline]
fn settle(o: Offer, p: usize, err: &mut i32) -> Option<Result<usize, i32>> {
    match o {
        Offer::Posted => Some(Ok(p)),
        Offer::Skipped => None,
        Offer::Failed(e) => {
            *err = e;
            None
        }
        Offer::Abort(e) => Some(Err(e)),
    }
}

/// Whether a request counts in its path's `stats->inflight`: it does if the
/// session's policy was MIN_INFLIGHT when it was issued (`req->mp_policy`),
/// and then its completion, or a failed post, uncounts it. Deciding at
/// issue and remembering the answer per request keeps `inflight` exact
/// while the policy changes under IO (the 2021 fix in C).
pub const fn counts_inflight(policy: MpPolicy) -> bool {
    matches!(policy, MpPolicy::MinInflight | MpPolicy::ServiceTime)
}

/// A multipath policy as a type: code generic over it is built once per
/// policy ([`MpPolicy::dispatch`]), each copy with only its policy's scan
/// and none of the others' tests. The rules stay the runtime ones, given
/// [`PolicyKind::POLICY`].
pub trait PolicyKind {
    /// The policy.
    const POLICY: MpPolicy;
    /// Whether its requests count in `inflight` ([`counts_inflight`]).
    const COUNTED: bool = counts_inflight(Self::POLICY);
}

/// The policies as types ([`PolicyKind`]).
pub mod kind {
    use super::{MpPolicy, PolicyKind};

    /// [`MpPolicy::Rr`].
    pub enum Rr {}
    /// [`MpPolicy::MinInflight`].
    pub enum MinInflight {}
    /// [`MpPolicy::MinLatency`].
    pub enum MinLatency {}
    /// [`MpPolicy::ServiceTime`].
    pub enum ServiceTime {}

    impl PolicyKind for Rr {
        const POLICY: MpPolicy = MpPolicy::Rr;
    }
    impl PolicyKind for MinInflight {
        const POLICY: MpPolicy = MpPolicy::MinInflight;
    }
    impl PolicyKind for MinLatency {
        const POLICY: MpPolicy = MpPolicy::MinLatency;
    }
    impl PolicyKind for ServiceTime {
        const POLICY: MpPolicy = MpPolicy::ServiceTime;
    }
}

/// What runs with the policy as a type ([`MpPolicy::dispatch`]).
pub trait WithPolicy {
    /// What it gives.
    type Out;
    /// Runs it with policy `K`.
    fn run<K: PolicyKind>(self) -> Self::Out;
}

impl MpPolicy {
    /// Runs `w` with this policy as a type: the one branch on the policy.
    #[inline(always)]
    pub fn dispatch<W: WithPolicy>(self, w: W) -> W::Out {
        match self {
            MpPolicy::Rr => w.run::<kind::Rr>(),
            MpPolicy::MinInflight => w.run::<kind::MinInflight>(),
            MpPolicy::MinLatency => w.run::<kind::MinLatency>(),
            MpPolicy::ServiceTime => w.run::<kind::ServiceTime>(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use RtrsCltState::*;

    fn up(inflight: i32, lat: i64) -> PathView {
        PathView::new(Connected, inflight, lat)
    }

    fn st(state: RtrsCltState) -> PathView {
        PathView::new(state, 0, 0)
    }

    use crate::test_rng::Rng;

    /// `n` paths in random states, with small random inflight, latency and
    /// service-time keys (ties are likely).
    fn random_views(rng: &mut Rng, n: usize) -> Vec<PathView> {
        (0..n)
            .map(|_| {
                let s = RtrsCltState::ALL[rng.index(7)];
                PathView::new(s, rng.index(4) as i32, rng.index(4) as i64 * 100)
                    .with_svc_ns(rng.index(4) as u64 * 1000)
            })
            .collect()
    }

    /// Collects a whole walk of `PathIt`.
    fn walk(
        policy: MpPolicy,
        paths: &[PathView],
        paths_num: usize,
        cur: &mut Option<usize>,
    ) -> Vec<usize> {
        let mut it = PathIt::new(policy);
        let mut v = Vec::new();
        while let Some(p) = it.next_connected(paths, paths_num, cur) {
            v.push(p);
            assert!(v.len() <= MAX_PATHS + 1);
        }
        assert_eq!(it.next_connected(paths, paths_num, cur), None, "fused");
        v
    }

    #[test]
    fn policy_names_match_sysfs() {
        for p in MpPolicy::ALL {
            let mut buf = [0u8; 64];
            let n = crate::sysfs_fmt::mpath_policy_show(&mut buf, p.as_raw());
            let shown = core::str::from_utf8(&buf[..n]).unwrap();
            assert!(shown.starts_with(p.name()), "{shown} vs {}", p.name());
            assert_eq!(
                crate::sysfs_fmt::mpath_policy_store(p.name().as_bytes()),
                Ok(p.as_raw())
            );
        }
    }

    #[test]
    fn policy_values() {
        assert_eq!(MpPolicy::default(), MpPolicy::MinInflight);
        for (i, p) in MpPolicy::ALL.iter().enumerate() {
            assert_eq!(p.as_raw(), i as i32);
            assert_eq!(MpPolicy::from_raw(i as i32), Some(*p));
        }
        assert_eq!(MpPolicy::from_raw(4), None);
        assert_eq!(MpPolicy::from_raw(-1), None);
    }

    /// [`MpPolicy::dispatch`]'s probe: the policy as a type, read back.
    struct Probe;
    impl WithPolicy for Probe {
        type Out = (MpPolicy, bool);
        fn run<K: PolicyKind>(self) -> (MpPolicy, bool) {
            (K::POLICY, K::COUNTED)
        }
    }

    #[test]
    fn policy_kinds_match_policies() {
        for p in MpPolicy::ALL {
            assert_eq!(p.dispatch(Probe), (p, counts_inflight(p)));
        }
    }

    #[test]
    fn skip_set() {
        let mut s = PathSkipSet::new();
        assert!(s.is_empty());
        for i in [0, 1, 63, 64, 65, 127] {
            assert!(!s.contains(i));
            assert!(s.insert(i));
            assert!(!s.insert(i));
            assert!(s.contains(i));
        }
        assert_eq!(s.count(), 6);
        assert!(!s.insert(128));
        assert!(!s.insert(usize::MAX));
        assert!(!s.contains(128));
        assert!(!s.contains(usize::MAX));
        for i in 0..MAX_PATHS {
            s.insert(i);
        }
        assert_eq!(s.count(), MAX_PATHS);
        s.clear();
        assert!(s.is_empty());
        assert_eq!(s.count(), 0);
    }

    #[test]
    fn rr_advances_and_wraps() {
        let paths = [up(0, 0); 3];
        let mut cur = None;
        let got: Vec<_> = (0..7)
            .map(|_| get_next_path_rr(&mut cur, &paths).unwrap())
            .collect();
        assert_eq!(got, [0, 1, 2, 0, 1, 2, 0]);
        assert_eq!(cur, Some(0));
        // Stale cursor wraps; empty list gives None and clears the cursor.
        let mut cur = Some(10);
        assert_eq!(get_next_path_rr(&mut cur, &paths), Some(0));
        let mut cur = Some(usize::MAX);
        assert_eq!(get_next_path_rr(&mut cur, &paths), Some(0));
        let mut cur = Some(1);
        assert_eq!(get_next_path_rr(&mut cur, &[]), None);
        assert_eq!(cur, None);
        // RR ignores state itself.
        let paths = [st(Dead), st(Closed)];
        let mut cur = None;
        assert_eq!(get_next_path_rr(&mut cur, &paths), Some(0));
        assert_eq!(get_next_path_rr(&mut cur, &paths), Some(1));
    }

    #[test]
    fn rr_cursor_removal() {
        // [A B C], remove B: cursor on B -> C (now index 1).
        let mut c = Some(1);
        rr_cursor_on_remove(&mut c, 1, 2);
        assert_eq!(c, Some(1));
        // Remove the last: wraps to first.
        let mut c = Some(2);
        rr_cursor_on_remove(&mut c, 2, 2);
        assert_eq!(c, Some(0));
        // Remove the only path.
        let mut c = Some(0);
        rr_cursor_on_remove(&mut c, 0, 0);
        assert_eq!(c, None);
        // Later index shifts, earlier stays, None stays.
        let mut c = Some(2);
        rr_cursor_on_remove(&mut c, 0, 2);
        assert_eq!(c, Some(1));
        let mut c = Some(0);
        rr_cursor_on_remove(&mut c, 1, 2);
        assert_eq!(c, Some(0));
        let mut c = None;
        rr_cursor_on_remove(&mut c, 0, 2);
        assert_eq!(c, None);
    }

    #[test]
    fn rr_spreads_evenly() {
        for n in 1..=8 {
            let paths = vec![up(0, 0); n];
            let mut cur = None;
            let mut hits = vec![0usize; n];
            for _ in 0..(n * 100) {
                let mut it = PathIt::new(MpPolicy::Rr);
                let p = it.next_connected(&paths, n, &mut cur).unwrap();
                hits[p] += 1;
            }
            assert!(hits.iter().all(|&h| h == 100), "{hits:?}");
        }
    }

    #[test]
    fn rr_skips_non_connected() {
        let paths = [
            up(0, 0),
            st(Reconnecting),
            up(0, 0),
            st(Connecting),
            st(ConnectingErr),
            up(0, 0),
        ];
        let mut cur = None;
        let mut hits = [0usize; 6];
        for _ in 0..300 {
            let mut it = PathIt::new(MpPolicy::Rr);
            let p = it.next_connected(&paths, paths.len(), &mut cur).unwrap();
            hits[p] += 1;
        }
        assert_eq!(hits[1] + hits[3] + hits[4], 0);
        let (mn, mx) = (
            hits[0].min(hits[2]).min(hits[5]),
            hits[0].max(hits[2]).max(hits[5]),
        );
        assert!(mx - mn <= 100, "{hits:?}");
        assert_eq!(hits.iter().sum::<usize>(), 300);
        // [U U D]: exactly even.
        let paths = [up(0, 0), up(0, 0), st(Closed)];
        let mut cur = None;
        let mut hits = [0usize; 3];
        for _ in 0..100 {
            let mut it = PathIt::new(MpPolicy::Rr);
            hits[it.next_connected(&paths, 3, &mut cur).unwrap()] += 1;
        }
        assert_eq!(hits, [50, 50, 0]);
    }

    #[test]
    fn rr_walk_advances_cursor_paths_num_plus_one() {
        let paths = [up(0, 0); 3];
        let mut cur = None;
        assert_eq!(walk(MpPolicy::Rr, &paths, 3, &mut cur), [0, 1, 2]);
        // next_path ran 4 times: 0,1,2,0.
        assert_eq!(cur, Some(0));
        assert_eq!(walk(MpPolicy::Rr, &paths, 3, &mut cur), [1, 2, 0]);
        assert_eq!(cur, Some(1));
    }

    #[test]
    fn rr_never_repeats_when_paths_num_exceeds_list() {
        let paths = [up(0, 0); 2];
        let mut cur = None;
        assert_eq!(walk(MpPolicy::Rr, &paths, 5, &mut cur), [0, 1]);
    }

    #[test]
    fn min_inflight_picks_least_loaded() {
        let paths = [up(5, 0), up(2, 0), up(7, 0), up(2, 0), up(-3, 0)];
        let mut skip = PathSkipSet::new();
        let order: Vec<_> =
            core::iter::from_fn(|| get_next_path_min_inflight(&paths, &mut skip)).collect();
        // Ties (2, 2) go to the earlier path; negative counts are smaller.
        assert_eq!(order, [4, 1, 3, 0, 2]);
        assert_eq!(skip.count(), 5);
    }

    #[test]
    fn min_inflight_never_non_connected_or_skipped() {
        let paths = [
            st(Connecting),
            up(9, 0),
            st(Reconnecting),
            up(4, 0),
            st(Closing),
            st(Closed),
            st(Dead),
            st(ConnectingErr),
        ];
        let mut skip = PathSkipSet::new();
        skip.insert(3);
        assert_eq!(get_next_path_min_inflight(&paths, &mut skip), Some(1));
        assert_eq!(get_next_path_min_inflight(&paths, &mut skip), None);
        // INT_MAX is never below the start value, as in C.
        let mut skip = PathSkipSet::new();
        assert_eq!(
            get_next_path_min_inflight(&[up(i32::MAX, 0)], &mut skip),
            None
        );
        assert_eq!(
            get_next_path_min_inflight(&[up(i32::MAX, 0), up(i32::MAX - 1, 0)], &mut skip),
            Some(1)
        );
    }

    #[test]
    fn min_latency_picks_fastest() {
        let paths = [
            up(0, 500),
            up(0, 200),
            st(Connecting),
            up(0, 200),
            up(0, 900),
        ];
        let mut skip = PathSkipSet::new();
        let order: Vec<_> =
            core::iter::from_fn(|| get_next_path_min_latency(&paths, &mut skip)).collect();
        assert_eq!(order, [1, 3, 0, 4]);
        // 0 = no HB_ACK yet: preferred, as C does.
        let paths = [up(0, 100), up(0, 0)];
        let mut skip = PathSkipSet::new();
        assert_eq!(get_next_path_min_latency(&paths, &mut skip), Some(1));
        // KTIME_MAX start: i64::MAX never picked; i64::MAX - 1 is.
        let mut skip = PathSkipSet::new();
        assert_eq!(
            get_next_path_min_latency(&[up(0, i64::MAX)], &mut skip),
            None
        );
        assert_eq!(
            get_next_path_min_latency(&[up(0, i64::MAX - 1)], &mut skip),
            Some(0)
        );
        // Inflight does not matter to min-latency.
        let paths = [up(0, 300), up(1000, 100)];
        let mut skip = PathSkipSet::new();
        assert_eq!(get_next_path_min_latency(&paths, &mut skip), Some(1));
    }

    #[test]
    fn hint_words() {
        for gen in [0, 1, 7, u64::MAX >> 8, u64::MAX] {
            for i in [0, 1, MAX_PATHS - 1] {
                let w = pack_hint(gen, i);
                assert_eq!(unpack_hint(w, gen), Some(i));
                assert_eq!(unpack_hint(w, gen.wrapping_add(1)), None);
                assert_eq!(unpack_hint(w, gen.wrapping_sub(1)), None);
            }
            assert_eq!(unpack_hint(HINT_NONE, gen), None);
            assert_eq!(pack_hint(gen, MAX_PATHS), HINT_NONE);
            assert_eq!(pack_hint(gen, usize::MAX), HINT_NONE);
        }
    }

    /// Counts the entries a policy reads.
    struct Counted<'a>(&'a [PathView], core::cell::Cell<usize>);

    impl PathViews for Counted<'_> {
        type Path = PathView;
        fn paths_num(&self) -> usize {
            self.0.len()
        }
        fn view(&self, i: usize) -> Option<PathView> {
            self.1.set(self.1.get() + 1);
            self.0.get(i).copied()
        }
        fn connected(&self, i: usize) -> Option<PathView> {
            self.view(i).filter(PathView::is_connected)
        }
    }

    #[test]
    fn latency_hint_used_only_when_valid() {
        let paths = [up(0, 300), up(0, 100), st(Reconnecting), up(0, 200)];
        let pick = |hint: Option<usize>, skip: &[usize]| {
            let src = Counted(&paths, core::cell::Cell::new(0));
            let mut set = PathSkipSet::new();
            skip.iter().for_each(|&i| _ = set.insert(i));
            let mut h = LatencyHint::new(hint);
            let p = get_next_path_min_latency_hinted(&src, &mut set, &mut h);
            if let Some(p) = p {
                assert!(set.contains(p));
            }
            assert_eq!(h.cached, None, "taken");
            (p, h.scanned, src.1.get())
        };
        // A valid hint is the pick, from one read, even when not the
        // minimum (the caller's generation vouches for it).
        assert_eq!(pick(Some(0), &[]), (Some(0), None, 1));
        assert_eq!(pick(Some(3), &[1]), (Some(3), None, 1));
        // Otherwise the full scan, cached only when nothing was skipped.
        for bad in [None, Some(2), Some(4), Some(MAX_PATHS), Some(usize::MAX)] {
            let (p, scanned, _) = pick(bad, &[]);
            assert_eq!((p, scanned), (Some(1), Some(1)), "{bad:?}");
            let (p, scanned, _) = pick(bad, &[1]);
            assert_eq!((p, scanned), (Some(3), None), "{bad:?}");
        }
        // A hint the request tried already is no hint.
        let (p, scanned, _) = pick(Some(0), &[0]);
        assert_eq!((p, scanned), (Some(1), None));
        // An entry that reads None is no hint.
        let src = Holey(vec![Some(up(0, 9)), None, Some(up(0, 5))]);
        let mut h = LatencyHint::new(Some(1));
        let mut skip = PathSkipSet::new();
        assert_eq!(
            get_next_path_min_latency_hinted(&src, &mut skip, &mut h),
            Some(2)
        );
        assert_eq!(h.scanned, Some(2));
    }

    #[test]
    fn latency_hint_keeps_c_failover_order() {
        let paths = [up(3, 30), st(Reconnecting), up(1, 50), up(2, 10)];
        let order = |cached| {
            let mut tries = Vec::new();
            let mut h = LatencyHint::new(cached);
            let r = failover_req(
                MpPolicy::MinLatency,
                &paths,
                4,
                &mut None,
                &mut h,
                |p, _| {
                    tries.push(p);
                    Offer::Failed(-5)
                },
            );
            assert_eq!(r, Err(-5));
            (tries, h.scanned)
        };
        // The scan's own pick as hint: C's order, and nothing new to cache.
        assert_eq!(order(Some(3)), (vec![3, 0, 2], None));
        // No hint, or one for a path now down: C's order, and the first
        // scan's pick to cache.
        assert_eq!(order(None), (vec![3, 0, 2], Some(3)));
        assert_eq!(order(Some(1)), (vec![3, 0, 2], Some(3)));
        // A first pick that posts still reports the scan.
        let mut h = LatencyHint::default();
        let r = failover_req(
            MpPolicy::MinLatency,
            &paths,
            4,
            &mut None,
            &mut h,
            |_, _| Offer::Posted,
        );
        assert_eq!((r, h.scanned), (Ok(3), Some(3)));
        // The other policies neither use nor make a hint.
        for policy in [MpPolicy::Rr, MpPolicy::MinInflight, MpPolicy::ServiceTime] {
            let mut h = LatencyHint::new(Some(1));
            let want = walk(policy, &paths, 4, &mut None);
            let mut got = Vec::new();
            let _ = failover_req(policy, &paths, 4, &mut None, &mut h, |p, _| {
                got.push(p);
                Offer::Failed(-5)
            });
            assert_eq!((got, h.scanned), (want, None), "{policy:?}");
        }
    }

    /// The module's cache on a model session: a generation bumped after
    /// every latency, state or list change; the hint word packed with the
    /// generation read before the scan, sometimes stored only after a
    /// change (a scan racing it). Every request walks the paths in the full
    /// scans' order, and few requests scan.
    #[test]
    fn latency_hint_follows_generation() {
        let mut rng = Rng(0xD1B5_4A32_D192_ED03);
        let lat = |rng: &mut Rng| rng.index(4) as i64 * 100;
        let mut paths = vec![up(0, 0); 3];
        let (mut gen, mut word) = (0u64, HINT_NONE);
        let (mut ios, mut scans, mut used) = (0u32, 0u32, 0u32);
        let change = |rng: &mut Rng, paths: &mut Vec<PathView>, gen: &mut u64| {
            let i = rng.index(paths.len());
            match rng.index(4) {
                0 => paths[i].cur_latency_ns = lat(rng),
                1 => paths[i].state = RtrsCltState::ALL[rng.index(7)],
                2 if paths.len() < 8 => paths.push(up(0, lat(rng))),
                _ if paths.len() > 1 => _ = paths.remove(i),
                _ => paths[i].state = Connected,
            }
            *gen += 1;
        };
        for _ in 0..50_000 {
            if rng.index(20) == 0 {
                change(&mut rng, &mut paths, &mut gen);
                continue;
            }
            ios += 1;
            let g = gen;
            let cached = unpack_hint(word, g);
            let mut h = LatencyHint::new(cached);
            let mut got = Vec::new();
            let n = paths.len();
            let _ = failover_req(
                MpPolicy::MinLatency,
                &paths,
                n,
                &mut None,
                &mut h,
                |p, _| {
                    got.push(p);
                    Offer::Failed(-5)
                },
            );
            let mut skip = PathSkipSet::new();
            let want: Vec<_> =
                core::iter::from_fn(|| get_next_path_min_latency(&paths, &mut skip)).collect();
            assert_eq!(got, want, "gen {g}");
            used += u32::from(cached.is_some());
            if let Some(i) = h.scanned {
                scans += 1;
                if rng.index(4) == 0 {
                    change(&mut rng, &mut paths, &mut gen);
                }
                word = pack_hint(g, i);
            }
        }
        assert!(scans * 4 < ios && used * 2 > ios, "{ios} {scans} {used}");
    }

    #[test]
    fn empty_and_all_down_lists() {
        let down = [
            st(Connecting),
            st(ConnectingErr),
            st(Reconnecting),
            st(Closing),
            st(Closed),
            st(Dead),
        ];
        for policy in MpPolicy::ALL {
            for paths in [&[][..], &down[..]] {
                for paths_num in [0, 1, paths.len(), 128, usize::MAX] {
                    let mut cur = None;
                    assert!(walk(policy, paths, paths_num, &mut cur).is_empty());
                    let mut cur = Some(usize::MAX);
                    assert_eq!(
                        failover_req(
                            policy,
                            paths,
                            paths_num,
                            &mut cur,
                            &mut LatencyHint::default(),
                            |_, _| Offer::Posted
                        ),
                        Err(-ECONNABORTED)
                    );
                }
            }
            let mut skip = PathSkipSet::new();
            assert_eq!(get_next_path_min_inflight(&[], &mut skip), None);
            assert_eq!(get_next_path_min_latency(&down, &mut skip), None);
        }
    }

    #[test]
    fn paths_num_bounds_walk() {
        let paths = [up(0, 0); 4];
        for policy in MpPolicy::ALL {
            for paths_num in 0..=6 {
                let mut cur = None;
                let v = walk(policy, &paths, paths_num, &mut cur);
                assert_eq!(v.len(), paths_num.min(4), "{policy:?} {paths_num}");
            }
        }
        // Non-connected paths still use up iterations of the bound.
        let paths = [st(Closed), up(0, 0), up(0, 0)];
        let mut cur = None;
        assert_eq!(walk(MpPolicy::Rr, &paths, 2, &mut cur), [1]);
    }

    #[test]
    fn oversized_list_only_first_max_paths() {
        let mut paths = vec![st(Dead); MAX_PATHS + 10];
        paths[MAX_PATHS + 1] = up(0, 0);
        for policy in MpPolicy::ALL {
            let mut cur = None;
            assert!(walk(policy, &paths, usize::MAX, &mut cur).is_empty());
        }
        paths[MAX_PATHS - 1] = up(0, 0);
        for policy in MpPolicy::ALL {
            let mut cur = None;
            assert_eq!(walk(policy, &paths, usize::MAX, &mut cur), [MAX_PATHS - 1]);
        }
    }

    #[test]
    fn failover_visits_each_connected_path_at_most_once() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for round in 0..500 {
            let n = 1 + rng.index(MAX_PATHS);
            let paths: Vec<_> = (0..n)
                .map(|_| {
                    let s = RtrsCltState::ALL[rng.index(7)];
                    PathView::new(s, rng.index(5) as i32, rng.index(4) as i64)
                })
                .collect();
            let connected = paths.iter().filter(|p| p.is_connected()).count();
            let policy = MpPolicy::ALL[rng.index(3)];
            let mut cur = if rng.index(2) == 0 {
                None
            } else {
                Some(rng.index(n + 2))
            };
            let mut seen = vec![0u32; n];
            let r = failover_req(
                policy,
                &paths,
                n,
                &mut cur,
                &mut LatencyHint::default(),
                |p, _| {
                    seen[p] += 1;
                    Offer::Failed(-(round % 100 + 1))
                },
            );
            assert!(seen.iter().all(|&c| c <= 1));
            for (i, p) in paths.iter().enumerate() {
                assert_eq!(seen[i] == 1, p.is_connected(), "{policy:?} {i}");
            }
            let tried = seen.iter().sum::<u32>() as usize;
            assert_eq!(tried, connected);
            let want = if connected == 0 {
                -ECONNABORTED
            } else {
                -(round % 100 + 1)
            };
            assert_eq!(r, Err(want));
        }
    }

    /// A whole walk from `it`: the paths handed out, and its scan to cache.
    fn walk_from(
        mut it: PathIt,
        paths: &[PathView],
        paths_num: usize,
        cur: &mut Option<usize>,
    ) -> (Vec<usize>, Option<usize>) {
        let mut v = Vec::new();
        while let Some(p) = it.next_connected(paths, paths_num, cur) {
            v.push(p);
        }
        (v, it.scanned())
    }

    /// `first_path` then `resume_after` walk as the whole walk does, for
    /// every policy: the same paths in the same order, cursor and scan;
    /// after an offered first pick, the same walk state. `failover_req`,
    /// which runs them, offers that order and keeps C's errnos: the
    /// abort's, else the last failure's, else ECONNABORTED.
    #[test]
    fn first_pick_then_resume_is_the_whole_walk() {
        let mut rng = Rng(0x0f15_7915_e5ed);
        for round in 0..20_000 {
            let n = rng.index(7);
            let paths = random_views(&mut rng, n);
            let policy = MpPolicy::ALL[round % 4];
            let paths_num = if rng.index(4) == 0 {
                rng.index(n + 2)
            } else {
                n
            };
            let cached = (rng.index(3) == 0).then(|| rng.index(n + 1));
            let cur0 = (rng.index(2) == 0).then(|| rng.index(n + 1));

            let mut cur_full = cur0;
            let it = PathIt::new(policy).with_hint(cached);
            let (full, full_scan) = walk_from(it, &paths, paths_num, &mut cur_full);

            let mut cur = cur0;
            let mut h = LatencyHint::new(cached);
            let first = PathIt::first_path(policy, &paths, &mut cur, &mut h);
            let (mut split, mut scan) = (Vec::new(), h.scanned);
            if let (Some(f), true) = (first, paths_num > 0) {
                if paths[f].is_connected() {
                    split.push(f);
                    let mut one = PathIt::new(policy).with_hint(cached);
                    let mut c = cur0;
                    assert_eq!(one.next_connected(&paths, paths_num, &mut c), Some(f));
                    assert_eq!(one, PathIt::resume_after(policy, f, h), "{policy:?}");
                    assert_eq!(c, cur);
                }
                let it = PathIt::resume_after(policy, f, h);
                let (rest, s) = walk_from(it, &paths, paths_num, &mut cur);
                split.extend(rest);
                scan = s;
            }
            let ctx = (policy, &paths, paths_num, cached, cur0);
            assert_eq!(split, full, "{ctx:?}");
            assert_eq!(cur, cur_full, "{ctx:?}");
            assert_eq!(scan, full_scan, "{ctx:?}");

            // Each path's answer; the verdict expected from the order.
            let answers: Vec<Offer> = (0..n)
                .map(|i| match rng.index(6) {
                    0 => Offer::Posted,
                    1 => Offer::Abort(-(i as i32) - 20),
                    2 | 3 => Offer::Failed(-(i as i32) - 1),
                    _ => Offer::Skipped,
                })
                .collect();
            let (mut want, mut err, mut want_tries) = (None, -ECONNABORTED, Vec::new());
            for &p in &full {
                want_tries.push(p);
                match answers[p] {
                    Offer::Posted => want = Some(Ok(p)),
                    Offer::Abort(e) => want = Some(Err(e)),
                    Offer::Failed(e) => err = e,
                    Offer::Skipped => {}
                }
                if want.is_some() {
                    break;
                }
            }
            let mut tries = Vec::new();
            let mut cur = cur0;
            let mut h = LatencyHint::new(cached);
            let r = failover_req(policy, &paths, paths_num, &mut cur, &mut h, |p, v| {
                assert_eq!(v, paths[p]);
                tries.push(p);
                answers[p]
            });
            assert_eq!(r, want.unwrap_or(Err(err)), "{ctx:?} {answers:?}");
            assert_eq!(tries, want_tries, "{ctx:?}");
            // The same walk with the policy as a type (the module's way).
            let mut walk = KindWalk {
                paths: &paths,
                paths_num,
                cur: cur0,
                hint: LatencyHint::new(cached),
                answers: &answers,
                tries: Vec::new(),
            };
            let rk = policy.dispatch(&mut walk);
            assert_eq!(
                (rk, &walk.tries, walk.cur, walk.hint.scanned),
                (r, &tries, cur, h.scanned),
                "{ctx:?} {answers:?}"
            );
            if want.is_none() {
                assert_eq!((cur, h.scanned), (cur_full, full_scan), "{ctx:?}");
            } else {
                // Stopped early: the cursor of the whole walk after as
                // many steps.
                let mut it = PathIt::new(policy).with_hint(cached);
                let mut c = cur0;
                for _ in 0..want_tries.len() {
                    it.next_connected(&paths, paths_num, &mut c);
                }
                assert_eq!(cur, c, "{ctx:?} {answers:?}");
            }
        }
    }

    /// [`failover_req`] run by a [`WithPolicy`], with `K::POLICY`.
    struct KindWalk<'a> {
        paths: &'a [PathView],
        paths_num: usize,
        cur: Option<usize>,
        hint: LatencyHint,
        answers: &'a [Offer],
        tries: Vec<usize>,
    }
    impl WithPolicy for &mut KindWalk<'_> {
        type Out = Result<usize, i32>;
        fn run<K: PolicyKind>(self) -> Result<usize, i32> {
            let (answers, tries) = (self.answers, &mut self.tries);
            let (paths, n) = (self.paths, self.paths_num);
            failover_req(
                K::POLICY,
                paths,
                n,
                &mut self.cur,
                &mut self.hint,
                |p, v| {
                    assert_eq!(v, paths[p]);
                    tries.push(p);
                    answers[p]
                },
            )
        }
    }

    /// Runs `failover_req` without a hint, answering each offer with `answer`;
    /// returns the verdict and the paths offered, in order.
    fn failover_tries(
        policy: MpPolicy,
        paths: &[PathView],
        cur: &mut Option<usize>,
        answer: impl Fn(usize) -> Offer,
    ) -> (Result<usize, i32>, Vec<usize>) {
        let mut tries = Vec::new();
        let mut hint = LatencyHint::default();
        let r = failover_req(policy, paths, paths.len(), cur, &mut hint, |p, _| {
            tries.push(p);
            answer(p)
        });
        (r, tries)
    }

    fn posted_on(want: usize) -> impl Fn(usize) -> Offer {
        move |p| {
            if p == want {
                Offer::Posted
            } else {
                Offer::Failed(-5)
            }
        }
    }

    #[test]
    fn failover_stops_at_first_success_in_policy_order() {
        let paths = [up(3, 30), st(Reconnecting), up(1, 50), up(2, 10)];
        let r = failover_tries(MpPolicy::MinInflight, &paths, &mut None, posted_on(3));
        assert_eq!(r, (Ok(3), vec![2, 3]));
        let r = failover_tries(MpPolicy::MinLatency, &paths, &mut None, |_| {
            Offer::Failed(-5)
        });
        assert_eq!(r, (Err(-5), vec![3, 0, 2]));
        let mut cur = Some(0);
        let r = failover_tries(MpPolicy::Rr, &paths, &mut cur, posted_on(0));
        assert_eq!(r, (Ok(0), vec![2, 3, 0]));
        assert_eq!(cur, Some(0));
    }

    #[test]
    fn failover_skip_and_abort() {
        let paths = [up(0, 10), up(0, 20), up(0, 30)];
        let ml = MpPolicy::MinLatency;
        // A skipped path records no error; the next one takes it.
        let skip_0 = |p| {
            if p == 0 {
                Offer::Skipped
            } else {
                Offer::Posted
            }
        };
        assert_eq!(
            failover_tries(ml, &paths, &mut None, skip_0),
            (Ok(1), vec![0, 1])
        );
        // All skipped: -ECONNABORTED, as if none was connected.
        let r = failover_tries(ml, &paths, &mut None, |_| Offer::Skipped);
        assert_eq!(r, (Err(-ECONNABORTED), vec![0, 1, 2]));
        // Abort stops the walk at once with its errno.
        let abort_1 = |p| {
            if p == 0 {
                Offer::Failed(-5)
            } else {
                Offer::Abort(-90)
            }
        };
        assert_eq!(
            failover_tries(ml, &paths, &mut None, abort_1),
            (Err(-90), vec![0, 1])
        );
    }

    #[test]
    fn inflight_counted_only_under_min_inflight() {
        assert!(counts_inflight(MpPolicy::MinInflight));
        assert!(!counts_inflight(MpPolicy::Rr));
        assert!(!counts_inflight(MpPolicy::MinLatency));
        assert!(counts_inflight(MpPolicy::ServiceTime));
    }

    #[test]
    fn service_time_weighs_latency_by_queue() {
        let st = |inflight, svc_ns| up(inflight, 0).with_svc_ns(svc_ns);
        let mut skip = PathSkipSet::new();
        // 100 µs with 9 waiting (1 ms) loses to 300 µs with 2 (900 µs).
        let paths = [st(9, 100_000), st(2, 300_000)];
        assert_eq!(get_next_path_service_time(&paths, &mut skip), Some(1));
        assert_eq!(get_next_path_service_time(&paths, &mut skip), Some(0));
        assert_eq!(get_next_path_service_time(&paths, &mut skip), None);
        // Idle paths: the faster wins; ties go to the earlier path.
        let mut skip = PathSkipSet::new();
        let paths = [st(0, 500_000), st(0, 100_000), st(0, 100_000)];
        assert_eq!(get_next_path_service_time(&paths, &mut skip), Some(1));
        // A path without samples goes first; a path not CONNECTED never.
        let mut skip = PathSkipSet::new();
        let down = PathView::new(Reconnecting, 0, 0);
        let paths = [down, st(5, 100_000), st(50, 0)];
        assert_eq!(get_next_path_service_time(&paths, &mut skip), Some(2));
        assert_eq!(get_next_path_service_time(&paths, &mut skip), Some(1));
        assert_eq!(get_next_path_service_time(&paths, &mut skip), None);
        // A saturated score is still a candidate.
        let mut skip = PathSkipSet::new();
        let paths = [st(i32::MAX, u64::MAX)];
        assert_eq!(get_next_path_service_time(&paths, &mut skip), Some(0));
        // The walk uses it, and counts inflight for it.
        let mut it = PathIt::new(MpPolicy::ServiceTime);
        let paths = [st(3, 100_000), st(0, 100_000)];
        assert_eq!(it.next_connected(&paths, 2, &mut None), Some(1));
        assert_eq!(it.next_connected(&paths, 2, &mut None), Some(0));
        assert_eq!(it.next_connected(&paths, 2, &mut None), None);
    }

    /// Simulated session: slots, per-path inflight, random policy flips,
    /// submissions, post failures, completions, path failures with
    /// failover, and path recoveries.
    #[test]
    fn randomized_policy_flips_keep_inflight_exact() {
        const NPATHS: usize = 4;
        const QD: usize = 32;
        for seed in 1..=20u64 {
            let mut rng = Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D));
            let mut states = [Connected; NPATHS];
            let mut inflight = [0i32; NPATHS];
            let mut lat = [0i64; NPATHS];
            // Per slot: Some(path) while in use, with its accounting.
            let mut slot_path: [Option<usize>; QD] = [None; QD];
            // Per slot: whether it holds one unit of its path's inflight.
            let mut counted = [false; QD];
            let mut policy = MpPolicy::default();
            let mut cur = None;
            let (mut max_seen, mut mixed_steps, mut failovers) = (0i32, 0usize, 0usize);

            let view =
                |states: &[RtrsCltState; NPATHS], inflight: &[i32; NPATHS], lat: &[i64; NPATHS]| {
                    let mut v = [up(0, 0); NPATHS];
                    for i in 0..NPATHS {
                        v[i] = PathView::new(states[i], inflight[i], lat[i]);
                    }
                    v
                };

            for _step in 0..5000 {
                match rng.index(10) {
                    0 => policy = MpPolicy::ALL[rng.index(3)],
                    1..=4 => {
                        // Submit into a free slot, with random post failures.
                        let Some(slot) = slot_path.iter().position(|s| s.is_none()) else {
                            continue;
                        };
                        let v = view(&states, &inflight, &lat);
                        let fail_mask = rng.next();
                        let r = failover_req(
                            policy,
                            &v,
                            NPATHS,
                            &mut cur,
                            &mut LatencyHint::default(),
                            |p, _| {
                                counted[slot] = counts_inflight(policy);
                                if counted[slot] {
                                    inflight[p] += 1;
                                }
                                if fail_mask & (1 << p) != 0 && fail_mask & 0x100 != 0 {
                                    if core::mem::take(&mut counted[slot]) {
                                        inflight[p] -= 1;
                                    }
                                    return Offer::Failed(-5);
                                }
                                Offer::Posted
                            },
                        );
                        if let Ok(p) = r {
                            slot_path[slot] = Some(p);
                        }
                    }
                    5..=7 => {
                        // Complete a random in-flight request.
                        let slot = rng.index(QD);
                        if let Some(p) = slot_path[slot].take() {
                            if core::mem::take(&mut counted[slot]) {
                                inflight[p] -= 1;
                            }
                        }
                    }
                    8 => {
                        // A path fails: its requests fail over.
                        let f = rng.index(NPATHS);
                        if rdma_error_recovery_like(&mut states[f]) {
                            for slot in 0..QD {
                                if slot_path[slot] != Some(f) {
                                    continue;
                                }
                                if core::mem::take(&mut counted[slot]) {
                                    inflight[f] -= 1;
                                }
                                slot_path[slot] = None;
                                let v = view(&states, &inflight, &lat);
                                let r = failover_req(
                                    policy,
                                    &v,
                                    NPATHS,
                                    &mut cur,
                                    &mut LatencyHint::default(),
                                    |p, _| {
                                        assert_ne!(p, f);
                                        counted[slot] = counts_inflight(policy);
                                        if counted[slot] {
                                            inflight[p] += 1;
                                        }
                                        Offer::Posted
                                    },
                                );
                                if let Ok(p) = r {
                                    slot_path[slot] = Some(p);
                                    failovers += 1;
                                }
                            }
                        }
                    }
                    _ => {
                        // A path comes back, with a new latency sample.
                        let p = rng.index(NPATHS);
                        states[p] = Connected;
                        lat[p] = rng.index(1000) as i64;
                    }
                }
                // Invariant: inflight == counted requests on each path.
                for (p, &n) in inflight.iter().enumerate() {
                    assert!(n >= 0);
                    let counted = (0..QD)
                        .filter(|&s| slot_path[s] == Some(p) && counted[s])
                        .count();
                    assert_eq!(n as usize, counted, "seed {seed} path {p}");
                    max_seen = max_seen.max(n);
                }
                let in_use = |s: &usize| slot_path[*s].is_some();
                let counted_io = (0..QD).filter(in_use).any(|s| counted[s]);
                let uncounted_io = (0..QD).filter(in_use).any(|s| !counted[s]);
                mixed_steps += usize::from(counted_io && uncounted_io);
                for s in 0..QD {
                    if slot_path[s].is_none() {
                        assert!(!counted[s]);
                    }
                }
            }
            // Drain everything.
            for slot in 0..QD {
                if let Some(p) = slot_path[slot].take() {
                    if core::mem::take(&mut counted[slot]) {
                        inflight[p] -= 1;
                    }
                }
            }
            assert_eq!(inflight, [0; NPATHS], "seed {seed}");
            // The run really mixed counted IO, failovers and flips.
            assert!(
                max_seen >= 2 && mixed_steps > 100 && failovers > 10,
                "{max_seen} {mixed_steps} {failovers}"
            );
        }
    }

    /// CONNECTED -> RECONNECTING, as a path error does.
    fn rdma_error_recovery_like(s: &mut RtrsCltState) -> bool {
        super::super::path_state::change_state_from_to(s, Connected, Reconnecting)
    }

    /// A source with entries that read `None` (the module's snapshot has
    /// none; a source may): every policy skips them and still offers every
    /// readable CONNECTED path once.
    struct Holey(Vec<Option<PathView>>);

    impl PathViews for Holey {
        type Path = PathView;
        fn paths_num(&self) -> usize {
            self.0.len()
        }
        fn view(&self, i: usize) -> Option<PathView> {
            self.0.get(i).copied().flatten()
        }
        fn connected(&self, i: usize) -> Option<PathView> {
            self.view(i).filter(PathView::is_connected)
        }
    }

    #[test]
    fn live_source_with_holes() {
        let src = Holey(vec![
            Some(up(5, 9)),
            None,
            Some(up(1, 3)),
            None,
            Some(st(Closed)),
        ]);
        for policy in MpPolicy::ALL {
            let mut cur = None;
            let mut it = PathIt::new(policy);
            let mut got = Vec::new();
            while let Some(p) = it.next_connected(&src, src.paths_num(), &mut cur) {
                got.push(p);
            }
            got.sort_unstable();
            assert_eq!(got, [0, 2], "{policy:?}");
        }
        let mut skip = PathSkipSet::new();
        assert_eq!(get_next_path_min_inflight(&src, &mut skip), Some(2));
        assert_eq!(
            get_next_path_min_latency(&src, &mut PathSkipSet::new()),
            Some(2)
        );
        assert!(src.paths_num() > 0);
    }

    /// A source whose `view_for` leaves at 0 what [`MpPolicy::keys`] says
    /// the policy does not read, as the module's does; `connected` hands out the entry's view.
    struct Sparse(Vec<PathView>);

    impl PathViews for Sparse {
        type Path = PathView;
        fn paths_num(&self) -> usize {
            self.0.len()
        }
        fn view(&self, i: usize) -> Option<PathView> {
            self.0.get(i).copied()
        }
        fn view_for(&self, i: usize, policy: MpPolicy) -> Option<PathView> {
            let v = self.0.get(i)?;
            let k = policy.keys();
            let s = PathView::new(
                v.state,
                if k.inflight { v.inflight } else { 0 },
                if k.latency { v.cur_latency_ns } else { 0 },
            );
            Some(if k.svc { s.with_svc_ns(v.svc_ns) } else { s })
        }
        fn connected(&self, i: usize) -> Option<PathView> {
            self.0.get(i).copied().filter(PathView::is_connected)
        }
    }

    /// A walk whose offers all fail: its verdict, its scan to cache, the
    /// paths offered (with what the walk handed over) and the cursor.
    type Walk = (
        Result<usize, i32>,
        Option<usize>,
        Vec<(usize, PathView)>,
        Option<usize>,
    );

    fn failed_walk<P: PathViews<Path = PathView> + ?Sized>(
        policy: MpPolicy,
        src: &P,
        n: usize,
        cached: Option<usize>,
        mut cur: Option<usize>,
    ) -> Walk {
        let mut got = Vec::new();
        let mut h = LatencyHint::new(cached);
        let r = failover_req(policy, src, n, &mut cur, &mut h, |p, v| {
            got.push((p, v));
            Offer::Failed(-5)
        });
        (r, h.scanned, got, cur)
    }

    /// Each policy's walk reads only its own keys (`view_for`): a source
    /// that leaves the others at 0 gives the same offers, in the same
    /// order, each with its own entry.
    #[test]
    fn walks_read_only_their_policy_keys() {
        let mut rng = Rng(0x005e_ed0f_ca11);
        for _ in 0..3000 {
            let n = 1 + rng.index(8);
            let paths = random_views(&mut rng, n);
            let policy = MpPolicy::ALL[rng.index(4)];
            let cached = (rng.index(3) == 0).then(|| rng.index(n + 1));
            let cur = (rng.index(2) == 0).then(|| rng.index(n));
            let full = failed_walk(policy, &paths, n, cached, cur);
            let part = failed_walk(policy, &Sparse(paths.clone()), n, cached, cur);
            assert_eq!(full, part, "{policy:?} {paths:?}");
            for (p, v) in &full.2 {
                assert_eq!(paths[*p], *v);
            }
        }
    }
}

#[cfg(test)]
mod shift_sim;
