//! HTTP/1.x for the native engine: request heads (`parse_head`, `find_head`) and whole
//! responses (`response`), with the rules, checks and order of `mcpfast._codec_py.http`, which
//! specifies them.
//!
//! Bytes are latin-1: each byte is the character of the same code, so every head has a text
//! form and names or values need no UTF-8.

use std::borrow::Cow;

use memchr::{memchr, memchr2, memchr3, memchr3_iter, memchr_iter};

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

/// Header fields: lower-case names in first-seen order, with their values.
type Fields<'a> = Vec<(Cow<'a, [u8]>, Cow<'a, [u8]>)>;

/// A parsed head borrowing from the bytes it was parsed from (`parse_raw`): what `Head` holds,
/// with names and values as bytes (latin-1) and copied only when lower-cased or joined.
#[derive(Debug)]
struct RawHead<'a> {
    pub method: &'a [u8],
    pub target: &'a [u8],
    pub minor: u8,
    pub headers: Fields<'a>,
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
    // Only the first `limit + 4` bytes can hold a head within the limit and its blank line: no
    // byte past them is looked at (a head that ends later is refused all the same).
    let window = &rest[..rest.len().min(limit.saturating_add(4))];
    let mut lines = 0;
    let mut from = 0;
    // Each CRLF in turn (few: one per line): the first followed by another ends the head.
    let end = loop {
        let Some(at) = find_crlf(&window[from..]) else {
            break None;
        };
        let at = from + at;
        if window[at + 2..].starts_with(b"\r\n") {
            break Some(at);
        }
        lines += 1;
        from = at + 2;
    };
    match end {
        None if rest.len() > limit.saturating_add(3) => Err(refuse(431, "request head too large")),
        Some(_) if lines > max_lines => Err(refuse(431, "too many header lines")),
        end => Ok((skip, end)),
    }
}

/// Whether the connection stays open after the response (RFC 9112 section 9.3): the options
/// of `Connection` are compared stripped of spaces and tabs, case-insensitively.
fn keeps_alive(minor: u8, connection: Option<&[u8]>) -> bool {
    let Some(connection) = connection else {
        return minor >= 1;
    };
    let mut close = false;
    let mut keep = false;
    for option in connection.split(|&b| b == b',') {
        let option = strip_blanks(option);
        close |= option.eq_ignore_ascii_case(b"close");
        keep |= option.eq_ignore_ascii_case(b"keep-alive");
    }
    !close && (minor >= 1 || keep)
}

/// `bytes` as text when they are ASCII (the usual head): no copy, no UTF-8 validation.
fn ascii(bytes: &[u8]) -> Option<&str> {
    if bytes.is_ascii() {
        // SAFETY: ASCII is valid UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(bytes) })
    } else {
        None
    }
}

/// `bytes` decoded as latin-1: each byte the character of the same code.
fn latin1(bytes: &[u8]) -> String {
    match ascii(bytes) {
        Some(text) => text.to_owned(),
        None => bytes.iter().map(|&b| char::from(b)).collect(),
    }
}

/// The bytes of a token (RFC 9110 section 5.6.2): letters, digits and ``!#$%&'*+-.^_`|~``.
const TOKEN: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        table[byte] = b.is_ascii_alphanumeric()
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
            );
        byte += 1;
    }
    table
};

fn is_token(bytes: &[u8]) -> bool {
    !bytes.is_empty() && bytes.iter().all(|&b| TOKEN[usize::from(b)])
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
    while let Some(at) = memchr(b'\r', &haystack[from..]) {
        let at = from + at;
        if haystack.get(at + 1) == Some(&b'\n') {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

const JOINED: [&[u8]; 3] = [b"connection", b"content-length", b"transfer-encoding"];

/// Parses a request head (without the blank line that ends it).
///
/// # Errors
/// A `Refusal` (400, 501, 505) exactly where the Python twin raises `HttpError`.
pub fn parse_head(head: &[u8]) -> Result<Head, Refusal> {
    let raw = parse_raw(head)?;
    Ok(Head {
        method: latin1(raw.method),
        target: latin1(raw.target),
        minor: raw.minor,
        headers: raw
            .headers
            .iter()
            .map(|(name, value)| (latin1(name), latin1(value)))
            .collect(),
        content_length: raw.content_length,
        chunked: raw.chunked,
        keep_alive: raw.keep_alive,
        expect_continue: raw.expect_continue,
    })
}

/// `parse_head`, borrowing from `head`.
///
/// # Errors
/// As `parse_head`.
fn parse_raw(head: &[u8]) -> Result<RawHead<'_>, Refusal> {
    let (mut crs, mut lfs) = (0usize, 0usize);
    for at in memchr3_iter(b'\r', b'\n', 0, head) {
        match head[at] {
            b'\r' => crs += 1,
            b'\n' => lfs += 1,
            _ => return Err(refuse(400, "bare CR, LF or NUL in the head")),
        }
    }
    if crs != lfs {
        return Err(refuse(400, "bare CR, LF or NUL in the head"));
    }
    let (line, block) = match find_crlf(head) {
        Some(at) => (&head[..at], &head[at + 2..]),
        None => (head, &head[head.len()..]),
    };
    let malformed = || refuse(400, "malformed request line");
    let mut spaces = memchr_iter(b' ', line);
    let (Some(first), Some(second), None) = (spaces.next(), spaces.next(), spaces.next()) else {
        return Err(malformed());
    };
    let (method, target, version) = (
        &line[..first],
        &line[first + 1..second],
        &line[second + 1..],
    );
    if !is_token(method) || !is_target(target) || memchr2(b'\r', b'\n', line).is_some() {
        return Err(malformed());
    }
    // HTTP-version is `HTTP/` DIGIT `.` DIGIT, case-sensitive (RFC 9112 section 2.3): anything
    // else is no version (400); another major is 505; a higher 1.x is served as 1.1 (RFC 9110
    // section 2.5).
    let minor = match version {
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            if *major != b'1' {
                return Err(refuse(505, "HTTP version not supported"));
            }
            u8::from(*minor != b'0')
        }
        _ => return Err(malformed()),
    };
    let headers = fields(block)?;
    let get = |name: &[u8]| {
        headers
            .iter()
            .find(|(k, _)| **k == *name)
            .map(|(_, v)| &**v)
    };
    if minor == 1 && get(b"host").is_none() {
        return Err(refuse(400, "missing Host header"));
    }
    let (content_length, chunked) = framing(get(b"transfer-encoding"), get(b"content-length"))?;
    let keep_alive = keeps_alive(minor, get(b"connection"));
    let expect_continue = get(b"expect").is_some_and(|v| v.eq_ignore_ascii_case(b"100-continue"));
    Ok(RawHead {
        method,
        target,
        minor,
        headers,
        content_length,
        chunked,
        keep_alive,
        expect_continue,
    })
}

fn fields(block: &[u8]) -> Result<Fields<'_>, Refusal> {
    let mut headers: Fields<'_> = Vec::new();
    if block.is_empty() {
        return Ok(headers);
    }
    // the whole block first, as the twin's single regex does, then the repeats
    let mut split: Vec<(&[u8], &[u8])> = Vec::with_capacity(16);
    let mut rest = block;
    loop {
        let (field, next) = match find_crlf(rest) {
            Some(at) => (&rest[..at], Some(&rest[at + 2..])),
            None => (rest, None),
        };
        let Some(colon) = memchr(b':', field) else {
            return Err(refuse(400, "malformed header line"));
        };
        let (name, value) = (&field[..colon], &field[colon + 1..]);
        if !is_token(name)
            || memchr3(b'\r', b'\n', 0x0b, value).is_some()
            || memchr(0x0c, value).is_some()
        {
            return Err(refuse(400, "malformed header line"));
        }
        split.push((name, value));
        match next {
            Some(next) => rest = next,
            None => break,
        }
    }
    headers.reserve(split.len());
    for (name, value) in split {
        let key: Cow<'_, [u8]> = if name.iter().any(u8::is_ascii_uppercase) {
            Cow::Owned(name.to_ascii_lowercase())
        } else {
            Cow::Borrowed(name)
        };
        let value = strip_blanks(value);
        if let Some(slot) = headers.iter_mut().find(|(k, _)| *k == key) {
            if JOINED.contains(&&*key) {
                let mut joined = Vec::with_capacity(slot.1.len() + 2 + value.len());
                joined.extend_from_slice(&slot.1);
                joined.extend_from_slice(b", ");
                joined.extend_from_slice(value);
                slot.1 = Cow::Owned(joined);
            } else if *key == *b"host" {
                return Err(refuse(400, "more than one Host header"));
            } else {
                slot.1 = Cow::Borrowed(value);
            }
        } else {
            headers.push((key, Cow::Borrowed(value)));
        }
    }
    Ok(headers)
}

fn framing(coding: Option<&[u8]>, length: Option<&[u8]>) -> Result<(Option<u64>, bool), Refusal> {
    if let Some(coding) = coding {
        if length.is_some() {
            return Err(refuse(400, "both Content-Length and Transfer-Encoding"));
        }
        if !coding.eq_ignore_ascii_case(b"chunked") {
            return Err(Refusal {
                status: 501,
                reason: format!("unsupported transfer coding: {}", latin1(coding)),
            });
        }
        return Ok((None, true));
    }
    let Some(length) = length else {
        return Ok((None, false));
    };
    let value = if memchr(b',', length).is_none() {
        strip_blanks(length) // one value: the usual case
    } else {
        let mut values: Vec<&[u8]> = length.split(|&b| b == b',').map(strip_blanks).collect();
        values.sort_unstable();
        values.dedup();
        if values.len() != 1 {
            return Err(refuse(400, "conflicting Content-Length values"));
        }
        values[0]
    };
    if value.is_empty() || value.len() > 18 || !value.iter().all(u8::is_ascii_digit) {
        return Err(refuse(400, "invalid Content-Length"));
    }
    let digits = value
        .iter()
        .fold(0u64, |n, &digit| n * 10 + u64::from(digit - b'0'));
    Ok((Some(digits), false))
}

/// Checks a request head another HTTP/1 parser took (an ASGI server's), as
/// `mcpfast._codec_py.http.scope_head` does: `line` is the length of its request line as the
/// twin measures it, `fields` its header pairs as given (lower-case names).
///
/// # Errors
/// A 431 `Refusal` for more than `max_lines` fields, then for a head over `limit` bytes; a 400
/// one for both framings, then for a second `Host`.
pub fn scope_refusal(
    line: usize,
    fields: &[(&[u8], &[u8])],
    limit: i64,
    max_lines: i64,
) -> Result<(), Refusal> {
    let over = |count: usize, bound: i64| i64::try_from(count).map_or(true, |count| count > bound);
    if over(fields.len(), max_lines) {
        return Err(refuse(431, "too many header lines"));
    }
    let size = fields.iter().fold(line, |size, (name, value)| {
        size.saturating_add(name.len() + value.len() + 4)
    });
    if over(size, limit) {
        return Err(refuse(431, "request head too large"));
    }
    let named = |wanted: &[u8]| fields.iter().filter(|(name, _)| *name == wanted).count();
    if named(b"content-length") > 0 && named(b"transfer-encoding") > 0 {
        return Err(refuse(400, "both Content-Length and Transfer-Encoding"));
    }
    if named(b"host") > 1 {
        return Err(refuse(400, "more than one Host header"));
    }
    Ok(())
}

// ----------------------------------------------------------------------------- responses

/// How a response's body is framed and whether the connection stays open after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Framing {
    /// `Content-Length`, when given.
    pub length: Option<i64>,
    /// Without a length, `Transfer-Encoding: chunked` (HTTP/1.1) rather than the body ending
    /// with the connection (HTTP/1.0).
    pub chunked: bool,
    pub keep_alive: bool,
}

/// The reason phrase of a status, in the words of Python 3.11's `http.HTTPStatus` (RFC 9110
/// section 15); empty for a status it does not name.
fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        102 => "Processing",
        103 => "Early Hints",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        207 => "Multi-Status",
        208 => "Already Reported",
        226 => "IM Used",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        305 => "Use Proxy",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Request Entity Too Large",
        414 => "Request-URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Requested Range Not Satisfiable",
        417 => "Expectation Failed",
        418 => "I'm a Teapot",
        421 => "Misdirected Request",
        422 => "Unprocessable Entity",
        423 => "Locked",
        424 => "Failed Dependency",
        425 => "Too Early",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        451 => "Unavailable For Legal Reasons",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        506 => "Variant Also Negotiates",
        507 => "Insufficient Storage",
        508 => "Loop Detected",
        510 => "Not Extended",
        511 => "Network Authentication Required",
        _ => "",
    }
}

/// The first second of the year 10000: dates are written with four-digit years.
pub const DATE_END: i64 = 253_402_300_800;

/// Appends `n` in decimal, at least `width` digits (zero-padded).
fn push_digits(out: &mut Vec<u8>, n: u64, width: usize) {
    let mut digits = [b'0'; 20];
    let mut at = digits.len();
    let mut rest = n;
    while rest > 0 || digits.len() - at < width.max(1) {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    out.extend_from_slice(&digits[at..]);
}

/// `date: <IMF-fixdate>\r\n` for `now` seconds since the epoch (RFC 9110 section 5.6.7), as
/// Python's `email.utils.formatdate(now, usegmt=True)` writes it; `now` is in `0..DATE_END`.
fn date_line(now: i64) -> Vec<u8> {
    const DAYS: [&[u8]; 7] = [b"Thu", b"Fri", b"Sat", b"Sun", b"Mon", b"Tue", b"Wed"];
    const MONTHS: [&[u8]; 12] = [
        b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov",
        b"Dec",
    ];
    let now = u64::try_from(now).unwrap_or(0);
    let (days, second) = (now / 86_400, now % 86_400);
    // Civil from days (Howard Hinnant's algorithm), for days since 1970-01-01 (a Thursday).
    let shifted = days + 719_468;
    let era = shifted / 146_097;
    let of_era = shifted - era * 146_097;
    let year_of_era = (of_era - of_era / 1460 + of_era / 36_524 - of_era / 146_096) / 365;
    let day_of_year = of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153; // March is 0
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    let mut out = Vec::with_capacity(37);
    out.extend_from_slice(b"date: ");
    out.extend_from_slice(DAYS[(days % 7) as usize]);
    out.extend_from_slice(b", ");
    push_digits(&mut out, day, 2);
    out.push(b' ');
    out.extend_from_slice(MONTHS[(month - 1) as usize]);
    out.push(b' ');
    push_digits(&mut out, year, 4);
    out.push(b' ');
    push_digits(&mut out, second / 3600, 2);
    out.push(b':');
    push_digits(&mut out, second / 60 % 60, 2);
    out.push(b':');
    push_digits(&mut out, second % 60, 2);
    out.extend_from_slice(b" GMT\r\n");
    out
}

thread_local! {
    /// The last `date_line` written on this thread, and its second: one a second is made.
    static DATE: std::cell::RefCell<(i64, Vec<u8>)> = const { std::cell::RefCell::new((-1, Vec::new())) };
}

/// Appends `date_line(now)`, made at most once a second per thread.
fn push_date(out: &mut Vec<u8>, now: i64) {
    DATE.with_borrow_mut(|(second, line)| {
        if *second != now {
            *line = date_line(now);
            *second = now;
        }
        out.extend_from_slice(line);
    });
}

/// Why a response cannot be written (Python's `ValueError`, in the twin's words).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unwritable(pub String);

/// A response head, through its blank line, then `body`: the status line, `date`, `headers`
/// as given, then the framing: none for 1xx, 204 and 304 (no body), else `content-length` when
/// `framing.length` is given, else `transfer-encoding: chunked` when `framing.chunked`, else
/// none (the body ends with the connection); `connection: close` unless `framing.keep_alive`.
///
/// # Errors
/// `Unwritable`, checked in this order: a status outside 100..=999, a negative length, `now`
/// outside `0..DATE_END`, header lines of more than `limit` bytes (each counted as name, value and
/// four bytes).
pub fn response(
    status: i64,
    headers: &[(&[u8], &[u8])],
    body: &[u8],
    framing: Framing,
    limit: i64,
    now: i64,
) -> Result<Vec<u8>, Unwritable> {
    let Some(code) = u16::try_from(status)
        .ok()
        .filter(|s| (100..=999).contains(s))
    else {
        return Err(Unwritable(format!(
            "status {status} is not a three-digit code"
        )));
    };
    if let Some(length) = framing.length.filter(|&length| length < 0) {
        return Err(Unwritable(format!("length {length} is negative")));
    }
    if !(0..DATE_END).contains(&now) {
        return Err(Unwritable(format!(
            "date {now} is outside the years 1970-9999"
        )));
    }
    let size: usize = headers.iter().map(|(n, v)| n.len() + v.len() + 4).sum();
    if i64::try_from(size).map_or(true, |size| size > limit) {
        return Err(Unwritable(format!(
            "response head of {size} bytes passes max_header_bytes ({limit})"
        )));
    }
    let mut out = Vec::with_capacity(size + body.len() + 128);
    out.extend_from_slice(b"HTTP/1.1 ");
    push_digits(&mut out, u64::from(code), 3);
    out.push(b' ');
    out.extend_from_slice(reason(code).as_bytes());
    out.extend_from_slice(b"\r\n");
    push_date(&mut out, now);
    for (name, value) in headers {
        out.extend_from_slice(name);
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    if code < 200 || code == 204 || code == 304 {
    } else if let Some(length) = framing.length {
        out.extend_from_slice(b"content-length: ");
        push_digits(&mut out, length.unsigned_abs(), 1);
        out.extend_from_slice(b"\r\n");
    } else if framing.chunked {
        out.extend_from_slice(b"transfer-encoding: chunked\r\n");
    }
    if !framing.keep_alive {
        out.extend_from_slice(b"connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    Ok(out)
}

#[cfg(feature = "python")]
pub mod py {
    use pyo3::exceptions::{PyTypeError, PyValueError};
    use pyo3::prelude::*;
    use pyo3::sync::Interned;
    use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyString};

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

    /// A name or method: interned when common (ASCII: a token).
    fn text<'py>(py: Python<'py>, bytes: &[u8]) -> Bound<'py, PyString> {
        match super::ascii(bytes) {
            Some(text) => match common(text) {
                Some(interned) => interned.get(py).clone(),
                None => PyString::new(py, text),
            },
            None => PyString::new(py, &super::latin1(bytes)),
        }
    }

    /// A value or target, decoded as latin-1 (copied once, when it is ASCII).
    fn value<'py>(py: Python<'py>, bytes: &[u8]) -> Bound<'py, PyString> {
        match super::ascii(bytes) {
            Some(text) => PyString::new(py, text),
            None => PyString::new(py, &super::latin1(bytes)),
        }
    }

    fn head_of(py: Python<'_>, head: &[u8]) -> PyResult<PyHead> {
        let parsed = super::parse_raw(head)
            .map_err(|refusal| http_error(py, refusal.status, &refusal.reason))?;
        let headers = PyDict::new(py);
        for (key, item) in &parsed.headers {
            headers.set_item(text(py, key), value(py, item))?;
        }
        Ok(PyHead {
            method: text(py, parsed.method).unbind(),
            target: value(py, parsed.target).unbind(),
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
    type Pairs<'py> = Vec<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>;

    /// Header pairs from a list (read directly) or any iterable of `(bytes, bytes)`.
    fn pairs_of<'py>(headers: &Bound<'py, PyAny>) -> PyResult<Pairs<'py>> {
        let pair = |item: Bound<'py, PyAny>| {
            item.extract::<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>()
                .map_err(|_| PyTypeError::new_err("headers must be (bytes, bytes) pairs"))
        };
        match headers.cast::<PyList>() {
            Ok(list) => list.iter().map(pair).collect(),
            Err(_) => headers
                .try_iter()?
                .map(|item| item.and_then(pair))
                .collect(),
        }
    }

    fn fields_of<'a>(pairs: &'a Pairs<'_>) -> Vec<(&'a [u8], &'a [u8])> {
        pairs
            .iter()
            .map(|(name, value)| (name.as_bytes(), value.as_bytes()))
            .collect()
    }

    /// `scope_head(method, target, query, headers, limit, max_lines)`: see
    /// `mcpfast._codec_py.http.scope_head`.
    #[pyfunction]
    #[pyo3(name = "scope_head")]
    pub fn py_scope_head<'py>(
        method: &Bound<'py, PyString>,
        target: &Bound<'py, PyBytes>,
        query: &Bound<'py, PyBytes>,
        headers: &Bound<'py, PyAny>,
        limit: i64,
        max_lines: i64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let py = method.py();
        let query = query.as_bytes();
        let line = method.len()? + target.as_bytes().len() + query.len() + 10;
        let line = if query.is_empty() { line } else { line + 1 };
        let pairs = pairs_of(headers)?;
        let fields = fields_of(&pairs);
        super::scope_refusal(line, &fields, limit, max_lines)
            .map_err(|refusal| http_error(py, refusal.status, &refusal.reason))?;
        let map = PyDict::new(py);
        for (name, item) in fields {
            map.set_item(text(py, name), value(py, item))?;
        }
        Ok(map)
    }

    /// `response(status, headers, body, length, chunked, keep_alive, limit, now)`: see
    /// `mcpfast._codec_py.http.response`.
    #[pyfunction]
    #[pyo3(name = "response")]
    #[allow(clippy::too_many_arguments)]
    pub fn py_response<'py>(
        py: Python<'py>,
        status: i64,
        headers: &Bound<'py, PyAny>,
        body: &Bound<'py, PyBytes>,
        length: Option<i64>,
        chunked: bool,
        keep_alive: bool,
        limit: i64,
        now: i64,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let pairs = pairs_of(headers)?;
        let fields = fields_of(&pairs);
        let framing = super::Framing {
            length,
            chunked,
            keep_alive,
        };
        let out = super::response(status, &fields, body.as_bytes(), framing, limit, now)
            .map_err(|super::Unwritable(reason)| PyValueError::new_err(reason))?;
        Ok(PyBytes::new(py, &out))
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
    fn find_head_within_its_limits() {
        let head = b"\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\nrest";
        assert_eq!(find_head(head, 23, 1), Ok((2, Some(23)))); // just at both limits
        assert_eq!(find_head(head, 22, 1).expect_err("long").status, 431);
        assert_eq!(
            find_head(head, 23, 0).expect_err("lines").reason,
            "too many header lines"
        );
        // not all there yet
        assert_eq!(find_head(&head[..20], 23, 1), Ok((2, None)));
        // a blank line past `limit + 4` bytes is never reached: refused as it would be
        let mut long = b"GET / HTTP/1.1\r\nX: ".to_vec();
        long.extend(std::iter::repeat_n(b'\r', 100_000));
        long.extend(b"\r\n\r\n");
        assert_eq!(find_head(&long, 100, 8).expect_err("long").status, 431);
        assert_eq!(find_head(&long[..103], 100, 8), Ok((0, None)));
        assert_eq!(
            find_head(&long[..104], 100, 8).expect_err("long").status,
            431
        );
        assert_eq!(
            find_head(b"GET / HTTP/1.1", usize::MAX, usize::MAX),
            Ok((0, None))
        );
    }

    #[test]
    fn scope_heads_within_the_limits() {
        let fields: [(&[u8], &[u8]); 2] = [(b"host", b"a"), (b"content-length", b"2")];
        // 10 (line) + 9 + 19 = 38 bytes, 2 lines
        assert_eq!(scope_refusal(10, &fields, 38, 2), Ok(()));
        let status = |refusal: Result<(), Refusal>| refusal.map_err(|r| r.status);
        assert_eq!(status(scope_refusal(10, &fields, 37, 2)), Err(431));
        assert_eq!(status(scope_refusal(10, &fields, 38, 1)), Err(431));
        assert_eq!(status(scope_refusal(10, &fields, -1, 2)), Err(431));
        let both: [(&[u8], &[u8]); 2] = [
            (b"transfer-encoding", b"chunked"),
            (b"content-length", b"2"),
        ];
        assert_eq!(status(scope_refusal(10, &both, 999, 9)), Err(400));
        let hosts: [(&[u8], &[u8]); 2] = [(b"host", b"a"), (b"host", b"b")];
        assert_eq!(status(scope_refusal(10, &hosts, 999, 9)), Err(400));
        // the limits come first: an oversized head is 431 whatever its framing
        assert_eq!(status(scope_refusal(10, &hosts, 20, 9)), Err(431));
    }

    #[test]
    fn latin1_values_survive() {
        let head = ok(b"GET / HTTP/1.1\r\nHost: h\r\nX: caf\xe9");
        assert_eq!(head.headers[1].1, "caf\u{e9}");
    }

    fn whole(status: i64, framing: Framing, now: i64) -> String {
        let headers: [(&[u8], &[u8]); 1] = [(b"content-type", b"application/json")];
        let out = response(status, &headers, b"{}", framing, 100, now).expect("writes");
        String::from_utf8(out).expect("ASCII")
    }

    #[test]
    fn responses_are_framed() {
        let sized = Framing {
            length: Some(2),
            chunked: false,
            keep_alive: true,
        };
        assert_eq!(
            whole(200, sized, 0),
            "HTTP/1.1 200 OK\r\ndate: Thu, 01 Jan 1970 00:00:00 GMT\r\n\
             content-type: application/json\r\ncontent-length: 2\r\n\r\n{}"
        );
        let streamed = Framing {
            length: None,
            chunked: true,
            keep_alive: false,
        };
        assert!(whole(200, streamed, 0)
            .ends_with("transfer-encoding: chunked\r\nconnection: close\r\n\r\n{}"));
        assert!(whole(204, sized, 0).ends_with("application/json\r\n\r\n{}"));
        assert!(whole(599, sized, 0).starts_with("HTTP/1.1 599 \r\n"));
    }

    #[test]
    fn dates_are_imf_fixdates() {
        let at = |now| {
            whole(
                200,
                Framing {
                    length: None,
                    chunked: false,
                    keep_alive: true,
                },
                now,
            )
        };
        assert!(at(951_825_600).contains("date: Tue, 29 Feb 2000 12:00:00 GMT\r\n"));
        assert!(at(4_107_542_399).contains("date: Sun, 28 Feb 2100 23:59:59 GMT\r\n"));
        assert!(at(DATE_END - 1).contains("date: Fri, 31 Dec 9999 23:59:59 GMT\r\n"));
    }

    #[test]
    fn unwritable_responses() {
        let framing = Framing {
            length: Some(-1),
            chunked: false,
            keep_alive: true,
        };
        let refused =
            |status, now, limit| response(status, &[(b"a", b"b")], b"", framing, limit, now);
        assert!(refused(99, 0, 5).unwrap_err().0.contains("status 99"));
        assert!(refused(200, 0, 5).unwrap_err().0.contains("length -1"));
        let framing = Framing {
            length: None,
            ..framing
        };
        let refused = |now, limit| response(200, &[(b"a", b"b")], b"", framing, limit, now);
        assert!(refused(DATE_END, 6).unwrap_err().0.contains("date"));
        assert!(refused(0, 5)
            .unwrap_err()
            .0
            .contains("6 bytes passes max_header_bytes (5)"));
        assert!(refused(0, 6).is_ok());
    }
}
