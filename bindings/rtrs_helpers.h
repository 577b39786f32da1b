/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers of rtrs-client-rs: static inlines and macros that Rust cannot
 * call directly. Every helper is a one-line forward to the kernel API.
 */
#ifndef RTRS_RS_HELPERS_H
#define RTRS_RS_HELPERS_H

struct ib_device;

/* ib_device's name (dev_name() is a static inline). */
const char *rtrs_rs_ib_dev_name(const struct ib_device *ibdev);

#endif /* RTRS_RS_HELPERS_H */
