// SPDX-License-Identifier: GPL-2.0

//! The IO path of one client path, as rtrs-clt.c does it: request slots
//! with their header IU and fast-registration MR (`alloc_path_reqs`),
//! READ/WRITE submission (`rtrs_clt_read_req`, `rtrs_clt_write_req`), and
//! completion (`process_io_rsp`, `complete_rdma_req`, local invalidation).
//!
//! Submission runs in the caller's context (blk-mq, may be atomic) and
//! completion in CQ callbacks (softirq): no mutex anywhere here. A request
//! slot belongs to the holder of permit `mem_id` until it is posted, then
//! to the completion path until `conf` is called.

use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::pin::Pin;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

use kernel::error::from_err_ptr;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::types::Opaque;

use crate::abi::{ConfFn, Kvec};
use crate::bindings;
use crate::error::{econnaborted, emsgsize};
use crate::log::{pr_err_rl, pr_warn_rl};
use crate::rtrs_core::imm::RtrsChunkLayout;
use crate::rtrs_core::proto::{
    check_io_chunk, RtrsMsgRdmaRead, RtrsMsgRdmaWrite, RtrsPathParams, RtrsRbuf, RtrsSgDesc,
};
use crate::stats::PathStats;
use crate::sync::RcuGuard;
use crate::verbs::{
    first_cqe_done, post_send_raw, wc_status_msg, CqeFirst, CqeHandler, DevRef, Iu, IuDone,
};

/// What the IO path uses of the connection it posts on and completes from:
/// a narrow handle, so that IO does not depend on the connection's type
/// (the connection implements it and is the QP's `qp_context`).
pub(crate) trait IoCon: Sync + Sized {
    /// The session's name, for log lines.
    fn sess(&self) -> &CStr;
    /// The QP, for posting from any context; null before it exists and
    /// after teardown began.
    fn qp_raw(&self) -> *mut bindings::ib_qp;
    /// The send flags of the next request (`IB_SEND_SIGNALED` every
    /// `signal_interval` sends).
    fn next_send_flags(&self) -> c_int;
    /// The `ib_cqe` of fast registrations (see `FastRegDone`).
    fn fast_reg_cqe(&self) -> *mut bindings::ib_cqe;
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
    fn done(con: &C, _iu: &Iu<Self>, wc: &bindings::ib_wc) {
        con.req_iu_done(wc);
    }
}

/// `ib_cqe.done` of `fast_reg_cqe`: only failed IB_WR_REG_MR complete.
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
        req.need_inval.store(false, Ordering::Release);
        let g = RcuGuard::new();
        if let Some(io) = con.io(&g) {
            let e = req.inv_errno.load(Ordering::Acquire);
            io.complete_rdma_req(con, req, e);
        }
    }
}

/// The server's chunk of a request slot: its address and rkey (`rbufs[mem_id]`).
#[derive(Clone, Copy)]
struct RemoteChunk {
    addr: u64,
    rkey: u32,
}

/// What a request slot carries between submission and completion.
#[derive(Clone, Copy)]
struct ReqIo {
    conf: ConfFn,
    priv_: *mut c_void,
    sglist: *mut bindings::scatterlist,
    sg_cnt: u32,
    dir: bindings::dma_data_direction,
    /// `mp_policy == MP_POLICY_MIN_INFLIGHT` when posted: `inflight` counts it.
    min_inflight: bool,
    /// What failover needs to post the request again elsewhere
    /// (`rtrs_clt_get_copy_req`); the user header stays in the IU.
    read: bool,
    usr_len: usize,
    data_len: usize,
    con_type: u32,
    cpu_id: u32,
}

impl Default for ReqIo {
    fn default() -> Self {
        Self {
            conf: None,
            priv_: core::ptr::null_mut(),
            sglist: core::ptr::null_mut(),
            sg_cnt: 0,
            dir: bindings::dma_data_direction_DMA_NONE,
            min_inflight: false,
            read: false,
            usr_len: 0,
            data_len: 0,
            con_type: 0,
            cpu_id: 0,
        }
    }
}

/// One request slot (`struct rtrs_clt_io_req`).
///
/// # Invariants
///
/// `inv_cqe` is the first field (a `wr_cqe` pointer to it is a pointer to
/// the `Req`); `mr` is a live MR of the path's PD until drop. `io` is
/// accessed only by the slot's owner (see the module doc).
#[repr(C)]
pub(crate) struct Req<C: IoCon> {
    inv_cqe: Opaque<bindings::ib_cqe>,
    iu: Pin<KBox<Iu<ReqDone<C>>>>,
    mr: NonNull<bindings::ib_mr>,
    in_use: AtomicBool,
    /// `mr->need_inval`.
    need_inval: AtomicBool,
    /// `ref`: 1 while in flight, 2 while a local invalidate is posted.
    refcnt: AtomicU32,
    inv_errno: AtomicI32,
    io: UnsafeCell<ReqIo>,
}

// SAFETY: The MR and IU may be used from any thread; `io` is only touched
// by the slot's single owner at a time, handed over through post_send and
// the completion (which order memory).
unsafe impl<C: IoCon> Send for Req<C> {}
// SAFETY: As above.
unsafe impl<C: IoCon> Sync for Req<C> {}

impl<C: IoCon> Drop for Req<C> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the MR is live; no posted request
        // uses it (the QPs are drained first).
        unsafe { bindings::rtrs_rs_ib_dereg_mr(self.mr.as_ptr()) };
    }
}

impl<C: IoCon> Req<C> {
    /// A copy of the slot's IO description.
    ///
    /// # Safety
    ///
    /// The caller owns the slot (module doc).
    unsafe fn io(&self) -> ReqIo {
        // SAFETY: The caller owns the slot, so nobody writes `io` now.
        unsafe { *self.io.get() }
    }

    /// Sets the slot's IO description.
    ///
    /// # Safety
    ///
    /// The caller owns the slot and has not posted it.
    unsafe fn set_io(&self, v: ReqIo) {
        // SAFETY: The caller owns the slot exclusively.
        unsafe { *self.io.get() = v };
    }

    fn mr(&self) -> &bindings::ib_mr {
        // SAFETY: By the type invariant the MR is live.
        unsafe { self.mr.as_ref() }
    }
}

/// One path's IO state: `reqs`, the server chunks (`rbufs`), and the
/// numbers IO needs, readable without locks.
pub(crate) struct IoCtx<C: IoCon> {
    reqs: KVec<Req<C>>,
    rbuf_addr: KVec<u64>,
    rbuf_rkey: KVec<AtomicU32>,
    layout: RtrsChunkLayout,
    max_hdr_size: u32,
    ib_dev: *mut bindings::ib_device,
    lkey: u32,
    /// Keeps the device and PD of the MRs and IUs; dropped last.
    _dev: DevRef,
}

// SAFETY: `ib_dev` is a registered device kept by `_dev`; the rest is
// `Sync` or immutable.
unsafe impl<C: IoCon> Send for IoCtx<C> {}
// SAFETY: As above.
unsafe impl<C: IoCon> Sync for IoCtx<C> {}

/// One request as `rtrs_clt_request` got it (or as failover takes it
/// back from a failed path, with the user header from the old slot's IU).
pub(crate) struct ReqDesc<'a> {
    pub(crate) read: bool,
    pub(crate) conf: ConfFn,
    pub(crate) priv_: *mut c_void,
    pub(crate) usr: &'a [Kvec],
    pub(crate) usr_len: usize,
    pub(crate) data_len: usize,
    pub(crate) sg: *mut bindings::scatterlist,
    pub(crate) sg_cnt: u32,
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
        for _ in 0..qd {
            let iu = Iu::<ReqDone<C>>::alloc(dev, hdr, bindings::dma_data_direction_DMA_TO_DEVICE)?;
            // SAFETY: The PD is live (`dev`).
            let mr = from_err_ptr(unsafe {
                bindings::ib_alloc_mr(
                    dev.pd(),
                    bindings::ib_mr_type_IB_MR_TYPE_MEM_REG,
                    max_pages_per_mr,
                )
            })
            .inspect_err(|e| {
                pr_err!(
                    "Failed to alloc clt_path->max_pages_per_mr {}: {:?}\n",
                    max_pages_per_mr,
                    e
                )
            })?;
            let mr = NonNull::new(mr).ok_or(ENOMEM)?;
            // INVARIANT: `inv_cqe` first (repr(C)); the MR was just allocated.
            reqs.push(
                Req {
                    inv_cqe: Opaque::new(bindings::ib_cqe {
                        done: Some(first_cqe_done::<Req<C>>),
                    }),
                    iu,
                    mr,
                    in_use: AtomicBool::new(false),
                    need_inval: AtomicBool::new(false),
                    refcnt: AtomicU32::new(0),
                    inv_errno: AtomicI32::new(0),
                    io: UnsafeCell::new(ReqIo::default()),
                },
                GFP_KERNEL,
            )?;
        }
        let mut rbuf_addr = KVec::with_capacity(qd, GFP_KERNEL)?;
        let mut rbuf_rkey = KVec::with_capacity(qd, GFP_KERNEL)?;
        for r in rbufs {
            rbuf_addr.push(r.addr, GFP_KERNEL)?;
            rbuf_rkey.push(AtomicU32::new(r.rkey), GFP_KERNEL)?;
        }
        Ok(KBox::new(
            Self {
                reqs,
                rbuf_addr,
                rbuf_rkey,
                layout,
                max_hdr_size: params.max_hdr_size,
                ib_dev: dev.ib_dev(),
                lkey: dev.local_dma_lkey(),
                _dev: dev.try_clone()?,
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

    /// A new rkey for chunk `buf_id` (NEW_RKEY mode).
    pub(crate) fn set_rkey(&self, buf_id: u16, rkey: u32) {
        if let Some(k) = self.rbuf_rkey.get(usize::from(buf_id)) {
            k.store(rkey, Ordering::Release);
        }
    }

    /// `rtrs_clt_init_req` + `rtrs_clt_read_req`/`rtrs_clt_write_req` on
    /// `con`. On error the slot is free again and nothing was posted.
    /// `min_inflight`: the session's policy is MIN_INFLIGHT (`req->mp_policy`).
    pub(crate) fn submit(&self, con: &C, a: &ReqDesc<'_>, min_inflight: bool) -> Result {
        let idx = usize::try_from(a.mem_id).map_err(|_| EINVAL)?;
        let (Some(req), Some(&raddr), Some(rkey)) = (
            self.reqs.get(idx),
            self.rbuf_addr.get(idx),
            self.rbuf_rkey.get(idx),
        ) else {
            return Err(EINVAL);
        };
        let qp = con.qp_raw();
        if qp.is_null() {
            return Err(econnaborted());
        }
        if req.in_use.swap(true, Ordering::AcqRel) {
            pr_err_rl!("{}: request slot {} busy\n", con.sess(), a.mem_id);
            return Err(EBUSY);
        }
        let rbuf = RemoteChunk {
            addr: raddr,
            rkey: rkey.load(Ordering::Acquire),
        };
        let res = self.do_submit(con, qp, req, rbuf, a, min_inflight);
        if res.is_err() {
            req.in_use.store(false, Ordering::Release);
        }
        res
    }

    fn do_submit(
        &self,
        con: &C,
        qp: *mut bindings::ib_qp,
        req: &Req<C>,
        rbuf: RemoteChunk,
        a: &ReqDesc<'_>,
        min_inflight: bool,
    ) -> Result {
        let sess = con.sess();
        let dir = if a.read {
            bindings::dma_data_direction_DMA_FROM_DEVICE
        } else {
            bindings::dma_data_direction_DMA_TO_DEVICE
        };
        // SAFETY: We hold the permit of this slot and it is not posted.
        unsafe {
            req.set_io(ReqIo {
                conf: a.conf,
                priv_: a.priv_,
                sglist: a.sg,
                sg_cnt: a.sg_cnt,
                dir,
                min_inflight,
                read: a.read,
                usr_len: a.usr_len,
                data_len: a.data_len,
                con_type: a.con_type,
                cpu_id: a.cpu_id,
            })
        };
        req.need_inval.store(false, Ordering::Relaxed);
        req.inv_errno.store(0, Ordering::Relaxed);
        req.refcnt.store(1, Ordering::Relaxed);

        // SAFETY: The slot is ours and not posted (see above).
        let buf = unsafe { req.iu.buf_mut() };
        // Copy the user header (the kvecs) to the start of the IU.
        let mut off = 0usize;
        for v in a.usr {
            let (p, l) = (v.iov_base.cast_const().cast::<u8>(), v.iov_len);
            let end = off.checked_add(l).ok_or(emsgsize())?;
            let dst = buf.get_mut(off..end).ok_or(emsgsize())?;
            if l > 0 {
                // SAFETY: The caller's kvec points to `l` readable bytes.
                let src = unsafe { core::slice::from_raw_parts(p, l) };
                dst.copy_from_slice(src);
            }
            off = end;
        }
        if let Err(e) = check_io_chunk(a.read, a.data_len, a.usr_len, self.layout.chunk_size()) {
            pr_warn_rl!("{}: {}\n", sess, e);
            return Err(e.into());
        }
        let mut count: c_int = 0;
        if a.sg_cnt > 0 {
            let n = c_int::try_from(a.sg_cnt).map_err(|_| EINVAL)?;
            // SAFETY: The caller's scatterlist has `sg_cnt` entries; the device
            // is kept by `_dev`.
            count = unsafe { bindings::rtrs_rs_ib_dma_map_sg(self.ib_dev, a.sg, n, dir) };
            if count <= 0 {
                pr_warn_rl!("{}: {} request failed, dma map failed\n", sess, rw(a.read));
                return Err(EINVAL);
            }
        }
        let res = self.post(con, qp, req, rbuf, a, count, min_inflight);
        if res.is_err() {
            req.need_inval.store(false, Ordering::Relaxed);
            if a.sg_cnt > 0 {
                self.unmap(req);
            }
        }
        res
    }

    #[allow(clippy::too_many_arguments)]
    fn post(
        &self,
        con: &C,
        qp: *mut bindings::ib_qp,
        req: &Req<C>,
        rbuf: RemoteChunk,
        a: &ReqDesc<'_>,
        count: c_int,
        min_inflight: bool,
    ) -> Result {
        let sess = con.sess();
        if count > 0 {
            // SAFETY: The MR is ours (slot owner) and the list was mapped.
            let nr = unsafe { bindings::rtrs_rs_ib_map_mr_sg_4k(req.mr.as_ptr(), a.sg, count) };
            if nr != count {
                let e = if nr < 0 { nr } else { EINVAL.to_errno() };
                pr_err_rl!(
                    "{}: {} request failed, failed to map fast reg. data, err: {}\n",
                    sess,
                    rw(a.read),
                    e
                );
                return Err(Error::from_errno(e));
            }
            // SAFETY: As above.
            unsafe { bindings::rtrs_rs_ib_inc_fast_reg_key(req.mr.as_ptr()) };
        }
        let mr = req.mr();
        let usr_len16 = u16::try_from(a.usr_len).map_err(|_| emsgsize())?;
        // SAFETY: The slot is ours and not posted.
        let buf = unsafe { req.iu.buf_mut() };
        let msg_buf = buf.get_mut(a.usr_len..).ok_or(emsgsize())?;
        let msg_len = if a.read {
            let desc = RtrsSgDesc {
                addr: mr.iova,
                key: mr.rkey,
                len: u32::try_from(mr.length).unwrap_or(u32::MAX),
            };
            let d = if count > 0 { Some(&desc) } else { None };
            RtrsMsgRdmaRead::encode_client(usr_len16, d, msg_buf).map_err(|_| emsgsize())?
        } else {
            RtrsMsgRdmaWrite { usr_len: usr_len16 }
                .encode(msg_buf)
                .map_err(|_| emsgsize())?
        };
        let sg_size = a.usr_len.checked_add(msg_len).ok_or(emsgsize())?;
        let sg_size32 = u32::try_from(sg_size).map_err(|_| emsgsize())?;
        let off = u32::try_from(a.data_len.checked_add(a.usr_len).ok_or(emsgsize())?)
            .map_err(|_| emsgsize())?;
        let imm = self
            .layout
            .io_req_imm(a.mem_id, off)
            .map_err(|_| emsgsize())?;

        let access = if a.read {
            bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE
                | bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE
        } else {
            bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE
        };
        let fr_en = count > 0;
        if fr_en {
            req.need_inval.store(true, Ordering::Relaxed);
        }
        // Writes: the data through the MR, then header and message, to the
        // chunk start. Reads: header and message after `data_len`.
        let iu_sge = bindings::ib_sge {
            addr: req.iu.dma_addr(),
            length: sg_size32,
            lkey: self.lkey,
        };
        let mut sges = [bindings::ib_sge::default(); 2];
        let (num_sge, remote) = if a.read {
            sges[0] = iu_sge;
            (
                1,
                rbuf.addr.checked_add(u64::from(
                    u32::try_from(a.data_len).map_err(|_| emsgsize())?,
                )),
            )
        } else if fr_en {
            sges[0] = bindings::ib_sge {
                addr: mr.iova,
                length: u32::try_from(mr.length).map_err(|_| emsgsize())?,
                lkey: mr.lkey,
            };
            sges[1] = iu_sge;
            (2, Some(rbuf.addr))
        } else {
            sges[0] = iu_sge;
            (1, Some(rbuf.addr))
        };
        let remote = remote.ok_or(EINVAL)?;
        if sges.iter().take(num_sge).any(|s| s.length == 0) {
            pr_warn_rl!("{}: Doing RDMA Write failed, no data supplied\n", sess);
            return Err(EINVAL);
        }
        let flags = con.next_send_flags();
        req.iu.sync_for_device_len(sg_size);

        // rtrs_clt_update_all_stats, before posting: usr_len + data_len as
        // unsigned int, and the in-flight count.
        let len = u64::from(a.usr_len.saturating_add(a.data_len) as u32);
        con.stats().update_all(a.read, len, min_inflight);
        let mut wr = bindings::ib_rdma_wr {
            wr: bindings::ib_send_wr {
                __bindgen_anon_1: bindings::ib_send_wr__bindgen_ty_1 {
                    wr_cqe: req.iu.cqe_ptr(),
                },
                sg_list: sges.as_mut_ptr(),
                num_sge: c_int::try_from(num_sge).unwrap_or(1),
                opcode: bindings::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM,
                send_flags: flags,
                ex: bindings::ib_send_wr__bindgen_ty_2 {
                    imm_data: imm.to_be(),
                },
                ..Default::default()
            },
            remote_addr: remote,
            rkey: rbuf.rkey,
        };
        let rwr = bindings::ib_reg_wr {
            wr: bindings::ib_send_wr {
                next: &mut wr.wr,
                __bindgen_anon_1: bindings::ib_send_wr__bindgen_ty_1 {
                    wr_cqe: con.fast_reg_cqe(),
                },
                opcode: bindings::ib_wr_opcode_IB_WR_REG_MR,
                ..Default::default()
            },
            mr: req.mr.as_ptr(),
            key: mr.rkey,
            access: access as c_int,
        };
        let head: *const bindings::ib_send_wr = if fr_en { &rwr.wr } else { &wr.wr };
        // SAFETY: `qp` is live: the caller is inside the RCU section of
        // `Sess::issue` on a published path, whose QPs are destroyed only
        // after a grace period (completions post from CQ context, which the
        // drain ends before that). The SGEs point to the mapped IU and MR,
        // which live as long as the path's `IoCtx`; the cqes live as long as
        // `con` and `req`.
        let res = unsafe { post_send_raw(qp, head) };
        if let Err(e) = res {
            if min_inflight {
                con.stats().dec_inflight();
            }
            pr_err_rl!("{}: {} request failed: error={:?}\n", sess, rw(a.read), e);
        }
        res
    }

    fn unmap(&self, req: &Req<C>) {
        // SAFETY: The caller owns the slot.
        let io = unsafe { req.io() };
        let Ok(n) = c_int::try_from(io.sg_cnt) else {
            return;
        };
        // SAFETY: The list was mapped with these arguments by `do_submit`.
        unsafe { bindings::rtrs_rs_ib_dma_unmap_sg(self.ib_dev, io.sglist, n, io.dir) };
    }

    /// `process_io_rsp`. CQ context.
    pub(crate) fn process_io_rsp(&self, con: &C, msg_id: u32, errno: i32, w_inval: bool) {
        let Some(req) = usize::try_from(msg_id).ok().and_then(|i| self.reqs.get(i)) else {
            pr_err_rl!("{}: IO response for bad msg_id {}\n", con.sess(), msg_id);
            return;
        };
        if w_inval {
            req.need_inval.store(false, Ordering::Release);
        }
        self.complete_rdma_req(con, req, errno);
    }

    /// `complete_rdma_req(req, errno, notify = true, can_wait = false)`.
    /// CQ context.
    fn complete_rdma_req(&self, con: &C, req: &Req<C>, errno: i32) {
        if !req.in_use.load(Ordering::Acquire) {
            return;
        }
        // SAFETY: The request is in flight and its completion is ours.
        let io = unsafe { req.io() };
        if io.sg_cnt > 0 {
            if req.need_inval.load(Ordering::Acquire) {
                req.inv_errno.store(errno, Ordering::Release);
                req.refcnt.fetch_add(1, Ordering::AcqRel);
                match self.post_inv(con, req) {
                    Ok(()) => {
                        if req.refcnt.fetch_sub(1, Ordering::AcqRel) != 1 {
                            return;
                        }
                    }
                    Err(e) => {
                        // C leaves the request hanging here; finish it.
                        pr_err_rl!(
                            "{}: Send INV WR key={:#x}: {:?}\n",
                            con.sess(),
                            req.mr().rkey,
                            e
                        );
                        req.need_inval.store(false, Ordering::Release);
                        req.refcnt.fetch_sub(1, Ordering::AcqRel);
                    }
                }
            }
            self.unmap(req);
        }
        if req.refcnt.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        if io.min_inflight {
            con.stats().dec_inflight();
        }
        req.in_use.store(false, Ordering::Release);
        if errno != 0 {
            pr_err_rl!(
                "{}: IO {} request failed: error={}\n",
                con.sess(),
                if io.dir == bindings::dma_data_direction_DMA_TO_DEVICE {
                    "write"
                } else {
                    "read"
                },
                errno
            );
        }
        if let Some(conf) = io.conf {
            // SAFETY: rnbd's callback with its own private pointer, called
            // once per accepted request, through the C helper.
            unsafe { bindings::rtrs_rs_call_conf(Some(conf), io.priv_, errno) };
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
            if !req.in_use.load(Ordering::Acquire) {
                continue;
            }
            // SAFETY: The QPs are drained: no completion runs, the slot is ours.
            let io = unsafe { req.io() };
            if io.sg_cnt > 0 {
                self.unmap(req);
            }
            if io.min_inflight {
                stats.dec_inflight();
            }
            req.need_inval.store(false, Ordering::Relaxed);
            req.refcnt.store(0, Ordering::Relaxed);
            req.in_use.store(false, Ordering::Release);
            // SAFETY: Ours (see above), and not posted any more.
            let buf = unsafe { req.iu.buf_mut() };
            let usr = buf.get(..io.usr_len).unwrap_or(&[]);
            let kv = [Kvec {
                iov_base: usr.as_ptr().cast_mut().cast(),
                iov_len: usr.len(),
            }];
            let fr = ReqDesc {
                read: io.read,
                conf: io.conf,
                priv_: io.priv_,
                usr: &kv,
                usr_len: usr.len(),
                data_len: io.data_len,
                sg: io.sglist,
                sg_cnt: io.sg_cnt,
                con_type: io.con_type,
                cpu_id: io.cpu_id,
                mem_id: u32::try_from(i).unwrap_or(u32::MAX),
            };
            if let Err(e) = failover(&fr) {
                if let Some(conf) = io.conf {
                    // SAFETY: rnbd's callback with its own private pointer,
                    // once for this request (it was not completed before).
                    unsafe { bindings::rtrs_rs_call_conf(Some(conf), io.priv_, e.to_errno()) };
                }
            }
        }
    }

    /// `rtrs_inv_rkey`: a signaled IB_WR_LOCAL_INV of the slot's MR.
    fn post_inv(&self, con: &C, req: &Req<C>) -> Result {
        let qp = con.qp_raw();
        if qp.is_null() {
            return Err(econnaborted());
        }
        let wr = bindings::ib_send_wr {
            __bindgen_anon_1: bindings::ib_send_wr__bindgen_ty_1 {
                wr_cqe: req.inv_cqe.get(),
            },
            opcode: bindings::ib_wr_opcode_IB_WR_LOCAL_INV,
            send_flags: bindings::ib_send_flags_IB_SEND_SIGNALED as c_int,
            ex: bindings::ib_send_wr__bindgen_ty_2 {
                invalidate_rkey: req.mr().rkey,
            },
            ..Default::default()
        };
        // SAFETY: `qp` is live; the request has no SGE; `inv_cqe` lives in
        // the slot until the QP is drained.
        unsafe { post_send_raw(qp, &wr) }
    }
}

fn rw(read: bool) -> &'static str {
    if read {
        "Read"
    } else {
        "Write"
    }
}
