"""Stub for the compiled codec. `mcpfast._codec_py` is its pure-Python twin and specification:
for arguments of the types declared here, each function returns and raises exactly what the twin
does; an argument of another type is refused with `TypeError`."""

import enum
from collections.abc import Callable, Mapping, Sequence
from typing import Literal, final

__all__ = [
    "KIND_ERROR",
    "KIND_INVALID",
    "KIND_NOTIFICATION",
    "KIND_REQUEST",
    "KIND_RESULT",
    "Head",
    "Kind",
    "Message",
    "check_headers",
    "encode_header_value",
    "frame",
    "mint_token",
    "parse_head",
    "response",
    "run_load",
    "scope_head",
    "take_head",
    "verify_token",
]

class Kind(enum.IntEnum):
    """What a framed message is; `Message.kind` holds its int value."""

    REQUEST = 0
    NOTIFICATION = 1
    RESULT = 2
    ERROR = 3
    INVALID = 4

KIND_REQUEST: Literal[Kind.REQUEST]
KIND_NOTIFICATION: Literal[Kind.NOTIFICATION]
KIND_RESULT: Literal[Kind.RESULT]
KIND_ERROR: Literal[Kind.ERROR]
KIND_INVALID: Literal[Kind.INVALID]

@final
class Message:
    """One framed message, made by `frame` only. `kind` says which members are set: a call
    (request or notification) has `method` and maybe `name`, `version` and `params`; a response
    (result or error) has `payload`; an invalid message has `reason`. No `==`; the `repr` is the
    twin's."""

    @property
    def kind(self) -> int:
        """A `Kind` value."""
    @property
    def id(self) -> int | str | None:
        """The readable id (an int of any size or a str), or None (absent, null or unreadable)."""
    @property
    def method(self) -> str | None:
        """A call's method."""
    @property
    def name(self) -> str | None:
        """A routed call's name (the string its `Mcp-Name` header mirrors), when a string."""
    @property
    def version(self) -> str | None:
        """The `_meta` protocol version of a call's params, when a string."""
    @property
    def params(self) -> bytes | None:
        """A call's raw `params` (a JSON object), when present."""
    @property
    def payload(self) -> bytes | None:
        """A response's raw `result` (any JSON) or `error` (a JSON object)."""
    @property
    def reason(self) -> str | None:
        """Why an invalid message is invalid (the `data.reason` of its -32600)."""

@final
class Head:
    """A parsed HTTP/1.x request head, made by `parse_head` only. No `==`; the `repr` is the
    twin's."""

    @property
    def method(self) -> str:
        """The method token, as sent (case kept)."""
    @property
    def target(self) -> str:
        """The request target, as sent (visible ASCII, not decoded)."""
    @property
    def minor(self) -> int:
        """The HTTP/1 minor version: 0, or 1 (a higher 1.x is served as 1.1)."""
    @property
    def headers(self) -> dict[str, str]:
        """Values by lower-case name (latin-1, stripped of spaces and tabs): a repeat keeps its
        last value, but `connection`, `content-length` and `transfer-encoding` are joined with
        `", "`."""
    @property
    def content_length(self) -> int | None:
        """The body's length, when `Content-Length` frames it."""
    @property
    def chunked(self) -> bool:
        """Whether the body is chunked (`Transfer-Encoding: chunked`)."""
    @property
    def keep_alive(self) -> bool:
        """Whether the connection stays open after the response (`Connection`, the version)."""
    @property
    def expect_continue(self) -> bool:
        """Whether the client waits for `100 Continue` before its body."""

def frame(body: bytes | bytearray, max_depth: int = 64) -> tuple[bool, list[Message]]:
    """Classify a POST body: `(is_batch, messages)`, one `Message` per element of a batch.

    Raises:
        mcpfast.errors.CodecError: -32700 for bytes that are not UTF-8 JSON; -32600 for nesting
            deeper than `max_depth` (`data.maxDepth`), a top level that is not an object or array,
            or an empty batch (`data.reason` says which).
    """

def check_headers(
    headers: Mapping[str, str],
    message: Message,
    param_headers: Sequence[tuple[str, Sequence[str]]],
) -> None:
    """Check that the request headers (lower-case names) mirror a framed call (2026-07-28):
    `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` for a routed method, and each
    `Mcp-Param-<name>` of `param_headers` (a name and the path under `arguments` it mirrors).

    Raises:
        mcpfast.errors.CodecError: -32020, `data = {"header": <canonical name>, "reason":
            "missing" | "invalid" | "mismatch"}`, for the first header that fails.
    """

def encode_header_value(value: str | int | bool) -> str:
    """The header text for an argument value: as is when it can travel so, else
    `=?base64?<UTF-8 base64>?=`.

    Raises:
        TypeError: for a value that is not a str, int or bool.
    """

def mint_token(key_id: str, key: bytes, payload: bytes, issued_at: int) -> str:
    """Sign `payload` with `key` (HMAC-SHA256) as `v1.<key_id>.<issued_at>.<payload>.<mac>`.

    Raises:
        ValueError: for a key id outside `[A-Za-z0-9_-]{1,32}` or an issued-at outside
            0..10**15.
    """

def verify_token(
    token: str, keys: Mapping[str, bytes], now: int, max_age: int, max_length: int = 65536
) -> tuple[bytes, int]:
    """Verify a token against `keys` (by key id): `(payload, issued_at)`. The MAC compare is
    constant-time.

    Raises:
        mcpfast.errors.TokenError: `malformed` (also over `max_length` characters),
            `unknown_key`, `bad_signature`, `expired` (older than `max_age` seconds at `now`) or
            `future` (issued more than 300 s after `now`).
    """

def run_load(
    host: str,
    port: int,
    cycles: Sequence[Sequence[bytes]],
    duration: float,
    stages: Sequence[tuple[float, float]],
    timeout: float,
    progress: Callable[[int, int, dict[int, int], int, int], object] | None = None,
) -> tuple[
    list[tuple[dict[tuple[int, str, bytes], int], dict[int, int], int, int, dict[str, int]]],
    int,
    int,
    float,
]:
    """The fast load engine (a thread per core, the GIL released): see its twin,
    `mcpfast.load.engine_trio.run_load`, which returns the same tally. Once a second the
    calling thread takes the GIL back briefly: signal handlers run, then ``progress``
    (`mcpfast.load.engine_trio.Progress`; a true result stops the run early).

    Raises:
        ValueError: no cycles, an empty one, or cycles of different lengths.
        BaseException: what a signal handler or ``progress`` raised (the run stopped).
    """

def parse_head(head: bytes) -> Head:
    """The request head `head` (without the blank line that ends it), by RFC 9112.

    Raises:
        mcpfast.errors.HttpError: 400 for a malformed head, 505 for an HTTP major version other
            than 1, 501 for a transfer coding other than `chunked`; each with a fixed reason.
    """

def take_head(buffer: bytearray, limit: int, max_lines: int) -> Head | None:
    """The next request head of a connection's `buffer`, taken off it with its blank line and
    the CRLFs before it; None while the blank line has not come (the CRLFs taken all the same).

    Raises:
        mcpfast.errors.HttpError: 431 past `limit` bytes or `max_lines` line ends (the buffer
            untouched), else `parse_head`'s refusals.
    """

def scope_head(
    method: str,
    target: bytes,
    query: bytes,
    headers: Sequence[tuple[bytes, bytes]],
    limit: int,
    max_lines: int,
) -> dict[str, str]:
    """The `headers` of a request head an ASGI server parsed (lower-case names), by name,
    decoded as latin-1 (a repeated header keeps its last value), once the head passes the
    native engine's limits and framing rules, measured as `method target[?query] HTTP/1.1` and
    one `name: value` line per pair. `limit` and `max_lines` fit in 64 signed bits.

    Raises:
        mcpfast.errors.HttpError: 431 for more than `max_lines` header lines, then for a head
            over `limit` bytes; 400 for both Content-Length and Transfer-Encoding, then for a
            second Host.
    """

def response(
    status: int,
    headers: Sequence[tuple[bytes, bytes]],
    body: bytes,
    length: int | None,
    chunked: bool,
    keep_alive: bool,
    limit: int,
    now: int,
) -> bytes:
    """A response head, through its blank line, then `body` (RFC 9112): the status line,
    `date` of `now` (seconds since the epoch), `headers` as given, then the framing: none for
    1xx, 204 and 304, else `content-length` when `length` is given, else
    `transfer-encoding: chunked` when `chunked`, else none; `connection: close` unless
    `keep_alive`. `status`, `length`, `limit` and `now` fit in 64 signed bits.

    Raises:
        ValueError: in this order: a status outside 100..999, a negative `length`, `now`
            outside the years 1970-9999, header lines of more than `limit` bytes (each counted
            as name, value and four bytes).
    """
