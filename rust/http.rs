//! HTTP/1.x request heads for the native engine (`parse_head`), with the rules, checks and
//! order of `mcpfast._codec_py.http.parse_head`, which specifies them.
//!
//! Bytes are latin-1: each byte is the character of the same code, so every head has a text
//! form and names or values need no UTF-8.

/// A refusal: the HTTP status to answer and a fixed reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub reason: String,
}

fn refuse(status: u16, reason: &str) -> Refusal {
    Refusal {
        status,
        reason: reason.to_owned(),
    }
}

/// A parsed head: method, raw target, minor version, headers (lower-case names in first-seen
/// order), content length, chunked, and what `Connection` and `Expect` ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub method: String,
    pub target: String,
    pub minor: u8,
    pub headers: Vec<(String, String)>,
    pub content_length: Option<u64>,
    pub chunked: bool,
    pub keep_alive: bool,
    pub expect_continue: bool,
}

/// Finds the next request head in `buffer`, with the limits and order of
/// `mcpfast._codec_py.http.take_head`: `skip` bytes of CRLFs between requests, then the head's
/// length (without the blank line that ends it), or None while that blank line has not come.
///
/// # Errors
/// A 431 `Refusal` when the head outgrows `limit` bytes (as soon as `limit + 4` bytes after
/// the CRLFs hold no blank line) or holds more than `max_lines` line ends.
pub fn find_head(
    buffer: &[u8],
    limit: usize,
    max_lines: usize,
) -> Result<(usize, Option<usize>), Refusal> {
    let mut skip = 0;
    while buffer[skip..].starts_with(b"\r\n") {
        skip += 2;
    }
    let rest = &buffer[skip..];
    let end = rest.windows(4).position(|w| w == b"\r\n\r\n");
    match end {
        Some(end) if end > limit => Err(refuse(431, "request head too large")),
        None if rest.len() > limit + 3 => Err(refuse(431, "request head too large")),
        Some(end) if rest[..end].windows(2).filter(|w| *w == b"\r\n").count() > max_lines => {
            Err(refuse(431, "too many header lines"))
        }
        end => Ok((skip, end)),
    }
}

/// Whether the connection stays open after the response (RFC 9112 section 9.3): the options
/// of `Connection` are compared stripped of spaces and tabs, case-insensitively.
fn keeps_alive(minor: u8, connection: Option<&String>) -> bool {
    let Some(connection) = connection else {
        return minor >= 1;
    };
    let mut close = false;
    let mut keep = false;
    for option in connection.split(',') {
        let option = option.trim_matches(|c| c == ' ' || c == '\t');
        close |= option.eq_ignore_ascii_case("close");
        keep |= option.eq_ignore_ascii_case("keep-alive");
    }
    !close && (minor >= 1 || keep)
}

fn latin1(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) if bytes.is_ascii() => text.to_owned(),
        _ => bytes.iter().map(|&b| char::from(b)).collect(),
    }
}

fn is_token(bytes: &[u8]) -> bool {
    !bytes.is_empty()
        && bytes.iter().all(|&b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'!' | b'#'
                        | b'$'
                        | b'%'
                        | b'&'
                        | b'\''
                        | b'*'
                        | b'+'
                        | b'-'
                        | b'.'
                        | b'^'
                        | b'_'
                        | b'`'
                        | b'|'
                        | b'~'
                )
        })
}

/// Whether `bytes` is a request target: visible ASCII, at least one byte (RFC 9112 §3.2).
fn is_target(bytes: &[u8]) -> bool {
    !bytes.is_empty() && bytes.iter().all(|&b| (0x21..=0x7e).contains(&b))
}

fn strip_blanks(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|&b| b != b' ' && b != b'\t')
        .map_or(start, |i| i + 1);
    &bytes[start..end.max(start)]
}

/// The index of the first `\r\n` in `haystack`.
fn find_crlf(haystack: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = haystack[from..].iter().position(|&b| b == b'\r') {
        let at = from + at;
        if haystack.get(at + 1) == Some(&b'\n') {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// Splits `bytes` on every `\r\n`.
fn lines(bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while let Some(at) = find_crlf(rest) {
        out.push(&rest[..at]);
        rest = &rest[at + 2..];
    }
    out.push(rest);
    out
}

const JOINED: [&str; 3] = ["connection", "content-length", "transfer-encoding"];

/// Parses a request head (without the blank line that ends it).
///
/// # Errors
/// A `Refusal` (400, 501, 505) exactly where the Python twin raises `HttpError`.
pub fn parse_head(head: &[u8]) -> Result<Head, Refusal> {
    let (mut crs, mut lfs, mut nul) = (0usize, 0usize, false);
    for &byte in head {
        match byte {
            b'\r' => crs += 1,
            b'\n' => lfs += 1,
            0 => nul = true,
            _ => {}
        }
    }
    if nul || crs != lfs {
        return Err(refuse(400, "bare CR, LF or NUL in the head"));
    }
    let (line, block) = match find_crlf(head) {
        Some(at) => (&head[..at], &head[at + 2..]),
        None => (head, &head[head.len()..]),
    };
    let parts: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
    if parts.len() != 3
        || !is_token(parts[0])
        || !is_target(parts[1])
        || line.iter().any(|&b| b == b'\r' || b == b'\n')
    {
        return Err(refuse(400, "malformed request line"));
    }
    // HTTP-version is `HTTP/` DIGIT `.` DIGIT, case-sensitive (RFC 9112 section 2.3): anything
    // else is no version (400); another major is 505; a higher 1.x is served as 1.1 (RFC 9110
    // section 2.5).
    let minor = match parts[2] {
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            if *major != b'1' {
                return Err(refuse(505, "HTTP version not supported"));
            }
            u8::from(*minor != b'0')
        }
        _ => return Err(refuse(400, "malformed request line")),
    };
    let headers = fields(block)?;
    let get = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    if minor == 1 && get("host").is_none() {
        return Err(refuse(400, "missing Host header"));
    }
    let (content_length, chunked) = framing(get("transfer-encoding"), get("content-length"))?;
    let keep_alive = keeps_alive(minor, get("connection"));
    let expect_continue = get("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));
    Ok(Head {
        method: latin1(parts[0]),
        target: latin1(parts[1]),
        minor,
        headers,
        content_length,
        chunked,
        keep_alive,
        expect_continue,
    })
}

fn fields(block: &[u8]) -> Result<Vec<(String, String)>, Refusal> {
    let mut headers: Vec<(String, String)> = Vec::new();
    if block.is_empty() {
        return Ok(headers);
    }
    let split = lines(block);
    // the whole block first, as the twin's single regex does, then the repeats
    for field in &split {
        let colon = field.iter().position(|&b| b == b':');
        let valid = colon.is_some_and(|at| {
            is_token(&field[..at])
                && !field[at..]
                    .iter()
                    .any(|&b| matches!(b, b'\r' | b'\n' | 0x0b | 0x0c))
        });
        if !valid {
            return Err(refuse(400, "malformed header line"));
        }
    }
    for field in split {
        let at = field.iter().position(|&b| b == b':').unwrap_or(0);
        let mut key = latin1(&field[..at]);
        key.make_ascii_lowercase();
        let value = latin1(strip_blanks(&field[at + 1..]));
        if let Some(slot) = headers.iter_mut().find(|(k, _)| *k == key) {
            if JOINED.contains(&key.as_str()) {
                slot.1 = format!("{}, {value}", slot.1);
            } else if key == "host" {
                return Err(refuse(400, "more than one Host header"));
            } else {
                slot.1 = value;
            }
        } else {
            headers.push((key, value));
        }
    }
    Ok(headers)
}

fn framing(
    coding: Option<&String>,
    length: Option<&String>,
) -> Result<(Option<u64>, bool), Refusal> {
    if let Some(coding) = coding {
        if length.is_some() {
            return Err(refuse(400, "both Content-Length and Transfer-Encoding"));
        }
        if !coding.eq_ignore_ascii_case("chunked") {
            return Err(Refusal {
                status: 501,
                reason: format!("unsupported transfer coding: {coding}"),
            });
        }
        return Ok((None, true));
    }
    let Some(length) = length else {
        return Ok((None, false));
    };
    let mut values: Vec<&str> = length
        .split(',')
        .map(|v| v.trim_matches(|c| c == ' ' || c == '\t'))
        .collect();
    values.sort_unstable();
    values.dedup();
    if values.len() != 1 {
        return Err(refuse(400, "conflicting Content-Length values"));
    }
    let value = values[0];
    if value.is_empty() || value.len() > 18 || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(refuse(400, "invalid Content-Length"));
    }
    value
        .parse::<u64>()
        .map(|n| (Some(n), false))
        .map_err(|_| refuse(400, "invalid Content-Length"))
}

#[cfg(feature = "python")]
pub mod py {
    use pyo3::prelude::*;
    use pyo3::sync::Interned;
    use pyo3::types::{PyByteArray, PyBytes, PyDict, PyString};

    use crate::errors::http_error;

    /// A parsed request head, as Python sees it; the twin's `Head` has the same members.
    #[pyclass(frozen, get_all, module = "mcpfast._rust", name = "Head")]
    pub struct PyHead {
        method: Py<PyString>,
        target: Py<PyString>,
        minor: u8,
        headers: Py<PyDict>,
        content_length: Option<u64>,
        chunked: bool,
        keep_alive: bool,
        expect_continue: bool,
    }

    #[pymethods]
    impl PyHead {
        fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
            let length = self
                .content_length
                .map_or_else(|| "None".to_owned(), |length| length.to_string());
            let flag = |value: bool| if value { "True" } else { "False" };
            Ok(format!(
                "Head(method={}, target={}, minor={}, headers={}, content_length={length}, \
                 chunked={}, keep_alive={}, expect_continue={})",
                self.method.bind(py).repr()?,
                self.target.bind(py).repr()?,
                self.minor,
                self.headers.bind(py).repr()?,
                flag(self.chunked),
                flag(self.keep_alive),
                flag(self.expect_continue),
            ))
        }
    }

    /// Methods and header names that come with every request, kept as interned strs (a
    /// speed-up only: any other text is made afresh).
    macro_rules! common {
        ($raw:expr; $($text:literal),* $(,)?) => {
            match $raw {
                $($text => {
                    static TEXT: Interned = Interned::new($text);
                    Some(&TEXT)
                })*
                _ => None,
            }
        };
    }

    fn common(text: &str) -> Option<&'static Interned> {
        common!(text;
            "GET",
            "POST",
            "DELETE",
            "HEAD",
            "host",
            "content-type",
            "content-length",
            "accept",
            "accept-encoding",
            "user-agent",
            "connection",
            "authorization",
            "origin",
            "mcp-protocol-version",
            "mcp-session-id",
            "mcp-method",
            "mcp-name",
            "last-event-id",
            "transfer-encoding",
        )
    }

    fn text<'py>(py: Python<'py>, text: &str) -> Bound<'py, PyString> {
        match common(text) {
            Some(interned) => interned.get(py).clone(),
            None => PyString::new(py, text),
        }
    }

    fn head_of(py: Python<'_>, head: &[u8]) -> PyResult<PyHead> {
        let parsed = super::parse_head(head)
            .map_err(|refusal| http_error(py, refusal.status, &refusal.reason))?;
        let headers = PyDict::new(py);
        for (key, value) in &parsed.headers {
            headers.set_item(text(py, key), PyString::new(py, value))?;
        }
        Ok(PyHead {
            method: text(py, &parsed.method).unbind(),
            target: PyString::new(py, &parsed.target).unbind(),
            minor: parsed.minor,
            headers: headers.unbind(),
            content_length: parsed.content_length,
            chunked: parsed.chunked,
            keep_alive: parsed.keep_alive,
            expect_continue: parsed.expect_continue,
        })
    }

    /// `parse_head(head)`: see `mcpfast._codec_py.http.parse_head`.
    #[pyfunction]
    #[pyo3(name = "parse_head")]
    pub fn py_parse_head(head: &Bound<'_, PyBytes>) -> PyResult<PyHead> {
        head_of(head.py(), head.as_bytes())
    }

    /// `take_head(buffer, limit, max_lines)`: see `mcpfast._codec_py.http.take_head`.
    #[pyfunction]
    #[pyo3(name = "take_head")]
    pub fn py_take_head(
        buffer: &Bound<'_, PyByteArray>,
        limit: usize,
        max_lines: usize,
    ) -> PyResult<Option<PyHead>> {
        let py = buffer.py();
        // SAFETY: the bytes are read, and copied, before any Python code can run.
        let (skip, end, head) = {
            let bytes = unsafe { buffer.as_bytes() };
            let (skip, end) = super::find_head(bytes, limit, max_lines)
                .map_err(|refusal| http_error(py, refusal.status, &refusal.reason))?;
            (skip, end, end.map(|end| bytes[skip..skip + end].to_vec()))
        };
        let taken = end.map_or(skip, |end| skip + end + 4);
        if taken > 0 {
            let taken = pyo3::ffi::Py_ssize_t::try_from(taken)?;
            // SAFETY: a live bytearray; `del buffer[:taken]` (CPython moves its start: no copy)
            if unsafe { pyo3::ffi::PySequence_DelSlice(buffer.as_ptr(), 0, taken) } != 0 {
                return Err(PyErr::fetch(py));
            }
        }
        head.map(|head| head_of(py, &head)).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(head: &[u8]) -> Head {
        parse_head(head).expect("parses")
    }

    fn status(head: &[u8]) -> u16 {
        parse_head(head).expect_err("refused").status
    }

    #[test]
    fn a_typical_head() {
        let head =
            ok(b"POST /mcp?x=1 HTTP/1.1\r\nHost: h\r\nContent-Length:  12 \r\nX-A: 1\r\nx-a: 2");
        assert_eq!(head.method, "POST");
        assert_eq!(head.target, "/mcp?x=1");
        assert_eq!(head.minor, 1);
        assert_eq!(head.content_length, Some(12));
        assert!(!head.chunked);
        assert_eq!(
            head.headers,
            vec![
                ("host".into(), "h".into()),
                ("content-length".into(), "12".into()),
                ("x-a".into(), "2".into())
            ]
        );
    }

    #[test]
    fn repeats_are_joined_or_refused() {
        let head = ok(b"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\nConnection: keep-alive");
        assert_eq!(head.headers[1].1, "close, keep-alive");
        assert_eq!(
            ok(b"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\ncontent-length: 5")
                .content_length,
            Some(5)
        );
        assert_eq!(
            status(b"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\ncontent-length: 6"),
            400
        );
        assert_eq!(status(b"GET / HTTP/1.1\r\nHost: h\r\nHost: i"), 400);
        assert_eq!(status(b"GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked"), 501);
    }

    #[test]
    fn versions() {
        assert_eq!(ok(b"GET / HTTP/1.2\r\nHost: h").minor, 1); // a higher 1.x: served as 1.1
        assert_eq!(ok(b"GET / HTTP/1.0").minor, 0);
        assert_eq!(status(b"GET / HTTP/0.9\r\nHost: h"), 505);
        assert_eq!(status(b"GET / http/1.1\r\nHost: h"), 400); // no HTTP-version at all
        assert_eq!(status(b"GET / HTTP/1.10\r\nHost: h"), 400);
        assert_eq!(status(b"GET / HTTP/1\r\nHost: h"), 400);
    }

    #[test]
    fn refusals() {
        assert_eq!(status(b"GET / HTTP/2.0\r\nHost: h"), 505);
        assert_eq!(status(b"GET  / HTTP/1.1\r\nHost: h"), 400);
        assert_eq!(status(b"GET / HTTP/1.1"), 400);
        assert_eq!(status(b"GET / HTTP/1.1\r\nHost : h"), 400);
        assert_eq!(status(b"GET / HTTP/1.1\r\nHost: h\r\n folded"), 400);
        assert_eq!(status(b"GET / HTTP/1.1\r\nHost: a\x00b"), 400);
        assert_eq!(status(b"GET / HTTP/1.1\r\nHost: a\nX: b"), 400);
        assert_eq!(
            status(b"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 1x"),
            400
        );
        assert_eq!(
            status(b"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked"),
            400
        );
        assert!(ok(b"GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked").chunked);
        assert_eq!(ok(b"GET / HTTP/1.0").headers, vec![]);
    }

    #[test]
    fn targets_are_visible_ascii() {
        // Found by fuzzing against h11: targets with control or non-ASCII bytes were accepted
        // (the Hypercorn engine refuses them with 400).
        for target in [&b"/\x07"[..], b"/\x7f", b"/caf\xe9", b"/\xff/h", b"/a\tb"] {
            let head = [b"GET ", target, b" HTTP/1.1\r\nHost: h"].concat();
            assert_eq!(
                parse_head(&head).expect_err("refused").reason,
                "malformed request line"
            );
        }
        assert_eq!(
            ok(b"GET /a%20b?x=~!* HTTP/1.1\r\nHost: h").target,
            "/a%20b?x=~!*"
        );
    }

    #[test]
    fn values_hold_no_vertical_tab_or_form_feed() {
        // Found by fuzzing against h11, which refuses them (the Hypercorn engine answers 400).
        for value in [&b"a\x0bb"[..], b"\x0c", b"1\x0c"] {
            let head = [b"GET / HTTP/1.1\r\nHost: h\r\nX: ", value].concat();
            assert_eq!(
                parse_head(&head).expect_err("refused").reason,
                "malformed header line"
            );
        }
        assert_eq!(
            ok(b"GET / HTTP/1.1\r\nHost: h\r\nX: a\x01\tb").headers[1].1,
            "a\x01\tb"
        );
    }

    #[test]
    fn latin1_values_survive() {
        let head = ok(b"GET / HTTP/1.1\r\nHost: h\r\nX: caf\xe9");
        assert_eq!(head.headers[1].1, "caf\u{e9}");
    }
}
