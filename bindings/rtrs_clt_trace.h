/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Trace events of rtrs-client-rs, system rtrs_clt. The first three are the C
 * client's (rtrs-clt-trace.h): same names, fields and output, so recipes
 * written for it work here. The others are this module's own.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM rtrs_clt

#if !defined(_RTRS_RS_CLT_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _RTRS_RS_CLT_TRACE_H

#include <linux/tracepoint.h>
#include <linux/limits.h>
#include <linux/minmax.h>
#include <linux/string.h>

#include "rtrs_trace.h"

/* enum rtrs_clt_state: the values of the C client (and of rtrs_core). */
#define RTRS_RS_ST_CONNECTING		0
#define RTRS_RS_ST_CONNECTING_ERR	1
#define RTRS_RS_ST_RECONNECTING		2
#define RTRS_RS_ST_CONNECTED		3
#define RTRS_RS_ST_CLOSING		4
#define RTRS_RS_ST_CLOSED		5
#define RTRS_RS_ST_DEAD			6

#define show_rtrs_rs_state(x)						\
	__print_symbolic(x,						\
		{ RTRS_RS_ST_CONNECTING,	"CONNECTING" },		\
		{ RTRS_RS_ST_CONNECTING_ERR,	"CONNECTING_ERR" },	\
		{ RTRS_RS_ST_RECONNECTING,	"RECONNECTING" },	\
		{ RTRS_RS_ST_CONNECTED,		"CONNECTED" },		\
		{ RTRS_RS_ST_CLOSING,		"CLOSING" },		\
		{ RTRS_RS_ST_CLOSED,		"CLOSED" },		\
		{ RTRS_RS_ST_DEAD,		"DEAD" })

/* A record's string, at most n - 1 bytes of it, into a char[n] field. */
#define rtrs_rs_trace_copy(dst, s)					\
	do {								\
		size_t __n = min_t(size_t, (s).len, sizeof(dst) - 1);	\
		memcpy(dst, (s).p, __n);				\
		memset(dst + __n, 0, sizeof(dst) - __n);		\
	} while (0)

DECLARE_EVENT_CLASS(rtrs_clt_conn_class,
	TP_PROTO(const struct rtrs_rs_trace_rec *r),

	TP_ARGS(r),

	TP_STRUCT__entry(
		__field(int, state)
		__field(int, reconnect_attempts)
		__field(int, max_reconnect_attempts)
		__field(int, fail_cnt)
		__field(int, success_cnt)
		__array(char, sessname, NAME_MAX)
	),

	TP_fast_assign(
		__entry->state = r->state;
		__entry->reconnect_attempts = r->reconnect_attempts;
		__entry->max_reconnect_attempts = r->max_reconnect_attempts;
		__entry->fail_cnt = r->fail_cnt;
		__entry->success_cnt = r->success_cnt;
		rtrs_rs_trace_copy(__entry->sessname, r->name);
	),

	TP_printk("RTRS-CLT: sess='%s' state=%s attempts='%d' max-attempts='%d' fail='%d' success='%d'",
		  __entry->sessname,
		  show_rtrs_rs_state(__entry->state),
		  __entry->reconnect_attempts,
		  __entry->max_reconnect_attempts,
		  __entry->fail_cnt,
		  __entry->success_cnt
	)
);

DEFINE_EVENT(rtrs_clt_conn_class, rtrs_clt_reconnect_work,
	TP_PROTO(const struct rtrs_rs_trace_rec *r), TP_ARGS(r));
DEFINE_EVENT(rtrs_clt_conn_class, rtrs_clt_close_conns,
	TP_PROTO(const struct rtrs_rs_trace_rec *r), TP_ARGS(r));
DEFINE_EVENT(rtrs_clt_conn_class, rtrs_rdma_error_recovery,
	TP_PROTO(const struct rtrs_rs_trace_rec *r), TP_ARGS(r));

TRACE_EVENT(rtrs_clt_state_change,
	TP_PROTO(const struct rtrs_rs_trace_rec *r),

	TP_ARGS(r),

	TP_STRUCT__entry(
		__string_len(path, r->name.p, r->name.len)
		__field(int, old_state)
		__field(int, state)
		__string_len(reason, r->what.p, r->what.len)
	),

	TP_fast_assign(
		__assign_str(path);
		__entry->old_state = r->old_state;
		__entry->state = r->state;
		__assign_str(reason);
	),

	TP_printk("RTRS-CLT: path='%s' %s -> %s reason=%s",
		  __get_str(path),
		  show_rtrs_rs_state(__entry->old_state),
		  show_rtrs_rs_state(__entry->state),
		  __get_str(reason)
	)
);

TRACE_EVENT(rtrs_clt_failover,
	TP_PROTO(const struct rtrs_rs_trace_rec *r),

	TP_ARGS(r),

	TP_STRUCT__entry(
		__string_len(sess, r->name.p, r->name.len)
		__string_len(from, r->from.p, r->from.len)
		__string_len(to, r->to.p, r->to.len)
		__field(int, err)
	),

	TP_fast_assign(
		__assign_str(sess);
		__assign_str(from);
		__assign_str(to);
		__entry->err = r->err;
	),

	TP_printk("RTRS-CLT: sess='%s' from='%s' to='%s' err=%d",
		  __get_str(sess), __get_str(from), __get_str(to), __entry->err)
);

TRACE_EVENT(rtrs_clt_connect,
	TP_PROTO(const struct rtrs_rs_trace_rec *r),

	TP_ARGS(r),

	TP_STRUCT__entry(
		__string_len(path, r->name.p, r->name.len)
		__string_len(stage, r->what.p, r->what.len)
		__field(int, cid)
		__field(int, err)
		__field(int, reconnect_attempts)
	),

	TP_fast_assign(
		__assign_str(path);
		__assign_str(stage);
		__entry->cid = r->cid;
		__entry->err = r->err;
		__entry->reconnect_attempts = r->reconnect_attempts;
	),

	TP_printk("RTRS-CLT: path='%s' stage=%s cid=%d err=%d attempts=%d",
		  __get_str(path), __get_str(stage), __entry->cid,
		  __entry->err, __entry->reconnect_attempts)
);

TRACE_EVENT(rtrs_clt_hb_miss,
	TP_PROTO(const struct rtrs_rs_trace_rec *r),

	TP_ARGS(r),

	TP_STRUCT__entry(
		__string_len(path, r->name.p, r->name.len)
		__field(u32, missed)
		__field(u32, max)
	),

	TP_fast_assign(
		__assign_str(path);
		__entry->missed = r->count;
		__entry->max = r->max;
	),

	TP_printk("RTRS-CLT: path='%s' missed=%u max=%u",
		  __get_str(path), __entry->missed, __entry->max)
);

TRACE_EVENT(rtrs_clt_mp_policy,
	TP_PROTO(const struct rtrs_rs_trace_rec *r),

	TP_ARGS(r),

	TP_STRUCT__entry(
		__string_len(sess, r->name.p, r->name.len)
		__string_len(old_policy, r->from.p, r->from.len)
		__string_len(policy, r->to.p, r->to.len)
	),

	TP_fast_assign(
		__assign_str(sess);
		__assign_str(old_policy);
		__assign_str(policy);
	),

	TP_printk("RTRS-CLT: sess='%s' %s -> %s",
		  __get_str(sess), __get_str(old_policy), __get_str(policy))
);

TRACE_EVENT(rtrs_clt_port_event,
	TP_PROTO(const struct rtrs_rs_trace_rec *r),

	TP_ARGS(r),

	TP_STRUCT__entry(
		__string_len(path, r->name.p, r->name.len)
		__string_len(event, r->what.p, r->what.len)
		__field(u32, port)
		__field(int, state)
	),

	TP_fast_assign(
		__assign_str(path);
		__assign_str(event);
		__entry->port = r->count;
		__entry->state = r->state;
	),

	TP_printk("RTRS-CLT: path='%s' event=%s port=%u state=%s",
		  __get_str(path), __get_str(event), __entry->port,
		  show_rtrs_rs_state(__entry->state))
);

#endif /* _RTRS_RS_CLT_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#define TRACE_INCLUDE_FILE rtrs_clt_trace
#include <trace/define_trace.h>
