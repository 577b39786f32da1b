// SPDX-License-Identifier: GPL-2.0

//! C's errnos for this module, in one place: the ones `kernel::error::code`
//! does not define, the errno a wire check stands for (`From<WireError>`),
//! and `ERR_PTR`.

use kernel::bindings::{
    ECOMM, ECONNABORTED, ECONNRESET, EHOSTUNREACH, EMSGSIZE, ENOTCONN, ETIMEDOUT,
};
use kernel::error::Error;

use crate::rtrs_core::proto::WireError;

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

/// `ERR_PTR(err)`: an address-free pointer holding the negative errno.
pub(crate) fn err_ptr<T>(e: Error) -> *mut T {
    let v = isize::try_from(e.to_errno()).unwrap_or(isize::MIN);
    core::ptr::null_mut::<u8>().wrapping_offset(v).cast()
}
