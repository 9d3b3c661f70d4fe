//! A validating JSON scanner that accepts exactly what msgspec's JSON decoder accepts.
//!
//! The scanner never builds values: it checks the syntax and reports where values are, so that
//! callers can slice raw JSON out of the input or decode the few strings they need. It is
//! iterative (an explicit stack of open containers), so nesting depth cannot overflow the stack.
//!
//! What msgspec accepts (and so what this accepts) is RFC 8259 JSON read byte by byte:
//! whitespace is space, tab, CR and LF; numbers have no leading zeros, no `+`, and digits on
//! both sides of a `.`; strings hold no raw byte below 0x20, escapes are the eight short ones
//! or `\uXXXX`, and a `\u` surrogate must be a high one followed by a `\u` low one. Bytes at or
//! above 0x80 pass through unchecked: UTF-8 validity is checked separately on the whole input.
//!
//! Where msgspec *converts* a value (a struct field typed `object`), it also refuses numbers it
//! cannot represent (`Fail::Invalid`, a `msgspec.ValidationError`): a float that rounds to
//! infinity, or an integer too long for `int()`. Values that msgspec only skips (unknown fields,
//! `msgspec.Raw`) are not range-checked. [`Scanner::value`] takes that choice as `checked`.

/// Why the input was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fail {
    /// Not JSON (msgspec raises `DecodeError`).
    Syntax,
    /// JSON that msgspec refuses to convert (msgspec raises `ValidationError`).
    Invalid,
}

pub type Scan<T> = Result<T, Fail>;

/// The type of a JSON value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Null,
    True,
    False,
    Int,
    Float,
    Str,
    Array,
    Object,
}

/// Longest integer text (sign included) msgspec converts to a Python int.
pub const MAX_INT_TEXT: usize = 4300;

/// The contents of a JSON string, between its quotes, still escaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JStr<'a> {
    pub raw: &'a [u8],
    /// Whether `raw` holds a backslash escape.
    pub escaped: bool,
}

impl JStr<'_> {
    /// Whether the string equals `text` once unescaped.
    pub fn eq_bytes(&self, text: &[u8]) -> bool {
        if !self.escaped {
            return self.raw == text;
        }
        let mut rest = text;
        let mut buf = [0u8; 4];
        for ch in Unescape::new(self.raw) {
            let encoded = ch.encode_utf8(&mut buf).as_bytes();
            match rest.strip_prefix(encoded) {
                Some(tail) => rest = tail,
                None => return false,
            }
        }
        rest.is_empty()
    }

    /// The string unescaped. The scanner validated it and its input is UTF-8.
    pub fn unescape(&self) -> String {
        if !self.escaped {
            return String::from_utf8_lossy(self.raw).into_owned();
        }
        let mut out = String::with_capacity(self.raw.len());
        let mut start = 0;
        let raw = self.raw;
        let mut i = 0;
        while i < raw.len() {
            if raw[i] == b'\\' {
                out.push_str(&String::from_utf8_lossy(&raw[start..i]));
                let (ch, used) = unescape_one(&raw[i..]);
                out.push(ch);
                i += used;
                start = i;
            } else {
                i += 1;
            }
        }
        out.push_str(&String::from_utf8_lossy(&raw[start..]));
        out
    }
}

/// Decodes the escape at the start of `raw` (validated): the character and the bytes used.
fn unescape_one(raw: &[u8]) -> (char, usize) {
    let simple = match raw[1] {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        _ => {
            let high = hex4(&raw[2..6]).unwrap_or(0);
            if (0xD800..0xDC00).contains(&high) {
                let low = hex4(&raw[8..12]).unwrap_or(0xDC00);
                let cp = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                return (char::from_u32(cp).unwrap_or('\u{fffd}'), 12);
            }
            return (char::from_u32(high).unwrap_or('\u{fffd}'), 6);
        }
    };
    (simple, 2)
}

/// Iterates over the characters of a validated, escaped JSON string body.
struct Unescape<'a> {
    raw: &'a [u8],
    pos: usize,
}

impl<'a> Unescape<'a> {
    fn new(raw: &'a [u8]) -> Self {
        Self { raw, pos: 0 }
    }
}

impl Iterator for Unescape<'_> {
    type Item = char;

    fn next(&mut self) -> Option<char> {
        let rest = &self.raw[self.pos..];
        let first = *rest.first()?;
        if first == b'\\' {
            let (ch, used) = unescape_one(rest);
            self.pos += used;
            return Some(ch);
        }
        let width = match first {
            0x00..=0x7F => 1,
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            _ => 4,
        }
        .min(rest.len());
        self.pos += width;
        Some(
            std::str::from_utf8(&rest[..width])
                .ok()
                .and_then(|s| s.chars().next())
                .unwrap_or('\u{fffd}'),
        )
    }
}

fn hex_digit(byte: u8) -> Option<u32> {
    match byte {
        b'0'..=b'9' => Some(u32::from(byte - b'0')),
        b'a'..=b'f' => Some(u32::from(byte - b'a' + 10)),
        b'A'..=b'F' => Some(u32::from(byte - b'A' + 10)),
        _ => None,
    }
}

fn hex4(bytes: &[u8]) -> Option<u32> {
    bytes
        .iter()
        .take(4)
        .try_fold(0u32, |acc, &b| Some((acc << 4) | hex_digit(b)?))
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Whether any of the eight bytes in `word` is `"`, `\` or below 0x20.
#[inline]
fn has_special(word: u64) -> bool {
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    (zero(quote) | zero(backslash) | control) != 0
}

#[inline]
fn is_ws(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

/// The open containers of a value being scanned: `true` for an object.
struct Nesting {
    depth: usize,
    low: u128,
    high: Vec<bool>,
}

impl Nesting {
    fn new() -> Self {
        Self {
            depth: 0,
            low: 0,
            high: Vec::new(),
        }
    }

    fn push(&mut self, object: bool) {
        if self.depth < 128 {
            let bit = 1u128 << self.depth;
            if object {
                self.low |= bit;
            } else {
                self.low &= !bit;
            }
        } else {
            self.high.push(object);
        }
        self.depth += 1;
    }

    fn pop(&mut self) {
        self.depth -= 1;
        if self.depth >= 128 {
            self.high.pop();
        }
    }

    fn top_is_object(&self) -> bool {
        let top = self.depth - 1;
        if top < 128 {
            self.low & (1u128 << top) != 0
        } else {
            self.high[top - 128]
        }
    }
}

/// A cursor over JSON input.
pub struct Scanner<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Whether the last string scanned had an escape.
    escaped: bool,
    /// `sys.get_int_max_str_digits()`, asked only when a long integer is range-checked.
    int_digits: fn() -> usize,
}

impl<'a> Scanner<'a> {
    /// A scanner at the start of `buf`; `int_digits` gives Python's limit on the digits of an
    /// integer text (0 for none).
    pub fn new(buf: &'a [u8], int_digits: fn() -> usize) -> Self {
        Self {
            buf,
            pos: 0,
            escaped: false,
            int_digits,
        }
    }

    pub fn buf(&self) -> &'a [u8] {
        self.buf
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Moves back to `pos`, a position this scanner has been at.
    pub fn seek(&mut self, pos: usize) {
        self.pos = pos;
    }

    /// Skips whitespace and returns the next byte, which stays unread.
    #[inline]
    pub fn peek(&mut self) -> Scan<u8> {
        while let Some(&byte) = self.buf.get(self.pos) {
            if !is_ws(byte) {
                return Ok(byte);
            }
            self.pos += 1;
        }
        Err(Fail::Syntax)
    }

    /// Consumes `byte`, which [`Scanner::peek`] returned.
    #[inline]
    pub fn bump(&mut self) {
        self.pos += 1;
    }

    /// Fails unless only whitespace is left.
    pub fn end(&mut self) -> Scan<()> {
        match self.peek() {
            Err(_) => Ok(()),
            Ok(_) => Err(Fail::Syntax),
        }
    }

    /// Scans one value after optional whitespace and returns its kind; the value is
    /// `buf[start..pos]` where `start` is the position after [`Scanner::peek`].
    pub fn value(&mut self, checked: bool) -> Scan<Kind> {
        match self.peek()? {
            b'{' | b'[' => self.container(checked),
            byte => self.scalar(byte, checked),
        }
    }

    /// Scans a value and returns it as raw bytes, with its kind.
    pub fn raw_value(&mut self, checked: bool) -> Scan<(Kind, &'a [u8])> {
        self.peek()?;
        let start = self.pos;
        let kind = self.value(checked)?;
        Ok((kind, &self.buf[start..self.pos]))
    }

    /// Scans a value; for a string, returns its contents too.
    pub fn string_or_value(&mut self, checked: bool) -> Scan<Option<JStr<'a>>> {
        if self.peek()? == b'"' {
            return self.string().map(Some);
        }
        self.value(checked).map(|_| None)
    }

    #[inline]
    fn scalar(&mut self, byte: u8, checked: bool) -> Scan<Kind> {
        match byte {
            b'"' => self.string().map(|_| Kind::Str),
            b'n' => self.word(b"null", Kind::Null),
            b't' => self.word(b"true", Kind::True),
            b'f' => self.word(b"false", Kind::False),
            _ => self.number(checked),
        }
    }

    fn word(&mut self, word: &[u8], kind: Kind) -> Scan<Kind> {
        if self.buf[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(kind)
        } else {
            Err(Fail::Syntax)
        }
    }

    /// Scans an array or object (at its opening bracket) to its end, without recursion.
    fn container(&mut self, checked: bool) -> Scan<Kind> {
        let outer = if self.buf[self.pos] == b'{' {
            Kind::Object
        } else {
            Kind::Array
        };
        let mut open = Nesting::new();
        open.push(outer == Kind::Object);
        self.pos += 1;
        let mut first = true;
        loop {
            let object = open.top_is_object();
            let mut byte = self.peek()?;
            if byte == if object { b'}' } else { b']' } {
                self.pos += 1;
                open.pop();
                if open.depth == 0 {
                    return Ok(outer);
                }
                first = false;
                continue;
            }
            if byte == b',' && !first {
                self.pos += 1;
                byte = self.peek()?;
            } else if first {
                first = false;
            } else {
                return Err(Fail::Syntax);
            }
            if object {
                if byte != b'"' {
                    return Err(Fail::Syntax);
                }
                self.string()?;
                if self.peek()? != b':' {
                    return Err(Fail::Syntax);
                }
                self.pos += 1;
                byte = self.peek()?;
            } else if byte == b']' {
                return Err(Fail::Syntax);
            }
            match byte {
                b'{' | b'[' => {
                    open.push(byte == b'{');
                    self.pos += 1;
                    first = true;
                }
                _ => {
                    self.scalar(byte, checked)?;
                }
            }
        }
    }

    /// Scans a string at its opening quote and returns its contents.
    pub fn string(&mut self) -> Scan<JStr<'a>> {
        let buf = self.buf;
        let start = self.pos + 1;
        let mut pos = start;
        let mut escaped = false;
        loop {
            while pos + 8 <= buf.len() {
                let word = u64::from_le_bytes([
                    buf[pos],
                    buf[pos + 1],
                    buf[pos + 2],
                    buf[pos + 3],
                    buf[pos + 4],
                    buf[pos + 5],
                    buf[pos + 6],
                    buf[pos + 7],
                ]);
                if has_special(word) {
                    break;
                }
                pos += 8;
            }
            // At most eight bytes (or the tail) to look at one by one before the fast loop again.
            let stop = (pos + 8).min(buf.len());
            if pos == buf.len() {
                return Err(Fail::Syntax);
            }
            while pos < stop {
                match buf[pos] {
                    b'"' => {
                        self.pos = pos + 1;
                        self.escaped = escaped;
                        return Ok(JStr {
                            raw: &buf[start..pos],
                            escaped,
                        });
                    }
                    b'\\' => {
                        escaped = true;
                        pos = escape_end(buf, pos)?;
                        break;
                    }
                    byte if byte < 0x20 => return Err(Fail::Syntax),
                    _ => pos += 1,
                }
            }
        }
    }

    /// Scans a number; with `checked`, fails with [`Fail::Invalid`] where msgspec would refuse
    /// to convert it.
    fn number(&mut self, checked: bool) -> Scan<Kind> {
        let buf = self.buf;
        let start = self.pos;
        let mut pos = start;
        let digits_from = |mut pos: usize| {
            while pos < buf.len() && buf[pos].is_ascii_digit() {
                pos += 1;
            }
            pos
        };
        if buf[pos] == b'-' {
            pos += 1;
        }
        let int_start = pos;
        if buf.get(pos) == Some(&b'0') {
            pos += 1;
            if buf.get(pos).is_some_and(u8::is_ascii_digit) {
                return Err(Fail::Syntax);
            }
        } else {
            pos = digits_from(pos);
            if pos == int_start {
                return Err(Fail::Syntax);
            }
        }
        let int_end = pos;
        let mut frac = (pos, pos);
        let mut float = false;
        if buf.get(pos) == Some(&b'.') {
            let from = pos + 1;
            pos = digits_from(from);
            if pos == from {
                return Err(Fail::Syntax);
            }
            frac = (from, pos);
            float = true;
        }
        let mut exponent = 0i64;
        if matches!(buf.get(pos), Some(b'e' | b'E')) {
            pos += 1;
            let negative = match buf.get(pos) {
                Some(b'-') => {
                    pos += 1;
                    true
                }
                Some(b'+') => {
                    pos += 1;
                    false
                }
                _ => false,
            };
            let from = pos;
            pos = digits_from(from);
            if pos == from {
                return Err(Fail::Syntax);
            }
            // msgspec stops accumulating exponent digits once the value reaches 10000.
            for &digit in &buf[from..pos] {
                if exponent < 10000 {
                    exponent = exponent * 10 + i64::from(digit - b'0');
                }
            }
            if negative {
                exponent = -exponent;
            }
            float = true;
        }
        self.pos = pos;
        if checked {
            let ok = if float {
                !float_overflows(&buf[int_start..int_end], &buf[frac.0..frac.1], exponent)
            } else {
                self.int_fits(pos - start, int_end - int_start)
            };
            if !ok {
                return Err(Fail::Invalid);
            }
        }
        Ok(if float { Kind::Float } else { Kind::Int })
    }

    /// Whether msgspec converts an integer of `len` characters (`digits` of them digits).
    fn int_fits(&self, len: usize, digits: usize) -> bool {
        // Up to 20 digits, msgspec converts without `int()`, which is only limited beyond 640.
        if digits <= 20 {
            return true;
        }
        if len > MAX_INT_TEXT {
            return false;
        }
        let limit = (self.int_digits)();
        limit == 0 || digits <= limit
    }

    /// Scans the members of an object at its opening brace: `member` is called with each key and
    /// must scan the member's value.
    pub fn object<F>(&mut self, mut member: F) -> Scan<()>
    where
        F: FnMut(&mut Self, JStr<'a>) -> Scan<()>,
    {
        self.pos += 1;
        let mut first = true;
        loop {
            let mut byte = self.peek()?;
            if byte == b'}' {
                self.pos += 1;
                return Ok(());
            }
            if byte == b',' && !first {
                self.pos += 1;
                byte = self.peek()?;
            } else if first {
                first = false;
            } else {
                return Err(Fail::Syntax);
            }
            if byte != b'"' {
                return Err(Fail::Syntax);
            }
            let key = self.string()?;
            if self.peek()? != b':' {
                return Err(Fail::Syntax);
            }
            self.pos += 1;
            member(self, key)?;
        }
    }

    /// Scans the elements of an array at its opening bracket: `element` is called before each
    /// element (whitespace skipped) and must scan it.
    pub fn array<F>(&mut self, mut element: F) -> Scan<()>
    where
        F: FnMut(&mut Self) -> Scan<()>,
    {
        self.pos += 1;
        let mut first = true;
        loop {
            let mut byte = self.peek()?;
            if byte == b']' {
                self.pos += 1;
                return Ok(());
            }
            if byte == b',' && !first {
                self.pos += 1;
                byte = self.peek()?;
            } else if first {
                first = false;
            } else {
                return Err(Fail::Syntax);
            }
            if byte == b']' {
                return Err(Fail::Syntax);
            }
            element(self)?;
        }
    }
}

/// The end of the escape at `buf[pos]` (a backslash), checked as msgspec does.
fn escape_end(buf: &[u8], pos: usize) -> Scan<usize> {
    match buf.get(pos + 1) {
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(pos + 2),
        Some(b'u') => {
            let code = buf
                .get(pos + 2..pos + 6)
                .and_then(hex4)
                .ok_or(Fail::Syntax)?;
            match code {
                0xDC00..=0xDFFF => Err(Fail::Syntax),
                0xD800..=0xDBFF => {
                    let tail = buf.get(pos + 6..pos + 12).ok_or(Fail::Syntax)?;
                    if &tail[..2] != b"\\u" {
                        return Err(Fail::Syntax);
                    }
                    match hex4(&tail[2..]) {
                        Some(0xDC00..=0xDFFF) => Ok(pos + 12),
                        _ => Err(Fail::Syntax),
                    }
                }
                _ => Ok(pos + 6),
            }
        }
        _ => Err(Fail::Syntax),
    }
}

/// Whether a JSON float (its integer and fraction digits, and its exponent as msgspec clamps
/// it) rounds to infinity.
///
/// msgspec computes the value correctly rounded from these digits (Eisel-Lemire, or a
/// high-precision decimal for the hard cases, which is the only path that can overflow), so the
/// value overflows exactly when `0.DIGITS * 10**dp` does, `dp` being the decimal point position.
fn float_overflows(int: &[u8], frac: &[u8], exponent: i64) -> bool {
    let (digits, mut dp): (Vec<u8>, i64) = if int == b"0" {
        let zeros = frac.iter().take_while(|&&d| d == b'0').count();
        (frac[zeros..].to_vec(), -(zeros as i64))
    } else {
        let mut all = int.to_vec();
        all.extend_from_slice(frac);
        (all, int.len() as i64)
    };
    if digits.iter().all(|&d| d == b'0') {
        return false;
    }
    dp += exponent;
    match dp {
        ..=308 => false,
        309 => {
            let mut text = String::with_capacity(digits.len() + 8);
            text.push_str("0.");
            text.push_str(std::str::from_utf8(&digits).unwrap_or("0"));
            text.push_str("e309");
            text.parse::<f64>().map_or(true, f64::is_infinite)
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit() -> usize {
        4300
    }

    fn scan(input: &str, checked: bool) -> Scan<Kind> {
        let mut scanner = Scanner::new(input.as_bytes(), limit);
        let kind = scanner.value(checked)?;
        scanner.end()?;
        Ok(kind)
    }

    #[test]
    fn accepts_json() {
        for (input, kind) in [
            ("null", Kind::Null),
            (" true ", Kind::True),
            ("false", Kind::False),
            ("0", Kind::Int),
            ("-0", Kind::Int),
            ("-12", Kind::Int),
            ("1.5", Kind::Float),
            ("1E+5", Kind::Float),
            ("1e-5", Kind::Float),
            ("0.0e0", Kind::Float),
            ("\"\"", Kind::Str),
            ("\"a\\u00e9\\ud83d\\ude00\\/\\n\"", Kind::Str),
            ("\"\u{7f}\u{e9}\"", Kind::Str),
            ("[]", Kind::Array),
            ("[1, [2, {\"a\": [ ]}], \"x\"]", Kind::Array),
            ("{}", Kind::Object),
            ("{\"a\":{\"b\":{}} , \"c\" : [null]}", Kind::Object),
            ("\t\r\n[\t1\r\n]\n", Kind::Array),
        ] {
            assert_eq!(scan(input, true), Ok(kind), "{input}");
        }
    }

    #[test]
    fn refuses_malformed_json() {
        for input in [
            "",
            " ",
            "nul",
            "nulll",
            "tru",
            "True",
            "-",
            "01",
            "-01",
            "1.",
            ".5",
            "1.e5",
            "1e",
            "1e+",
            "+1",
            "NaN",
            "Infinity",
            "\"abc",
            "\"\\x\"",
            "\"\\u12\"",
            "\"\\uZZZZ\"",
            "\"\\ud800\"",
            "\"\\ud800\\u0041\"",
            "\"\\udc00\"",
            "\"\\ud800",
            "\"a\u{1}\"",
            "\"a\tb\"",
            "[",
            "[1,]",
            "[,1]",
            "[1 2]",
            "{",
            "{\"a\"}",
            "{\"a\" 1}",
            "{\"a\":1,}",
            "{1:2}",
            "{,}",
            "{\"a\":1 \"b\":2}",
            "[1]]",
            "{} x",
            "1 2",
            "\u{c}1",
            "\u{b}1",
            "\u{feff}{}",
        ] {
            assert_eq!(scan(input, false), Err(Fail::Syntax), "{input:?}");
        }
    }

    #[test]
    fn long_strings_use_the_word_loop() {
        let long = format!("\"{}\\n{}\"", "a".repeat(100), "é".repeat(50));
        assert_eq!(scan(&long, false), Ok(Kind::Str));
        let bad = format!("\"{}\u{1f}{}\"", "a".repeat(21), "b".repeat(30));
        assert_eq!(scan(&bad, false), Err(Fail::Syntax));
        for cut in 0..long.len() - 1 {
            if long.is_char_boundary(cut) {
                assert_eq!(scan(&long[..cut], false), Err(Fail::Syntax));
            }
        }
    }

    #[test]
    fn range_checks_only_when_asked() {
        for input in [
            "1e400",
            "-1e400",
            "1.7976931348623159e308",
            "[1, {\"a\": 1e999}]",
            "0.0000000000000000000000000000000000000001e349",
        ] {
            assert_eq!(scan(input, false).map(|_| ()), Ok(()), "{input}");
            assert_eq!(scan(input, true), Err(Fail::Invalid), "{input}");
        }
        for input in [
            "1.7976931348623157e308",
            "1.7976931348623158e308",
            "1e-400",
            "0e999999",
            "0.000e400",
            "123456789012345678901234567890",
        ] {
            assert!(scan(input, true).is_ok(), "{input}");
        }
    }

    #[test]
    fn exponent_saturates_like_msgspec() {
        // msgspec reads at most five exponent digits' worth: 1e100000000 is read as 1e10000.
        assert_eq!(scan("1e100000000", true), Err(Fail::Invalid));
        let many = format!("{}e-100000000", "1".repeat(20_000));
        assert_eq!(scan(&many, true), Err(Fail::Invalid));
        assert!(scan("1e-100000000", true).is_ok());
    }

    #[test]
    fn long_integers() {
        let fits = "9".repeat(MAX_INT_TEXT);
        assert_eq!(scan(&fits, true), Ok(Kind::Int));
        assert_eq!(scan(&format!("-{fits}"), true), Err(Fail::Invalid));
        assert_eq!(scan(&format!("-{fits}"), false), Ok(Kind::Int));
        assert_eq!(scan(&format!("-{}", &fits[1..]), true), Ok(Kind::Int));
    }

    #[test]
    fn deep_nesting_does_not_recurse() {
        let deep = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
        assert_eq!(scan(&deep, false), Ok(Kind::Array));
        let objects = format!("{}1{}", "{\"a\":".repeat(1000), "}".repeat(1000));
        assert_eq!(scan(&objects, false), Ok(Kind::Object));
        assert_eq!(scan(&deep[..deep.len() - 1], false), Err(Fail::Syntax));
    }

    #[test]
    fn strings_unescape() {
        let mut scanner = Scanner::new(br#""a\u00e9\ud83d\ude00\/\"\\\n\t\b\f\r""#, limit);
        let text = scanner.string().unwrap();
        assert!(text.escaped);
        assert_eq!(text.unescape(), "a\u{e9}\u{1f600}/\"\\\n\t\u{8}\u{c}\r");
        assert!(text.eq_bytes("a\u{e9}\u{1f600}/\"\\\n\t\u{8}\u{c}\r".as_bytes()));
        assert!(!text.eq_bytes(b"a"));
        let plain = Scanner::new("\"caf\u{e9}\"".as_bytes(), limit)
            .string()
            .unwrap();
        assert!(!plain.escaped);
        assert_eq!(plain.unescape(), "caf\u{e9}");
        let key = Scanner::new(br#""n\u0061me""#, limit).string().unwrap();
        assert!(key.eq_bytes(b"name"));
        assert!(!key.eq_bytes(b"names"));
        assert!(!key.eq_bytes(b"nam"));
    }
}
