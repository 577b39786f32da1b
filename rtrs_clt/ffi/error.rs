// SPDX-License-Identifier: GPL-2.0

//! The module's one error type is the kernel's `Error` (an errno). This file
//! has C's errnos that `kernel::error::code` does not define, the errno each
//! of rtrs_core's refusals stands for (`From<WireError>` for a peer's
//! message, `From<Errno>` for a sysfs write), and `ERR_PTR`. The errno goes
//! back to C once, at the boundary: api.rs and the sysfs handlers.

use kernel::bindings::{
    ECOMM, ECONNABORTED, ECONNRESET, EHOSTUNREACH, EMSGSIZE, ENOTCONN, ETIMEDOUT,
};
use kernel::error::Error;

use crate::rtrs_core::proto::WireError;
use crate::rtrs_core::sysfs_fmt::Errno;

/// `-code`, for a uapi errno value.
const fn neg(code: u32) -> i32 {
    0i32.saturating_sub_unsigned(code)
}

macro_rules! errnos {
    ($($fn_name:ident = $code:ident),* $(,)?) => {
        $(
            #[doc = concat!("-", stringify!($code), ".")]
            pub(crate) fn $fn_name() -> Error {
                Error::from_errno(neg($code))
            }
        )*
    };
}

errnos! {
    ecomm = ECOMM,
    econnaborted = ECONNABORTED,
    econnreset = ECONNRESET,
    ehostunreach = EHOSTUNREACH,
    emsgsize = EMSGSIZE,
    enotconn = ENOTCONN,
    etimedout = ETIMEDOUT,
}

impl From<WireError> for Error {
    /// The errno C returns for what the check refused.
    fn from(e: WireError) -> Self {
        Error::from_errno(e.errno())
    }
}

impl From<Errno> for Error {
    /// What rtrs_core's sysfs parsers refused a write with.
    fn from(e: Errno) -> Self {
        Error::from_errno(e.errno())
    }
}

/// `ERR_PTR(err)`: an address-free pointer holding the negative errno.
pub(crate) fn err_ptr<T>(e: Error) -> *mut T {
    let v = isize::try_from(e.to_errno()).unwrap_or(isize::MIN);
    core::ptr::null_mut::<u8>().wrapping_offset(v).cast()
}
