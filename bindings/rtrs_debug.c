// SPDX-License-Identifier: GPL-2.0
/*
 * TEST-ONLY SCAFFOLDING: the debug_connect module parameter.
 *
 * Until rtrs_clt_open() is exported, nothing can ask this module to connect.
 * "debug_connect=<sessname>@ip:<addr>" makes module init connect one path to
 * <addr>, port 1234, and module exit tear it down. 6.12's module! macro has no
 * parameters, hence this C file. Remove it (and its use in rtrs_clt/debug.rs)
 * once rtrs_clt_open is exported.
 */
#include <linux/moduleparam.h>

#include "rtrs_helpers.h"

static char debug_connect[256];
module_param_string(debug_connect, debug_connect, sizeof(debug_connect), 0444);
MODULE_PARM_DESC(debug_connect,
		 "TEST ONLY: connect one path at load, \"sessname@ip:addr\"");

const char *rtrs_rs_debug_connect(void)
{
	return debug_connect;
}
