// SPDX-License-Identifier: GPL-2.0

//! The `/sys/class/rtrs-client` tree.
//!
//! 6.12 has no sysfs abstraction, so the tree is built from the driver core
//! through the bindings. The formats and parsers live in `rtrs_core::sysfs_fmt`.

mod attrs;
