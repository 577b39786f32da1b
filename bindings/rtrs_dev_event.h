/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A watch on an RDMA device's asynchronous events for rtrs-client-rs
 * (rtrs_dev_event.c): ib_register_event_handler() with the GID lookup done
 * here, so that Rust gets the event, its port and the one fact it decides on.
 */
#ifndef RTRS_RS_DEV_EVENT_H
#define RTRS_RS_DEV_EVENT_H

#include <linux/types.h>
#include <linux/socket.h>
#include <rdma/ib_verbs.h>

/*
 * cb(ctx, event, port, src_gid_present): event is an enum ib_event_type,
 * port 0 for device-wide events; src_gid_present tells, for a GID change of
 * the watched port, whether the GID of src is still in the port's table
 * (always true on other link layers than RoCE and for other events).
 */
typedef void (*rtrs_rs_dev_watch_fn)(void *ctx, u32 event, u32 port,
				     bool src_gid_present);

struct rtrs_rs_dev_watch {
	struct ib_event_handler h;
	struct __kernel_sockaddr_storage src;
	u32 port;
	void *ctx;
	rtrs_rs_dev_watch_fn cb;
};

/* Registers w on dev (process context); w stays put until unregistered. */
void rtrs_rs_dev_watch_register(struct rtrs_rs_dev_watch *w,
				struct ib_device *dev, u32 port,
				const struct __kernel_sockaddr_storage *src,
				void *ctx, rtrs_rs_dev_watch_fn cb);
/* Unregisters w, waiting for a running cb. */
void rtrs_rs_dev_watch_unregister(struct rtrs_rs_dev_watch *w);

#endif /* RTRS_RS_DEV_EVENT_H */
