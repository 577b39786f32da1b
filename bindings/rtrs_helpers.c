// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers of rtrs-client-rs; see rtrs_helpers.h. Linked into the same .ko
 * as the Rust crate.
 */
#include <linux/device.h>
#include <rdma/ib_verbs.h>

#include "rtrs_helpers.h"

const char *rtrs_rs_ib_dev_name(const struct ib_device *ibdev)
{
	return dev_name(&ibdev->dev);
}
