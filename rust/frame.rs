//! `frame`: classify a POST body as one JSON-RPC message or a batch, and describe each message.
//!
//! The order of checks is the twin's: the nesting pre-scan, UTF-8, JSON syntax, the top-level
//! type, the empty batch. Each message is read as msgspec reads the twin's `_Envelope` struct:
//! `jsonrpc`, `id` and `method` are converted (so a number msgspec cannot represent refuses the
//! message), `params`, `result` and `error` stay raw, other members are skipped, and the last of
//! duplicate members wins. The routing peek into `params` (its `name`, `uri`, `taskId` and
//! `_meta` members) happens in the same pass.

use crate::json::{Fail, JStr, Kind, Scan, Scanner};

pub const KIND_REQUEST: u8 = 0;
pub const KIND_NOTIFICATION: u8 = 1;
pub const KIND_RESULT: u8 = 2;
pub const KIND_ERROR: u8 = 3;
pub const KIND_INVALID: u8 = 4;

pub const VERSION_KEY: &[u8] = b"io.modelcontextprotocol/protocolVersion";

/// Why a body was refused as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// Nested deeper than `max_depth` (-32600).
    TooDeep,
    /// Not UTF-8 JSON (-32700).
    Parse,
    /// Neither an object nor an array, or an object msgspec refuses (-32600).
    NotMessage,
    /// `[]` (-32600).
    EmptyBatch,
}

/// How `frame` checks nesting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nesting {
    /// At most this deep.
    Limit(i64),
    /// The caller has run the pre-scan already.
    Checked,
}

/// A readable id: a JSON integer (its text) or string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Id<'a> {
    Int(&'a [u8]),
    Str(JStr<'a>),
}

/// One message of a body; slices borrow from the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message<'a> {
    /// A request (with an id) or a notification (without).
    Call {
        id: Option<Id<'a>>,
        method: JStr<'a>,
        name: Option<JStr<'a>>,
        version: Option<JStr<'a>>,
        params: Option<&'a [u8]>,
        /// Where the last `arguments` member of `params` is, as an offset range into `params`:
        /// `check_headers` reads the arguments there instead of parsing `params` again.
        arguments: Option<(usize, usize)>,
    },
    Result {
        id: Id<'a>,
        payload: &'a [u8],
    },
    Error {
        id: Option<Id<'a>>,
        payload: &'a [u8],
    },
    Invalid {
        id: Option<Id<'a>>,
        reason: &'static str,
    },
}

impl Message<'_> {
    pub fn kind(&self) -> u8 {
        match self {
            Message::Call { id: Some(_), .. } => KIND_REQUEST,
            Message::Call { id: None, .. } => KIND_NOTIFICATION,
            Message::Result { .. } => KIND_RESULT,
            Message::Error { .. } => KIND_ERROR,
            Message::Invalid { .. } => KIND_INVALID,
        }
    }
}

/// A framed body: whether it is a batch, and its messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Framed<'a> {
    pub batch: bool,
    pub messages: Vec<Message<'a>>,
}

// ------------------------------------------------------------------------------ nesting pre-scan

/// The number of `[` and `{` bytes: when it is within the limit, no scan is needed.
pub fn openers(body: &[u8]) -> usize {
    body.iter()
        .map(|&b| usize::from(b == b'[') + usize::from(b == b'{'))
        .sum()
}

/// Walks the brackets outside strings as the twin's regex tokenizes them (a `"` opens a string
/// that runs to the next unescaped `"` or to the end; a backslash escapes the next byte) and
/// calls `exceeds` with the depth after each opening bracket, stopping at the first `true`.
pub fn depth_exceeds<E>(
    body: &[u8],
    mut exceeds: impl FnMut(i64) -> Result<bool, E>,
) -> Result<bool, E> {
    let mut depth = 0i64;
    let mut pos = 0;
    while pos < body.len() {
        match body[pos] {
            b'"' => {
                pos += 1;
                while pos < body.len() {
                    match body[pos] {
                        b'"' => break,
                        b'\\' => pos += 2,
                        _ => pos += 1,
                    }
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if exceeds(depth)? {
                    return Ok(true);
                }
            }
            b']' | b'}' => depth -= 1,
            _ => {}
        }
        pos += 1;
    }
    Ok(false)
}

/// Whether `body` nests deeper than `max_depth`.
pub fn too_deep(body: &[u8], max_depth: i64) -> bool {
    if i64::try_from(openers(body)).unwrap_or(i64::MAX) <= max_depth {
        return false;
    }
    depth_exceeds(body, |depth| Ok::<_, ()>(depth > max_depth)).unwrap_or(false)
}

// ------------------------------------------------------------------------------------- framing

/// The shape of a body that parsed.
enum Shape {
    Single,
    Batch { messages: usize },
}

/// Frames a body into a list of messages (see [`frame_each`]).
pub fn frame(
    body: &[u8],
    nesting: Nesting,
    int_digits: fn() -> usize,
) -> Result<Framed<'_>, FrameError> {
    let mut messages = Vec::new();
    let batch = frame_each(body, nesting, int_digits, |message| messages.push(message))?;
    Ok(Framed { batch, messages })
}

/// Frames a body, handing each message to `sink` as it is read; returns whether the body is a
/// batch. On an error, the messages already handed over are to be dropped. `int_digits` gives
/// Python's limit on the digits of an integer text (see [`Scanner::new`]).
///
/// The twin checks nesting, then UTF-8, then the JSON. Here one pass does all three when the
/// body parses: the scanner checks the UTF-8 of every string (bytes outside strings must be
/// ASCII anyway) and tracks the nesting depth, which for a body that parses is exactly what the
/// pre-scan measures. Only a body that fails is checked again the twin's way, in its order.
pub fn frame_each<'a>(
    body: &'a [u8],
    nesting: Nesting,
    int_digits: fn() -> usize,
    mut sink: impl FnMut(Message<'a>),
) -> Result<bool, FrameError> {
    let mut scanner = Scanner::new(body, int_digits);
    match parse(&mut scanner, &mut sink) {
        Ok(shape) => {
            // The scanner checks the strings it reads; a body with bytes above 0x7F is checked
            // whole as well, so that no path through the scanner can let invalid UTF-8 by (a
            // fuzzed batch once did). ASCII bodies, the usual case, cost one `is_ascii` pass.
            if !body.is_ascii() && std::str::from_utf8(body).is_err() {
                return Err(FrameError::Parse);
            }
            if let Nesting::Limit(limit) = nesting {
                if i64::try_from(scanner.deepest()).unwrap_or(i64::MAX) > limit {
                    return Err(FrameError::TooDeep);
                }
            }
            match shape {
                Shape::Single => Ok(false),
                Shape::Batch { messages: 0 } => Err(FrameError::EmptyBatch),
                Shape::Batch { .. } => Ok(true),
            }
        }
        Err(error) => {
            if let Nesting::Limit(limit) = nesting {
                if too_deep(body, limit) {
                    return Err(FrameError::TooDeep);
                }
            }
            if std::str::from_utf8(body).is_err() {
                return Err(FrameError::Parse);
            }
            Err(error)
        }
    }
}

/// Parses a whole body (its UTF-8 aside: see [`frame_each`]).
fn parse<'a>(
    scanner: &mut Scanner<'a>,
    sink: &mut impl FnMut(Message<'a>),
) -> Result<Shape, FrameError> {
    match scanner.peek() {
        Err(_) => Err(FrameError::Parse),
        Ok(b'{') => {
            let envelope = envelope(scanner).map_err(|fail| match fail {
                Fail::Syntax => FrameError::Parse,
                Fail::Invalid => FrameError::NotMessage,
            })?;
            scanner.end().map_err(|_| FrameError::Parse)?;
            sink(envelope.describe());
            Ok(Shape::Single)
        }
        Ok(b'[') => {
            let mut messages = 0;
            scanner
                .array(|scanner| {
                    sink(element(scanner)?);
                    messages += 1;
                    Ok(())
                })
                .map_err(|_| FrameError::Parse)?;
            scanner.end().map_err(|_| FrameError::Parse)?;
            Ok(Shape::Batch { messages })
        }
        // msgspec reads the scalar (so a malformed one is a parse error) and refuses its type
        // before it looks at what follows.
        Ok(_) => match scanner.value(false) {
            Ok(_) => Err(FrameError::NotMessage),
            Err(_) => Err(FrameError::Parse),
        },
    }
}

/// One element of a batch. A syntax error fails the whole body; an element that is not an
/// object, or that msgspec refuses to convert, is an invalid message.
fn element<'a>(scanner: &mut Scanner<'a>) -> Scan<Message<'a>> {
    const NOT_AN_OBJECT: Message<'static> = Message::Invalid {
        id: None,
        reason: "message must be an object",
    };
    let (start, depth) = (scanner.pos(), scanner.depth());
    if scanner.peek()? != b'{' {
        scanner.value(false)?;
        return Ok(NOT_AN_OBJECT);
    }
    match envelope(scanner) {
        Ok(envelope) => Ok(envelope.describe()),
        Err(Fail::Syntax) => Err(Fail::Syntax),
        Err(Fail::Invalid) => {
            // msgspec refuses this element; only the syntax of all of it still matters.
            scanner.seek(start);
            scanner.set_depth(depth);
            scanner.value(false)?;
            Ok(NOT_AN_OBJECT)
        }
    }
}

/// The last `id` member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IdField<'a> {
    Absent,
    Null,
    Readable(Id<'a>),
    Other,
}

/// The last `method` member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MethodField<'a> {
    Absent,
    Str(JStr<'a>),
    Other,
}

/// What the routing peek found in `params` (the last of each member).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Peek<'a> {
    name: Option<JStr<'a>>,
    uri: Option<JStr<'a>>,
    task_id: Option<JStr<'a>>,
    version: Option<JStr<'a>>,
    /// The raw `arguments` member, for `check_headers` (see [`Message::Call`]).
    arguments: Option<&'a [u8]>,
}

/// A message object as msgspec decodes the twin's `_Envelope`.
///
/// The last `params` member is `params`, and `peek` what the routing peek found in it when it is
/// an object (`params_object`). The peek is filled in place: moving these structs around costs
/// more than the scanning does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Envelope<'a> {
    jsonrpc_ok: bool,
    id: IdField<'a>,
    method: MethodField<'a>,
    params: Option<&'a [u8]>,
    params_object: bool,
    peek: Peek<'a>,
    result: Option<&'a [u8]>,
    error: Option<&'a [u8]>,
}

#[derive(Clone, Copy)]
enum Field {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

fn field(key: &JStr<'_>) -> Field {
    const FIELDS: [(&[u8], Field); 6] = [
        (b"jsonrpc", Field::Jsonrpc),
        (b"id", Field::Id),
        (b"method", Field::Method),
        (b"params", Field::Params),
        (b"result", Field::Result),
        (b"error", Field::Error),
    ];
    if !key.escaped {
        return match key.raw {
            b"jsonrpc" => Field::Jsonrpc,
            b"id" => Field::Id,
            b"method" => Field::Method,
            b"params" => Field::Params,
            b"result" => Field::Result,
            b"error" => Field::Error,
            _ => Field::Other,
        };
    }
    FIELDS
        .iter()
        .find(|(name, _)| key.eq_bytes(name))
        .map_or(Field::Other, |&(_, field)| field)
}

/// Reads a message object at its opening brace.
fn envelope<'a>(scanner: &mut Scanner<'a>) -> Scan<Envelope<'a>> {
    let mut env = Envelope {
        jsonrpc_ok: false,
        id: IdField::Absent,
        method: MethodField::Absent,
        params: None,
        params_object: false,
        peek: Peek::default(),
        result: None,
        error: None,
    };
    scanner.object(|scanner, key| {
        match field(&key) {
            Field::Jsonrpc => {
                let text = scanner.string_or_value(true)?;
                env.jsonrpc_ok = text.is_some_and(|text| text.eq_bytes(b"2.0"));
            }
            Field::Id => {
                env.id = if scanner.peek()? == b'"' {
                    IdField::Readable(Id::Str(scanner.string()?))
                } else {
                    match scanner.raw_value(true)? {
                        (Kind::Int, raw) => IdField::Readable(Id::Int(raw)),
                        (Kind::Null, _) => IdField::Null,
                        _ => IdField::Other,
                    }
                };
            }
            Field::Method => {
                env.method = match scanner.string_or_value(true)? {
                    Some(text) => MethodField::Str(text),
                    None => MethodField::Other,
                };
            }
            Field::Params => params(scanner, &mut env)?,
            Field::Result => env.result = Some(scanner.raw_value(false)?.1),
            Field::Error => env.error = Some(scanner.raw_value(false)?.1),
            Field::Other => {
                scanner.value(false)?;
            }
        }
        Ok(())
    })?;
    Ok(env)
}

/// The members of `params` the routing peek reads.
#[derive(Clone, Copy)]
enum Peeked {
    Name,
    Uri,
    TaskId,
    Meta,
    Arguments,
    Other,
}

fn peeked(key: &JStr<'_>) -> Peeked {
    const MEMBERS: [(&[u8], Peeked); 5] = [
        (b"name", Peeked::Name),
        (b"uri", Peeked::Uri),
        (b"taskId", Peeked::TaskId),
        (b"_meta", Peeked::Meta),
        (b"arguments", Peeked::Arguments),
    ];
    if !key.escaped {
        return match key.raw {
            b"name" => Peeked::Name,
            b"uri" => Peeked::Uri,
            b"taskId" => Peeked::TaskId,
            b"_meta" => Peeked::Meta,
            b"arguments" => Peeked::Arguments,
            _ => Peeked::Other,
        };
    }
    MEMBERS
        .iter()
        .find(|(name, _)| key.eq_bytes(name))
        .map_or(Peeked::Other, |&(_, member)| member)
}

/// Reads a `params` value into the envelope, peeking into it when it is an object.
fn params<'a>(scanner: &mut Scanner<'a>, env: &mut Envelope<'a>) -> Scan<()> {
    let first = scanner.peek()?;
    let start = scanner.pos();
    env.peek = Peek::default();
    env.params_object = first == b'{';
    if env.params_object {
        let peek = &mut env.peek;
        scanner.object(|scanner, key| {
            match peeked(&key) {
                Peeked::Name => peek.name = scanner.string_or_value(false)?,
                Peeked::Uri => peek.uri = scanner.string_or_value(false)?,
                Peeked::TaskId => peek.task_id = scanner.string_or_value(false)?,
                Peeked::Meta => peek.version = meta_version(scanner)?,
                Peeked::Arguments => peek.arguments = Some(scanner.raw_value(false)?.1),
                Peeked::Other => {
                    scanner.value(false)?;
                }
            }
            Ok(())
        })?;
    } else {
        scanner.value(false)?;
    }
    env.params = Some(&scanner.buf()[start..scanner.pos()]);
    Ok(())
}

/// Reads a `_meta` value: the protocol version it holds when it is an object.
fn meta_version<'a>(scanner: &mut Scanner<'a>) -> Scan<Option<JStr<'a>>> {
    if scanner.peek()? != b'{' {
        scanner.value(false)?;
        return Ok(None);
    }
    let mut version = None;
    scanner.object(|scanner, key| {
        if key.eq_bytes(VERSION_KEY) {
            version = scanner.string_or_value(false)?;
        } else {
            scanner.value(false)?;
        }
        Ok(())
    })?;
    Ok(version)
}

/// The params member that names what a method routes to.
#[derive(Clone, Copy)]
enum Routing {
    Name,
    Uri,
    TaskId,
}

/// The methods whose `params` member `Mcp-Name` mirrors (`NAME_FIELD` in
/// `mcpfast.protocol.methods`; `tests/test_methods.py` fails when the two disagree).
const ROUTING: [(&str, Routing); 6] = [
    ("tools/call", Routing::Name),
    ("prompts/get", Routing::Name),
    ("resources/read", Routing::Uri),
    ("tasks/get", Routing::TaskId),
    ("tasks/update", Routing::TaskId),
    ("tasks/cancel", Routing::TaskId),
];

fn routing(method: &JStr<'_>) -> Option<Routing> {
    ROUTING
        .iter()
        .find(|(name, _)| method.eq_bytes(name.as_bytes()))
        .map(|&(_, field)| field)
}

/// Whether `Mcp-Name` must mirror a member of this method's `params`.
pub fn is_routed(method: &str) -> bool {
    ROUTING.iter().any(|(name, _)| *name == method)
}

impl<'a> Peek<'a> {
    fn routed(&self, field: Routing) -> Option<JStr<'a>> {
        match field {
            Routing::Name => self.name,
            Routing::Uri => self.uri,
            Routing::TaskId => self.task_id,
        }
    }
}

impl<'a> Envelope<'a> {
    /// The message, as the twin's `_describe` classifies it.
    fn describe(&self) -> Message<'a> {
        const ID: &str = "id must be a string or an integer";
        let readable = match self.id {
            IdField::Readable(id) => Some(id),
            _ => None,
        };
        let invalid = |id, reason| Message::Invalid { id, reason };
        if !self.jsonrpc_ok {
            return invalid(readable, "jsonrpc must be \"2.0\"");
        }
        match self.method {
            MethodField::Other => return invalid(readable, "method must be a string"),
            MethodField::Str(method) => {
                if self.id != IdField::Absent && readable.is_none() {
                    return invalid(None, ID);
                }
                let (mut name, mut version, mut raw, mut arguments) = (None, None, None, None);
                if let Some(params) = self.params {
                    if !self.params_object {
                        return invalid(readable, "params must be an object");
                    }
                    let peek = &self.peek;
                    name = routing(&method).and_then(|field| peek.routed(field));
                    version = peek.version;
                    raw = Some(params);
                    arguments = peek.arguments.map(|value| {
                        let start = value.as_ptr() as usize - params.as_ptr() as usize;
                        (start, start + value.len())
                    });
                }
                return Message::Call {
                    id: readable,
                    method,
                    name,
                    version,
                    params: raw,
                    arguments,
                };
            }
            MethodField::Absent => {}
        }
        if let Some(payload) = self.result {
            if self.error.is_some() {
                return invalid(readable, "response has both result and error");
            }
            return match readable {
                Some(id) => Message::Result { id, payload },
                None => invalid(None, ID),
            };
        }
        if let Some(payload) = self.error {
            if self.id == IdField::Other {
                return invalid(None, ID);
            }
            if payload.first() != Some(&b'{') {
                return invalid(readable, "error must be an object");
            }
            return Message::Error {
                id: readable,
                payload,
            };
        }
        invalid(readable, "not a request, notification or response")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit() -> usize {
        4300
    }

    fn run(body: &str) -> Result<Framed<'_>, FrameError> {
        frame(body.as_bytes(), Nesting::Limit(64), limit)
    }

    fn one(body: &str) -> Message<'_> {
        let framed = run(body).unwrap();
        assert!(!framed.batch);
        framed.messages.into_iter().next().unwrap()
    }

    fn s(raw: &str) -> JStr<'_> {
        JStr {
            raw: raw.as_bytes(),
            escaped: raw.contains('\\'),
        }
    }

    fn invalid<'a>(id: Option<Id<'a>>, reason: &'static str) -> Message<'a> {
        Message::Invalid { id, reason }
    }

    #[test]
    fn requests_and_notifications() {
        let body = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        assert_eq!(
            one(body),
            Message::Call {
                id: Some(Id::Int(b"7")),
                method: s("tools/call"),
                name: Some(s("echo")),
                version: Some(s("2026-07-28")),
                params: Some(&body.as_bytes()[body.find("{\"name\"").unwrap()..body.len() - 1]),
                arguments: Some((27, 29)),
            }
        );
        let note = one(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert_eq!(note.kind(), KIND_NOTIFICATION);
        let read = one(
            r#"{"jsonrpc":"2.0","id":"r","method":"resources/read","params":{"name":"x","uri":"file:///a"}}"#,
        );
        let Message::Call { name, id, .. } = read else {
            panic!()
        };
        assert_eq!(name, Some(s("file:///a")));
        assert_eq!(id, Some(Id::Str(s("r"))));
        let task = one(r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t1"}}"#);
        assert!(matches!(task, Message::Call { name: Some(n), .. } if n == s("t1")));
        let other = one(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"x"}}"#);
        assert!(matches!(other, Message::Call { name: None, .. }));
    }

    #[test]
    fn last_duplicate_wins() {
        let body = r#"{"id":1,"jsonrpc":"1.0","id":"b","jsonrpc":"2.0","method":"m","params":{"a":1},"params":{"name":"n","name":2,"_meta":{"io.modelcontextprotocol/protocolVersion":"v"},"_meta":5}}"#;
        let Message::Call {
            id,
            version,
            params,
            ..
        } = one(body)
        else {
            panic!()
        };
        assert_eq!(id, Some(Id::Str(s("b"))));
        assert_eq!(version, None);
        assert!(params.unwrap().starts_with(b"{\"name\""));
        let body = r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"a","name":1}}"#;
        assert!(matches!(one(body), Message::Call { name: None, .. }));
        let body = r#"{"jsonrpc":"2.0","method":"tools/call","params":{"n\u0061me":"a","_meta":{"io.modelcontextprotocol\/protocolVersion":"v"}}}"#;
        assert!(
            matches!(one(body), Message::Call { name: Some(n), version: Some(v), .. } if n.eq_bytes(b"a") && v.eq_bytes(b"v"))
        );
    }

    #[test]
    fn responses() {
        assert_eq!(
            one(r#"{"jsonrpc":"2.0","id":1,"result":{"x":[1,2]}}"#),
            Message::Result {
                id: Id::Int(b"1"),
                payload: br#"{"x":[1,2]}"#,
            }
        );
        assert_eq!(
            one(r#"{"jsonrpc":"2.0","id":null,"error":{"code":1}}"#),
            Message::Error {
                id: None,
                payload: br#"{"code":1}"#,
            }
        );
        assert_eq!(
            one(r#"{"jsonrpc":"2.0","result": 5 ,"id":-0}"#).kind(),
            KIND_RESULT
        );
    }

    #[test]
    fn invalid_messages() {
        let id = Some(Id::Int(b"1"));
        for (body, expected) in [
            (r"{}", invalid(None, "jsonrpc must be \"2.0\"")),
            (
                r#"{"jsonrpc":2.0,"id":1}"#,
                invalid(id, "jsonrpc must be \"2.0\""),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
                invalid(id, "method must be a string"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1.0,"method":"m"}"#,
                invalid(None, "id must be a string or an integer"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
                invalid(None, "id must be a string or an integer"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":true,"method":"m"}"#,
                invalid(None, "id must be a string or an integer"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[]}"#,
                invalid(id, "params must be an object"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{}}"#,
                invalid(id, "response has both result and error"),
            ),
            (
                r#"{"jsonrpc":"2.0","result":1}"#,
                invalid(None, "id must be a string or an integer"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":{},"error":{}}"#,
                invalid(None, "id must be a string or an integer"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"error":"x"}"#,
                invalid(id, "error must be an object"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1}"#,
                invalid(id, "not a request, notification or response"),
            ),
        ] {
            assert_eq!(one(body), expected, "{body}");
        }
    }

    #[test]
    fn whole_body_errors() {
        for (body, expected) in [
            ("", FrameError::Parse),
            ("  ", FrameError::Parse),
            ("{", FrameError::Parse),
            ("{} x", FrameError::Parse),
            ("[] x", FrameError::Parse),
            ("[1, tru]", FrameError::Parse),
            ("\"abc", FrameError::Parse),
            ("tru", FrameError::Parse),
            ("01", FrameError::Parse),
            ("5", FrameError::NotMessage),
            ("5 x", FrameError::NotMessage),
            ("truex", FrameError::NotMessage),
            ("\"abc\" x", FrameError::NotMessage),
            ("null", FrameError::NotMessage),
            ("[]", FrameError::EmptyBatch),
            (" [ ] ", FrameError::EmptyBatch),
            (r#"{"id":1e400,"x":tru"#, FrameError::NotMessage),
            (r#"{"x":tru,"id":1e400}"#, FrameError::Parse),
            (r#"{"method":[1e400]}"#, FrameError::NotMessage),
        ] {
            assert_eq!(run(body).map(|_| ()), Err(expected), "{body}");
        }
        // Raw and skipped members are not range-checked.
        assert!(run(r#"{"params":1e400,"x":1e400,"result":[1e999]}"#).is_ok());
        assert_eq!(
            frame(b"{\"a\":\"\xff\"}", Nesting::Limit(64), limit),
            Err(FrameError::Parse)
        );
    }

    #[test]
    fn batches() {
        let framed = run(
            r#"[1, {"jsonrpc":"2.0","id":1e400,"method":"m"}, {"jsonrpc":"2.0","method":"m"} ]"#,
        )
        .unwrap();
        assert!(framed.batch);
        assert_eq!(framed.messages.len(), 3);
        assert_eq!(
            framed.messages[0],
            invalid(None, "message must be an object")
        );
        assert_eq!(
            framed.messages[1],
            invalid(None, "message must be an object")
        );
        assert_eq!(framed.messages[2].kind(), KIND_NOTIFICATION);
        assert_eq!(run(r#"[{"id":1e400}, tru]"#), Err(FrameError::Parse));
        assert_eq!(run(r#"[{"id":1e400, "x": [}]"#), Err(FrameError::Parse));
    }

    #[test]
    fn nesting() {
        assert!(!too_deep(b"[[[]]]", 3));
        assert!(too_deep(b"[[[[]]]]", 3));
        assert!(!too_deep(b"[\"[[[[\"]", 1));
        assert!(!too_deep(b"[\"\\\"[[[[\"]", 1));
        assert!(too_deep(b"[\"\\\\\"[[[[]", 1));
        assert!(!too_deep(b"]]]][[[[", 0));
        assert!(too_deep(b"]]]][[[[", -1));
        assert!(too_deep(b"]][", -2));
        assert!(!too_deep(b"]][", -1));
        assert!(!too_deep(b"abc", -5));
        let deep = "[".repeat(100_000);
        assert!(too_deep(deep.as_bytes(), 64));
        assert!(!too_deep(deep.as_bytes(), 100_000));
        assert!(!too_deep(b"\"[[[", 0));
    }
}

// --------------------------------------------------------------------------------- Python glue

#[cfg(feature = "python")]
pub mod py {
    use pyo3::exceptions::PyTypeError;
    use pyo3::prelude::*;
    use pyo3::sync::Interned;
    use pyo3::types::{PyBytes, PyInt, PyList, PyString};

    use super::{frame_each, FrameError, Id, Message, Nesting};
    use crate::args::bytes_of;
    use crate::errors::{invalid_request, parse_error};
    use crate::json::JStr;

    /// Method names and protocol versions that come up all the time, kept as interned strs (a
    /// speed-up only: any other text is made afresh).
    macro_rules! common {
        ($raw:expr; $($text:literal),* $(,)?) => {
            match $raw {
                $($text => {
                    static TEXT: Interned = Interned::new(match std::str::from_utf8($text) {
                        Ok(text) => text,
                        Err(_) => panic!("not UTF-8"),
                    });
                    Some(&TEXT)
                })*
                _ => None,
            }
        };
    }

    fn common(raw: &[u8]) -> Option<&'static Interned> {
        common!(raw;
            b"initialize",
            b"ping",
            b"tools/list",
            b"tools/call",
            b"resources/list",
            b"resources/templates/list",
            b"resources/read",
            b"resources/subscribe",
            b"resources/unsubscribe",
            b"prompts/list",
            b"prompts/get",
            b"completion/complete",
            b"logging/setLevel",
            b"tasks/get",
            b"tasks/list",
            b"tasks/result",
            b"tasks/update",
            b"tasks/cancel",
            b"notifications/initialized",
            b"notifications/cancelled",
            b"notifications/progress",
            b"notifications/message",
            b"notifications/tools/list_changed",
            b"notifications/resources/list_changed",
            b"notifications/resources/updated",
            b"notifications/prompts/list_changed",
            b"notifications/roots/list_changed",
            b"sampling/createMessage",
            b"elicitation/create",
            b"roots/list",
            b"server/discover",
            b"subscriptions/listen",
            b"skills/list",
            b"skills/get",
            b"2025-03-26",
            b"2025-06-18",
            b"2025-11-25",
            b"2026-07-28",
        )
    }

    /// A JSON string as a Python str.
    fn text<'py>(py: Python<'py>, text: &JStr<'_>) -> Bound<'py, PyAny> {
        if text.escaped {
            return PyString::new(py, &text.unescape()).into_any();
        }
        if let Some(common) = common(text.raw) {
            return common.get(py).clone().into_any();
        }
        debug_assert!(std::str::from_utf8(text.raw).is_ok());
        // SAFETY: the scanner checked that every string it returns is UTF-8.
        PyString::new(py, unsafe { std::str::from_utf8_unchecked(text.raw) }).into_any()
    }

    /// An id as a Python int or str; integers of any size.
    fn id<'py>(py: Python<'py>, id: Option<&Id<'_>>) -> PyResult<Bound<'py, PyAny>> {
        match id {
            None => Ok(py.None().into_bound(py)),
            Some(Id::Str(value)) => Ok(text(py, value)),
            Some(Id::Int(digits)) => {
                if let Some(small) = small_int(digits) {
                    return Ok(small.into_pyobject(py)?.into_any());
                }
                // Checked against Python's digit limit already, so `int()` cannot refuse it.
                let digits = std::str::from_utf8(digits).unwrap_or("0");
                py.get_type::<pyo3::types::PyInt>().call1((digits,))
            }
        }
    }

    /// A JSON integer of up to 18 digits (so it fits an `i64`).
    fn small_int(text: &[u8]) -> Option<i64> {
        let (negative, digits) = match text {
            [b'-', rest @ ..] => (true, rest),
            _ => (false, text),
        };
        if digits.len() > 18 {
            return None;
        }
        let magnitude = digits
            .iter()
            .fold(0i64, |value, &digit| value * 10 + i64::from(digit - b'0'));
        Some(if negative { -magnitude } else { magnitude })
    }

    /// One framed message, as Python sees it: `frame` makes them, `check_headers` takes them.
    ///
    /// `kind` says which members are set: a call (`KIND_REQUEST`, `KIND_NOTIFICATION`) has
    /// `method` and maybe `name`, `version` and `params`; a response (`KIND_RESULT`,
    /// `KIND_ERROR`) has `payload`; an invalid message (`KIND_INVALID`) has `reason`. `id` is
    /// the readable id, if any. The twin's `Message` has the same members.
    #[pyclass(frozen, module = "mcpfast._rust", name = "Message")]
    pub struct PyMessage {
        #[pyo3(get)]
        kind: u8,
        #[pyo3(get)]
        id: Py<PyAny>,
        #[pyo3(get)]
        method: Option<Py<PyString>>,
        #[pyo3(get)]
        name: Option<Py<PyString>>,
        #[pyo3(get)]
        version: Option<Py<PyString>>,
        #[pyo3(get)]
        params: Option<Py<PyBytes>>,
        #[pyo3(get)]
        payload: Option<Py<PyBytes>>,
        #[pyo3(get)]
        reason: Option<Py<PyString>>,
        /// Where the last `arguments` member of `params` is (see [`Message::Call`]).
        arguments: Option<(usize, usize)>,
    }

    #[pymethods]
    impl PyMessage {
        fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
            let repr = |value: Option<Bound<'_, PyAny>>| -> PyResult<String> {
                value.map_or(Ok("None".to_owned()), |value| Ok(value.repr()?.to_string()))
            };
            Ok(format!(
                "Message(kind={}, id={}, method={}, name={}, version={}, params={}, payload={}, reason={})",
                self.kind,
                self.id.bind(py).repr()?,
                repr(self.method.as_ref().map(|v| v.bind(py).clone().into_any()))?,
                repr(self.name.as_ref().map(|v| v.bind(py).clone().into_any()))?,
                repr(self.version.as_ref().map(|v| v.bind(py).clone().into_any()))?,
                repr(self.params.as_ref().map(|v| v.bind(py).clone().into_any()))?,
                repr(self.payload.as_ref().map(|v| v.bind(py).clone().into_any()))?,
                repr(self.reason.as_ref().map(|v| v.bind(py).clone().into_any()))?,
            ))
        }
    }

    impl PyMessage {
        /// The method, when the message is a call.
        pub fn method<'py>(&self, py: Python<'py>) -> Option<&Bound<'py, PyString>> {
            self.method.as_ref().map(|method| method.bind(py))
        }

        /// The routed name (`Mcp-Name`'s mirror), when the message has one.
        pub fn name<'py>(&self, py: Python<'py>) -> Option<&Bound<'py, PyString>> {
            self.name.as_ref().map(|name| name.bind(py))
        }

        /// The `_meta` protocol version, when the message has one.
        pub fn version<'py>(&self, py: Python<'py>) -> Option<&Bound<'py, PyString>> {
            self.version.as_ref().map(|version| version.bind(py))
        }

        /// The raw `params`, when the message has them.
        pub fn params<'py>(&self, py: Python<'py>) -> Option<&Bound<'py, PyBytes>> {
            self.params.as_ref().map(|params| params.bind(py))
        }

        /// The raw JSON of `params["arguments"]` (the last such member) within `params`, which
        /// must be this message's own `params` bytes.
        pub fn arguments_in<'a>(&self, params: &'a [u8]) -> Option<&'a [u8]> {
            let (start, end) = self.arguments?;
            params.get(start..end)
        }
    }

    fn py_message(py: Python<'_>, message: &Message<'_>) -> PyResult<PyMessage> {
        let text = |value: &JStr<'_>| text(py, value).cast_into::<PyString>().map(Bound::unbind);
        let optional = |value: Option<&JStr<'_>>| value.map(text).transpose();
        let bytes = |value: &[u8]| PyBytes::new(py, value).unbind();
        let mut out = PyMessage {
            kind: message.kind(),
            id: py.None(),
            method: None,
            name: None,
            version: None,
            params: None,
            payload: None,
            reason: None,
            arguments: None,
        };
        match message {
            Message::Call {
                id: ident,
                method,
                name,
                version,
                params,
                arguments,
            } => {
                out.id = id(py, ident.as_ref())?.unbind();
                out.method = Some(text(method)?);
                out.name = optional(name.as_ref())?;
                out.version = optional(version.as_ref())?;
                out.params = params.map(bytes);
                out.arguments = *arguments;
            }
            Message::Result { id: ident, payload } => {
                out.id = id(py, Some(ident))?.unbind();
                out.payload = Some(bytes(payload));
            }
            Message::Error { id: ident, payload } => {
                out.id = id(py, ident.as_ref())?.unbind();
                out.payload = Some(bytes(payload));
            }
            Message::Invalid { id: ident, reason } => {
                out.id = id(py, ident.as_ref())?.unbind();
                out.reason = Some(PyString::new(py, reason).unbind());
            }
        }
        Ok(out)
    }

    /// `sys.get_int_max_str_digits()`, asked only when a long integer id is met.
    fn int_max_str_digits() -> usize {
        Python::attach(|py| {
            py.import("sys")
                .and_then(|sys| sys.call_method0("get_int_max_str_digits"))
                .and_then(|limit| limit.extract::<usize>())
                .unwrap_or(4300)
        })
    }

    /// A `max_depth`: an int (one beyond `i64` cannot be reached anyway, so it is clamped for
    /// the scan and kept as given for the error).
    pub enum Depth<'py> {
        Default,
        Given(i64, Bound<'py, PyInt>),
    }

    impl<'a, 'py> FromPyObject<'a, 'py> for Depth<'py> {
        type Error = PyErr;

        fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
            let int = obj
                .cast::<PyInt>()
                .map_err(|_| PyTypeError::new_err("max_depth must be an int"))?;
            let limit = int.extract::<i64>().unwrap_or_else(|_| {
                if int.lt(0).unwrap_or(false) {
                    i64::MIN
                } else {
                    i64::MAX
                }
            });
            Ok(Depth::Given(limit, int.to_owned()))
        }
    }

    #[pyfunction]
    #[pyo3(
        name = "frame",
        signature = (body, max_depth = Depth::Default),
        text_signature = "(body, max_depth=64)"
    )]
    pub fn py_frame<'py>(
        py: Python<'py>,
        body: &Bound<'py, PyAny>,
        max_depth: Depth<'py>,
    ) -> PyResult<(bool, Bound<'py, PyList>)> {
        let Some(body) = bytes_of(body) else {
            return Err(PyTypeError::new_err("body must be bytes"));
        };
        let limit = match &max_depth {
            Depth::Default => 64,
            Depth::Given(limit, _) => *limit,
        };
        let mut messages = Vec::new();
        let mut failed = None;
        let framed = frame_each(&body, Nesting::Limit(limit), int_max_str_digits, |item| {
            if failed.is_none() {
                match py_message(py, &item).and_then(|message| Bound::new(py, message)) {
                    Ok(message) => messages.push(message),
                    Err(error) => failed = Some(error),
                }
            }
        });
        let batch = framed.map_err(|error| match error {
            FrameError::TooDeep => {
                let shown = match &max_depth {
                    Depth::Default => PyInt::new(py, 64).into_any(),
                    Depth::Given(_, given) => given.clone().into_any(),
                };
                invalid_request(py, "nesting too deep", Some(("maxDepth", &shown)))
            }
            FrameError::Parse => parse_error(py),
            FrameError::NotMessage => invalid_request(py, "not a JSON-RPC message", None),
            FrameError::EmptyBatch => invalid_request(py, "empty batch", None),
        })?;
        if let Some(error) = failed {
            return Err(error);
        }
        Ok((batch, PyList::new(py, messages)?))
    }
}
