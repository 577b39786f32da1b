/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The trace events of rtrs-client-rs as Rust sees them: one record type and
 * two calls (rtrs_trace.c). The events themselves are in rtrs_clt_trace.h.
 */
#ifndef RTRS_RS_TRACE_H
#define RTRS_RS_TRACE_H

#include <linux/types.h>

/* Which event a record is for. */
enum rtrs_rs_trace_ev {
	/* The C client's three, class rtrs_clt_conn_class. */
	RTRS_RS_TRACE_RECONNECT_WORK,
	RTRS_RS_TRACE_CLOSE_CONNS,
	RTRS_RS_TRACE_ERROR_RECOVERY,
	/* This module's own. */
	RTRS_RS_TRACE_STATE_CHANGE,
	RTRS_RS_TRACE_FAILOVER,
	RTRS_RS_TRACE_CONNECT,
	RTRS_RS_TRACE_HB_MISS,
	RTRS_RS_TRACE_MP_POLICY,
	RTRS_RS_TRACE_PORT_EVENT,
};

/* A string that need not end in NUL. */
struct rtrs_rs_trace_str {
	const char *p;
	u32 len;
};

/*
 * One event's fields; those an event does not have are zero.
 * name: the path ("src@dst", its sysfs directory), or the session for
 * mp_policy; from/to: the paths of a failover, the policies of mp_policy;
 * what: a state change's reason, a connect stage, a port event's name.
 */
struct rtrs_rs_trace_rec {
	enum rtrs_rs_trace_ev ev;
	struct rtrs_rs_trace_str name;
	struct rtrs_rs_trace_str from;
	struct rtrs_rs_trace_str to;
	struct rtrs_rs_trace_str what;
	int state;
	int old_state;
	int reconnect_attempts;
	int max_reconnect_attempts;
	int fail_cnt;
	int success_cnt;
	int err;
	int cid;
	u32 count;
	u32 max;
};

/* Whether anyone listens to event ev (a static key test). Any context. */
bool rtrs_rs_trace_enabled(enum rtrs_rs_trace_ev ev);
/* Fires the event of rec; its strings are read during the call only. */
void rtrs_rs_trace_emit(const struct rtrs_rs_trace_rec *rec);

#endif /* RTRS_RS_TRACE_H */
