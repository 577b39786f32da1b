// SPDX-License-Identifier: GPL-2.0

//! A session's permits (`permits_map`, `permits`, `permits_wait`): one per
//! request slot, taken without locks by `rtrs_clt_get_permit` and given
//! back by `rtrs_clt_put_permit`.

use core::sync::atomic::{AtomicU64, Ordering};

use kernel::prelude::*;

use crate::ffi::abi::RtrsPermit;
use crate::ffi::permit_pool::PermitPool;
use crate::rtrs_core::imm;
use crate::rtrs_core::permit::{PermitLayout, PermitLayoutError, PermitMap};

/// The permit pool (`permits_map`, `permits`, `permits_wait`).
///
/// # Invariants
///
/// `map` has the words of `pool.queue_depth()` bits.
pub(crate) struct Permits {
    map: KVec<AtomicU64>,
    pool: PermitPool,
}

impl Permits {
    /// `queue_depth`: the number of permits (the session's one copy).
    pub(crate) fn queue_depth(&self) -> u32 {
        self.pool.queue_depth()
    }

    /// `alloc_permits`.
    pub(crate) fn new(queue_depth: u32, pdu_sz: usize) -> Result<Self> {
        let layout = PermitLayout::new(core::mem::size_of::<RtrsPermit>(), pdu_sz, queue_depth)
            .map_err(|e| match e {
                PermitLayoutError::PermitSize => EINVAL,
                PermitLayoutError::PoolSize => ENOMEM,
            })?;
        let pool = PermitPool::new(layout)?;
        let words = PermitMap::words_for(queue_depth);
        let mut map = KVec::with_capacity(words, GFP_KERNEL)?;
        for _ in 0..words {
            map.push(AtomicU64::new(0), GFP_KERNEL)?;
        }
        // INVARIANT: `map` has `words_for(queue_depth)` words.
        let p = Self { map, pool };
        for i in 0..queue_depth {
            let mem_off = imm::rtrs_permit_mem_off(queue_depth, i).map_err(|_| EINVAL)?;
            let permit = p.pool.permit(i).ok_or(EINVAL)?;
            permit.mem_id.store(i, Ordering::Relaxed);
            permit.mem_off.store(mem_off, Ordering::Relaxed);
        }
        Ok(p)
    }

    /// The index of `p` if it is one of ours.
    pub(crate) fn index_of(&self, p: *const RtrsPermit) -> Option<u32> {
        self.pool.index_of(p)
    }

    /// The bitmap of the permits (`permits_map`).
    fn map(&self) -> PermitMap<'_> {
        PermitMap::new(&self.map, self.pool.queue_depth())
    }

    /// `__rtrs_get_permit`.
    pub(crate) fn try_get(&self, con_type: u32) -> Option<*mut RtrsPermit> {
        let idx = self.map().try_take()?;
        // We own bit `idx`: nobody else writes this permit now.
        let p = self.pool.permit(idx)?;
        p.cpu_id
            .store(crate::ffi::misc::this_cpu_id(), Ordering::Relaxed);
        p.con_type.store(con_type, Ordering::Relaxed);
        self.pool.permit_ptr(idx)
    }

    /// `rtrs_clt_get_permit` with RTRS_PERMIT_WAIT: a permit, sleeping
    /// until one is free.
    pub(crate) fn get_wait(&self, con_type: u32) -> *mut RtrsPermit {
        if let Some(p) = self.try_get(con_type) {
            return p;
        }
        let mut got = core::ptr::null_mut();
        self.pool.wait_until(|| match self.try_get(con_type) {
            Some(p) => {
                got = p;
                true
            }
            None => false,
        });
        got
    }

    /// `free_permits`' wait: until every permit is back.
    pub(crate) fn wait_all_free(&self) {
        self.pool.wait_until(|| self.map().all_free());
    }

    /// `rtrs_clt_put_permit`: frees `p` and wakes a waiter.
    pub(crate) fn put(&self, p: *const RtrsPermit) -> core::result::Result<(), PutError> {
        let i = self.index_of(p).ok_or(PutError::Foreign)?;
        if !self.map().put(i) {
            return Err(PutError::NotInUse);
        }
        self.pool.wake();
        Ok(())
    }
}

/// Why a permit could not be put back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PutError {
    /// Not one of this session's permits.
    Foreign,
    /// Free already.
    NotInUse,
}
