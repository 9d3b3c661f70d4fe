"""A table of hostile requests (issue 17, item 2): each row raw bytes sent over a TCP socket and
the answer the rules give it, an HTTP status with the JSON-RPC error code of its body, or
`CLOSED` (the connection closed without an answer). The same table runs on both engines (and,
through ``make test``, on both codecs); after every row the server answers a good request.

Where a row's answer comes from: the manual's "HTTP engines" (docs/servers.md) and "Limits and
hardening" (docs/reference/limits.md) (framing refusals 400/501/505, limits 431/413, every
refusal -32600 and a closed connection), RFC 9110/9112 where the manual is silent (absolute-form targets, ``Expect``, duplicate ``Content-Length``),
`shared/spec/DIGEST.md` §2, §3.5-§3.7, §3.13 and §4.2 (JSON-RPC shape, mirrored headers, ``_meta``,
``requestState``, tasks, sessions, Host/Origin). Where an engine may legitimately answer
otherwise, the row says so (``hypercorn=``) and why.
"""

from __future__ import annotations

import base64
import json
import socket
import time
from collections.abc import Callable
from typing import Annotated, Any, NamedTuple

import msgspec
import pytest
import trio

import mcpfast
from mcpfast import codec
from mcpfast.server.framework.functions import Header
from mcpfast.server.state import request_state as state
from mcpfast.server.state import sessions
from mcpfast.server.state.keys import KeyRing

from ..helpers import ENGINE, MODERN, TEST_KEYS, meta, running

# ----------------------------------------------------------------------------- the server


def hostile_server() -> mcpfast.Server:
    """A server with something behind every kind of row: an echo, a tool that asks (requestState),
    a tool with an ``Mcp-Param-Region`` header, a task tool, and lists of several pages."""
    server = mcpfast.Server("hostile", "1", page_size=2)

    @server.tool(instant=True)
    def echo(text: str) -> str:
        return text

    @server.tool(instant=True)
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(instant=True)
    def weather(region: Annotated[str, Header("Region")], days: int = 1) -> str:
        return f"{region}:{days}"

    @server.tool()
    async def greet(ctx: mcpfast.Context) -> str:
        answer = await ctx.elicit(
            "Name?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="name"
        )
        return f"Hello, {answer.get('content', {}).get('name', '?')}!"

    @server.tool(task="optional")
    async def slow() -> str:
        await trio.sleep(30)
        return "late"

    @server.prompt()
    def describe(city: str) -> str:
        return f"Describe {city}."

    return server


CONFIG: dict[str, Any] = {"read_timeout_seconds": 2.0}
"""Every wait of the server bounded well inside the reads of this file."""

# ------------------------------------------------------------------------- building requests

TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
MODERN_BASE = [
    (b"host", b"127.0.0.1"),
    (b"content-type", b"application/json"),
    (b"accept", b"application/json, text/event-stream"),
]


def body(method: str, params: dict[str, Any] | None = None, *, id_: Any = 1, **top: Any) -> bytes:
    """A 2026-07-28 request's JSON (``_meta`` added unless ``params`` has its own, or is None
    through ``top``)."""
    params = dict(params or {})
    params.setdefault("_meta", meta())
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}
    message.update(top)
    return json.dumps(message).encode()


def mirrored(method: str, name: str | None = None) -> list[tuple[bytes, bytes]]:
    """The headers of a well-formed 2026-07-28 request of ``method`` (naming ``name``)."""
    out = [
        *MODERN_BASE,
        (b"mcp-protocol-version", MODERN.encode()),
        (b"mcp-method", method.encode()),
    ]
    if name is not None:
        out.append((b"mcp-name", name.encode()))
    return out


def post(
    payload: bytes,
    headers: list[tuple[bytes, bytes]] | None = None,
    *,
    target: bytes = b"/mcp",
    version: bytes = b"HTTP/1.1",
    extra: bytes = b"",
    length: bool = True,
    patch: tuple[bytes, bytes] | None = None,
) -> bytes:
    """A POST of ``payload`` (``Content-Length`` framed unless ``length`` is False; ``patch``
    replaced in it first); ``extra`` header lines (raw, each with its CRLF) go after ``headers``
    (default: ``server/discover``'s)."""
    if patch is not None:
        payload = payload.replace(*patch)
    lines = b"".join(n + b": " + v + b"\r\n" for n, v in (headers or mirrored("server/discover")))
    framing = b"content-length: %d\r\n" % len(payload) if length else b""
    return (
        b"POST " + target + b" " + version + b"\r\n" + lines + extra + framing + b"\r\n" + payload
    )


def without(headers: list[tuple[bytes, bytes]], name: bytes) -> list[tuple[bytes, bytes]]:
    return [(n, v) for n, v in headers if n != name]


def replaced(
    headers: list[tuple[bytes, bytes]], name: bytes, value: bytes
) -> list[tuple[bytes, bytes]]:
    return [*without(headers, name), (name, value)]


DISCOVER = body("server/discover")


def good() -> bytes:
    """The request every row is followed by: ``server/discover``, answered 200."""
    return post(DISCOVER)


def call(
    tool: str,
    arguments: Any,
    *,
    headers: list[tuple[bytes, bytes]] | None = None,
    patch: tuple[bytes, bytes] | None = None,
    **params: Any,
) -> bytes:
    """A ``tools/call`` of ``tool``, its headers mirrored unless given (``patch``: `post`)."""
    payload = body("tools/call", {"name": tool, "arguments": arguments, **params})
    return post(
        payload, headers if headers is not None else mirrored("tools/call", tool), patch=patch
    )


def chunked(
    payload: bytes,
    *,
    coding: bytes = b"chunked",
    size: bytes | None = None,
    ext: bytes = b"",
    trailer: bytes = b"",
    extra: bytes = b"",
) -> bytes:
    """A chunked POST of ``payload`` in one chunk (its size line ``size``, default the hex
    length, then ``ext``), with a ``trailer`` section."""
    size_line = (b"%x" % len(payload) if size is None else size) + ext
    head = post(b"", extra=b"transfer-encoding: " + coding + b"\r\n" + extra, length=False)
    return head + size_line + b"\r\n" + payload + b"\r\n0\r\n" + trailer + b"\r\n"


def raw_head(*lines: bytes) -> bytes:
    """A head of exactly these lines (CRLF each, then the blank line)."""
    return b"".join(line + b"\r\n" for line in lines) + b"\r\n"


def legacy(
    method: str,
    session: str | None,
    params: dict[str, Any] | None = None,
    *,
    version: str = "2025-11-25",
    verb: bytes = b"POST",
) -> bytes:
    """A legacy request of ``method`` in the session ``session`` (None: no header)."""
    headers = [*MODERN_BASE, (b"mcp-protocol-version", version.encode())]
    if session is not None:
        headers.append((b"mcp-session-id", session.encode()))
    if verb != b"POST":
        lines = b"".join(n + b": " + v + b"\r\n" for n, v in headers)
        return verb + b" /mcp HTTP/1.1\r\n" + lines + b"\r\n"
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        message["params"] = params
    return post(json.dumps(message).encode(), headers)


def nested(depth: int) -> bytes:
    """``server/discover`` whose deepest level is ``depth`` (the message is level 1)."""
    inner = "[" * (depth - 2) + "]" * (depth - 2)
    return DISCOVER.replace(b'"params": {', b'"params": {"x": ' + inner.encode() + b", ", 1)


# ------------------------------------------------------------------------------------ tokens

OTHER_DEPLOYMENT = KeyRing(keys={"k1": b"another deployment's own secret!"}, signing="k1")
"""Keys of another deployment that happens to use the same key id."""
FOREIGN_KID = KeyRing(keys={"prod-b": b"another deployment's own secret!"}, signing="prod-b")


def signed(keys: KeyRing, payload: bytes, age: int) -> str:
    """A token over ``payload``, issued ``age`` seconds ago (negative: in the future)."""
    return codec.mint_token(keys.signing, keys.signing_key, payload, int(time.time()) - age)


def greet_state(
    keys: KeyRing = TEST_KEYS,
    age: int = 0,
    bound: tuple[str, str | None, Any] = ("tools/call", "greet", {}),
) -> str:
    """A ``requestState`` of ``greet`` with no answers yet (bound to ``bound``)."""
    return signed(keys, json.dumps([state.binding(*bound), {}]).encode(), age)


def flipped(token: str, at: int = -5) -> str:
    """``token`` with one character of its MAC (or at ``at``) changed."""
    chars = list(token)
    chars[at] = "A" if chars[at] != "A" else "B"
    return "".join(chars)


def session_token(
    keys: KeyRing = TEST_KEYS,
    age: int = 0,
    *,
    version: str = "2025-11-25",
    started_ago: int | None = None,
) -> str:
    """A legacy session id, issued ``age`` seconds ago, of a session begun ``started_ago``
    seconds ago (default: when issued)."""
    now = int(time.time())
    begun = now - (age if started_ago is None else started_ago)
    session = sessions.Session(
        id="hostile-session", version=version, capabilities={}, started=begun
    )
    return signed(keys, msgspec.json.encode(session), age)


ELICITS = meta({"elicitation": {}})


def state_call(token: Any, tool: str = "greet", arguments: Any = None) -> bytes:
    """A retry of ``tool`` carrying ``token`` as its ``requestState`` (elicitation declared)."""
    return call(tool, {} if arguments is None else arguments, requestState=token, _meta=ELICITS)


def task_get(task_id: Any, *, capabilities: dict[str, Any] | None = TASKS) -> bytes:
    name = task_id if isinstance(task_id, str) else None
    payload = body("tasks/get", {"taskId": task_id, "_meta": meta(capabilities)})
    return post(payload, mirrored("tasks/get", name))


def list_tools(cursor: Any) -> bytes:
    return post(body("tools/list", {"cursor": cursor}), mirrored("tools/list"))


def cursor(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


# --------------------------------------------------------------------------------- the table


class Outcome(NamedTuple):
    """What a row gets: an HTTP status and the JSON-RPC error code of its body (None: a result,
    or no body); status 0 is `CLOSED`."""

    status: int
    code: int | None = None


CLOSED = Outcome(0)
"""The connection closed without an answer."""
NOT_HTTP1 = Outcome(-1)
"""An answer that is not HTTP/1.x (Hypercorn speaks HTTP/2 to its preface)."""
OK = Outcome(200)
REFUSED = -32600


class Row(NamedTuple):
    name: str
    build: Callable[[], bytes]
    """The raw bytes to send (built when the row runs: tokens carry the time)."""
    expect: Outcome
    hypercorn: Outcome | tuple[Outcome, ...] | None = None
    """The Hypercorn engine's answer (or answers) where it differs (docs/servers.md "HTTP engines";
    HARDENING.md "Hostile requests")."""
    native: Outcome | None = None
    """The native engine's answer where it differs."""
    eof: bool = False
    """Half-close the connection after sending (the client says it sends nothing more)."""
    alone: bool = False
    """Pipelined after a refusal: the refusal closes the connection, nothing more is answered."""

    def expected(self, engine: str) -> tuple[Outcome, ...]:
        """The answers the rules allow ``engine``."""
        differs = self.hypercorn if engine == "hypercorn" else self.native
        found = self.expect if differs is None else differs
        return found if isinstance(found, tuple) and not isinstance(found, Outcome) else (found,)


def fixed(data: bytes) -> Callable[[], bytes]:
    return lambda: data


R = Row
F = fixed
BAD = Outcome(400, REFUSED)
CL = b"content-length: 2\r\n"

FRAMING = [
    R("cl-and-te", lambda: chunked(DISCOVER, extra=CL), BAD),
    R("te-and-cl-after", lambda: chunked(DISCOVER, extra=b"x-a: 1\r\n" + CL), BAD),
    R(
        "duplicate-cl-same",
        lambda: post(DISCOVER, extra=b"content-length: %d\r\n" % len(DISCOVER)),
        OK,
    ),
    R("duplicate-cl-conflicting", lambda: post(DISCOVER, extra=b"content-length: 3\r\n"), BAD),
    R("cl-list-conflicting", F(post(b"{}", length=False, extra=b"content-length: 2, 3\r\n")), BAD),
    R("cl-negative", F(post(b"", length=False, extra=b"content-length: -1\r\n")), BAD),
    R("cl-plus-sign", F(post(b"{}", length=False, extra=b"content-length: +2\r\n")), BAD),
    R("cl-hex", F(post(b"{}", length=False, extra=b"content-length: 0x2\r\n")), BAD),
    R(
        "cl-25-digits",
        F(post(b"", length=False, extra=b"content-length: " + b"9" * 25 + b"\r\n")),
        BAD,
    ),
    R("te-chunked-gzip", lambda: chunked(DISCOVER, coding=b"chunked, gzip"), Outcome(501, REFUSED)),
    R("te-gzip-chunked", lambda: chunked(DISCOVER, coding=b"gzip, chunked"), Outcome(501, REFUSED)),
    R("te-xchunked", lambda: chunked(DISCOVER, coding=b"xchunked"), Outcome(501, REFUSED)),
    R("te-identity", lambda: chunked(DISCOVER, coding=b"identity"), Outcome(501, REFUSED)),
    R(
        "te-twice",
        lambda: chunked(DISCOVER, extra=b"transfer-encoding: chunked\r\n"),
        Outcome(501, REFUSED),
    ),
    R("te-upper-case", lambda: chunked(DISCOVER, coding=b"CHUNKED"), OK),
    R(
        "te-space-before-colon",
        lambda: chunked(DISCOVER).replace(b"transfer-encoding:", b"transfer-encoding :"),
        BAD,
    ),
    # RFC 9112 §5.2, §2.2: refuse (native) or unfold / take a bare LF as a line end (h11)
    R(
        "te-obs-fold",
        lambda: chunked(DISCOVER).replace(
            b"transfer-encoding: chunked", b"transfer-encoding:\r\n chunked"
        ),
        BAD,
        hypercorn=OK,
    ),
    R("obs-fold-value", lambda: post(DISCOVER, extra=b"x-a: 1\r\n  folded\r\n"), BAD, hypercorn=OK),
    R("bare-lf-lines", lambda: post(DISCOVER).replace(b"\r\n", b"\n"), BAD, hypercorn=OK),
    R("bare-cr-in-value", lambda: post(DISCOVER, extra=b"x-a: 1\r2\r\n"), BAD),
    R("nul-in-value", lambda: post(DISCOVER, extra=b"x-a: 1\x002\r\n"), BAD),
    R("nul-in-target", lambda: post(DISCOVER, target=b"/mcp\x00"), BAD),
    R("chunk-size-not-hex", lambda: chunked(DISCOVER, size=b"zz"), BAD),
    R("chunk-size-0x", lambda: chunked(DISCOVER, size=b"0x%x" % len(DISCOVER)), BAD),
    R("chunk-size-negative", lambda: chunked(DISCOVER, size=b"-1"), BAD),
    R("chunk-size-21-digits", lambda: chunked(DISCOVER, size=b"1" * 21), BAD),
    R("chunk-size-short", lambda: chunked(DISCOVER, size=b"%x" % (len(DISCOVER) - 5)), BAD),
    R("chunk-extension", lambda: chunked(DISCOVER, ext=b";name=value"), OK),
    R("chunk-extension-quoted", lambda: chunked(DISCOVER, ext=b';name="a b;c"'), OK),
    R("trailer-field", lambda: chunked(DISCOVER, trailer=b"x-trailer: 1\r\n"), OK),
    R("trailer-not-a-field", lambda: chunked(DISCOVER, trailer=b"not a field\r\n"), BAD),
    R(
        "head-over-64k",
        F(post(DISCOVER, extra=b"x-pad: " + b"a" * 70_000 + b"\r\n")),
        Outcome(431, REFUSED),
    ),
    R(
        "request-line-over-64k",
        F(post(DISCOVER, target=b"/mcp?" + b"a" * 70_000)),
        Outcome(431, REFUSED),
    ),
    R(
        "body-over-max",
        F(post(b"", length=False, extra=b"content-length: 4194305\r\n")),
        Outcome(413, REFUSED),
    ),
    R("expect-continue", lambda: post(DISCOVER, extra=b"expect: 100-continue\r\n"), OK),
    R("expect-unknown", lambda: post(DISCOVER, extra=b"expect: teapot\r\n"), OK),
    R(
        "expect-continue-http10",
        lambda: post(DISCOVER, version=b"HTTP/1.0", extra=b"expect: 100-continue\r\n"),
        OK,
    ),
    R("absolute-form-target", lambda: post(DISCOVER, target=b"http://127.0.0.1/mcp"), OK),
    R("absolute-form-ftp", lambda: post(DISCOVER, target=b"ftp://127.0.0.1/mcp"), BAD),
    R("target-percent-encoded", lambda: post(DISCOVER, target=b"/%6dcp"), OK),
    R("target-with-query", lambda: post(DISCOVER, target=b"/mcp?x=1"), OK),
    R("target-other-path", lambda: post(DISCOVER, target=b"/mcp/"), Outcome(404)),
    R("target-upper-case", lambda: post(DISCOVER, target=b"/MCP"), Outcome(404)),
    R("target-asterisk", lambda: post(DISCOVER, target=b"*"), BAD),
    R("target-two-spaces", lambda: post(DISCOVER).replace(b"POST /mcp", b"POST  /mcp", 1), BAD),
    R("http-0.9", F(b"GET /mcp\r\n\r\n"), BAD),
    R(
        "http-2-preface",
        F(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
        Outcome(505, REFUSED),
        hypercorn=NOT_HTTP1,
    ),
    # RFC 9110 §2.5: a higher minor version SHOULD be served as 1.1
    R("http-1.2", lambda: post(DISCOVER, version=b"HTTP/1.2"), OK),
    # RFC 9112 §2.3: HTTP-name is case-sensitive, so no version at all (400)
    R("lower-case-version", lambda: post(DISCOVER, version=b"http/1.1"), BAD),
    R("method-not-a-token", lambda: post(DISCOVER).replace(b"POST", b"PO(T", 1), BAD),
    R("method-put", lambda: post(DISCOVER).replace(b"POST", b"PUT", 1), Outcome(405)),
    R("garbage", F(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"), BAD),
    # Hypercorn races its own error path against the application's refusal when bytes follow
    # it (HARDENING.md): the refusal comes whole, cut after its head, or not at all; never more
    R(
        "pipelined-after-cl-te",
        lambda: chunked(DISCOVER, extra=CL) + good(),
        BAD,
        alone=True,
        hypercorn=(BAD, Outcome(400), CLOSED),
    ),
    R(
        "pipelined-after-conflicting-cl",
        lambda: post(DISCOVER, extra=b"content-length: 3\r\n") + good(),
        BAD,
        alone=True,
    ),
    R(
        "pipelined-after-413",
        lambda: post(b"", length=False, extra=b"content-length: 4194305\r\n") + good(),
        Outcome(413, REFUSED),
        alone=True,
    ),
    # Content-Length rules: the chunk-like body is the JSON 0, the request after it another one
    R(
        "cl-body-looks-chunked",
        lambda: post(b"0\r\n\r\n" + good(), length=False, extra=b"content-length: 5\r\n"),
        BAD,
    ),
    # RFC 9112 §8: an incomplete request MAY get an error before the close (h11 sends 400)
    R(
        "head-then-eof",
        F(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n"),
        CLOSED,
        eof=True,
        hypercorn=BAD,
    ),
    R("body-short-then-eof", lambda: post(DISCOVER)[:-10], CLOSED, eof=True, hypercorn=BAD),
    R("nothing-then-eof", F(b""), CLOSED, eof=True),
]

HEADERS = [
    R(
        "too-many-headers",
        F(post(DISCOVER, extra=b"".join(b"x-h%d: 1\r\n" % i for i in range(100)))),
        Outcome(431, REFUSED),
    ),
    R(
        "huge-header-value",
        F(post(DISCOVER, extra=b"x-big: " + b"v" * 66_000 + b"\r\n")),
        Outcome(431, REFUSED),
    ),
    R("duplicate-host-same", lambda: post(DISCOVER, extra=b"host: 127.0.0.1\r\n"), BAD),
    R("duplicate-host-other", lambda: post(DISCOVER, extra=b"host: evil.example\r\n"), BAD),
    R(
        "missing-host-1.1",
        lambda: post(DISCOVER, without(mirrored("server/discover"), b"host")),
        BAD,
    ),
    R(
        "missing-host-1.0",
        lambda: post(DISCOVER, without(mirrored("server/discover"), b"host"), version=b"HTTP/1.0"),
        Outcome(403, REFUSED),
    ),
    R("header-name-with-space", lambda: post(DISCOVER, extra=b"x bad: 1\r\n"), BAD),
    R("header-without-colon", lambda: post(DISCOVER, extra=b"just-a-name\r\n"), BAD),
    R("header-empty-name", lambda: post(DISCOVER, extra=b": value\r\n"), BAD),
    R("header-name-non-ascii", lambda: post(DISCOVER, extra=b"x-caf\xc3\xa9: 1\r\n"), BAD),
    R("header-value-obs-text", lambda: post(DISCOVER, extra=b"x-a: caf\xc3\xa9\r\n"), OK),
    R(
        "mcp-name-raw-utf8",
        lambda: call(
            "echo",
            {"text": "x"},
            headers=replaced(mirrored("tools/call", "echo"), b"mcp-name", "échо".encode()),
        ),
        Outcome(400, -32020),
    ),
]

JSON_RPC = [
    R("empty-body", F(post(b"")), Outcome(400, -32700)),
    R("unparsable", F(post(b'{"jsonrpc": "2.0", "id": 1,')), Outcome(400, -32700)),
    R("scalar", F(post(b"42")), BAD),
    R("string", F(post(b'"server/discover"')), BAD),
    R("null", F(post(b"null")), BAD),
    R("jsonrpc-1.0", lambda: post(body("server/discover", jsonrpc="1.0")), BAD),
    R("jsonrpc-number", lambda: post(body("server/discover", jsonrpc=2.0)), BAD),
    R("jsonrpc-missing", lambda: post(DISCOVER.replace(b'"jsonrpc": "2.0", ', b"")), BAD),
    R("id-null", lambda: post(body("server/discover", id_=None)), BAD),
    R("id-float", lambda: post(body("server/discover", id_=1.5)), BAD),
    R("id-exponent", lambda: post(DISCOVER.replace(b'"id": 1', b'"id": 1e2')), BAD),
    R("id-bool", lambda: post(body("server/discover", id_=True)), BAD),
    R("id-object", lambda: post(body("server/discover", id_={"a": 1})), BAD),
    R("id-array", lambda: post(body("server/discover", id_=[1])), BAD),
    R("id-string", lambda: post(body("server/discover", id_="x" * 1000)), OK),
    R("method-missing", lambda: post(DISCOVER.replace(b'"method": "server/discover", ', b"")), BAD),
    R("method-number", lambda: post(DISCOVER.replace(b'"server/discover"', b"7")), BAD),
    R(
        "params-array",
        lambda: post(b'{"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": []}'),
        BAD,
    ),
    R(
        "params-string",
        lambda: post(b'{"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": "x"}'),
        BAD,
    ),
    R("modern-batch", lambda: post(b"[" + DISCOVER + b"]"), BAD),
    R("modern-batch-of-two", lambda: post(b"[" + DISCOVER + b"," + DISCOVER + b"]"), BAD),
    R("empty-batch", F(post(b"[]")), BAD),
    R("nested-batch", lambda: post(b"[[" + DISCOVER + b"]]"), BAD),
    R(
        "notification",
        lambda: post(
            json.dumps(
                {"jsonrpc": "2.0", "method": "notifications/x", "params": {"_meta": meta()}}
            ).encode()
        ),
        Outcome(202),
    ),
    R("depth-over-max", lambda: post(nested(65)), BAD),
    R(
        "depth-100k",
        F(
            post(
                b'{"jsonrpc":"2.0","id":1,"method":"server/discover","params":'
                + b"[" * 100_000
                + b"]" * 100_000
                + b"}"
            )
        ),
        BAD,
    ),
    R(
        "huge-float-argument",
        lambda: call("add", {"a": 1, "b": 2}, patch=(b'"b": 2', b'"b": 1e400')),
        OK,
    ),
    R(
        "huge-integer-argument",
        lambda: call("add", {"a": 1, "b": 2}, patch=(b'"b": 2', b'"b": ' + b"9" * 5000)),
        OK,
    ),
    R("huge-integer-id", lambda: post(DISCOVER.replace(b'"id": 1', b'"id": ' + b"9" * 400)), OK),
    R("huge-string", lambda: call("echo", {"text": "s" * (3 << 20)}), OK),
    R(
        "invalid-utf8-in-string",
        lambda: call("echo", {"text": "@"}, patch=(b'"@"', b'"\xff\xfe"')),
        Outcome(400, -32700),
    ),
    R(
        "invalid-utf8-overlong",
        lambda: call("echo", {"text": "@"}, patch=(b'"@"', b'"\xc0\xaf"')),
        Outcome(400, -32700),
    ),
    R(
        "lone-high-surrogate",
        lambda: call("echo", {"text": "@"}, patch=(b'"@"', b'"\\ud800"')),
        Outcome(400, -32700),
    ),
    R(
        "lone-low-surrogate",
        lambda: call("echo", {"text": "@"}, patch=(b'"@"', b'"\\udc00x"')),
        Outcome(400, -32700),
    ),
    R(
        "surrogate-pair",
        lambda: call("echo", {"text": "@"}, patch=(b'"@"', b'"\\ud83d\\ude00"')),
        OK,
    ),
    R("nul-escape-in-string", lambda: call("echo", {"text": "a\x00b"}), OK),
    R("bom-before-json", lambda: post(b"\xef\xbb\xbf" + DISCOVER), Outcome(400, -32700)),
    R("trailing-garbage", lambda: post(DISCOVER + b"}"), Outcome(400, -32700)),
]

MCP = [
    R(
        "mcp-method-disagrees",
        lambda: call(
            "echo",
            {"text": "x"},
            headers=replaced(mirrored("tools/call", "echo"), b"mcp-method", b"tools/list"),
        ),
        Outcome(400, -32020),
    ),
    R(
        "mcp-method-missing",
        lambda: call(
            "echo", {"text": "x"}, headers=without(mirrored("tools/call", "echo"), b"mcp-method")
        ),
        Outcome(400, -32020),
    ),
    R(
        "mcp-method-upper-case",
        lambda: call(
            "echo",
            {"text": "x"},
            headers=replaced(mirrored("tools/call", "echo"), b"mcp-method", b"TOOLS/CALL"),
        ),
        Outcome(400, -32020),
    ),
    R(
        "mcp-name-disagrees",
        lambda: call("echo", {"text": "x"}, headers=mirrored("tools/call", "add")),
        Outcome(400, -32020),
    ),
    R(
        "mcp-name-missing",
        lambda: call("echo", {"text": "x"}, headers=mirrored("tools/call")),
        Outcome(400, -32020),
    ),
    R(
        "mcp-name-base64",
        lambda: call("echo", {"text": "x"}, headers=mirrored("tools/call", "=?base64?ZWNobw==?=")),
        OK,
    ),
    R(
        "mcp-name-bad-base64",
        lambda: call("echo", {"text": "x"}, headers=mirrored("tools/call", "=?base64?!!!?=")),
        Outcome(400, -32020),
    ),
    R(
        "mcp-name-padded",
        lambda: call("echo", {"text": "x"}, headers=mirrored("tools/call", "  echo  ")),
        OK,
    ),
    R(
        "mcp-param-disagrees",
        lambda: call(
            "weather",
            {"region": "eu"},
            headers=[*mirrored("tools/call", "weather"), (b"mcp-param-region", b"us")],
        ),
        Outcome(400, -32020),
    ),
    R("mcp-param-missing", lambda: call("weather", {"region": "eu"}), Outcome(400, -32020)),
    R(
        "mcp-param-without-body",
        lambda: call(
            "weather",
            {},
            headers=[*mirrored("tools/call", "weather"), (b"mcp-param-region", b"eu")],
        ),
        Outcome(400, -32020),
    ),
    R(
        "mcp-param-agrees",
        lambda: call(
            "weather",
            {"region": "eu"},
            headers=[*mirrored("tools/call", "weather"), (b"mcp-param-region", b"eu")],
        ),
        OK,
    ),
    R(
        "mcp-param-unknown",
        lambda: call(
            "echo",
            {"text": "x"},
            headers=[*mirrored("tools/call", "echo"), (b"mcp-param-other", b"1")],
        ),
        OK,
    ),
    R(
        "no-meta",
        lambda: post(
            json.dumps(
                {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}}
            ).encode()
        ),
        Outcome(400, -32602),
    ),
    R(
        "meta-without-capabilities",
        lambda: post(
            body("server/discover", {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}})
        ),
        Outcome(400, -32602),
    ),
    R(
        "version-header-older-than-meta",
        lambda: post(
            DISCOVER, replaced(mirrored("server/discover"), b"mcp-protocol-version", b"2025-11-25")
        ),
        Outcome(400, -32020),
    ),
    R(
        "version-meta-older-than-header",
        lambda: post(
            body(
                "server/discover",
                {"_meta": meta(**{"io.modelcontextprotocol/protocolVersion": "2025-11-25"})},
            )
        ),
        Outcome(400, -32020),
    ),
    R(
        "version-header-missing",
        lambda: post(DISCOVER, without(mirrored("server/discover"), b"mcp-protocol-version")),
        Outcome(400, -32020),
    ),
    R(
        "version-unknown-both",
        lambda: post(
            body(
                "server/discover",
                {"_meta": meta(**{"io.modelcontextprotocol/protocolVersion": "2099-01-01"})},
            ),
            replaced(mirrored("server/discover"), b"mcp-protocol-version", b"2099-01-01"),
        ),
        Outcome(400, -32022),
    ),
    R(
        "method-unknown",
        lambda: post(body("nope/nope"), mirrored("nope/nope")),
        Outcome(404, -32601),
    ),
    R("method-removed-ping", lambda: post(body("ping"), mirrored("ping")), Outcome(404, -32601)),
    R("tool-unknown", lambda: call("nope", {}), Outcome(200, -32602)),
    R(
        "log-level-unknown",
        lambda: post(
            body("server/discover", {"_meta": meta(**{"io.modelcontextprotocol/logLevel": "loud"})})
        ),
        Outcome(200, -32602),
    ),
    R(
        "session-id-on-modern",
        lambda: post(DISCOVER, [*mirrored("server/discover"), (b"mcp-session-id", b"forged")]),
        OK,
    ),
    R("tasks-undeclared", lambda: task_get("t-1", capabilities=None), Outcome(400, -32021)),
]

TOKENS = [
    R("cursor-valid", lambda: list_tools(cursor("o:2")), OK),
    R("cursor-garbage", lambda: list_tools("!!not base64!!"), Outcome(200, -32602)),
    R("cursor-empty", lambda: list_tools(""), Outcome(200, -32602)),
    R("cursor-past-end", lambda: list_tools(cursor("o:999")), Outcome(200, -32602)),
    R("cursor-negative", lambda: list_tools(cursor("o:-1")), Outcome(200, -32602)),
    R("cursor-other-kind", lambda: list_tools(cursor("x:2")), Outcome(200, -32602)),
    R("cursor-number", lambda: list_tools(2), Outcome(200, -32602)),
    R("task-id-unknown", lambda: task_get("0" * 22), Outcome(200, -32602)),
    R("task-id-empty", lambda: task_get(""), Outcome(200, -32602)),
    R("task-id-huge", lambda: task_get("t" * 30_000), Outcome(200, -32602)),
    R("task-id-over-the-head", lambda: task_get("t" * 70_000), Outcome(431, REFUSED)),
    R("task-id-number", lambda: task_get(7), Outcome(400, -32020)),
    R(
        "task-id-name-disagrees",
        lambda: post(
            body("tasks/get", {"taskId": "a", "_meta": meta(TASKS)}), mirrored("tasks/get", "b")
        ),
        Outcome(400, -32020),
    ),
    R("state-valid", lambda: state_call(greet_state()), OK),
    R("state-truncated", lambda: state_call(greet_state()[:-10]), Outcome(200, -32602)),
    R("state-flipped-mac", lambda: state_call(flipped(greet_state())), Outcome(200, -32602)),
    R(
        "state-flipped-payload",
        lambda: state_call(flipped(greet_state(), at=30)),
        Outcome(200, -32602),
    ),
    R("state-base64-garbage", lambda: state_call("v1.k1.1.!!!.@@@"), Outcome(200, -32602)),
    R(
        "state-not-a-token",
        lambda: state_call(base64.b64encode(b"\x00" * 64).decode()),
        Outcome(200, -32602),
    ),
    R(
        "state-into-other-tool",
        lambda: state_call(greet_state(), "echo", {"text": "x"}),
        Outcome(200, -32602),
    ),
    R(
        "state-other-arguments",
        lambda: state_call(greet_state(), "greet", {"x": 1}),
        Outcome(200, -32602),
    ),
    R(
        "state-into-other-method",
        lambda: post(
            body(
                "prompts/get",
                {"name": "describe", "arguments": {"city": "Rome"}, "requestState": greet_state()},
            ),
            mirrored("prompts/get", "describe"),
        ),
        Outcome(200, -32602),
    ),
    R("state-expired", lambda: state_call(greet_state(age=700)), Outcome(200, -32602)),
    R("state-from-future", lambda: state_call(greet_state(age=-1000)), Outcome(200, -32602)),
    R(
        "state-other-deployment",
        lambda: state_call(greet_state(OTHER_DEPLOYMENT)),
        Outcome(200, -32602),
    ),
    R("state-unknown-key", lambda: state_call(greet_state(FOREIGN_KID)), Outcome(200, -32602)),
    R("state-over-max", lambda: state_call("v1." + "a" * (1 << 20)), Outcome(200, -32602)),
    R("state-number", lambda: state_call(12345), Outcome(200, -32602)),
    R("session-valid", lambda: legacy("ping", session_token()), OK),
    R("session-forged", lambda: legacy("ping", "forged-session-id"), Outcome(404, -32001)),
    R("session-truncated", lambda: legacy("ping", session_token()[:-8]), Outcome(404, -32001)),
    R("session-flipped", lambda: legacy("ping", flipped(session_token())), Outcome(404, -32001)),
    R(
        "session-other-deployment",
        lambda: legacy("ping", session_token(OTHER_DEPLOYMENT)),
        Outcome(404, -32001),
    ),
    R(
        "session-unknown-key",
        lambda: legacy("ping", session_token(FOREIGN_KID)),
        Outcome(404, -32001),
    ),
    R(
        "session-expired",
        lambda: legacy("ping", session_token(age=25 * 3600)),
        Outcome(404, -32001),
    ),
    R(
        "session-from-future",
        lambda: legacy("ping", session_token(age=-1000)),
        Outcome(404, -32001),
    ),
    R(
        "session-past-lifetime",
        lambda: legacy("ping", session_token(started_ago=8 * 24 * 3600)),
        Outcome(404, -32001),
    ),
    R("session-huge", lambda: legacy("ping", "v1." + "a" * 20_000), Outcome(404, -32001)),
    R("session-missing", lambda: legacy("tools/list", None), BAD),
    R(
        "session-with-modern-version",
        lambda: legacy("ping", session_token(), version=MODERN),
        Outcome(400, -32022),
    ),
    R(
        "session-batch-2025-11-25",
        lambda: post(
            b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]',
            [
                *MODERN_BASE,
                (b"mcp-protocol-version", b"2025-11-25"),
                (b"mcp-session-id", session_token().encode()),
            ],
        ),
        BAD,
    ),
    R("session-get-forged", lambda: legacy("", "forged", verb=b"GET"), Outcome(404, -32001)),
    R("session-delete-forged", lambda: legacy("", "forged", verb=b"DELETE"), Outcome(404, -32001)),
]

FORBIDDEN = Outcome(403, REFUSED)
REBINDING = [
    R(
        "host-evil",
        lambda: post(DISCOVER, replaced(mirrored("server/discover"), b"host", b"evil.example")),
        FORBIDDEN,
    ),
    R(
        "host-loopback-suffix",
        lambda: post(
            DISCOVER, replaced(mirrored("server/discover"), b"host", b"127.0.0.1.evil.example")
        ),
        FORBIDDEN,
    ),
    R(
        "host-empty",
        lambda: post(DISCOVER, replaced(mirrored("server/discover"), b"host", b"")),
        FORBIDDEN,
    ),
    R(
        "host-trailing-dot",
        lambda: post(DISCOVER, replaced(mirrored("server/discover"), b"host", b"localhost.")),
        FORBIDDEN,
    ),
    R(
        "host-localhost-port",
        lambda: post(DISCOVER, replaced(mirrored("server/discover"), b"host", b"LOCALHOST:8080")),
        OK,
    ),
    R(
        "host-ipv6-loopback",
        lambda: post(DISCOVER, replaced(mirrored("server/discover"), b"host", b"[::1]:80")),
        OK,
    ),
    R(
        "host-ipv6-loopback-then-junk",
        lambda: post(
            DISCOVER, replaced(mirrored("server/discover"), b"host", b"[::1]x.evil.example")
        ),
        FORBIDDEN,
    ),
    R(
        "host-port-not-digits",
        lambda: post(DISCOVER, replaced(mirrored("server/discover"), b"host", b"localhost:80x")),
        FORBIDDEN,
    ),
    R(
        "host-ipv6-without-brackets",
        lambda: post(DISCOVER, replaced(mirrored("server/discover"), b"host", b"::1")),
        FORBIDDEN,
    ),
    R(
        "host-machine-name",
        lambda: post(
            DISCOVER,
            replaced(mirrored("server/discover"), b"host", socket.gethostname().encode()),
        ),
        OK,
    ),
    R(
        "origin-evil",
        lambda: post(DISCOVER, [*mirrored("server/discover"), (b"origin", b"http://evil.example")]),
        FORBIDDEN,
    ),
    R(
        "origin-ipv6-loopback-then-junk",
        lambda: post(
            DISCOVER, [*mirrored("server/discover"), (b"origin", b"http://[::1]x.evil.example")]
        ),
        FORBIDDEN,
    ),
    R(
        "origin-machine-name",
        lambda: post(
            DISCOVER,
            [
                *replaced(mirrored("server/discover"), b"host", socket.gethostname().encode()),
                (b"origin", f"http://{socket.gethostname()}".encode()),
            ],
        ),
        FORBIDDEN,
    ),
    R(
        "origin-null",
        lambda: post(DISCOVER, [*mirrored("server/discover"), (b"origin", b"null")]),
        FORBIDDEN,
    ),
    R(
        "origin-loopback-suffix",
        lambda: post(
            DISCOVER, [*mirrored("server/discover"), (b"origin", b"https://127.0.0.1.evil.example")]
        ),
        FORBIDDEN,
    ),
    R(
        "origin-file",
        lambda: post(DISCOVER, [*mirrored("server/discover"), (b"origin", b"file://")]),
        FORBIDDEN,
    ),
    R(
        "origin-localhost",
        lambda: post(
            DISCOVER, [*mirrored("server/discover"), (b"origin", b"http://localhost:3000")]
        ),
        OK,
    ),
    R(
        "origin-evil-on-legacy",
        lambda: legacy("ping", session_token()).replace(
            b"host: 127.0.0.1\r\n", b"host: 127.0.0.1\r\norigin: http://evil.example\r\n"
        ),
        FORBIDDEN,
    ),
    R(
        "origin-evil-on-get",
        lambda: legacy("", "forged", verb=b"GET").replace(
            b"\r\n\r\n", b"\r\norigin: http://evil.example\r\n\r\n"
        ),
        FORBIDDEN,
    ),
]

TABLE = [*FRAMING, *HEADERS, *JSON_RPC, *MCP, *TOKENS, *REBINDING]
CATEGORIES = {
    "framing": FRAMING,
    "headers": HEADERS,
    "json-rpc": JSON_RPC,
    "mcp": MCP,
    "tokens": TOKENS,
    "rebinding": REBINDING,
}


# ------------------------------------------------------------------------------ the exchange


def _address(url: str) -> tuple[str, int]:
    host, port = url.split("://")[1].split("/")[0].rsplit(":", 1)
    return host, int(port)


async def exchange(
    url: str, request: bytes, *, eof: bool = False, rest: bool = False
) -> tuple[Outcome, bytes]:
    """Send ``request`` (reading meanwhile: a server may answer before taking it all) and read
    the first final response; returns its outcome and, with ``rest``, what followed it before
    the server closed (or 3 s passed). Every read is bounded: a hang fails the test."""
    stream = await trio.open_tcp_stream(*_address(url))
    data = b""
    closed = False

    async def send() -> None:
        try:
            await stream.send_all(request)
            if eof:
                await stream.send_eof()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async with stream, trio.open_nursery() as nursery:
        nursery.start_soon(send)
        with trio.fail_after(15):
            while _response_end(data) is None and not _not_http(data):
                chunk = await _receive(stream)
                if not chunk:
                    closed = True
                    break
                data += chunk
        if rest and not closed:
            with trio.move_on_after(3):
                while chunk := await _receive(stream):
                    data += chunk
        nursery.cancel_scope.cancel()
    if not data:
        return CLOSED, b""
    if _not_http(data):
        return NOT_HTTP1, data
    end = _response_end(data)
    if end is None and closed and b"\r\n\r\n" in data:
        end = len(data)  # delimited by closing the connection (HTTP/1.0)
    assert end is not None, data[:300]
    status, payload = _parse(data[:end])
    return Outcome(status, _code(payload)), data[end:]


async def _receive(stream: trio.SocketStream) -> bytes:
    try:
        return await stream.receive_some()
    except trio.BrokenResourceError:
        return b""


def _not_http(data: bytes) -> bool:
    return len(data) >= 8 and not data.startswith(b"HTTP/1.")


def _response_end(data: bytes) -> int | None:
    """Where the first final (non-1xx) response in ``data`` ends, or None if incomplete."""
    start = 0
    while True:
        head_end = data.find(b"\r\n\r\n", start)
        if head_end == -1:
            return None
        head = data[start:head_end].lower()
        if head.startswith(b"http/1.1 1"):
            start = head_end + 4
            continue
        rest = head_end + 4
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name == b"content-length":
                end = rest + int(value)
                return end if len(data) >= end else None
        if b"transfer-encoding: chunked" in head:
            last = data.find(b"\r\n0\r\n\r\n", rest - 2)
            return last + 7 if last != -1 else None
        return None


def _parse(response: bytes) -> tuple[int, bytes]:
    while response.startswith(b"HTTP/1.1 1"):
        response = response[response.find(b"\r\n\r\n") + 4 :]
    head, _, payload = response.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in head.lower():
        out = b""
        while True:
            size_line, _, payload = payload.partition(b"\r\n")
            if not size_line:
                break  # cut off by the close
            size = int(size_line.split(b";")[0], 16)
            if not size:
                break
            out, payload = out + payload[:size], payload[size + 2 :]
        payload = out
    if b"text/event-stream" in head.lower():
        events = [line[6:] for line in payload.split(b"\n") if line.startswith(b"data: ")]
        payload = events[-1] if events else b""
    return int(head.split(b" ", 2)[1]), payload


def _code(payload: bytes) -> int | None:
    if not payload.strip().startswith((b"{", b"[")):
        return None
    message = json.loads(payload)
    if isinstance(message, list):
        return None
    error = message.get("error")
    return error["code"] if error else None


async def healthy(url: str) -> None:
    """The server still answers a good request (on a new connection) at once."""
    outcome, _ = await exchange(url, good())
    assert outcome == OK, f"not healthy after the row: {outcome}"


async def run_row(url: str, row: Row) -> Outcome:
    """Send one row; check what must hold of every row (no 5xx but 501/505, a refusal closes the
    connection before anything more is answered); return its outcome."""
    outcome, rest = await exchange(url, row.build(), eof=row.eof, rest=row.alone)
    assert outcome.status < 500 or outcome.status in (501, 505), (row.name, outcome)
    if row.alone:
        assert b"HTTP/1.1" not in rest, f"{row.name}: answered past the refusal: {rest[:200]!r}"
    return outcome


# ---------------------------------------------------------------------------------- the tests


def test_the_table_is_large_and_its_names_unique() -> None:
    assert len(TABLE) >= 100
    assert len({row.name for row in TABLE}) == len(TABLE)


@pytest.mark.parametrize("row", TABLE, ids=[row.name for row in TABLE])
async def test_hostile_request(row: Row) -> None:
    """Each row on the engine under test (`ENGINE`; ``make test`` runs both, on both codecs)."""
    async with running(hostile_server(), **CONFIG) as url:
        assert await run_row(url, row) in row.expected(ENGINE), row.name
        await healthy(url)


@pytest.mark.timeout(240)  # every row twice, each engine checked healthy after it
async def test_both_engines_give_the_same_answer_to_every_row() -> None:
    """Both engines at once, in one process: every row's status and code the same on each (but
    for the engine differences the table states), and each server healthy after every row."""
    async with (
        running(hostile_server(), engine="hypercorn", **CONFIG) as hypercorn,
        running(hostile_server(), engine="native", **CONFIG) as native,
    ):
        differ = []
        for row in TABLE:
            got = {"hypercorn": await run_row(hypercorn, row), "native": await run_row(native, row)}
            want = {engine: row.expected(engine) for engine in got}
            if any(got[engine] not in want[engine] for engine in got):
                differ.append(f"{row.name}: got {got}, want {want}")
            await healthy(hypercorn)
            await healthy(native)
        assert not differ, "\n".join(differ)
