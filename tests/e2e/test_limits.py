"""Bad input gets a clear JSON-RPC error and status: never a crash, a hang or unbounded memory."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
import trio

from mcpfast.demo import server as demo_server
from mcpfast.server.config import Config

from ..helpers import MODERN, Wire, meta, raw_http, running


async def test_unparsable_json_is_32700_400(wire: Wire) -> None:
    reply = await wire.post(
        None, {"mcp-protocol-version": MODERN}, raw=b'{"jsonrpc": "2.0", "id": 1,'
    )
    assert reply.status == 400
    assert reply.error["code"] == -32700 and "id" not in reply.message


async def test_not_a_request_is_32600_with_the_id(wire: Wire) -> None:
    reply = await wire.post(
        {"jsonrpc": "1.0", "id": 5, "method": "x"}, {"mcp-protocol-version": MODERN}
    )
    assert reply.status == 400
    assert reply.error["code"] == -32600 and reply.message["id"] == 5
    scalar = await wire.post(None, {}, raw=b"42")
    assert scalar.status == 400 and scalar.error["code"] == -32600


async def test_deep_nesting_is_refused(wire: Wire) -> None:
    body = (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":'
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}}}"
    )
    reply = await wire.post(None, {"mcp-protocol-version": MODERN}, raw=body)
    assert reply.status == 400
    assert reply.error["data"]["reason"] == "nesting too deep"


async def test_body_over_the_limit_is_413_without_reading_it(wire: Wire) -> None:
    huge = b"x" * (5 * 1024 * 1024)
    request = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(huge)).encode() + b"\r\n\r\n"
    )
    reply = await raw_http(wire.url, request)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:100]
    assert b'"code":-32600' in reply


async def test_chunked_body_over_the_limit_is_413(wire: Wire) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(9):
            yield b"x" * (512 * 1024)

    response = await wire.client.post(
        wire.url, content=chunks(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 413


async def test_wrong_path_is_404(wire: Wire) -> None:
    response = await wire.client.post(wire.url.replace("/mcp", "/other"), content=b"{}")
    assert response.status_code == 404


async def test_server_survives_garbage(wire: Wire) -> None:
    for raw in (
        b"",
        b"\xff\xfe",
        b"[]",
        b"[1,2]",
        b'{"jsonrpc":"2.0","id":null,"method":"x"}',
        b"null",
    ):
        reply = await wire.post(None, {"mcp-protocol-version": MODERN}, raw=raw)
        assert reply.status in (400, 202), raw
    ok = await wire.modern("server/discover")
    assert ok.status == 200


# One table of limits, the same on both engines (docs/servers.md "HTTP engines"): each row a
# request as bytes, the status it gets and, for a refusal, the JSON-RPC error code of the body.
# "at" rows sit exactly on a limit (they pass), "over" rows one byte (or one header, one level)
# past it.
ENGINES = ("hypercorn", "native")
HEAD = Config().max_header_bytes
HEADERS = Config().max_headers
BODY = Config().max_body
DEPTH = Config().max_depth
DISCOVER = json.dumps(
    {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta()}}
).encode()
BASE = (
    b"host: 127.0.0.1\r\ncontent-type: application/json\r\n"
    b"accept: application/json, text/event-stream\r\nmcp-protocol-version: "
    + MODERN.encode()
    + b"\r\n"
    b"mcp-method: server/discover\r\n"
)
BASE_COUNT = BASE.count(b"\r\n")


def _request(body: bytes = DISCOVER, *, extra: bytes = b"", head_size: int | None = None) -> bytes:
    """A POST of ``body``; with ``head_size``, an ``x-pad`` header makes the head (request line
    and header lines, without the blank line that ends it) exactly that many bytes."""
    head = b"POST /mcp HTTP/1.1\r\n" + BASE + extra + b"content-length: %d" % len(body)
    if head_size is not None:
        pad = head_size - len(head) - len(b"\r\nx-pad: ")
        head += b"\r\nx-pad: " + b"a" * pad
        assert len(head) == head_size
    return head + b"\r\n\r\n" + body


def _headers(count: int) -> bytes:
    """A POST with ``count`` header lines in all."""
    extra = b"".join(b"x-h%d: 1\r\n" % i for i in range(count - BASE_COUNT - 1))
    return _request(extra=extra)


def _padded(size: int) -> bytes:
    """`DISCOVER` padded with trailing spaces (valid JSON) to ``size`` bytes."""
    return DISCOVER + b" " * (size - len(DISCOVER))


def _chunked(body: bytes, *, extension: bytes = b"", trailer: bytes = b"") -> bytes:
    """A chunked POST of ``body`` in 1 MiB chunks."""
    step = 1 << 20
    chunks = b"".join(
        b"%x%b\r\n%b\r\n" % (len(body[i : i + step]), extension, body[i : i + step])
        for i in range(0, len(body), step)
    )
    return (
        b"POST /mcp HTTP/1.1\r\n"
        + BASE
        + b"transfer-encoding: chunked\r\n\r\n"
        + chunks
        + b"0\r\n"
        + trailer
        + b"\r\n"
    )


def _nested(depth: int) -> bytes:
    """`DISCOVER` with a param nested so that the body's deepest level is ``depth`` (the message
    is level 1, its params 2)."""
    message = json.loads(DISCOVER)
    nested: list[object] = []
    for _ in range(depth - 3):
        nested = [nested]
    message["params"]["x"] = nested
    return json.dumps(message).encode()


LIMITS = [
    pytest.param(_request(head_size=HEAD), 200, None, id="head-at-max_header_bytes"),
    pytest.param(_request(head_size=HEAD + 1), 431, -32600, id="head-over-max_header_bytes"),
    pytest.param(_request(extra=b"x-big: " + b"a" * 65536 + b"\r\n"), 431, -32600, id="64k-value"),
    pytest.param(
        _request(extra=b"x-big: " + b"a" * 300_000 + b"\r\n"), 431, -32600, id="300k-value"
    ),
    pytest.param(_headers(HEADERS), 200, None, id="headers-at-max_headers"),
    pytest.param(_headers(HEADERS + 1), 431, -32600, id="headers-over-max_headers"),
    pytest.param(_request(_padded(BODY)), 200, None, id="body-at-max_body"),
    pytest.param(_request(_padded(BODY + 1)), 413, -32600, id="body-over-max_body"),
    pytest.param(_chunked(_padded(BODY)), 200, None, id="chunked-at-max_body"),
    pytest.param(_chunked(_padded(BODY + 1)), 413, -32600, id="chunked-over-max_body"),
    pytest.param(
        _chunked(DISCOVER, extension=b";x=" + b"a" * 300_000), 431, -32600, id="chunk-line-300k"
    ),
    pytest.param(
        _chunked(DISCOVER, trailer=b"x-t: " + b"a" * 300_000 + b"\r\n"),
        431,
        -32600,
        id="trailer-300k",
    ),
    pytest.param(_request(_nested(DEPTH)), 200, None, id="depth-at-max_depth"),
    pytest.param(_request(_nested(DEPTH + 1)), 400, -32600, id="depth-over-max_depth"),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("request_bytes", "status", "code"), LIMITS)
async def test_limits_are_the_same_on_both_engines(
    engine: str, request_bytes: bytes, status: int, code: int | None
) -> None:
    async with running(demo_server, engine=engine) as url:
        reply_status, body = await _exchange(url, request_bytes)
        assert reply_status == status, body[:200]
        if code is None:
            assert "result" in json.loads(body), body[:200]
        else:
            assert json.loads(body)["error"]["code"] == code
        # the server answers the next client as before
        assert (await _exchange(url, _request()))[0] == 200


async def _exchange(url: str, request: bytes) -> tuple[int, bytes]:
    """Send ``request`` (while reading, so that a server that answers early is heard even if
    it closes before taking the rest) and return the reply's status and body."""
    host, port = url.split("://")[1].split("/")[0].rsplit(":", 1)
    stream = await trio.open_tcp_stream(host, int(port))
    data = b""

    async def send() -> None:
        try:
            await stream.send_all(request)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async with stream, trio.open_nursery() as nursery:
        nursery.start_soon(send)
        with trio.fail_after(20):
            while not _whole(data):
                try:
                    chunk = await stream.receive_some()
                except trio.BrokenResourceError:
                    break
                if not chunk:
                    break
                data += chunk
        nursery.cancel_scope.cancel()
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 "), data[:200]
    if b"transfer-encoding: chunked" in head.lower():
        body = _unchunked(body)
    return int(head.split(b" ", 2)[1]), body


def _whole(data: bytes) -> bool:
    """Whether ``data`` holds a whole response (a ``Content-Length`` or chunked one)."""
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return body.endswith(b"0\r\n\r\n")


def _unchunked(body: bytes) -> bytes:
    out = b""
    while True:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            return out
        out, body = out + body[:size], body[size + 2 :]


# Slow clients, with a read timeout of 1 s: the same on both engines (docs/servers.md "HTTP engines").
SLOW = {"read_timeout_seconds": 1.0}


async def _open(url: str) -> trio.SocketStream:
    host, port = url.split("://")[1].split("/")[0].rsplit(":", 1)
    return await trio.open_tcp_stream(host, int(port))


async def _until_closed(stream: trio.SocketStream, drip: bytes = b"") -> bytes:
    """What the server sends until it closes the connection (within 5 s), ``drip`` sent every
    0.1 s meanwhile."""
    data = b""
    with trio.fail_after(5):
        while True:
            if drip:
                try:
                    await stream.send_all(drip)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    drip = b""
            with trio.move_on_after(0.1):
                try:
                    chunk = await stream.receive_some()
                except trio.BrokenResourceError:
                    return data
                if not chunk:
                    return data
                data += chunk


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_head_that_does_not_come_in_time_is_dropped(engine: str) -> None:
    """The whole head must arrive within ``read_timeout_seconds``: a client dripping header
    lines (slowloris) is disconnected without an answer."""
    async with running(demo_server, engine=engine, **SLOW) as url:
        stream = await _open(url)
        async with stream:
            await stream.send_all(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n")
            start = trio.current_time()
            assert await _until_closed(stream, b"x-drip: 1\r\n") == b""
            assert 0.5 < trio.current_time() - start < 3


@pytest.mark.parametrize("drip", [b"", b" "], ids=["stalled", "dripping"])
@pytest.mark.parametrize("engine", ENGINES)
async def test_a_body_that_does_not_come_in_time_is_408(engine: str, drip: bytes) -> None:
    """The body must arrive within ``read_timeout_seconds`` of its head: 408 with a JSON-RPC
    error, and the connection closed."""
    async with running(demo_server, engine=engine, **SLOW) as url:
        stream = await _open(url)
        async with stream:
            await stream.send_all(_request(b" " * 1000)[:-990])
            start = trio.current_time()
            reply = await _until_closed(stream, drip)
            assert 0.5 < trio.current_time() - start < 3
        head, _, body = reply.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408 "), reply[:200]
        if b"transfer-encoding: chunked" in head.lower():
            body = _unchunked(body)
        assert json.loads(body)["error"]["code"] == -32600


@pytest.mark.parametrize("engine", ENGINES)
async def test_an_idle_connection_is_closed(engine: str) -> None:
    async with running(demo_server, engine=engine, **SLOW) as url:
        stream = await _open(url)
        async with stream:
            await stream.send_all(_request())
            start = trio.current_time()
            reply = await _until_closed(stream)
            assert reply.startswith(b"HTTP/1.1 200 ")
            assert 0.5 < trio.current_time() - start < 3


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_response_stream_outlives_the_read_timeout(engine: str) -> None:
    """The read timeout is for requests: a stream whose client sends nothing more goes on."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": "sub-1",
            "method": "subscriptions/listen",
            "params": {"_meta": meta(), "notifications": {"toolsListChanged": True}},
        }
    ).encode()
    request = (
        b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"accept: text/event-stream\r\nmcp-protocol-version: " + MODERN.encode() + b"\r\n"
        b"mcp-method: subscriptions/listen\r\ncontent-length: %d\r\n\r\n" % len(body) + body
    )
    async with running(demo_server, engine=engine, keepalive_seconds=0.5, **SLOW) as url:
        stream = await _open(url)
        async with stream:
            await stream.send_all(request)
            data = b""
            closed = False
            with trio.move_on_after(2.5):
                while chunk := await stream.receive_some():
                    data += chunk
                closed = True
            assert data.startswith(b"HTTP/1.1 200 "), data[:200]
            assert not closed, "the server closed the stream"
            assert data.count(b": keep-alive") >= 3, data[-300:]
