//! The header mirror check on a framed call, composed of the crate's pure-Rust parts the way the
//! `check_headers` glue composes them (the glue itself is fuzzed differentially through Python:
//! `tests/test_fuzz_corpus.py` replays this corpus through both backends).
//!
//! Input (shared with that replay): NUL-separated parts, the body first, then pairs: a header
//! key and its value (the last of a repeated key wins), or `@Name` and a `/`-separated argument
//! path, one parameter header. A value that is not UTF-8 stands for a str with no UTF-8 form.
//!
//! Properties: nothing panics; a header the check accepts equals what the body holds;
//! `encode` then `read` gives back any text; every string, boolean and integer argument is
//! mirrored by its own header text, and a value is never mirrored by a text it is not.
#![no_main]

use std::borrow::Cow;

use _rust::frame::{frame, is_routed, Message, Nesting};
use _rust::headers::{
    b64decode_canonical, check_param, encode, is_object, member, mirrors, read, require, Expected,
    Read, Reason, Value,
};
use _rust::json::Scanner;
use libfuzzer_sys::fuzz_target;

fn python_digits() -> usize {
    4300
}

struct Case<'a> {
    body: &'a [u8],
    headers: Vec<(&'a [u8], &'a [u8])>,
    params: Vec<(&'a [u8], Vec<&'a [u8]>)>,
}

fn case(data: &[u8]) -> Case<'_> {
    let mut parts = data.split(|&b| b == 0);
    let body = parts.next().unwrap_or_default();
    let (mut headers, mut params) = (Vec::new(), Vec::new());
    while let (Some(key), Some(value)) = (parts.next(), parts.next()) {
        if let Some(name) = key.strip_prefix(b"@") {
            let path = if value.is_empty() {
                Vec::new()
            } else {
                value.split(|&b| b == b'/').collect()
            };
            params.push((name, path));
        } else {
            headers.retain(|(k, _)| *k != key);
            headers.push((key, value));
        }
    }
    Case {
        body,
        headers,
        params,
    }
}

fn b64(text: &str) -> Result<Option<Vec<u8>>, ()> {
    Ok(b64decode_canonical(text))
}

fn value_of<'a>(headers: &[(&[u8], &'a [u8])], key: &[u8]) -> Value<'a> {
    match headers.iter().find(|(k, _)| *k == key) {
        None => Value::Absent,
        Some((_, raw)) => std::str::from_utf8(raw).map_or(Value::Unencodable, Value::Text),
    }
}

/// Checks a required header; on success, that it holds exactly what was expected.
fn required(headers: &[(&[u8], &[u8])], key: &[u8], expected: Option<&str>) -> Result<(), Reason> {
    let read = read(value_of(headers, key), b64).expect("no fallback errors");
    let verdict = require(&read, expected.map_or(Expected::Any, Expected::Text));
    if verdict.is_ok() {
        let text = read.text().expect("valid").expect("present");
        assert!(expected.is_none_or(|expected| expected == text));
    }
    verdict
}

fn at_path<'a>(arguments: Option<&'a [u8]>, path: &[&[u8]]) -> Option<&'a [u8]> {
    let mut value = arguments;
    for key in path {
        let object = value.filter(|value| is_object(value))?;
        value = std::str::from_utf8(key)
            .ok()
            .and_then(|key| member(object, key.as_bytes()));
    }
    value
}

fn check(case: &Case<'_>, message: &Message<'_>) -> Result<(), Reason> {
    let Message::Call {
        method,
        name,
        version,
        params,
        arguments,
        ..
    } = message
    else {
        return Ok(());
    };
    let (method, name, version) = (
        method.unescape(),
        name.map(|n| n.unescape()),
        version.map(|v| v.unescape()),
    );
    required(&case.headers, b"mcp-protocol-version", version.as_deref())?;
    required(&case.headers, b"mcp-method", Some(&method))?;
    if is_routed(&method) {
        required(&case.headers, b"mcp-name", name.as_deref())?;
    }
    let arguments = params
        .zip(*arguments)
        .map(|(params, (start, end))| &params[start..end]);
    for (header, path) in &case.params {
        let value = at_path(arguments, path);
        let key = [
            b"mcp-param-".as_slice(),
            &String::from_utf8_lossy(header).to_lowercase().into_bytes(),
        ]
        .concat();
        let read = read(value_of(&case.headers, &key), b64).expect("no fallback errors");
        read.text().and_then(|text| check_param(value, text))?;
    }
    Ok(())
}

/// Each string, boolean and integer member of the arguments object is mirrored by its own text.
fn check_mirrors(arguments: &[u8]) {
    let mut scanner = Scanner::new(arguments, python_digits);
    let _ = scanner.object(|scanner, _| {
        let (_, raw) = scanner.raw_value(false)?;
        let text: Option<Cow<'_, str>> = match raw {
            [b'"', ..] => {
                let mut inner = Scanner::new(raw, python_digits);
                inner.string().ok().map(|s| Cow::Owned(s.unescape()))
            }
            b"true" | b"false" => std::str::from_utf8(raw).ok().map(Cow::Borrowed),
            _ => std::str::from_utf8(raw)
                .ok()
                .filter(|t| _rust::headers::is_integer(t))
                .map(Cow::Borrowed),
        };
        if let Some(text) = text {
            if !text.contains('\u{fffd}') {
                assert!(mirrors(&text, raw), "{text:?} does not mirror {raw:?}");
                assert_eq!(check_param(Some(raw), Some(&text)), Ok(()));
                let encoded = encode(&text);
                let back = read(Value::Text(&encoded), b64).expect("no fallback errors");
                assert_eq!(back, Read::Text(Cow::Borrowed(text.as_ref())));
                assert!(!mirrors(&format!("{text}x"), raw) || raw.first() != Some(&b'"'));
            }
        }
        Ok(())
    });
}

fuzz_target!(|data: &[u8]| {
    let case = case(data);
    for (_, value) in &case.headers {
        if let Ok(text) = std::str::from_utf8(value) {
            let encoded = encode(text);
            let back = read(Value::Text(&encoded), b64).expect("no fallback errors");
            assert_eq!(
                back,
                Read::Text(Cow::Borrowed(text)),
                "encode/read of {text:?}"
            );
        }
    }
    let Ok(framed) = frame(case.body, Nesting::Limit(64), python_digits) else {
        return;
    };
    for message in &framed.messages {
        let _ = check(&case, message);
        if let Message::Call {
            params: Some(params),
            arguments: Some((start, end)),
            ..
        } = message
        {
            check_mirrors(&params[*start..*end]);
        }
    }
});
