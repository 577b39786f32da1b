// SPDX-License-Identifier: GPL-2.0

//! The IO path of one client path, as rtrs-clt.c does it: request slots
//! with their header IU and fast-registration MR (`alloc_path_reqs`),
//! READ/WRITE submission (`rtrs_clt_read_req`, `rtrs_clt_write_req`), and
//! completion (`process_io_rsp`, `complete_rdma_req`, local invalidation).
//!
//! Submission runs in the caller's context (blk-mq, may be atomic) and
//! completion in CQ callbacks (softirq): no mutex anywhere here. A request
//! slot belongs to the holder of permit `mem_id` until it is posted, then
//! to its response, and to the invalidation if the MR is still registered,
//! until `conf` is called.

use core::cell::Cell;
use core::marker::PhantomData;
use core::pin::Pin;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

use kernel::ffi::c_int;
use kernel::prelude::*;

use crate::bindings;
use crate::ffi::abi::{Confirm, UsrHdr};
use crate::ffi::error::{econnaborted, emsgsize};
use crate::ffi::log::{pr_err_rl, pr_warn_rl};
use crate::ffi::sync::{RcuGuard, SlotCell, SlotMut};
use crate::ffi::verbs::{
    static_cqe, wc_status_msg, Cqe, CqeFirst, CqeHandler, DevRef, Iu, IuDone, MappedSg, Mr, Qp,
    QpOwner, SgList,
};
use crate::rtrs_core::imm::{RtrsChunk, RtrsChunkLayout};
use crate::rtrs_core::proto::{
    split_at_mut_checked, RtrsMsgRdmaRead, RtrsMsgRdmaWrite, RtrsPathParams, RtrsRbuf, RtrsSgDesc,
};
use crate::rtrs_core::slot::PostTicket;
use crate::stats::PathStats;

mod log;
use log::{
    dma_map_failed, fr_map_failed, inv_failed, io_failed, io_refused, not_in_flight, rw, slot_busy,
};

/// What the IO path uses of the connection it posts on and completes from:
/// a narrow handle, so that IO does not depend on the connection's type
/// (the connection implements it and is the QP's `qp_context`).
pub(crate) trait IoCon: QpOwner + Sized + 'static {
    /// The session's name, for log lines.
    fn sess(&self) -> &CStr;
    /// The QP while `g` is held, for posting from any context; `None`
    /// before it exists and once teardown unpublished it.
    fn qp<'a>(&'a self, g: &'a RcuGuard) -> Option<&'a Qp<Self>>;
    /// The send flags of the next request (`IB_SEND_SIGNALED` every
    /// `signal_interval` sends).
    fn next_send_flags(&self) -> c_int;
    /// The path's statistics.
    fn stats(&self) -> &PathStats;
    /// Starts the path's error recovery (any context).
    fn error_recovery(&self);
    /// The path's IO context while `g` is held, once it is set up.
    fn io<'a>(&'a self, g: &'a RcuGuard) -> Option<&'a IoCtx<Self>>;
    /// A completion of a request header's send (`rtrs_clt_rdma_done`).
    fn req_iu_done(&self, wc: &bindings::ib_wc);
}

/// The completion of a request slot's header IU, on a QP whose
/// `qp_context` is a `C`.
pub(crate) struct ReqDone<C>(PhantomData<C>);

impl<C: IoCon> IuDone for ReqDone<C> {
    type Ctx = C;
    type State = ();
    fn done(con: &C, _iu: &Iu<Self>, wc: &bindings::ib_wc) {
        con.req_iu_done(wc);
    }
}

/// `fast_reg_cqe` of C (a constant here, see `verbs::static_cqe`): only
/// failed IB_WR_REG_MR complete.
pub(crate) struct FastRegDone<C>(PhantomData<C>);

impl<C: IoCon> CqeHandler for FastRegDone<C> {
    type Ctx = C;
    fn done(con: &C, wc: &bindings::ib_wc) {
        if wc.status != bindings::ib_wc_status_IB_WC_SUCCESS {
            let msg = wc_status_msg(wc.status);
            pr_err_rl!("{}: Failed IB_WR_REG_MR: {}\n", con.sess(), msg);
            con.error_recovery();
        }
    }
}

// SAFETY: `Req` is `#[repr(C)]` with `inv_cqe` first, set to this
// trampoline (type invariant); it lives in the path's `IoCtx` until every QP
// is drained.
unsafe impl<C: IoCon> CqeFirst for Req<C> {
    type Ctx = C;
    /// `rtrs_clt_inv_rkey_done`.
    fn done(con: &C, req: &Self, wc: &bindings::ib_wc) {
        if wc.status != bindings::ib_wc_status_IB_WC_SUCCESS {
            let msg = wc_status_msg(wc.status);
            pr_err_rl!("{}: Failed IB_WR_LOCAL_INV: {}\n", con.sess(), msg);
            con.error_recovery();
        }
        let g = RcuGuard::new();
        // `io` is set until the QPs are drained, this completion with them.
        if let Some(io) = con.io(&g) {
            if let Some(own) = req.slot.take_invalidated() {
                req.need_inval.store(false, Ordering::Release);
                let e = req.inv_errno.load(Ordering::Acquire);
                io.complete_rdma_req(con, &g, req, own, e, true);
            }
        }
    }
}

/// What the caller of `rtrs_clt_request` hands over with a request: its
/// callback and its data. Whoever holds it answers for the request: the
/// slot that posted it, failover looking for another path, or the caller
/// again if no path takes it.
pub(crate) struct UserReq {
    pub(crate) conf: Confirm,
    pub(crate) sg: SgList,
}

/// A request's data list in a slot.
enum SgData {
    /// No entries (a request without data), or not mapped yet.
    List(SgList),
    /// Mapped for this request.
    Mapped(MappedSg),
}

/// What a request slot carries between submission and completion.
struct ReqIo {
    /// The caller's callback and data, while the slot answers for them.
    user: Option<(Confirm, SgData)>,
    /// `mp_policy == MP_POLICY_MIN_INFLIGHT` when posted: `inflight` counts it.
    min_inflight: bool,
    /// Posted under `service-time`: its completion feeds the path's
    /// estimate (a shared cache line, left alone under other policies).
    svc_sample: bool,
    /// What failover needs to post the request again elsewhere
    /// (`rtrs_clt_get_copy_req`); the user header stays in the IU.
    read: bool,
    usr_len: usize,
    data_len: usize,
    con_type: u32,
    cpu_id: u32,
    /// `ktime_get` when the request was built for this slot: its latency
    /// runs from here to its completion.
    start_ns: i64,
}

impl ReqIo {
    /// Whether the data list is mapped (the MR registers it).
    fn mapped(&self) -> Option<&MappedSg> {
        match &self.user {
            Some((_, SgData::Mapped(m))) => Some(m),
            _ => None,
        }
    }

    /// What failover needs of `a`, in a slot just taken. `user` is set
    /// once the data is mapped: it is `None` here, as every path that
    /// frees a slot takes it out first.
    #[inline]
    fn start(&mut self, a: &ReqDesc<'_>, min_inflight: bool, svc_sample: bool) {
        self.min_inflight = min_inflight;
        self.svc_sample = svc_sample;
        self.read = a.read;
        self.usr_len = a.usr.len();
        self.data_len = a.data_len;
        self.con_type = a.con_type;
        self.cpu_id = a.cpu_id;
        self.start_ns = crate::ffi::misc::ktime_get_ns();
    }

    const IDLE: Self = Self {
        user: None,
        min_inflight: false,
        svc_sample: false,
        read: false,
        usr_len: 0,
        data_len: 0,
        con_type: 0,
        cpu_id: 0,
        start_ns: 0,
    };
}

/// What the owner of a request slot has: the request, the header IU and
/// the fast-registration MR.
struct ReqOwned<C: IoCon> {
    io: ReqIo,
    iu: Pin<KBox<Iu<ReqDone<C>>>>,
    mr: Mr,
}

/// One request slot (`struct rtrs_clt_io_req`).
///
/// `slot` is free, owned by the holder of permit `mem_id` while it builds
/// and posts the request, posted (its response takes it, or the post's
/// failure), invalidating (the LOCAL_INV's completion or failed post takes
/// it), or owned by the completion or by failover after the drain (see
/// `SlotCell` and `rtrs_core::slot`).
///
/// # Invariants
///
/// `inv_cqe` is the first field (a `wr_cqe` pointer to it is a pointer to
/// the `Req`).
#[repr(C)]
pub(crate) struct Req<C: IoCon> {
    inv_cqe: Cqe,
    slot: SlotCell<ReqOwned<C>>,
    /// `mr->need_inval`: the MR was registered and the server did not
    /// invalidate it.
    need_inval: AtomicBool,
    /// The errno the request completes with once invalidated; set before
    /// the invalidation is posted.
    inv_errno: AtomicI32,
    /// The slot's server chunk: `rbufs[mem_id]` (its rkey changes in
    /// NEW_RKEY mode) and its place in the IMM.
    raddr: u64,
    rkey: AtomicU32,
    chunk: RtrsChunk,
}

/// One path's IO state: `reqs` with the server chunks (`rbufs`), and the
/// numbers IO needs, readable without locks.
pub(crate) struct IoCtx<C: IoCon> {
    reqs: KVec<Req<C>>,
    layout: RtrsChunkLayout,
    max_hdr_size: u32,
    lkey: u32,
    /// Keeps the device and PD of the MRs and IUs; dropped last.
    dev: DevRef,
}

/// One request as `rtrs_clt_request` got it (or as failover takes it
/// back from a failed path, with the user header from the old slot's IU).
pub(crate) struct ReqDesc<'a> {
    pub(crate) read: bool,
    pub(crate) usr: UsrHdr<'a>,
    pub(crate) data_len: usize,
    /// The number of entries of the data list.
    pub(crate) sg_nents: u32,
    /// The caller's callback and data: taken by the slot that posts the
    /// request, given back here if it cannot.
    pub(crate) user: Cell<Option<UserReq>>,
    /// The permit's `con_type`, `cpu_id` and `mem_id`.
    pub(crate) con_type: u32,
    pub(crate) cpu_id: u32,
    pub(crate) mem_id: u32,
}

impl<C: IoCon> IoCtx<C> {
    /// `alloc_path_reqs`: per chunk a header IU of `max_hdr_size` bytes and
    /// an MR of `max_pages_per_mr` pages.
    pub(crate) fn new(
        sess: &CStr,
        dev: &DevRef,
        params: &RtrsPathParams,
        rbufs: &[RtrsRbuf],
        max_pages_per_mr: u32,
    ) -> Result<KBox<Self>> {
        let qd = usize::try_from(params.queue_depth).map_err(|_| EINVAL)?;
        if rbufs.len() != qd {
            return Err(EINVAL);
        }
        let layout = RtrsChunkLayout::new(params.queue_depth, params.chunk_size).map_err(|e| {
            pr_err!("{}: {}\n", sess, e);
            EINVAL
        })?;
        let hdr = usize::try_from(params.max_hdr_size).map_err(|_| EINVAL)?;
        let mut reqs = KVec::with_capacity(qd, GFP_KERNEL)?;
        for (mem_id, rbuf) in (0u32..).zip(rbufs) {
            let chunk = layout.chunk(mem_id).map_err(|_| EINVAL)?;
            let iu = Iu::<ReqDone<C>>::alloc(dev, hdr, bindings::dma_data_direction_DMA_TO_DEVICE)?;
            let mr = Mr::alloc(dev, max_pages_per_mr).inspect_err(|e| {
                pr_err!(
                    "Failed to alloc clt_path->max_pages_per_mr {}: {}\n",
                    max_pages_per_mr,
                    e.to_errno()
                )
            })?;
            // INVARIANT: `inv_cqe` first (repr(C)).
            reqs.push(
                Req {
                    inv_cqe: Cqe::of::<Req<C>>(),
                    slot: SlotCell::new(ReqOwned {
                        io: ReqIo::IDLE,
                        iu,
                        mr,
                    }),
                    need_inval: AtomicBool::new(false),
                    inv_errno: AtomicI32::new(0),
                    raddr: rbuf.addr,
                    rkey: AtomicU32::new(rbuf.rkey),
                    chunk,
                },
                GFP_KERNEL,
            )?;
        }
        Ok(KBox::new(
            Self {
                reqs,
                layout,
                max_hdr_size: params.max_hdr_size,
                lkey: dev.local_dma_lkey(),
                dev: dev.try_clone()?,
            },
            GFP_KERNEL,
        )?)
    }

    /// `queue_depth` of the path.
    pub(crate) fn queue_depth(&self) -> u32 {
        self.layout.queue_depth()
    }

    /// `max_hdr_size` of the path.
    pub(crate) fn max_hdr_size(&self) -> u32 {
        self.max_hdr_size
    }

    /// `rtrs_clt_init_req` + `rtrs_clt_read_req`/`rtrs_clt_write_req` on
    /// `con`: fills the slot, maps the data, registers the MR if there is
    /// data, and posts; the completion owns the slot from then on. On error
    /// the slot is free again, nothing was posted, and `a.user` holds the
    /// caller's part. `min_inflight`: `inflight` counts it
    /// (`req->mp_policy`); `svc_sample`: its latency feeds the
    /// service-time estimate. One copy per direction, out of line: inlined
    /// into the session's walk, it cost more than its call.
    #[inline(always)]
    pub(crate) fn submit<'g>(
        &self,
        con: &'g C,
        g: &'g RcuGuard,
        a: &ReqDesc<'_>,
        min_inflight: bool,
        svc_sample: bool,
    ) -> Result {
        if a.read {
            self.submit_dir::<true>(con, g, a, min_inflight, svc_sample)
        } else {
            self.submit_dir::<false>(con, g, a, min_inflight, svc_sample)
        }
    }

    /// `submit` for one direction: `READ` is `a.read`.
    #[inline(never)]
    fn submit_dir<'g, const READ: bool>(
        &self,
        con: &'g C,
        g: &'g RcuGuard,
        a: &ReqDesc<'_>,
        min_inflight: bool,
        svc_sample: bool,
    ) -> Result {
        let Some(req) = usize::try_from(a.mem_id)
            .ok()
            .and_then(|i| self.reqs.get(i))
        else {
            return Err(EINVAL);
        };
        let qp = con.qp(g).ok_or_else(econnaborted)?;
        let Some(mut own) = req.slot.take_free() else {
            return Err(slot_busy(con.sess(), a.mem_id));
        };
        let o = &mut *own;
        o.io.start(a, min_inflight, svc_sample);
        // The user header (the kvecs) at the start of the IU, the message
        // after it.
        let Some((usr_buf, msg_buf)) = split_at_mut_checked(o.iu.as_mut().buf_mut(), a.usr.len())
        else {
            return Err(emsgsize());
        };
        a.usr.copy_to(usr_buf);
        let plan = match req.chunk.plan_io_req(READ, a.data_len, a.usr.len()) {
            Ok(p) => p,
            Err(e) => return Err(io_refused(con.sess(), e)),
        };
        let Some(user) = a.user.take() else {
            return Err(EINVAL);
        };
        let data = if a.sg_nents > 0 {
            let dir = if READ {
                bindings::dma_data_direction_DMA_FROM_DEVICE
            } else {
                bindings::dma_data_direction_DMA_TO_DEVICE
            };
            match user.sg.dma_map(&self.dev, dir) {
                Ok(m) => SgData::Mapped(m),
                Err(sg) => {
                    a.user.set(Some(UserReq {
                        conf: user.conf,
                        sg,
                    }));
                    return Err(dma_map_failed(con.sess(), READ));
                }
            }
        } else {
            SgData::List(user.sg)
        };
        o.io.user = Some((user.conf, data));
        // The slot holds the caller's part: an error gives it back.
        let e = 'fail: {
            // rtrs_map_sg_fr: with data, the MR registers it (fast-reg).
            let fr_en = match o.io.mapped() {
                Some(m) => {
                    let nr = o.mr.map_sg(m);
                    if nr != m.count() {
                        break 'fail fr_map_failed(con.sess(), READ, nr);
                    }
                    true
                }
                None => false,
            };
            let mr = o.mr.get();
            let Ok(usr_len16) = u16::try_from(a.usr.len()) else {
                break 'fail emsgsize();
            };
            let msg_len = if READ {
                let desc = RtrsSgDesc {
                    addr: mr.iova,
                    key: mr.rkey,
                    len: u32::try_from(mr.length).unwrap_or(u32::MAX),
                };
                let d = if fr_en { Some(&desc) } else { None };
                RtrsMsgRdmaRead::encode_client(usr_len16, d, msg_buf)
            } else {
                RtrsMsgRdmaWrite { usr_len: usr_len16 }.encode(msg_buf)
            };
            let msg_len = match msg_len {
                Ok(n) => n,
                Err(e) => break 'fail e.into(),
            };
            let Some(sg_size) = a.usr.len().checked_add(msg_len) else {
                break 'fail emsgsize();
            };
            let Ok(sg_size32) = u32::try_from(sg_size) else {
                break 'fail emsgsize();
            };
            // Writes: the data through the MR, then header and message, to
            // the chunk start. Reads: header and message after `data_len`.
            let mut iu_sge = bindings::ib_sge {
                addr: o.iu.dma_addr(),
                length: sg_size32,
                lkey: self.lkey,
            };
            let mut sges;
            let (sg_list, num_sge, remote) = if READ {
                let Some(r) = req.raddr.checked_add(u64::from(plan.data_off)) else {
                    break 'fail EINVAL;
                };
                (core::ptr::addr_of_mut!(iu_sge), 1, r)
            } else if fr_en {
                let Ok(mr_len) = u32::try_from(mr.length) else {
                    break 'fail emsgsize();
                };
                // (The header's SGE is never empty: it holds the message.)
                if mr_len == 0 {
                    pr_warn_rl!(
                        "{}: Doing RDMA Write failed, no data supplied\n",
                        con.sess()
                    );
                    break 'fail EINVAL;
                }
                let mr_sge = bindings::ib_sge {
                    addr: mr.iova,
                    length: mr_len,
                    lkey: mr.lkey,
                };
                sges = [mr_sge, iu_sge];
                (sges.as_mut_ptr(), 2, req.raddr)
            } else {
                (core::ptr::addr_of_mut!(iu_sge), 1, req.raddr)
            };
            let flags = con.next_send_flags();
            o.iu.sync_for_device_len(sg_size);

            // rtrs_clt_update_all_stats, before posting: usr_len + data_len
            // (the plan's message offset), and the in-flight count.
            con.stats()
                .update_all(READ, u64::from(plan.msg_off), min_inflight);
            let mut wr = bindings::ib_rdma_wr {
                wr: bindings::ib_send_wr {
                    next: core::ptr::null_mut(),
                    __bindgen_anon_1: bindings::ib_send_wr__bindgen_ty_1 {
                        wr_cqe: o.iu.cqe_ptr(),
                    },
                    sg_list,
                    num_sge,
                    opcode: bindings::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM,
                    send_flags: flags,
                    ex: bindings::ib_send_wr__bindgen_ty_2 {
                        imm_data: plan.imm.to_be(),
                    },
                },
                remote_addr: remote,
                rkey: req.rkey.load(Ordering::Acquire),
            };
            // The REG_MR only with data, ahead of the write.
            let rwr;
            let head: *const bindings::ib_send_wr = if fr_en {
                let access = if READ {
                    bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE
                        | bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE
                } else {
                    bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE
                };
                rwr = bindings::ib_reg_wr {
                    wr: bindings::ib_send_wr {
                        next: core::ptr::addr_of_mut!(wr.wr),
                        __bindgen_anon_1: bindings::ib_send_wr__bindgen_ty_1 {
                            wr_cqe: static_cqe::<FastRegDone<C>>(),
                        },
                        sg_list: core::ptr::null_mut(),
                        num_sge: 0,
                        opcode: bindings::ib_wr_opcode_IB_WR_REG_MR,
                        send_flags: 0,
                        ex: bindings::ib_send_wr__bindgen_ty_2 { imm_data: 0 },
                    },
                    mr: o.mr.as_ptr(),
                    key: mr.rkey,
                    access: access as c_int,
                };
                &rwr.wr
            } else {
                &wr.wr
            };
            // `mr->need_inval` (false in a free slot): the server or a
            // LOCAL_INV is to invalidate the registration.
            req.need_inval.store(fr_en, Ordering::Relaxed);
            // The response may come as soon as the request is posted.
            let ticket = own.post();
            // SAFETY: `head` and the requests it chains live across the
            // call. The SGEs point into the slot's IU, and the MR
            // registered is the slot's: both live in the path's `IoCtx`,
            // freed only after the QPs are drained. The write's cqe is that
            // IU's; the fast-reg cqe is the constant
            // `static_cqe::<FastRegDone<C>>()`, which never goes away; both
            // expect a `C`, the context of `qp` (`IoCon::qp`).
            return match unsafe { qp.post_send_wr(head) } {
                Ok(()) => Ok(()),
                Err(e) => self.post_failed(con, req, a, min_inflight, ticket, e),
            };
        };
        self.give_back(req, own, a, e)
    }

    /// A request that failed once the slot held the caller's part: the
    /// slot freed, the part back in `a`.
    #[cold]
    fn give_back(
        &self,
        req: &Req<C>,
        mut own: SlotMut<'_, ReqOwned<C>>,
        a: &ReqDesc<'_>,
        e: Error,
    ) -> Result {
        req.need_inval.store(false, Ordering::Relaxed);
        a.user.set(self.take_user(&mut own.io));
        Err(e)
    }

    /// `ib_post_send` refused the request: the slot back from the
    /// response's side, unless a (bogus) response took it already. That
    /// response completes the request and counts it (at once, or when the
    /// MR's invalidation ends), so the caller hears of it only there.
    #[cold]
    fn post_failed(
        &self,
        con: &C,
        req: &Req<C>,
        a: &ReqDesc<'_>,
        min_inflight: bool,
        ticket: PostTicket,
        e: Error,
    ) -> Result {
        pr_err_rl!(
            "{}: {} request failed: error={}\n",
            con.sess(),
            rw(a.read),
            e.to_errno()
        );
        let Some(own) = req.slot.take_failed_post(ticket) else {
            return Ok(());
        };
        if min_inflight {
            con.stats().dec_inflight();
        }
        self.give_back(req, own, a, e)
    }

    /// Takes the caller's part out of a slot, the data list unmapped.
    fn take_user(&self, io: &mut ReqIo) -> Option<UserReq> {
        let (conf, data) = io.user.take()?;
        let sg = match data {
            SgData::List(l) => l,
            SgData::Mapped(m) => m.unmap(&self.dev),
        };
        Some(UserReq { conf, sg })
    }

    /// The caller's callback out of a completed slot, its data list
    /// unmapped: the completion's `take_user` (the list goes back to no one).
    /// Inline: without an unmap, only the callback is read out of the slot.
    #[inline(always)]
    fn take_conf(&self, io: &mut ReqIo) -> Option<Confirm> {
        match &io.user {
            Some((_, SgData::Mapped(m))) if m.needs_unmap() => self.take_user(io).map(|u| u.conf),
            _ => io.user.take().map(|(conf, _)| conf),
        }
    }

    /// `process_io_rsp` for an IO response `RtrsImm::decode` took against
    /// this path's queue depth (so `msg_id` names a slot). CQ context.
    /// `g` is the completion's read-side section, which `io` was read in.
    #[inline(always)]
    pub(crate) fn process_io_rsp(
        &self,
        con: &C,
        g: &RcuGuard,
        msg_id: u32,
        errno: i32,
        w_inval: bool,
    ) {
        if let Some(req) = self.req(msg_id) {
            self.process_req_rsp(con, g, req, msg_id, errno, w_inval);
        }
    }

    /// An RKEY_RSP (NEW_RKEY mode) whose `buf_id` was checked to be
    /// `msg_id`: the chunk's new rkey, then the IO response it carries, if
    /// any (`rsp`: its errno and W_INV), with one look-up of the slot.
    /// CQ context, as [`IoCtx::process_io_rsp`].
    #[inline(always)]
    pub(crate) fn process_rkey_rsp(
        &self,
        con: &C,
        g: &RcuGuard,
        msg_id: u32,
        rkey: u32,
        rsp: Option<(i32, bool)>,
    ) {
        let Some(req) = self.req(msg_id) else {
            return;
        };
        req.rkey.store(rkey, Ordering::Release);
        if let Some((errno, w_inval)) = rsp {
            self.process_req_rsp(con, g, req, msg_id, errno, w_inval);
        }
    }

    /// The slot `msg_id` names, if it names one.
    #[inline(always)]
    fn req(&self, msg_id: u32) -> Option<&Req<C>> {
        usize::try_from(msg_id).ok().and_then(|i| self.reqs.get(i))
    }

    /// [`IoCtx::process_io_rsp`] of slot `req`, which `msg_id` names.
    #[inline(always)]
    fn process_req_rsp(
        &self,
        con: &C,
        g: &RcuGuard,
        req: &Req<C>,
        msg_id: u32,
        errno: i32,
        w_inval: bool,
    ) {
        // Not while its MR is being invalidated: that completes it.
        let Some(own) = req.slot.take_posted() else {
            not_in_flight(con.sess(), msg_id);
            return;
        };
        if w_inval {
            req.need_inval.store(false, Ordering::Release);
        }
        self.complete_rdma_req(con, g, req, own, errno, w_inval);
    }

    /// `complete_rdma_req(req, errno, notify = true, can_wait = false)` of
    /// the request in `own`, which the caller took. CQ context. With the MR
    /// still registered, the request completes when its local invalidation
    /// does. Inline in its two callers: the invalidation's completion then
    /// saves a call and a second frame. `invalidated`: the caller cleared
    /// `need_inval` (a taken slot's flag, which nobody sets again until the
    /// slot is free), so it is not read back. That trusts the peer's W_INV,
    /// as C's `need_inval &= !w_inval` does.
    #[inline(always)]
    fn complete_rdma_req<'a>(
        &self,
        con: &C,
        g: &RcuGuard,
        req: &'a Req<C>,
        mut own: SlotMut<'a, ReqOwned<C>>,
        errno: i32,
        invalidated: bool,
    ) {
        if own.io.mapped().is_some() && !invalidated && req.need_inval.load(Ordering::Acquire) {
            req.inv_errno.store(errno, Ordering::Release);
            let rkey = own.mr.get().rkey;
            // The invalidation's completion takes the slot; no response can.
            own.post_inv();
            if let Err(e) = self.post_inv(con, g, req, rkey) {
                inv_failed(con.sess(), rkey, e);
                // The slot back to finish the request, unless another
                // completion took it.
                let Some(o) = req.slot.take_invalidated() else {
                    return;
                };
                req.need_inval.store(false, Ordering::Release);
                own = o;
            } else {
                return;
            }
        }
        let conf = self.take_conf(&mut own.io);
        let io = &own.io;
        if io.min_inflight {
            con.stats().dec_inflight();
        }
        if errno == 0 {
            // Counted before the slot is released, its fields read in place
            // after the clock (none held across the call).
            let now = crate::ffi::misc::ktime_get_ns();
            con.stats()
                .record_completion(io.read, io.svc_sample, io.start_ns, now);
            drop(own);
        } else {
            let read = io.read;
            drop(own);
            io_failed(con.sess(), read, errno);
        }
        if let Some(conf) = conf {
            conf.call(errno);
        }
    }

    /// `fail_all_outstanding_reqs` over the slots of a drained path: each
    /// request still in flight is completed without notification
    /// (`complete_rdma_req(req, -ECONNABORTED, false, true)`; the MR is
    /// not invalidated, it is deregistered with the slots), then handed to
    /// `failover`; if that fails, `conf` gets its errno.
    pub(crate) fn fail_outstanding(
        &self,
        stats: &PathStats,
        mut failover: impl FnMut(&ReqDesc<'_>) -> Result,
    ) {
        for (i, req) in self.reqs.iter().enumerate() {
            let Some(mut own) = req.slot.take_in_flight() else {
                continue;
            };
            let user = self.take_user(&mut own.io);
            let io = &own.io;
            if io.min_inflight {
                stats.dec_inflight();
            }
            req.need_inval.store(false, Ordering::Relaxed);
            let usr = own.iu.data_for_cpu().get(..io.usr_len).unwrap_or(&[]);
            let fr = ReqDesc {
                read: io.read,
                usr: UsrHdr::bytes(usr),
                data_len: io.data_len,
                sg_nents: user.as_ref().map_or(0, |u| u.sg.nents()),
                user: Cell::new(user),
                con_type: io.con_type,
                cpu_id: io.cpu_id,
                mem_id: u32::try_from(i).unwrap_or(u32::MAX),
            };
            if let Err(e) = failover(&fr) {
                if let Some(u) = fr.user.take() {
                    u.conf.call(e.to_errno());
                }
            }
        }
    }

    /// `rtrs_inv_rkey`: a signaled IB_WR_LOCAL_INV of the slot's MR.
    fn post_inv(&self, con: &C, g: &RcuGuard, req: &Req<C>, rkey: u32) -> Result {
        let qp = con.qp(g).ok_or_else(econnaborted)?;
        let wr = bindings::ib_send_wr {
            __bindgen_anon_1: bindings::ib_send_wr__bindgen_ty_1 {
                wr_cqe: req.inv_cqe.as_ptr(),
            },
            opcode: bindings::ib_wr_opcode_IB_WR_LOCAL_INV,
            send_flags: bindings::ib_send_flags_IB_SEND_SIGNALED as c_int,
            ex: bindings::ib_send_wr__bindgen_ty_2 {
                invalidate_rkey: rkey,
            },
            ..Default::default()
        };
        // SAFETY: The request has no SGE; `inv_cqe` lives in the slot until
        // the QP is drained, and expects a `C`.
        unsafe { qp.post_send_wr(&wr) }
    }
}
