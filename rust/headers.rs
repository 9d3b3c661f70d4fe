//! The 2026-07-28 rule that request headers mirror the body: `check_headers` on the server side,
//! `encode_header_value` on the client side.
//!
//! Header values are trimmed of spaces and tabs, must be visible ASCII, and may be wrapped as
//! `=?base64?<standard base64>?=` around UTF-8 text. Argument values are looked up as raw JSON
//! under `params.arguments`, so no number is ever converted: a header mirrors a JSON string, a
//! boolean (`true`/`false`) or an integer (`-?[0-9]+`, compared by value, whatever its size).

use std::borrow::Cow;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

use crate::json::{JStr, Scanner};

pub const B64_PREFIX: &str = "=?base64?";
pub const B64_SUFFIX: &str = "?=";

/// Why a header was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Missing,
    Invalid,
    Mismatch,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Missing => "missing",
            Reason::Invalid => "invalid",
            Reason::Mismatch => "mismatch",
        }
    }
}

/// A header value as the mapping holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'v> {
    Absent,
    Text(&'v str),
    /// A string that has no UTF-8 form (a lone surrogate): it cannot be visible ASCII.
    Unencodable,
}

/// What a required header must hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected<'e> {
    /// Anything (the body has no value to mirror).
    Any,
    Text(&'e str),
    /// A value no header text can equal (not a UTF-8 string).
    Never,
}

/// Whether every byte of `text` is visible ASCII or a space.
pub fn visible(text: &str) -> bool {
    text.bytes().all(|b| (0x20..=0x7e).contains(&b))
}

/// `text.strip(" \t")`.
fn trim(text: &str) -> &str {
    let bytes = text.as_bytes();
    let blank = |byte: &u8| *byte == b' ' || *byte == b'\t';
    let start = bytes.iter().position(|b| !blank(b)).unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !blank(b))
        .map_or(start, |last| last + 1);
    // Both ends are next to ASCII bytes, so they are character boundaries.
    text.get(start..end).unwrap_or_default()
}

/// Decodes canonical, padded, standard base64. Every Python version decodes these the same;
/// `check_headers` asks Python itself about anything else.
pub fn b64decode_canonical(text: &str) -> Option<Vec<u8>> {
    STANDARD.decode(text).ok()
}

/// A header as read: absent, its trimmed and decoded text, or invalid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read<'v> {
    Absent,
    Text(Cow<'v, str>),
    Invalid,
}

impl Read<'_> {
    /// The text, or `Err(Reason::Invalid)`.
    pub fn text(&self) -> Result<Option<&str>, Reason> {
        match self {
            Read::Absent => Ok(None),
            Read::Text(text) => Ok(Some(text)),
            Read::Invalid => Err(Reason::Invalid),
        }
    }
}

/// Reads a header value. `b64decode` decodes the text inside a `=?base64?…?=` wrapper
/// (`Ok(None)` when it is not valid base64); its own errors are passed on.
pub fn read<E>(
    value: Value<'_>,
    b64decode: impl FnOnce(&str) -> Result<Option<Vec<u8>>, E>,
) -> Result<Read<'_>, E> {
    let text = match value {
        Value::Absent => return Ok(Read::Absent),
        Value::Unencodable => return Ok(Read::Invalid),
        Value::Text(text) => trim(text),
    };
    if !visible(text) {
        return Ok(Read::Invalid);
    }
    if text.len() >= B64_PREFIX.len() + B64_SUFFIX.len()
        && text.starts_with(B64_PREFIX)
        && text.ends_with(B64_SUFFIX)
    {
        let inner = &text[B64_PREFIX.len()..text.len() - B64_SUFFIX.len()];
        let decoded = b64decode(inner)?.and_then(|bytes| String::from_utf8(bytes).ok());
        return Ok(decoded.map_or(Read::Invalid, |text| Read::Text(Cow::Owned(text))));
    }
    Ok(Read::Text(Cow::Borrowed(text)))
}

/// A required header: present, and equal to `expected`.
pub fn require(read: &Read<'_>, expected: Expected<'_>) -> Result<(), Reason> {
    let text = read.text()?.ok_or(Reason::Missing)?;
    match expected {
        Expected::Any => Ok(()),
        Expected::Text(expected) if expected == text => Ok(()),
        _ => Err(Reason::Mismatch),
    }
}

fn unlimited() -> usize {
    0
}

/// Whether raw JSON (checked already) is an object.
pub fn is_object(raw: &[u8]) -> bool {
    raw.first() == Some(&b'{')
}

/// The raw JSON of member `key` (the last duplicate) of the object `raw` (checked already).
pub fn member<'a>(raw: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let mut scanner = Scanner::new(raw, unlimited);
    let mut found = None;
    scanner
        .object(|scanner, name| {
            let (_, value) = scanner.raw_value(false)?;
            if name.eq_bytes(key) {
                found = Some(value);
            }
            Ok(())
        })
        .ok()?;
    found
}

/// Checks one `Mcp-Param-*` header against the argument value at its path (raw JSON or None).
pub fn check_param(value: Option<&[u8]>, text: Option<&str>) -> Result<(), Reason> {
    match (value, text) {
        (None | Some(b"null"), None) => Ok(()),
        (None | Some(b"null"), Some(_)) => Err(Reason::Mismatch),
        (Some(_), None) => Err(Reason::Missing),
        (Some(value), Some(text)) if mirrors(text, value) => Ok(()),
        _ => Err(Reason::Mismatch),
    }
}

/// Whether header `text` mirrors the raw JSON `value` (checked already, not null).
pub fn mirrors(text: &str, value: &[u8]) -> bool {
    match value {
        [b'"', inner @ .., b'"'] => JStr {
            raw: inner,
            escaped: inner.contains(&b'\\'),
        }
        .eq_bytes(text.as_bytes()),
        b"true" => text == "true",
        b"false" => text == "false",
        _ => {
            let Ok(json) = std::str::from_utf8(value) else {
                return false;
            };
            is_integer(json) && is_integer(text) && same_integer(text, json)
        }
    }
}

/// Whether `text` is `-?[0-9]+`.
pub fn is_integer(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Whether two `-?[0-9]+` texts denote the same integer.
pub fn same_integer(a: &str, b: &str) -> bool {
    let magnitude = |text: &str| {
        text.trim_start_matches('-')
            .trim_start_matches('0')
            .to_owned()
    };
    let (a_digits, b_digits) = (magnitude(a), magnitude(b));
    a_digits == b_digits && (a_digits.is_empty() || a.starts_with('-') == b.starts_with('-'))
}

/// The header text for a string argument: as is when it can travel so, else base64-wrapped.
pub fn encode(value: &str) -> Cow<'_, str> {
    if visible(value)
        && trim(value) == value
        && !(value.starts_with(B64_PREFIX) && value.ends_with(B64_SUFFIX))
    {
        return Cow::Borrowed(value);
    }
    Cow::Owned(format!(
        "{B64_PREFIX}{}{B64_SUFFIX}",
        STANDARD.encode(value)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::unnecessary_wraps)] // the shape `read` asks for
    fn no_fallback(text: &str) -> Result<Option<Vec<u8>>, ()> {
        Ok(b64decode_canonical(text))
    }

    fn read_text(value: &str) -> Result<Option<String>, Reason> {
        let read = read(Value::Text(value), no_fallback).unwrap();
        read.text().map(|text| text.map(str::to_owned))
    }

    #[test]
    fn reads_values() {
        let invalid = Err(Reason::Invalid);
        assert_eq!(read_text(" \tabc \t"), Ok(Some("abc".into())));
        assert_eq!(read_text(""), Ok(Some(String::new())));
        assert_eq!(read_text("a\u{7f}"), invalid);
        assert_eq!(read_text("caf\u{e9}"), invalid);
        assert_eq!(read_text("a\nb"), invalid);
        assert_eq!(
            read_text("=?base64?SGVsbG8sIOS4lueVjA==?="),
            Ok(Some("Hello, 世界".into()))
        );
        assert_eq!(
            read_text(" =?base64?IHBhZGRlZCA=?= "),
            Ok(Some(" padded ".into()))
        );
        assert_eq!(read_text("=?base64??="), Ok(Some(String::new())));
        assert_eq!(read_text("=?base64?=?="), invalid);
        assert_eq!(read_text("=?base64?/w==?="), invalid, "not UTF-8");
        assert_eq!(read_text("=?base64?=?"), Ok(Some("=?base64?=?".into())));
        assert_eq!(read(Value::Absent, no_fallback), Ok(Read::Absent));
        assert_eq!(read(Value::Unencodable, no_fallback), Ok(Read::Invalid));
    }

    #[test]
    fn requires() {
        let text = |t: &'static str| Read::Text(Cow::Borrowed(t));
        assert_eq!(require(&text("a"), Expected::Any), Ok(()));
        assert_eq!(require(&text("a"), Expected::Text("a")), Ok(()));
        assert_eq!(
            require(&text("a"), Expected::Text("b")),
            Err(Reason::Mismatch)
        );
        assert_eq!(require(&text("a"), Expected::Never), Err(Reason::Mismatch));
        assert_eq!(require(&Read::Absent, Expected::Any), Err(Reason::Missing));
        assert_eq!(require(&Read::Invalid, Expected::Any), Err(Reason::Invalid));
    }

    #[test]
    fn mirrors_values() {
        assert!(mirrors("x", br#""x""#));
        assert!(mirrors("é/", br#""\u00e9\/""#));
        assert!(!mirrors("x", br#""y""#));
        assert!(mirrors("true", b"true"));
        assert!(!mirrors("True", b"true"));
        assert!(mirrors("false", b"false"));
        assert!(mirrors("42", b"42"));
        assert!(mirrors("0042", b"42"));
        assert!(mirrors("-0", b"0"));
        assert!(mirrors("0", b"-0"));
        assert!(!mirrors("-42", b"42"));
        assert!(!mirrors("+42", b"42"));
        assert!(!mirrors("42 ", b"42"));
        assert!(!mirrors("4.2", b"4.2"));
        assert!(!mirrors("1", b"1.0"));
        assert!(!mirrors("[]", b"[]"));
        let big = "9".repeat(5000);
        assert!(mirrors(&format!("-000{big}"), format!("-{big}").as_bytes()));
        assert!(!mirrors(&big, format!("-{big}").as_bytes()));
    }

    #[test]
    fn checks_params() {
        assert_eq!(check_param(None, None), Ok(()));
        assert_eq!(check_param(Some(b"null"), None), Ok(()));
        assert_eq!(check_param(None, Some("x")), Err(Reason::Mismatch));
        assert_eq!(
            check_param(Some(b"null"), Some("null")),
            Err(Reason::Mismatch)
        );
        assert_eq!(check_param(Some(b"1"), None), Err(Reason::Missing));
        assert_eq!(check_param(Some(b"1"), Some("1")), Ok(()));
        assert_eq!(check_param(Some(b"{}"), Some("{}")), Err(Reason::Mismatch));
    }

    #[test]
    fn encodes() {
        assert_eq!(encode("plain value"), "plain value");
        assert_eq!(encode("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(encode(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(
            encode("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
        assert_eq!(encode("=?base64?="), "=?base64?PT9iYXNlNjQ/PQ==?=");
        assert_eq!(encode(""), "");
        assert_eq!(encode("a\tb"), "=?base64?YQli?=");
        for value in ["x", " y", "Hello, 世界", "=?base64?literal?=", "\u{7f}"] {
            let encoded = encode(value);
            assert_eq!(read_text(&encoded), Ok(Some(value.to_owned())), "{value}");
        }
    }
}

// --------------------------------------------------------------------------------- Python glue

/// The glue reads exactly the stub's types, as the twin's Python does: any `Mapping` of headers
/// (through `.get`, a `dict` directly), any `Sequence` of pairs and paths (through iteration),
/// and a base64 text that is not canonical through `base64.b64decode` itself, whose leniency
/// differs between Python versions: each is a case of the stub's types, where parity holds.
#[cfg(feature = "python")]
pub mod py {
    use pyo3::exceptions::{PyTypeError, PyValueError};
    use pyo3::intern;
    use pyo3::prelude::*;
    use pyo3::sync::PyOnceLock;
    use pyo3::types::{PyBool, PyBytesMethods, PyDict, PyInt, PyString, PyTuple};

    use super::{
        b64decode_canonical, check_param, encode, is_object, member, read, require, Expected, Read,
        Value,
    };
    use crate::errors::header_error;
    use crate::frame::is_routed;
    use crate::frame::py::PyMessage;

    /// `base64.b64decode(text, validate=True)`, asked only about text that is not canonical
    /// padded base64: what else it accepts differs between Python versions.
    fn b64decode(py: Python<'_>, text: &str) -> PyResult<Option<Vec<u8>>> {
        static DECODE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        if let Some(bytes) = b64decode_canonical(text) {
            return Ok(Some(bytes));
        }
        let decode = DECODE.get_or_try_init(py, || {
            PyResult::Ok(py.import("base64")?.getattr("b64decode")?.unbind())
        })?;
        let kwargs = PyDict::new(py);
        kwargs.set_item(intern!(py, "validate"), true)?;
        match decode.bind(py).call((text,), Some(&kwargs)) {
            Ok(bytes) => Ok(Some(bytes.extract::<Vec<u8>>()?)),
            Err(error) if error.is_instance_of::<PyValueError>(py) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// `headers.get(key)`, with `None` read as absent.
    fn lookup<'py>(
        headers: &Bound<'py, PyAny>,
        key: &Bound<'py, PyString>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let value = match headers.cast_exact::<PyDict>() {
            Ok(dict) => dict.get_item(key)?,
            Err(_) => Some(headers.call_method1(intern!(headers.py(), "get"), (key,))?),
        };
        Ok(value.filter(|value| !value.is_none()))
    }

    /// Reads a header value (a str).
    fn read_value<'v>(py: Python<'_>, value: Option<&'v Bound<'_, PyAny>>) -> PyResult<Read<'v>> {
        let value = match value {
            None => Value::Absent,
            Some(value) => {
                let text = value
                    .cast::<PyString>()
                    .map_err(|_| PyTypeError::new_err("header values must be str"))?;
                text.to_str().map_or(Value::Unencodable, Value::Text)
            }
        };
        read(value, |text| b64decode(py, text))
    }

    /// What a required header must equal: anything when the body has no value.
    fn expected<'e>(value: Option<&'e Bound<'_, PyString>>) -> Expected<'e> {
        value.map_or(Expected::Any, |text| {
            text.to_str().map_or(Expected::Never, Expected::Text)
        })
    }

    fn require_header(
        headers: &Bound<'_, PyAny>,
        key: &Bound<'_, PyString>,
        canonical: &Bound<'_, PyString>,
        value: Option<&Bound<'_, PyString>>,
    ) -> PyResult<()> {
        let py = headers.py();
        let raw = lookup(headers, key)?;
        let read = read_value(py, raw.as_ref())?;
        require(&read, expected(value))
            .map_err(|reason| header_error(py, canonical, reason.as_str()))
    }

    /// A `(header name, path)` pair of `param_headers`.
    fn pair<'py>(item: &Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyString>, Bound<'py, PyAny>)> {
        let refused = || PyTypeError::new_err("param_headers must hold (str, [str, ...]) pairs");
        let pair = item.cast::<PyTuple>().map_err(|_| refused())?;
        if pair.len() != 2 {
            return Err(refused());
        }
        let name = pair
            .get_item(0)?
            .cast_into::<PyString>()
            .map_err(|_| refused())?;
        Ok((name, pair.get_item(1)?))
    }

    /// The raw JSON at `path` (a sequence of str) under the arguments.
    fn at_path<'a>(
        arguments: Option<&'a [u8]>,
        path: &Bound<'_, PyAny>,
    ) -> PyResult<Option<&'a [u8]>> {
        if path.is_instance_of::<PyString>() {
            return Err(PyTypeError::new_err("a path must be a sequence of str"));
        }
        let mut value = arguments;
        for key in path.try_iter()? {
            let key = key?
                .cast_into::<PyString>()
                .map_err(|_| PyTypeError::new_err("a path must be a sequence of str"))?;
            let Some(object) = value.filter(|value| is_object(value)) else {
                return Ok(None);
            };
            value = key
                .to_str()
                .ok()
                .and_then(|key| member(object, key.as_bytes()));
        }
        Ok(value)
    }

    /// `prefix + text`.
    fn prefixed<'py>(prefix: &str, text: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyString>> {
        Ok(PyString::new(text.py(), prefix).add(text)?.cast_into()?)
    }

    #[pyfunction]
    #[pyo3(name = "check_headers")]
    pub fn py_check_headers(
        py: Python<'_>,
        headers: &Bound<'_, PyAny>,
        message: &Bound<'_, PyMessage>,
        param_headers: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let message = message.get();
        let method = message.method(py);
        require_header(
            headers,
            intern!(py, "mcp-protocol-version"),
            intern!(py, "MCP-Protocol-Version"),
            message.version(py),
        )?;
        require_header(
            headers,
            intern!(py, "mcp-method"),
            intern!(py, "Mcp-Method"),
            method,
        )?;
        if method.is_some_and(|method| method.to_str().is_ok_and(is_routed)) {
            require_header(
                headers,
                intern!(py, "mcp-name"),
                intern!(py, "Mcp-Name"),
                message.name(py),
            )?;
        }
        if !param_headers.is_truthy()? {
            return Ok(());
        }
        let params = message.params(py).map(PyBytesMethods::as_bytes);
        let arguments = params.and_then(|params| message.arguments_in(params));
        for item in param_headers.try_iter()? {
            let (header_name, path) = pair(&item?)?;
            let value = at_path(arguments, &path)?;
            let key = prefixed(
                "mcp-param-",
                &header_name.call_method0(intern!(py, "lower"))?,
            )?;
            let raw = lookup(headers, &key)?;
            let read = read_value(py, raw.as_ref())?;
            read.text()
                .and_then(|text| check_param(value, text))
                .map_err(|reason| match prefixed("Mcp-Param-", &header_name) {
                    Ok(canonical) => header_error(py, &canonical, reason.as_str()),
                    Err(error) => error,
                })?;
        }
        Ok(())
    }

    #[pyfunction]
    #[pyo3(name = "encode_header_value")]
    pub fn py_encode_header_value<'py>(
        value: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyString>> {
        let py = value.py();
        if let Ok(flag) = value.cast_exact::<PyBool>() {
            let text = if flag.is_true() { "true" } else { "false" };
            return Ok(PyString::new(py, text));
        }
        if value.is_exact_instance_of::<PyInt>() {
            return value.str();
        }
        let Ok(text) = value.cast_exact::<PyString>() else {
            return Err(PyTypeError::new_err(
                "header values must be str, int or bool",
            ));
        };
        let encoded = encode(text.to_str()?);
        Ok(match encoded {
            std::borrow::Cow::Borrowed(_) => text.clone(),
            std::borrow::Cow::Owned(encoded) => PyString::new(py, &encoded),
        })
    }
}
