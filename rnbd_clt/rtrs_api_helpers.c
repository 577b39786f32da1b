// SPDX-License-Identifier: GPL-2.0
/* rtrs_api's C helpers, compiled into this module. */
#include "../rtrs_api/rtrs_api_helpers.c"
