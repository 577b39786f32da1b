// SPDX-License-Identifier: GPL-2.0
/*
 * The trace events of rtrs-client-rs (rtrs_clt_trace.h), fired from Rust
 * through one record type (rtrs_trace.h).
 */
#include <linux/compiler.h>

#define CREATE_TRACE_POINTS
#include "rtrs_clt_trace.h"

bool rtrs_rs_trace_enabled(enum rtrs_rs_trace_ev ev)
{
	switch (ev) {
	case RTRS_RS_TRACE_RECONNECT_WORK:
		return trace_rtrs_clt_reconnect_work_enabled();
	case RTRS_RS_TRACE_CLOSE_CONNS:
		return trace_rtrs_clt_close_conns_enabled();
	case RTRS_RS_TRACE_ERROR_RECOVERY:
		return trace_rtrs_rdma_error_recovery_enabled();
	case RTRS_RS_TRACE_STATE_CHANGE:
		return trace_rtrs_clt_state_change_enabled();
	case RTRS_RS_TRACE_FAILOVER:
		return trace_rtrs_clt_failover_enabled();
	case RTRS_RS_TRACE_CONNECT:
		return trace_rtrs_clt_connect_enabled();
	case RTRS_RS_TRACE_HB_MISS:
		return trace_rtrs_clt_hb_miss_enabled();
	case RTRS_RS_TRACE_MP_POLICY:
		return trace_rtrs_clt_mp_policy_enabled();
	case RTRS_RS_TRACE_PORT_EVENT:
		return trace_rtrs_clt_port_event_enabled();
	}
	return false;
}

void rtrs_rs_trace_emit(const struct rtrs_rs_trace_rec *r)
{
	switch (r->ev) {
	case RTRS_RS_TRACE_RECONNECT_WORK:
		trace_rtrs_clt_reconnect_work(r);
		break;
	case RTRS_RS_TRACE_CLOSE_CONNS:
		trace_rtrs_clt_close_conns(r);
		break;
	case RTRS_RS_TRACE_ERROR_RECOVERY:
		trace_rtrs_rdma_error_recovery(r);
		break;
	case RTRS_RS_TRACE_STATE_CHANGE:
		trace_rtrs_clt_state_change(r);
		break;
	case RTRS_RS_TRACE_FAILOVER:
		trace_rtrs_clt_failover(r);
		break;
	case RTRS_RS_TRACE_CONNECT:
		trace_rtrs_clt_connect(r);
		break;
	case RTRS_RS_TRACE_HB_MISS:
		trace_rtrs_clt_hb_miss(r);
		break;
	case RTRS_RS_TRACE_MP_POLICY:
		trace_rtrs_clt_mp_policy(r);
		break;
	case RTRS_RS_TRACE_PORT_EVENT:
		trace_rtrs_clt_port_event(r);
		break;
	}
}
