/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Headers bindgen reads to produce bindings/rdma_generated.rs. The flags are
 * the kernel's own clang flags for this module (see Kbuild), so the layouts
 * match the kernel this module is built against.
 */
#include <linux/device.h>
#include <linux/device/class.h>
#include <linux/workqueue.h>
#include <linux/uuid.h>
#include <linux/completion.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "rtrs_helpers.h"
#include "rtrs_dev_event.h"
