//! HMAC-SHA256 signed, URL-safe tokens: `v1.<kid>.<issued_at>.<payload>.<mac>`.
//!
//! `payload` and `mac` are unpadded base64url and must be the canonical encoding (no stray bits
//! in the last character); the MAC covers everything before the last dot and is compared in
//! constant time.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Longest token accepted, in characters.
pub const MAX_TOKEN: usize = 65536;
/// How far in the future a token may have been issued, in seconds.
pub const CLOCK_SKEW: i64 = 300;
/// `issued_at` must be below this.
pub const MAX_ISSUED_AT: u64 = 1_000_000_000_000_000;

pub const KID_ERROR: &str = "key id must be 1-32 characters of [A-Za-z0-9_-]";
pub const ISSUED_AT_ERROR: &str = "issued_at out of range";

/// Why a token was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    Malformed,
    UnknownKey,
    BadSignature,
    Expired,
    Future,
}

impl Rejection {
    pub fn as_str(self) -> &'static str {
        match self {
            Rejection::Malformed => "malformed",
            Rejection::UnknownKey => "unknown_key",
            Rejection::BadSignature => "bad_signature",
            Rejection::Expired => "expired",
            Rejection::Future => "future",
        }
    }
}

fn is_b64url(text: &str) -> bool {
    text.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Whether `kid` is 1-32 characters of `[A-Za-z0-9_-]`.
pub fn valid_kid(kid: &str) -> bool {
    (1..=32).contains(&kid.len()) && is_b64url(kid)
}

pub fn b64url(data: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(data)
}

/// Decodes unpadded base64url; `None` unless `text` is the canonical encoding.
pub fn unb64url(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(text).ok()
}

fn mac(key: &[u8], signed: &[u8]) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(signed);
    mac
}

/// The unsigned part of a token: `v1.<kid>.<issued_at>.<payload>`.
pub fn body(kid: &str, issued_at: &str, payload: &[u8]) -> String {
    format!("v1.{kid}.{issued_at}.{}", b64url(payload))
}

/// Signs a body made by [`body`].
pub fn sign(key: &[u8], body: &str) -> String {
    let tag = mac(key, body.as_bytes()).finalize().into_bytes();
    format!("{body}.{}", b64url(&tag))
}

/// Mints a token; `Err` holds the twin's `ValueError` message.
pub fn mint(kid: &str, key: &[u8], payload: &[u8], issued_at: u64) -> Result<String, &'static str> {
    if !valid_kid(kid) {
        return Err(KID_ERROR);
    }
    if issued_at >= MAX_ISSUED_AT {
        return Err(ISSUED_AT_ERROR);
    }
    Ok(sign(key, &body(kid, &issued_at.to_string(), payload)))
}

/// A token that is well formed, before its key is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed<'t> {
    pub kid: &'t str,
    pub issued_at: u64,
    payload: &'t str,
    signed: &'t str,
    mac: [u8; 32],
}

/// Checks the form of a token: everything the twin checks before looking its key up.
pub fn parse(token: &str) -> Result<Parsed<'_>, Rejection> {
    // A character outside ASCII fails one of the part patterns below anyway.
    if token.len() > MAX_TOKEN || !token.is_ascii() {
        return Err(Rejection::Malformed);
    }
    let mut parts = token.split('.');
    let (Some("v1"), Some(kid), Some(iat), Some(payload), Some(mac_text), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return Err(Rejection::Malformed);
    };
    let iat_ok = (1..=15).contains(&iat.len()) && iat.bytes().all(|b| b.is_ascii_digit());
    if !(valid_kid(kid) && iat_ok && is_b64url(payload) && is_b64url(mac_text)) {
        return Err(Rejection::Malformed);
    }
    let mac = unb64url(mac_text)
        .and_then(|mac| <[u8; 32]>::try_from(mac).ok())
        .ok_or(Rejection::Malformed)?;
    Ok(Parsed {
        kid,
        issued_at: iat.parse().map_err(|_| Rejection::Malformed)?,
        payload,
        signed: &token[..token.len() - mac_text.len() - 1],
        mac,
    })
}

impl Parsed<'_> {
    /// Checks the signature with `key` (in constant time), then decodes the payload.
    pub fn open(&self, key: &[u8]) -> Result<Vec<u8>, Rejection> {
        mac(key, self.signed.as_bytes())
            .verify_slice(&self.mac)
            .map_err(|_| Rejection::BadSignature)?;
        unb64url(self.payload).ok_or(Rejection::Malformed)
    }
}

/// The age checks, for times that fit in 64 bits.
pub fn check_age(issued_at: u64, now: i64, max_age: i64) -> Result<(), Rejection> {
    let (issued_at, now, max_age) = (i128::from(issued_at), i128::from(now), i128::from(max_age));
    if issued_at > now + i128::from(CLOCK_SKEW) {
        return Err(Rejection::Future);
    }
    if now - issued_at > max_age {
        return Err(Rejection::Expired);
    }
    Ok(())
}

/// Verifies a token against `key_for(kid)`; returns the payload and issue time.
pub fn verify<'k>(
    token: &str,
    key_for: impl FnOnce(&str) -> Option<&'k [u8]>,
    now: i64,
    max_age: i64,
) -> Result<(Vec<u8>, u64), Rejection> {
    let parsed = parse(token)?;
    let key = key_for(parsed.kid).ok_or(Rejection::UnknownKey)?;
    let payload = parsed.open(key)?;
    check_age(parsed.issued_at, now, max_age)?;
    Ok((payload, parsed.issued_at))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn keys(kid: &str) -> Option<&'static [u8]> {
        match kid {
            "k1" => Some(KEY),
            "k2" => Some(b"another key"),
            _ => None,
        }
    }

    #[test]
    fn round_trip() {
        let token = mint("k1", KEY, b"{\"session\":42}", 1_700_000_000).unwrap();
        assert!(token.starts_with("v1.k1.1700000000."));
        assert_eq!(
            verify(&token, keys, 1_700_000_100, 3600),
            Ok((b"{\"session\":42}".to_vec(), 1_700_000_000))
        );
        let empty = mint("k2", b"another key", b"", 0).unwrap();
        assert_eq!(verify(&empty, keys, 0, 0), Ok((Vec::new(), 0)));
    }

    #[test]
    fn known_vector() {
        // HMAC-SHA256 of "v1.k.5.eA" under key "key", computed with Python's hmac module.
        let token = mint("k", b"key", b"x", 5).unwrap();
        assert_eq!(
            token,
            "v1.k.5.eA.X6W8Ixa99OFktXytNx2lQ_y1Ns7JL-NIzsCxLptwsnE"
        );
    }

    #[test]
    fn rejections() {
        let token = mint("k1", KEY, b"payload", 1000).unwrap();
        assert_eq!(verify(&token, keys, 1000 - 301, 10), Err(Rejection::Future));
        assert!(verify(&token, keys, 1000 - 300, 10).is_ok());
        assert_eq!(verify(&token, keys, 1011, 10), Err(Rejection::Expired));
        assert!(verify(&token, keys, 1010, 10).is_ok());
        assert_eq!(
            verify(&token, |_| None, 1000, 10),
            Err(Rejection::UnknownKey)
        );
        assert_eq!(
            verify(&token, |_| Some(&b"wrong"[..]), 1000, 10),
            Err(Rejection::BadSignature)
        );
        let tampered = token.replacen("cGF5bG9hZA", "cGF5bG9hZB", 1);
        assert_eq!(
            verify(&tampered, keys, 1000, 10),
            Err(Rejection::BadSignature)
        );
        for cut in 0..token.len() {
            assert!(verify(&token[..cut], keys, 1000, 10).is_err(), "{cut}");
        }
        for bad in [
            "",
            "v1",
            "v2.k1.1.x.y",
            "v1.k1.1.x",
            "v1.k1.1.x.y.z",
            "v1..1.x.y",
            "v1.k1..x.y",
            "v1.k1.1234567890123456.x.y",
            "v1.k1.-1.x.y",
            "v1.k+1.1.x.y",
            "v1.k1.1.x=.y",
            "v1.k1.1.x.é",
        ] {
            assert_eq!(parse(bad).unwrap_err(), Rejection::Malformed, "{bad}");
        }
        let long = format!("v1.k1.1.{}.x", "A".repeat(MAX_TOKEN));
        assert_eq!(parse(&long).unwrap_err(), Rejection::Malformed);
    }

    #[test]
    fn canonical_base64_only() {
        assert_eq!(unb64url("eA"), Some(b"x".to_vec()));
        assert_eq!(unb64url("eB"), None);
        assert_eq!(unb64url("e"), None);
        assert_eq!(unb64url(""), Some(Vec::new()));
        // A MAC with stray trailing bits, or of the wrong length, is malformed.
        let token = mint("k1", KEY, b"p", 1).unwrap();
        let (head, mac_text) = token.rsplit_once('.').unwrap();
        let last = mac_text.as_bytes()[42];
        let stray = format!("{head}.{}{}", &mac_text[..42], char::from(last ^ 1));
        assert_eq!(parse(&stray).unwrap_err(), Rejection::Malformed);
        assert_eq!(
            parse(&format!("{head}.{}", &mac_text[..40])).unwrap_err(),
            Rejection::Malformed
        );
        // A payload with stray bits but a valid signature is malformed (checked after the MAC).
        let body = "v1.k1.1.eB";
        assert_eq!(
            verify(&sign(KEY, body), keys, 1, 10),
            Err(Rejection::Malformed)
        );
    }

    #[test]
    fn mint_errors() {
        assert_eq!(mint("", KEY, b"", 0), Err(KID_ERROR));
        assert_eq!(mint(&"k".repeat(33), KEY, b"", 0), Err(KID_ERROR));
        assert_eq!(mint("k.1", KEY, b"", 0), Err(KID_ERROR));
        assert_eq!(mint("k", KEY, b"", MAX_ISSUED_AT), Err(ISSUED_AT_ERROR));
        assert!(mint(&"k".repeat(32), KEY, b"", MAX_ISSUED_AT - 1).is_ok());
    }

    #[test]
    fn extreme_times() {
        assert_eq!(check_age(0, i64::MIN, i64::MAX), Err(Rejection::Future));
        assert_eq!(check_age(0, i64::MAX, i64::MAX), Ok(()));
        assert_eq!(check_age(5, i64::MAX, 0), Err(Rejection::Expired));
    }
}

// --------------------------------------------------------------------------------- Python glue

pub mod py {
    use pyo3::exceptions::{PyTypeError, PyValueError};
    use pyo3::intern;
    use pyo3::prelude::*;
    use pyo3::types::{PyByteArray, PyBytes, PyDict, PyString};

    use super::{
        body, check_age, parse, sign, valid_kid, Rejection, CLOCK_SKEW, ISSUED_AT_ERROR, KID_ERROR,
        MAX_ISSUED_AT, MAX_TOKEN,
    };
    use crate::args::{bytes_like, bytes_of, type_name, IntArg};
    use crate::errors::{hmac_key_error, token_error};

    /// A key the `hmac` module accepts: bytes or bytearray.
    fn hmac_key<'a>(key: &'a Bound<'_, PyAny>) -> PyResult<std::borrow::Cow<'a, [u8]>> {
        if key.is_instance_of::<PyBytes>() || key.is_instance_of::<PyByteArray>() {
            if let Some(bytes) = bytes_of(key) {
                return Ok(bytes);
            }
        }
        Err(hmac_key_error(key))
    }

    /// The key id, checked as `_KID.match(key_id)` checks it.
    fn kid_ok(key_id: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
        if let Ok(text) = key_id.cast::<PyString>() {
            return Ok(text
                .to_str()
                .ok()
                .filter(|kid| valid_kid(kid))
                .map(str::to_owned));
        }
        if bytes_of(key_id).is_some() || key_id.cast::<pyo3::types::PyMemoryView>().is_ok() {
            return Err(PyTypeError::new_err(
                "cannot use a string pattern on a bytes-like object",
            ));
        }
        Err(PyTypeError::new_err(format!(
            "expected string or bytes-like object, got '{}'",
            type_name(key_id)
        )))
    }

    #[pyfunction]
    #[pyo3(name = "mint_token")]
    pub fn py_mint_token(
        py: Python<'_>,
        key_id: &Bound<'_, PyAny>,
        key: &Bound<'_, PyAny>,
        payload: &Bound<'_, PyAny>,
        issued_at: IntArg<'_>,
    ) -> PyResult<String> {
        let Some(kid) = kid_ok(key_id)? else {
            return Err(PyValueError::new_err(KID_ERROR));
        };
        let issued_at = match issued_at {
            IntArg::Small(value) => u64::try_from(value)
                .ok()
                .filter(|&value| value < MAX_ISSUED_AT)
                .ok_or_else(|| PyValueError::new_err(ISSUED_AT_ERROR))?
                .to_string(),
            IntArg::Other(value) => {
                // `0 <= issued_at < 10**15`, then `f"{issued_at}"`, as Python evaluates them.
                let in_range = 0i64.into_pyobject(py)?.le(&value)?
                    && value.lt(MAX_ISSUED_AT.into_pyobject(py)?)?;
                if !in_range {
                    return Err(PyValueError::new_err(ISSUED_AT_ERROR));
                }
                let format = py
                    .import(intern!(py, "builtins"))?
                    .getattr(intern!(py, "format"))?;
                let text = format.call1((&value, ""))?;
                let text: Bound<'_, PyString> = text.cast_into()?;
                if !text.to_str().is_ok_and(str::is_ascii) {
                    text.call_method1(intern!(py, "encode"), ("ascii",))?;
                }
                text.to_str()?.to_owned()
            }
        };
        let unsigned = body(&kid, &issued_at, &bytes_like(payload)?);
        Ok(sign(&hmac_key(key)?, &unsigned))
    }

    /// `keys.get(kid)`.
    fn key_for<'py>(keys: &Bound<'py, PyAny>, kid: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        let value = match keys.cast_exact::<PyDict>() {
            Ok(dict) => dict.get_item(kid)?,
            Err(_) => Some(keys.call_method1(intern!(keys.py(), "get"), (kid,))?),
        };
        Ok(value.filter(|value| !value.is_none()))
    }

    /// The age checks through Python's operators, for times that are not small ints.
    fn check_age_py(
        issued_at: u64,
        now: &Bound<'_, PyAny>,
        max_age: &Bound<'_, PyAny>,
    ) -> PyResult<Result<(), Rejection>> {
        let issued = issued_at.into_pyobject(now.py())?;
        if issued.gt(now.add(CLOCK_SKEW)?)? {
            return Ok(Err(Rejection::Future));
        }
        if now.sub(&issued)?.gt(max_age)? {
            return Ok(Err(Rejection::Expired));
        }
        Ok(Ok(()))
    }

    #[pyfunction]
    #[pyo3(name = "verify_token")]
    pub fn py_verify_token<'py>(
        py: Python<'py>,
        token: &Bound<'py, PyAny>,
        keys: &Bound<'py, PyAny>,
        now: IntArg<'py>,
        max_age: IntArg<'py>,
    ) -> PyResult<(Bound<'py, PyBytes>, u64)> {
        let reject = |rejection: Rejection| token_error(py, rejection.as_str());
        let Ok(token) = token.cast::<PyString>() else {
            // The errors the twin's `len(token)` and `token.split(".")` raise.
            if token.len()? > MAX_TOKEN {
                return Err(reject(Rejection::Malformed));
            }
            token.call_method1(intern!(py, "split"), (".",))?;
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "token must be a str",
            ));
        };
        // A str without a UTF-8 form holds a surrogate, which no part pattern accepts.
        let parsed = parse(token.to_str().unwrap_or("\u{80}")).map_err(reject)?;
        let key = key_for(keys, parsed.kid)?.ok_or_else(|| reject(Rejection::UnknownKey))?;
        let payload = parsed.open(&hmac_key(&key)?).map_err(reject)?;
        let age = match (&now, &max_age) {
            (IntArg::Small(now), IntArg::Small(max_age)) => {
                check_age(parsed.issued_at, *now, *max_age)
            }
            _ => check_age_py(parsed.issued_at, &now.object(py)?, &max_age.object(py)?)?,
        };
        age.map_err(reject)?;
        Ok((PyBytes::new(py, &payload), parsed.issued_at))
    }
}
