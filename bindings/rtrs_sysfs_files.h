/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The files of /sys/class/rtrs-client, listed once, with the names, modes
 * and order of rtrs-clt-sysfs.c. The id enums (rtrs_helpers.h, and through
 * bindgen the Rust dispatch of sysfs/attrs.rs) and the attribute tables
 * (rtrs_sysfs.c) are made from these lists; sysfs/attrs.rs checks at build
 * time that it handles every id.
 *
 * Each entry is X(file name, ID suffix).
 */
#ifndef RTRS_RS_SYSFS_FILES_H
#define RTRS_RS_SYSFS_FILES_H

/* <sessname>/: mode 0644 each. */
#define RTRS_RS_SESS_FILES(X)					\
	X(max_reconnect_attempts, MAX_RECONNECT_ATTEMPTS)	\
	X(mpath_policy, MPATH_POLICY)				\
	X(add_path, ADD_PATH)

/* <sessname>/paths/<src@dst>/: RO entries 0444, RW entries 0644. */
#define RTRS_RS_PATH_FILES(RO, RW)				\
	RO(hca_name, HCA_NAME)					\
	RO(hca_port, HCA_PORT)					\
	RO(src_addr, SRC_ADDR)					\
	RO(dst_addr, DST_ADDR)					\
	RO(state, STATE)					\
	RW(reconnect, RECONNECT)				\
	RW(disconnect, DISCONNECT)				\
	RW(remove_path, REMOVE_PATH)				\
	RO(cur_latency, CUR_LATENCY)

/*
 * <sessname>/paths/<src@dst>/stats/: mode 0644 each. latency_hist is not
 * in C (see sysfs/ABI.md); it comes last, after C's files.
 */
#define RTRS_RS_STATS_FILES(X)					\
	X(cpu_migration_from, CPU_MIGRATION_FROM)		\
	X(cpu_migration_to, CPU_MIGRATION_TO)			\
	X(reconnects, RECONNECTS)				\
	X(rdma, RDMA)						\
	X(reset_all, RESET_ALL)					\
	X(latency_hist, LATENCY_HIST)

#endif /* RTRS_RS_SYSFS_FILES_H */
