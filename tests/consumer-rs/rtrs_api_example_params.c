// SPDX-License-Identifier: GPL-2.0
/*
 * The module parameters of rtrs_api_example (6.12's Rust has none).
 */

#include <linux/module.h>

char *rtrs_example_sessname = "rtrs-api-example";
module_param_named(sessname, rtrs_example_sessname, charp, 0444);
MODULE_PARM_DESC(sessname, "session name");

char *rtrs_example_path;
module_param_named(path, rtrs_example_path, charp, 0444);
MODULE_PARM_DESC(path, "the server's address, [src@]dst (required)");

char *rtrs_example_device;
module_param_named(device, rtrs_example_device, charp, 0444);
MODULE_PARM_DESC(device, "a device path on the server to open and close");
