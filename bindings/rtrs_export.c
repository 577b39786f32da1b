// SPDX-License-Identifier: GPL-2.0
/*
 * The rtrs_clt_* API of rtrs.h, exported for rnbd-client. The functions are
 * Rust (#[no_mangle] extern "C" in rtrs_clt/sess.rs); this file only checks
 * their prototypes against rtrs.h and exports them (no namespace, not
 * GPL-only, as the C client does). rtrs-core symbols are not exported here.
 */
#include <linux/export.h>
#include <linux/module.h>
#include <linux/uio.h>

#ifdef RTRS_RS_HAVE_RTRS_H
#include <rtrs.h>
#else
#include "rtrs_api.h"
#endif

#include "rtrs_helpers.h"

/* The Rust module! block has name, description, author and licence. */
MODULE_VERSION(RTRS_RS_VERSION);
MODULE_INFO(source, RTRS_RS_SOURCE);

EXPORT_SYMBOL(rtrs_clt_open);
EXPORT_SYMBOL(rtrs_clt_close);
EXPORT_SYMBOL(rtrs_clt_get_permit);
EXPORT_SYMBOL(rtrs_clt_put_permit);
EXPORT_SYMBOL(rtrs_clt_request);
EXPORT_SYMBOL(rtrs_clt_rdma_cq_direct);
EXPORT_SYMBOL(rtrs_clt_query);

void rtrs_rs_call_conf(void (*conf)(void *priv, int errno), void *priv,
		       int errno)
{
	conf(priv, errno);
}

void rtrs_rs_call_link_ev(const struct rtrs_clt_ops *ops, int ev)
{
	if (ops->link_ev)
		ops->link_ev(ops->priv, ev);
}
