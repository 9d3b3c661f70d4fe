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

/// Checks the form of a token (at most `max_length` characters): everything the twin checks
/// before looking its key up.
pub fn parse(token: &str, max_length: usize) -> Result<Parsed<'_>, Rejection> {
    // A character outside ASCII fails one of the part patterns below anyway.
    if token.len() > max_length || !token.is_ascii() {
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

/// The age checks: `issued_at > now + CLOCK_SKEW` is `Future`, `now - issued_at > max_age` is
/// `Expired`, where `late` is `now - max_age`. Either may be saturated to the ends of the range:
/// `issued_at` is far from them.
pub fn check_age(issued_at: u64, now: i128, late: i128) -> Result<(), Rejection> {
    let issued_at = i128::from(issued_at);
    if issued_at - i128::from(CLOCK_SKEW) > now {
        return Err(Rejection::Future);
    }
    if late > issued_at {
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
    let parsed = parse(token, MAX_TOKEN)?;
    let key = key_for(parsed.kid).ok_or(Rejection::UnknownKey)?;
    let payload = parsed.open(key)?;
    let (now, max_age) = (i128::from(now), i128::from(max_age));
    check_age(parsed.issued_at, now, now - max_age)?;
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
            assert_eq!(
                parse(bad, MAX_TOKEN).unwrap_err(),
                Rejection::Malformed,
                "{bad}"
            );
        }
        let long = format!("v1.k1.1.{}.x", "A".repeat(MAX_TOKEN));
        assert_eq!(parse(&long, MAX_TOKEN).unwrap_err(), Rejection::Malformed);
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
        assert_eq!(parse(&stray, MAX_TOKEN).unwrap_err(), Rejection::Malformed);
        assert_eq!(
            parse(&format!("{head}.{}", &mac_text[..40]), MAX_TOKEN).unwrap_err(),
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
        let token = mint("k1", KEY, b"", 5).unwrap();
        let at = |now, max_age| verify(&token, keys, now, max_age).map(|_| ());
        assert_eq!(at(i64::MIN, i64::MAX), Err(Rejection::Future));
        assert_eq!(at(i64::MAX, i64::MAX), Ok(()));
        assert_eq!(at(i64::MAX, 0), Err(Rejection::Expired));
        assert_eq!(at(0, i64::MIN), Err(Rejection::Expired));
        assert_eq!(check_age(5, i128::MIN, i128::MIN), Err(Rejection::Future));
        assert_eq!(check_age(5, i128::MAX, i128::MAX), Err(Rejection::Expired));
        assert_eq!(check_age(5, i128::MAX, 5), Ok(()));
        assert_eq!(check_age(5, -295, i128::MIN), Ok(()));
        assert_eq!(check_age(5, -296, i128::MIN), Err(Rejection::Future));
    }
}

// --------------------------------------------------------------------------------- Python glue

#[cfg(feature = "python")]
pub mod py {
    use std::borrow::Cow;

    use pyo3::exceptions::PyValueError;
    use pyo3::prelude::*;
    use pyo3::types::{PyBool, PyBytes, PyDict, PyInt, PyMapping, PyString};

    use super::{
        body, check_age, parse, sign, valid_kid, Rejection, ISSUED_AT_ERROR, KID_ERROR,
        MAX_ISSUED_AT, MAX_TOKEN,
    };
    use crate::errors::token_error;

    #[pyfunction]
    #[pyo3(name = "mint_token")]
    pub fn py_mint_token(
        key_id: &Bound<'_, PyString>,
        key: Cow<'_, [u8]>,
        payload: Cow<'_, [u8]>,
        issued_at: &Bound<'_, PyInt>,
    ) -> PyResult<String> {
        // A str without a UTF-8 form holds a surrogate, which the key id pattern refuses.
        let Some(kid) = key_id.to_str().ok().filter(|kid| valid_kid(kid)) else {
            return Err(PyValueError::new_err(KID_ERROR));
        };
        let value = issued_at
            .extract::<u64>()
            .ok()
            .filter(|&value| value < MAX_ISSUED_AT)
            .ok_or_else(|| PyValueError::new_err(ISSUED_AT_ERROR))?;
        // `f"{issued_at}"`: a bool is an int, formatted as `True` or `False`.
        let text = match issued_at.cast::<PyBool>() {
            Ok(flag) => if flag.is_true() { "True" } else { "False" }.to_owned(),
            Err(_) => value.to_string(),
        };
        Ok(sign(&key, &body(kid, &text, &payload)))
    }

    /// `keys.get(kid)`, with `None` read as absent.
    fn key_for<'py>(
        keys: &Bound<'py, PyMapping>,
        kid: &str,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let value = match keys.cast_exact::<PyDict>() {
            Ok(dict) => dict.get_item(kid)?,
            Err(_) => Some(keys.call_method1(pyo3::intern!(keys.py(), "get"), (kid,))?),
        };
        Ok(value.filter(|value| !value.is_none()))
    }

    /// An int as an `i128`, saturated: an int beyond compares with `issued_at` as the end of
    /// the range on its side does.
    fn saturated(int: &Bound<'_, PyInt>) -> PyResult<i128> {
        match int.extract::<i128>() {
            Ok(value) => Ok(value),
            Err(_) if int.lt(0)? => Ok(i128::MIN),
            Err(_) => Ok(i128::MAX),
        }
    }

    /// A `max_length`: an int, saturated to `i128`.
    pub struct Length(i128);

    impl<'a, 'py> FromPyObject<'a, 'py> for Length {
        type Error = PyErr;

        fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
            let int = obj
                .cast::<PyInt>()
                .map_err(|_| pyo3::exceptions::PyTypeError::new_err("max_length must be an int"))?;
            Ok(Length(saturated(&int)?))
        }
    }

    #[pyfunction]
    #[pyo3(
        name = "verify_token",
        signature = (token, keys, now, max_age, max_length = Length(MAX_TOKEN as i128)),
        text_signature = "(token, keys, now, max_age, max_length=65536)"
    )]
    pub fn py_verify_token<'py>(
        token: &Bound<'py, PyString>,
        keys: &Bound<'py, PyMapping>,
        now: &Bound<'py, PyInt>,
        max_age: &Bound<'py, PyInt>,
        max_length: Length,
    ) -> PyResult<(Bound<'py, PyBytes>, u64)> {
        let py = token.py();
        let reject = |rejection: Rejection| token_error(py, rejection.as_str());
        // A negative limit refuses every token (each is longer); a huge one, none by length.
        let max_length = usize::try_from(max_length.0.clamp(-1, i128::from(u32::MAX)))
            .map_err(|_| reject(Rejection::Malformed))?;
        // A str without a UTF-8 form holds a surrogate, which no part pattern accepts.
        let parsed = parse(token.to_str().unwrap_or("\u{80}"), max_length).map_err(reject)?;
        let key = key_for(keys, parsed.kid)?.ok_or_else(|| reject(Rejection::UnknownKey))?;
        let payload = parsed
            .open(&key.extract::<Cow<'_, [u8]>>()?)
            .map_err(reject)?;
        // `now` and `now - max_age`, exact or saturated; beyond `i128`, Python's ints subtract.
        let (now, late) = match (now.extract::<i128>(), max_age.extract::<i128>()) {
            (Ok(now), Ok(max_age)) => (now, now.saturating_sub(max_age)),
            _ => (
                saturated(now)?,
                saturated(&now.sub(max_age)?.cast_into::<PyInt>()?)?,
            ),
        };
        check_age(parsed.issued_at, now, late).map_err(reject)?;
        Ok((PyBytes::new(py, &payload), parsed.issued_at))
    }
}
