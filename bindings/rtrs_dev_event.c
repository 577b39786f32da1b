// SPDX-License-Identifier: GPL-2.0
/*
 * A watch on an RDMA device's asynchronous events; see rtrs_dev_event.h.
 */
#include <linux/err.h>
#include <linux/socket.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#include "rtrs_dev_event.h"

/* Whether the GID of src is in the table of port of dev (RoCE only). */
static bool rtrs_rs_src_gid_present(struct ib_device *dev, u32 port,
				    const struct __kernel_sockaddr_storage *src)
{
	const struct ib_gid_attr *attr;
	struct sockaddr_storage addr;
	union ib_gid gid;

	if (port < rdma_start_port(dev) || port > rdma_end_port(dev) ||
	    !rdma_protocol_roce(dev, port))
		return true;
	memcpy(&addr, src, sizeof(addr));
	if (rdma_ip2gid((struct sockaddr *)&addr, &gid))
		return true;
	attr = rdma_find_gid_by_port(dev, &gid, IB_GID_TYPE_ROCE_UDP_ENCAP,
				     port, NULL);
	if (IS_ERR(attr))
		attr = rdma_find_gid_by_port(dev, &gid, IB_GID_TYPE_ROCE,
					     port, NULL);
	if (IS_ERR(attr))
		return false;
	rdma_put_gid_attr(attr);
	return true;
}

static void rtrs_rs_dev_watch_handler(struct ib_event_handler *h,
				      struct ib_event *ev)
{
	struct rtrs_rs_dev_watch *w = container_of(h, struct rtrs_rs_dev_watch, h);
	u32 port = ev->event == IB_EVENT_DEVICE_FATAL ? 0 : ev->element.port_num;
	bool present = true;

	if (ev->event == IB_EVENT_GID_CHANGE && port == w->port)
		present = rtrs_rs_src_gid_present(ev->device, port, &w->src);
	w->cb(w->ctx, ev->event, port, present);
}

void rtrs_rs_dev_watch_register(struct rtrs_rs_dev_watch *w,
				struct ib_device *dev, u32 port,
				const struct __kernel_sockaddr_storage *src,
				void *ctx, rtrs_rs_dev_watch_fn cb)
{
	w->src = *src;
	w->port = port;
	w->ctx = ctx;
	w->cb = cb;
	INIT_IB_EVENT_HANDLER(&w->h, dev, rtrs_rs_dev_watch_handler);
	ib_register_event_handler(&w->h);
}

void rtrs_rs_dev_watch_unregister(struct rtrs_rs_dev_watch *w)
{
	ib_unregister_event_handler(&w->h);
}
