//! The admin bearer token: read once from `--admin-token-file`, compared in constant time;
//! neither the token nor the header that carried it ever reaches a log line or an answer.

use std::path::Path;

use axum::http::{HeaderValue, StatusCode};
use subtle::ConstantTimeEq;

use super::error::ApiError;
use crate::error::{Error, Result};

/// Shortest token accepted: a guessable token is refused at start.
pub const MIN_TOKEN_LEN: usize = 16;

/// The admin bearer token.
pub struct AdminToken(Vec<u8>);

impl std::fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AdminToken(…)")
    }
}

impl AdminToken {
    /// Reads the token from `path` (its first line, surrounding white space removed).
    pub fn read(path: &Path) -> Result<AdminToken> {
        let text = std::fs::read(path).map_err(|source| Error::Io {
            context: format!("reading the admin token file {}", path.display()),
            source,
        })?;
        let line = text.split(|&b| b == b'\n').next().unwrap_or(&[]);
        let token = line.trim_ascii();
        if token.len() < MIN_TOKEN_LEN {
            return Err(Error::Usage(format!(
                "the admin token in {} has {} bytes; use at least {MIN_TOKEN_LEN} random ones (e.g. `head -c 32 /dev/urandom | base64 > {}`)",
                path.display(),
                token.len(),
                path.display()
            )));
        }
        Ok(AdminToken(token.to_vec()))
    }

    /// Whether `authorization` is `Bearer <token>`: 401 without one, 403 with a wrong one.
    /// The comparison takes the same time wherever the first difference is.
    pub fn check(&self, authorization: Option<&HeaderValue>) -> std::result::Result<(), ApiError> {
        let given = authorization.map(|v| v.as_bytes()).and_then(bearer);
        let Some(given) = given else {
            return Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "POST /v1/import needs an Authorization: Bearer <admin token> header",
            ));
        };
        let a = xxhash_rust::xxh3::xxh3_128(given).to_le_bytes();
        let b = xxhash_rust::xxh3::xxh3_128(&self.0).to_le_bytes();
        let same_hash: bool = a.ct_eq(&b).into();
        let same = same_hash && given.len() == self.0.len() && bool::from(given.ct_eq(&self.0));
        if same {
            Ok(())
        } else {
            Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "the admin token is wrong",
            ))
        }
    }
}

/// The credentials of an `Authorization: Bearer <token>` value: the scheme is
/// case-insensitive (RFC 9110 §11.1), followed by one or more spaces; surrounding white space
/// is not part of the token.
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case(b"bearer") || rest.first() != Some(&b' ') {
        return None;
    }
    Some(rest.trim_ascii())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_checked_and_short_ones_refused() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("token");
        std::fs::write(&f, "short\n").unwrap();
        let e = AdminToken::read(&f).unwrap_err().to_string();
        assert!(e.contains("at least 16") && !e.contains("short"), "{e}");
        std::fs::write(&f, "  0123456789abcdef0123\n# comment\n").unwrap();
        let t = AdminToken::read(&f).unwrap();
        assert!(format!("{t:?}").contains('…'));
        let h = |s: &str| HeaderValue::from_str(s).unwrap();
        assert!(t.check(Some(&h("Bearer 0123456789abcdef0123"))).is_ok());
        for scheme in ["bearer", "BEARER", "bEaReR"] {
            let v = h(&format!("{scheme}  0123456789abcdef0123"));
            assert!(t.check(Some(&v)).is_ok(), "{scheme}");
        }
        assert!(t.check(Some(&h("Bearer0123456789abcdef0123"))).is_err());
        assert_eq!(t.check(None).unwrap_err().status, StatusCode::UNAUTHORIZED);
        for wrong in [
            "Bearer 0123456789abcdef0124",
            "Bearer 0123456789abcdef012",
            "Bearer ",
            "0123456789abcdef0123",
        ] {
            let e = t.check(Some(&h(wrong))).unwrap_err();
            assert!(e.status == StatusCode::FORBIDDEN || e.status == StatusCode::UNAUTHORIZED);
            assert!(!e.message.contains("0123"), "{}", e.message);
        }
    }
}
