// SPDX-License-Identifier: GPL-2.0
/*
 * rtrs_api_helpers.c: what rtrs_api.rs needs from C that 6.12's Rust has no
 * binding for (static inlines). Compiled into the consumer module.
 */

#include <linux/completion.h>

void rtrs_api_init_completion(struct completion *x);

void rtrs_api_init_completion(struct completion *x)
{
	init_completion(x);
}
