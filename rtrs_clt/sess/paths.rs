// SPDX-License-Identifier: GPL-2.0

//! Adding and removing a session's paths (`rtrs_clt_create_path_from_sysfs`,
//! `rtrs_clt_remove_path_from_sysfs`) and their sysfs directories.

use core::sync::atomic::Ordering;

use kernel::fmt;
use kernel::prelude::*;
use kernel::str::{BStr, CString};
use kernel::sync::{Arc, LockedBy};

use crate::con::{PathArgs, RtrsCltState};
use crate::ffi::addr::SockAddr;
use crate::ffi::error::econnreset;
use crate::ffi::kobj::{PathKobj, PathStore, SessDev};
use crate::ffi::sync::RcuArrayGuard;
use crate::rtrs_core::path_state::StateReason;
use crate::rtrs_core::proto::MAX_PATHS_NUM;
use crate::rtrs_core::sysfs_fmt;

use super::{globals, PathEntry, PathHandle, Sess, SessPath};

impl Sess {
    /// `rtrs_clt_create_path_from_sysfs`: a new path (no poll queues), in
    /// the list before it connects (IO skips it until CONNECTED), with its
    /// directory once it is up.
    pub(crate) fn add_path(self: &Arc<Self>, addr: &sysfs_fmt::RtrsAddr) -> Result {
        let g = globals().ok_or(ENODEV)?;
        let dev = &self.dev;
        let src = addr
            .src
            .as_ref()
            .map(SockAddr::from_rtrs)
            .unwrap_or_default();
        let dst = SockAddr::from_rtrs(&addr.dst);
        let entry = {
            let mut closing = self.paths.lock();
            if *closing {
                return Err(ENODEV);
            }
            let args = PathArgs {
                pool: &g.pool,
                sessname: &self.sessname,
                src: &src,
                dst: &dst,
                paths_uuid: self.paths_uuid,
                // A session with no path left is new to the server.
                for_new_clt: closing.len() == 0,
                nr_poll_queues: 0,
                hb: g.hb,
                policy_gen: &self.policy_gen,
            };
            let sp = PathHandle::new(&args, &g.wq, self.clone(), self.reconnect_delay_sec)?;
            let e = Arc::new(
                PathEntry {
                    kobj: LockedBy::new(self.paths.writer(), None),
                    sp,
                },
                GFP_KERNEL,
            )?;
            match closing.push(e.clone()) {
                Ok(()) => {
                    self.policy_gen.bump();
                    e
                }
                Err(e) => {
                    // C sends it on and the server refuses it with
                    // ECONNRESET; the list here holds MAX_PATHS_NUM.
                    pr_err!(
                        "{}: add_path: the session has {} paths already\n",
                        &*self.sessname,
                        MAX_PATHS_NUM
                    );
                    drop(e);
                    return Err(econnreset());
                }
            }
        };
        let e = &*entry;
        let res = e.sp.get().init_path().and_then(|()| {
            // Under the mutex, so that a `remove_path` written into the new
            // directory finds it recorded.
            let mut closing = self.paths.lock();
            let k = Self::create_path_files(dev, &e.sp)?;
            *e.kobj.access_mut(&mut closing) = Some(k);
            Ok(())
        });
        if let Err(err) = res {
            let removed = self.unlist(&mut self.paths.lock(), e);
            if let Some((kobj, e)) = removed {
                e.sp.get().close_conns(true);
                // After the mutex: removing the directory waits for its
                // running stores, which may wait for the mutex.
                drop(kobj);
            }
            return Err(err);
        }
        Ok(())
    }

    /// `rtrs_clt_remove_path_from_sysfs`: closes the path whose
    /// `remove_path` file's store is running (`store`), marks it DEAD,
    /// unlinks it and removes its directory from within that store, then
    /// frees it.
    ///
    /// `store` only names the path (it is freed here): this holds its own
    /// reference to the entry while it works.
    pub(crate) fn remove_path(&self, store: PathStore) -> Result {
        // Not listed: removed already (DEAD), as C's second remove finds it.
        let Some(entry) = self.paths.lock().find(|e| {
            let sp: *const SessPath = &*e.sp;
            store.is_on(sp.cast())
        }) else {
            return Ok(());
        };
        let sp = &entry.sp;
        let changed = loop {
            sp.get().close_conns(true);
            let (changed, old) = sp
                .shared()
                .change_state_get_old(RtrsCltState::Dead, StateReason::Removed);
            if changed || old == RtrsCltState::Dead {
                break changed;
            }
        };
        if !changed {
            return Ok(());
        }
        let removed = {
            let mut closing = self.paths.lock();
            if *closing {
                None
            } else {
                self.unlist(&mut closing, &entry)
            }
        };
        if let Some((kobj, e)) = removed {
            if let Some(k) = kobj {
                k.destroy_self(store);
            }
            drop(e);
        }
        drop(entry);
        Ok(())
    }

    /// `rtrs_clt_remove_path_from_arr`: unlists `e`; returns its directory
    /// and the list's reference. Later paths move down one index, so the
    /// generation is bumped before and after: a cached pick made meanwhile
    /// may name a neighbour for that long (it is still re-checked
    /// CONNECTED); the round-robin cursors move down with them.
    fn unlist(
        &self,
        closing: &mut RcuArrayGuard<'_, PathEntry, bool>,
        e: &PathEntry,
    ) -> Option<(Option<PathKobj>, Arc<PathEntry>)> {
        self.policy_gen.bump();
        let r = closing.remove(|x| core::ptr::eq(x, e));
        self.policy_gen.bump();
        let (i, e) = r?;
        self.rr_cursor_on_remove(i, closing.len());
        Some((e.kobj.access_mut(closing).take(), e))
    }

    /// Keeps each CPU's round-robin cursor on the same path after the one
    /// at `removed` left the list, which now has `n` entries.
    fn rr_cursor_on_remove(&self, removed: usize, n: usize) {
        for c in self.rr_cursor.iter() {
            let v = c.load(Ordering::Relaxed);
            let mut cur = (v != usize::MAX).then_some(v);
            crate::rtrs_core::policy::rr_cursor_on_remove(&mut cur, removed, n);
            c.store(cur.unwrap_or(usize::MAX), Ordering::Relaxed);
        }
    }

    /// `rtrs_clt_create_path_files`: paths/<src@dst> for a connected path.
    pub(super) fn create_path_files(dev: &SessDev, sp: &PathHandle) -> Result<PathKobj> {
        let create = || {
            // Named "src@dst" with the resolved source, as in C.
            let name = sp.shared().dir_name()?.as_bytes();
            let name = CString::try_from_fmt(fmt!("{}", BStr::from_bytes(name)))?;
            let spp: *const SessPath = &**sp;
            // SAFETY: The `SessPath` is in an `Arc` that the entry's handle
            // holds, and the kobject goes first (see `PathEntry`).
            unsafe { PathKobj::new(dev, &name, spp.cast()) }
        };
        create().inspect_err(|e| {
            pr_err!(
                "{}: create path files, err: {}\n",
                sp.shared().sessname(),
                e.to_errno()
            )
        })
    }
}
