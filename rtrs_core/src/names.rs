// SPDX-License-Identifier: GPL-2.0

//! Session-name rules of the C client.

/// Longest session name including the terminating NUL (`NAME_MAX`).
pub const NAME_MAX: usize = 255;

/// Why a session name was refused; every case maps to -EINVAL in C.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessNameError {
    /// The name is empty.
    Empty,
    /// The name does not fit in `NAME_MAX` bytes with its NUL.
    TooLong,
    /// The name holds '/' or '.', which the C client refuses (sysfs and path safety).
    SpecialChar,
}

/// Checks a session name as `rtrs_clt_open` does: '/' and '.' are refused.
pub fn check_sessname(name: &[u8]) -> Result<(), SessNameError> {
    if name.is_empty() {
        return Err(SessNameError::Empty);
    }
    if name.len() >= NAME_MAX {
        return Err(SessNameError::TooLong);
    }
    if name.iter().any(|&b| b == b'/' || b == b'.') {
        return Err(SessNameError::SpecialChar);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_plain_names() {
        assert_eq!(check_sessname(b"s1"), Ok(()));
        assert_eq!(check_sessname(b"blktest-01_x"), Ok(()));
    }

    #[test]
    fn refuses_slash_and_dot() {
        assert_eq!(check_sessname(b"a/b"), Err(SessNameError::SpecialChar));
        assert_eq!(check_sessname(b"a.b"), Err(SessNameError::SpecialChar));
        assert_eq!(check_sessname(b"."), Err(SessNameError::SpecialChar));
    }

    #[test]
    fn refuses_empty_and_long() {
        assert_eq!(check_sessname(b""), Err(SessNameError::Empty));
        let long = [b'a'; NAME_MAX];
        assert_eq!(check_sessname(&long), Err(SessNameError::TooLong));
        assert_eq!(check_sessname(&long[..NAME_MAX - 1]), Ok(()));
    }
}
