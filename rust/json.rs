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
    #[inline]
    pub fn eq_bytes(&self, text: &[u8]) -> bool {
        if self.escaped {
            self.eq_unescaped(text)
        } else {
            self.raw == text
        }
    }

    fn eq_unescaped(&self, text: &[u8]) -> bool {
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

/// The position of the first byte at or after `pos` that ends a plain run inside a string: `"`,
/// `\\`, a byte below 0x20 or a byte at or above 0x80; `buf.len()` when there is none.
#[inline]
fn string_stop(buf: &[u8], mut pos: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8,
            _mm_or_si128, _mm_set1_epi8,
        };
        // SAFETY: SSE2 is part of the x86_64 baseline, and every load reads 16 bytes that
        // `pos + 16 <= buf.len()` keeps inside `buf`.
        unsafe {
            let quote = _mm_set1_epi8(b'"' as i8);
            let backslash = _mm_set1_epi8(b'\\' as i8);
            let control = _mm_set1_epi8(0x1f);
            while pos + 16 <= buf.len() {
                #[allow(clippy::cast_ptr_alignment)] // `loadu` is the unaligned load
                let chunk = _mm_loadu_si128(buf.as_ptr().add(pos).cast::<__m128i>());
                let stops = _mm_or_si128(
                    _mm_or_si128(
                        _mm_cmpeq_epi8(chunk, quote),
                        _mm_cmpeq_epi8(chunk, backslash),
                    ),
                    // x <= 0x1f exactly when max(x, 0x1f) == 0x1f; `chunk` adds the high bits.
                    _mm_or_si128(_mm_cmpeq_epi8(_mm_max_epu8(chunk, control), control), chunk),
                );
                let mask = _mm_movemask_epi8(stops) as u32;
                if mask != 0 {
                    return pos + mask.trailing_zeros() as usize;
                }
                pos += 16;
            }
        }
    }
    while pos + 8 <= buf.len() {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&buf[pos..pos + 8]);
        let word = u64::from_le_bytes(bytes);
        let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
        let stops = zero(word ^ (ONES * u64::from(b'"')))
            | zero(word ^ (ONES * u64::from(b'\\')))
            | (word.wrapping_sub(ONES * 0x20) & !word & HIGHS)
            | (word & HIGHS);
        if stops != 0 {
            // The lowest flagged byte is exact (borrows only run upwards).
            return pos + (stops.trailing_zeros() / 8) as usize;
        }
        pos += 8;
    }
    while pos < buf.len() {
        let byte = buf[pos];
        if byte == b'"' || byte == b'\\' || !(0x20..0x80).contains(&byte) {
            return pos;
        }
        pos += 1;
    }
    pos
}

/// Bit masks of one 64-byte block (bit `i` for byte `i`): `"`, `\`, bytes below 0x20, and bytes
/// at or above 0x80.
struct Block {
    quote: u64,
    backslash: u64,
    control: u64,
    high: u64,
}

impl Block {
    /// The masks of `buf[pos..pos + 64]`, which must be in bounds.
    #[inline]
    fn at(buf: &[u8], pos: usize) -> Self {
        let bytes = &buf[pos..pos + 64];
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{
                __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8,
                _mm_set1_epi8,
            };
            let mut block = Block {
                quote: 0,
                backslash: 0,
                control: 0,
                high: 0,
            };
            // SAFETY: SSE2 is part of the x86_64 baseline; the four loads read `bytes`.
            unsafe {
                let quote = _mm_set1_epi8(b'"' as i8);
                let backslash = _mm_set1_epi8(b'\\' as i8);
                let control = _mm_set1_epi8(0x1f);
                for part in 0..4 {
                    #[allow(clippy::cast_ptr_alignment)] // `loadu` is the unaligned load
                    let chunk = _mm_loadu_si128(bytes.as_ptr().add(16 * part).cast::<__m128i>());
                    let mask = |vector| u64::from(_mm_movemask_epi8(vector) as u16) << (16 * part);
                    block.quote |= mask(_mm_cmpeq_epi8(chunk, quote));
                    block.backslash |= mask(_mm_cmpeq_epi8(chunk, backslash));
                    block.control |= mask(_mm_cmpeq_epi8(_mm_max_epu8(chunk, control), control));
                    block.high |= mask(chunk);
                }
            }
            block
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let mask = |test: fn(u8) -> bool| {
                bytes
                    .iter()
                    .enumerate()
                    .fold(0u64, |mask, (i, &byte)| mask | (u64::from(test(byte)) << i))
            };
            Block {
                quote: mask(|byte| byte == b'"'),
                backslash: mask(|byte| byte == b'\\'),
                control: mask(|byte| byte < 0x20),
                high: mask(|byte| byte >= 0x80),
            }
        }
    }
}

/// The bytes escaped by a backslash in a block (the byte after each backslash that is not
/// itself escaped), without a branch: odd-length runs of backslashes escape the next byte.
/// `carry` says whether the first byte is escaped (a run ended the previous block), and is
/// updated for the next block. This is simdjson's escape scanner.
#[inline]
fn escaped_bytes(backslash: u64, carry: &mut u64) -> u64 {
    const ODD: u64 = 0xAAAA_AAAA_AAAA_AAAA;
    let potential = backslash & !*carry;
    let maybe_escaped = potential << 1;
    let codes = ((maybe_escaped | ODD).wrapping_sub(potential)) ^ ODD;
    let escaped = codes ^ (backslash | *carry);
    *carry = (codes & backslash) >> 63;
    escaped
}

/// Where a long string that needs escapes or UTF-8 checks got to, scanned block by block.
enum Blocks {
    /// The closing quote is at this position.
    End(usize),
    /// Go on byte by byte from this position (near the end of the input, or at a `\u` escape).
    Resume(usize),
}

/// Scans the rest of a string from `pos` (not inside an escape or a character) 64 bytes at a
/// time; `has_escape` learns whether a backslash was met.
fn string_blocks(buf: &[u8], mut pos: usize, has_escape: &mut bool) -> Scan<Blocks> {
    let mut carry = 0u64;
    let mut high_carry = 0u64;
    let mut checked_until = pos;
    while pos + 64 <= buf.len() {
        let block = Block::at(buf, pos);
        let first_escaped = carry;
        let escapes = escaped_bytes(block.backslash, &mut carry);
        let quotes = block.quote & !escapes;
        // The bytes before the closing quote (all of them when it is not in this block).
        let inside = if quotes == 0 {
            u64::MAX
        } else {
            (quotes & quotes.wrapping_neg()) - 1
        };
        if block.control & inside != 0 {
            return Err(Fail::Syntax);
        }
        *has_escape |= block.backslash & inside != 0;
        let mut codes = escapes & inside;
        while codes != 0 {
            let at = pos + codes.trailing_zeros() as usize;
            match buf[at] {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                // A `\u` escape is checked byte by byte, from its backslash.
                b'u' if at > pos || first_escaped == 0 => return Ok(Blocks::Resume(at - 1)),
                b'u' => return Ok(Blocks::Resume(pos - 1)),
                _ => return Err(Fail::Syntax),
            }
            codes &= codes - 1;
        }
        let mut starts = block.high & !((block.high << 1) | high_carry) & inside;
        high_carry = block.high >> 63;
        while starts != 0 {
            let at = pos + starts.trailing_zeros() as usize;
            checked_until = utf8_run_end(buf, at)?;
            starts &= starts - 1;
        }
        if quotes != 0 {
            return Ok(Blocks::End(pos + quotes.trailing_zeros() as usize));
        }
        pos += 64;
    }
    // Byte by byte from here: from the backslash when a run of them ended the last block, past
    // the end of a character the last block began.
    Ok(Blocks::Resume(if carry == 1 {
        pos - 1
    } else {
        pos.max(checked_until)
    }))
}

/// The end of the run of bytes at or above 0x80 that starts at `pos`, once checked to be UTF-8
/// exactly as Python and `std::str::from_utf8` check it (no overlong forms, no surrogates,
/// nothing above U+10FFFF). A multi-byte character is made of such bytes only, so checking each
/// run checks the text.
fn utf8_run_end(buf: &[u8], mut pos: usize) -> Scan<usize> {
    // 0x80..=0xBF are exactly the bytes below -64 as i8.
    let continuation = |at: usize| buf.get(at).is_some_and(|&byte| (byte as i8) < -64);
    loop {
        let lead = buf[pos];
        let second = buf.get(pos + 1).copied().unwrap_or(0);
        pos += if lead < 0xE0 {
            if lead < 0xC2 || (second as i8) >= -64 {
                return Err(Fail::Syntax);
            }
            2
        } else if lead < 0xF0 {
            let (low, high) = match lead {
                0xE0 => (0xA0, 0xBF),
                0xED => (0x80, 0x9F),
                _ => (0x80, 0xBF),
            };
            if !(low..=high).contains(&second) || !continuation(pos + 2) {
                return Err(Fail::Syntax);
            }
            3
        } else {
            let (low, high) = match lead {
                0xF0 => (0x90, 0xBF),
                0xF1..=0xF3 => (0x80, 0xBF),
                0xF4 => (0x80, 0x8F),
                _ => return Err(Fail::Syntax),
            };
            if !(low..=high).contains(&second) || !continuation(pos + 2) || !continuation(pos + 3) {
                return Err(Fail::Syntax);
            }
            4
        };
        if buf.get(pos).is_none_or(|&byte| byte < 0x80) {
            return Ok(pos);
        }
    }
}

#[inline]
fn is_ws(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

/// The open containers of a value being scanned: `true` for an object.
struct Nesting {
    depth: usize,
    low: u64,
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
        if self.depth < 64 {
            self.low = (self.low & !(1 << self.depth)) | (u64::from(object) << self.depth);
        } else {
            self.high.push(object);
        }
        self.depth += 1;
    }

    /// Closes the innermost container; returns whether the one around it is an object.
    fn pop(&mut self) -> Option<bool> {
        self.depth -= 1;
        if self.depth >= 64 {
            self.high.pop();
        }
        let top = self.depth.checked_sub(1)?;
        Some(if top < 64 {
            self.low & (1 << top) != 0
        } else {
            self.high[top - 64]
        })
    }
}

/// A cursor over JSON input.
///
/// Its small per-token methods are `#[inline(always)]`: measured with callgrind, that is a
/// quarter fewer instructions on structure-heavy bodies (a `tools/call`, a batch).
pub struct Scanner<'a> {
    buf: &'a [u8],
    pos: usize,
    /// How many containers are open, and the most that have been.
    depth: usize,
    deepest: usize,
    /// `sys.get_int_max_str_digits()`, asked only when a long integer is range-checked.
    int_digits: fn() -> usize,
}

#[allow(clippy::inline_always)]
impl<'a> Scanner<'a> {
    /// A scanner at the start of `buf`; `int_digits` gives Python's limit on the digits of an
    /// integer text (0 for none).
    pub fn new(buf: &'a [u8], int_digits: fn() -> usize) -> Self {
        Self {
            buf,
            pos: 0,
            depth: 0,
            deepest: 0,
            int_digits,
        }
    }

    /// The deepest nesting of containers met so far.
    pub fn deepest(&self) -> usize {
        self.deepest
    }

    /// The number of open containers (to restore after a failed attempt, with [`Scanner::seek`]).
    pub fn depth(&self) -> usize {
        self.depth
    }

    pub fn set_depth(&mut self, depth: usize) {
        self.depth = depth;
    }

    #[inline]
    fn open(&mut self) {
        self.depth += 1;
        self.deepest = self.deepest.max(self.depth);
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
    #[inline(always)]
    pub fn peek(&mut self) -> Scan<u8> {
        match self.buf.get(self.pos..self.pos + 2) {
            Some(&[byte, _]) if byte > b' ' => return Ok(byte),
            // One space, as after the `:` and `,` of `json.dumps`.
            Some(&[b' ', next]) if next > b' ' => {
                self.pos += 1;
                return Ok(next);
            }
            _ => {}
        }
        self.peek_after_space()
    }

    fn peek_after_space(&mut self) -> Scan<u8> {
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
    #[inline(always)]
    pub fn value(&mut self, checked: bool) -> Scan<Kind> {
        match self.peek()? {
            b'{' | b'[' => self.container(checked),
            byte => self.scalar(byte, checked),
        }
    }

    /// Scans a value and returns it as raw bytes, with its kind.
    #[inline(always)]
    pub fn raw_value(&mut self, checked: bool) -> Scan<(Kind, &'a [u8])> {
        self.peek()?;
        let start = self.pos;
        let kind = self.value(checked)?;
        Ok((kind, &self.buf[start..self.pos]))
    }

    /// Scans a value; for a string, returns its contents too.
    #[inline(always)]
    pub fn string_or_value(&mut self, checked: bool) -> Scan<Option<JStr<'a>>> {
        if self.peek()? == b'"' {
            return self.string().map(Some);
        }
        self.value(checked).map(|_| None)
    }

    #[inline(always)]
    fn scalar(&mut self, byte: u8, checked: bool) -> Scan<Kind> {
        match byte {
            b'"' => self.string().map(|_| Kind::Str),
            b'n' => self.word(b"null", Kind::Null),
            b't' => self.word(b"true", Kind::True),
            b'f' => self.word(b"false", Kind::False),
            _ => self.number(checked),
        }
    }

    #[inline(always)]
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
        let mut object = outer == Kind::Object;
        open.push(object);
        self.open();
        self.pos += 1;
        let mut first = true;
        loop {
            let mut byte = self.peek()?;
            if byte == if object { b'}' } else { b']' } {
                self.pos += 1;
                self.depth -= 1;
                match open.pop() {
                    None => return Ok(outer),
                    Some(around) => object = around,
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
                    object = byte == b'{';
                    open.push(object);
                    self.open();
                    self.pos += 1;
                    first = true;
                }
                _ => {
                    self.scalar(byte, checked)?;
                }
            }
        }
    }

    /// Scans a string at its opening quote and returns its contents, checking that they are
    /// UTF-8 (so that the input need not be checked as a whole when it parses).
    #[inline(always)]
    pub fn string(&mut self) -> Scan<JStr<'a>> {
        let buf = self.buf;
        let start = self.pos + 1;
        let mut pos = start;
        let mut escaped = false;
        loop {
            pos = string_stop(buf, pos);
            match buf.get(pos) {
                Some(b'"') => {
                    self.pos = pos + 1;
                    return Ok(JStr {
                        raw: &buf[start..pos],
                        escaped,
                    });
                }
                Some(b'\\') => {
                    escaped = true;
                    pos = match buf.get(pos + 1) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => pos + 2,
                        _ => escape_end(buf, pos)?,
                    };
                }
                Some(&byte) if byte >= 0x80 => pos = utf8_run_end(buf, pos)?,
                _ => return Err(Fail::Syntax),
            }
            // A long string with escapes or characters to check goes faster by blocks.
            if buf.len() - pos >= 128 {
                match string_blocks(buf, pos, &mut escaped)? {
                    Blocks::End(end) => {
                        self.pos = end + 1;
                        return Ok(JStr {
                            raw: &buf[start..end],
                            escaped,
                        });
                    }
                    Blocks::Resume(at) => pos = at,
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
        self.open();
        self.pos += 1;
        let mut first = true;
        loop {
            let mut byte = self.peek()?;
            if byte == b'}' {
                self.pos += 1;
                self.depth -= 1;
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
        self.open();
        self.pos += 1;
        let mut first = true;
        loop {
            let mut byte = self.peek()?;
            if byte == b']' {
                self.pos += 1;
                self.depth -= 1;
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
    fn strings_must_be_utf8() {
        for (bytes, ok) in [
            (&b"\"\xc3\xa9\""[..], true),
            (b"\"a\xe2\x80\x94b\xc2\xa7\"", true),
            (b"\"\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\"", true),
            (b"\"\xc3\"", false),
            (b"\"\xc3\xa9\xa9\"", false),
            (b"\"\xc0\xaf\"", false),
            (b"\"\xe0\x80\xaf\"", false),
            (b"\"\xed\xa0\x80\"", false),
            (b"\"\xf4\x90\x80\x80\"", false),
            (b"\"\xf5\x80\x80\x80\"", false),
            (b"\"\xff\"", false),
            (b"\"\xe2\x80", false),
        ] {
            let mut scanner = Scanner::new(bytes, limit);
            assert_eq!(scanner.value(false).is_ok(), ok, "{bytes:?}");
            // The same verdict as the standard library's (Python's is the same).
            assert_eq!(std::str::from_utf8(&bytes[1..bytes.len() - 1]).is_ok(), ok);
        }
        let text = format!("\"{}\"", "é—x".repeat(40));
        assert_eq!(scan(&text, false), Ok(Kind::Str));
    }

    #[test]
    fn utf8_check_matches_the_standard_library() {
        let check = |inner: &[u8]| {
            let mut quoted = Vec::with_capacity(inner.len() + 2);
            quoted.push(b'"');
            quoted.extend_from_slice(inner);
            quoted.push(b'"');
            let ours = Scanner::new(&quoted, limit).string().is_ok();
            assert_eq!(ours, std::str::from_utf8(inner).is_ok(), "{inner:x?}");
        };
        // Every sequence of up to three bytes at or above 0x80, alone and between ASCII.
        for a in 0x80..=0xFFu8 {
            check(&[a]);
            check(&[b'x', a, b'y']);
            for b in 0x80..=0xFFu8 {
                check(&[a, b]);
                check(&[a, b, b'z']);
                for c in 0x80..=0xFFu8 {
                    check(&[a, b, c]);
                }
            }
        }
        // Four-byte sequences around every boundary.
        let edges = [0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0];
        for a in 0xF0..=0xF8u8 {
            for b in edges {
                for c in edges {
                    for d in edges {
                        check(&[a, b, c, d]);
                        check(&[a, b, c, d, 0xC3, 0xA9]);
                    }
                }
            }
        }
    }

    /// The escaped bytes of `bytes`, one by one.
    fn escaped_naively(bytes: &[u8]) -> Vec<bool> {
        let mut next = false;
        bytes
            .iter()
            .map(|&byte| {
                let this = next;
                next = !this && byte == b'\\';
                this
            })
            .collect()
    }

    #[test]
    fn escape_scanner_matches_the_naive_one() {
        // Pseudo-random blocks of backslashes and letters, several blocks in a row.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for round in 0..20_000 {
            let blocks = 1 + round % 3;
            let bytes: Vec<u8> = (0..64 * blocks)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    if state.is_multiple_of(2 + round as u64 % 4) {
                        b'a'
                    } else {
                        b'\\'
                    }
                })
                .collect();
            let expected = escaped_naively(&bytes);
            let mut carry = 0;
            for (index, block) in bytes.chunks(64).enumerate() {
                let backslash = block
                    .iter()
                    .enumerate()
                    .fold(0u64, |mask, (i, &b)| mask | (u64::from(b == b'\\') << i));
                let escaped = escaped_bytes(backslash, &mut carry);
                for i in 0..64 {
                    assert_eq!(
                        escaped >> i & 1 == 1,
                        expected[index * 64 + i],
                        "{round} {index} {i}"
                    );
                }
            }
        }
    }

    #[test]
    fn long_strings_by_blocks() {
        let check = |inner: &[u8]| {
            let mut text = vec![b'"'];
            text.extend_from_slice(inner);
            text.push(b'"');
            let mut scanner = Scanner::new(&text, limit);
            let result = scanner
                .string()
                .map(|s| (s.raw.len(), s.escaped, scanner.pos()));
            match (result, reference_string(&text[1..])) {
                (Ok((len, escaped, pos)), Some((end, has_escape))) => {
                    assert_eq!(
                        (len, escaped, pos),
                        (end, has_escape, end + 2),
                        "{inner:x?}"
                    );
                }
                (Err(_), None) => {}
                (ours, reference) => panic!("{ours:?} {reference:?} {inner:x?}"),
            }
        };
        let good = [
            "plain text ",
            "\\\"",
            "\\\\",
            "\\n",
            "\\u00e9",
            "\\ud83d\\ude00",
            "é",
            "—",
            "世界",
            "\\\\\\\"",
            "😀",
            "\\/",
        ];
        let bad = ["\\x", "\\u12G4", "\\ud800x", "\u{1}", "\\", "\"", "\\é"];
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..5000 {
            let mut inner = Vec::new();
            while inner.len() < 300 {
                let roll = next();
                let piece = if roll % 24 == 0 {
                    bad[(roll >> 8) as usize % bad.len()]
                } else {
                    good[(roll >> 8) as usize % good.len()]
                };
                inner.extend_from_slice(piece.as_bytes());
            }
            check(&inner);
            let cut = (next() as usize) % inner.len();
            check(&inner[..cut]);
        }
    }

    /// Where the closing quote of a string body is (an index into `inner`, which starts after the
    /// opening quote) and whether it has escapes; `None` when the string is invalid. Byte by
    /// byte, with the standard library checking UTF-8.
    fn reference_string(inner: &[u8]) -> Option<(usize, bool)> {
        let mut i = 0;
        let mut escaped = false;
        while i < inner.len() {
            match inner[i] {
                b'"' => {
                    std::str::from_utf8(&inner[..i]).ok()?;
                    return Some((i, escaped));
                }
                b'\\' => {
                    escaped = true;
                    i = escape_end(inner, i).ok()?;
                }
                byte if byte < 0x20 => return None,
                _ => i += 1,
            }
        }
        None
    }

    #[test]
    fn tracks_depth() {
        let mut scanner = Scanner::new(b"[1, {\"a\": [[]]}, []]", limit);
        scanner.value(false).unwrap();
        assert_eq!((scanner.depth(), scanner.deepest()), (0, 4));
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
