"""The native engine's HTTP/1.1 on real sockets, read back with h11 (an independent parser):
keep-alive, pipelining, chunked bodies, ``Expect: 100-continue``, HTTP/1.0, refusals, timeouts
and hand-off of a connection whose handler outlives its stream."""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator
from typing import Any

import h11
import httpx2
import pytest
import trio
import trio.testing

import mcpfast
from mcpfast.demo import server as demo_server
from mcpfast.server.engines.http1 import EAGER_RETRY

from ..helpers import meta, running


@pytest.fixture
async def address() -> AsyncIterator[tuple[str, int]]:
    async with running(demo_server, engine="native", read_timeout_seconds=1.0) as url:
        host, port = url.split("://")[1].split("/")[0].rsplit(":", 1)
        yield host, int(port)


def call(text: str, id_: int = 1) -> bytes:
    """A 2026-07-28 ``tools/call`` of ``echo``."""
    body = {
        "jsonrpc": "2.0",
        "id": id_,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": text}, "_meta": meta()},
    }
    return json.dumps(body).encode()


MODERN_HEADERS = (
    b"host: 127.0.0.1\r\ncontent-type: application/json\r\n"
    b"accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\n"
    b"mcp-method: tools/call\r\nmcp-name: echo\r\n"
)


def post(body: bytes, *, extra: bytes = b"", version: bytes = b"HTTP/1.1") -> bytes:
    return (
        b"POST /mcp "
        + version
        + b"\r\n"
        + MODERN_HEADERS
        + extra
        + b"content-length: %d\r\n\r\n" % len(body)
        + body
    )


class Reader:
    """Responses read off a raw connection with h11."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.h11 = h11.Connection(h11.CLIENT)

    async def event(self) -> Any:
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            self.h11.receive_data(await self.stream.receive_some())

    async def response(self) -> tuple[h11.Response, bytes]:
        """The next final response and its body (informational responses are skipped)."""
        head = await self.event()
        while isinstance(head, h11.InformationalResponse):
            head = await self.event()
        assert isinstance(head, h11.Response), head
        body = b""
        while not isinstance(event := await self.event(), h11.EndOfMessage):
            body += event.data
        return head, body

    def next_request(self) -> None:
        """Tell h11 we send another request on this connection (we write raw bytes)."""
        self.h11.start_next_cycle()

    def expect(self, method: bytes = b"POST") -> None:
        self.h11.send(h11.Request(method=method, target="/mcp", headers=[("host", "x")]))
        self.h11.send(h11.EndOfMessage())


async def closed(stream: trio.SocketStream) -> bool:
    """Whether the server closes the connection (reads until EOF, within 3 s)."""
    with trio.move_on_after(3):
        while await stream.receive_some():
            pass
        return True
    return False


def echoed(body: bytes) -> str:
    text: str = json.loads(body)["result"]["content"][0]["text"]
    return text


async def test_keep_alive_serves_requests_in_turn(address: tuple[str, int]) -> None:
    stream = await trio.open_tcp_stream(*address)
    async with stream:
        reader = Reader(stream)
        for i in range(3):
            if i:
                reader.next_request()
            reader.expect()
            await stream.send_all(post(call(f"turn {i}", i)))
            response, body = await reader.response()
            assert response.status_code == 200
            assert dict(response.headers)[b"content-length"] == str(len(body)).encode()
            assert echoed(body) == f"turn {i}"


async def test_a_client_quick_or_slow_with_its_next_request_is_answered(
    address: tuple[str, int],
) -> None:
    # The engine looks for the next request before waiting for the socket while the client is
    # quick, waits first once it was not (for EAGER_RETRY requests), then looks first again:
    # every pattern of quick and slow requests, split heads included, is answered in turn.
    stream = await trio.open_tcp_stream(*address)
    async with stream:
        reader = Reader(stream)
        for i in range(3 * EAGER_RETRY):
            if i:
                reader.next_request()
            reader.expect()
            request = post(call(f"turn {i}", i))
            if i % 5 == 2:
                await trio.sleep(0.05)  # slow: the connection waits for the socket
            if i % 7 == 3:  # a head in two pieces, the second late
                await stream.send_all(request[:20])
                await trio.sleep(0.02)
                request = request[20:]
            await stream.send_all(request)
            response, body = await reader.response()
            assert response.status_code == 200
            assert echoed(body) == f"turn {i}"


async def test_pipelined_requests_are_answered_in_order(address: tuple[str, int]) -> None:
    stream = await trio.open_tcp_stream(*address)
    async with stream:
        await stream.send_all(b"".join(post(call(f"p{i}", i)) for i in range(4)))
        reader = Reader(stream)
        seen = []
        for i in range(4):
            if i:
                reader.next_request()
            reader.expect()
            _, body = await reader.response()
            seen.append(echoed(body))
        assert seen == ["p0", "p1", "p2", "p3"]


async def test_chunked_request_body(address: tuple[str, int]) -> None:
    body = call("chunked")
    pieces = [body[:10], body[10:25], body[25:]]
    chunked = (
        b"".join(b"%x;ext=1\r\n%b\r\n" % (len(p), p) for p in pieces) + b"0\r\nx-trailer: 1\r\n\r\n"
    )
    request = (
        b"POST /mcp HTTP/1.1\r\n" + MODERN_HEADERS + b"transfer-encoding: chunked\r\n\r\n" + chunked
    )
    stream = await trio.open_tcp_stream(*address)
    async with stream:
        await stream.send_all(request)
        reader = Reader(stream)
        reader.expect()
        response, answer = await reader.response()
        assert response.status_code == 200
        assert echoed(answer) == "chunked"


async def test_expect_continue_gets_100_before_the_body(address: tuple[str, int]) -> None:
    body = call("after 100")
    head = post(body, extra=b"expect: 100-continue\r\n")[: -len(body)]
    stream = await trio.open_tcp_stream(*address)
    async with stream:
        await stream.send_all(head)
        with trio.fail_after(3):
            first = await stream.receive_some()
        assert first.startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        await stream.send_all(body)
        reader = Reader(stream)
        reader.expect()
        reader.h11.receive_data(first)
        response, answer = await reader.response()
        assert response.status_code == 200
        assert echoed(answer) == "after 100"


async def test_expect_continue_over_the_limit_is_413_without_100(address: tuple[str, int]) -> None:
    stream = await trio.open_tcp_stream(*address)
    async with stream:
        await stream.send_all(
            b"POST /mcp HTTP/1.1\r\n"
            + MODERN_HEADERS
            + b"expect: 100-continue\r\ncontent-length: 999999999\r\n\r\n"
        )
        reader = Reader(stream)
        reader.expect()
        response, body = await reader.response()
        assert response.status_code == 413
        assert json.loads(body)["error"]["code"] == -32600
        assert await closed(stream)


async def test_http_1_0_closes_after_the_response(address: tuple[str, int]) -> None:
    stream = await trio.open_tcp_stream(*address)
    async with stream:
        await stream.send_all(post(call("old"), version=b"HTTP/1.0"))
        data = b""
        with trio.fail_after(3):
            while chunk := await stream.receive_some():
                data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 ")
        assert b"connection: close" in head.lower()
        assert echoed(body) == "old"


async def test_http_1_0_event_stream_is_delimited_by_close(address: tuple[str, int]) -> None:
    request = post(call("sse"), version=b"HTTP/1.0").replace(
        b"accept: application/json, text/event-stream", b"accept: text/event-stream"
    )
    stream = await trio.open_tcp_stream(*address)
    async with stream:
        await stream.send_all(request)
        data = b""
        with trio.fail_after(3):
            while chunk := await stream.receive_some():
                data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"content-type: text/event-stream" in head.lower()
    assert b"transfer-encoding" not in head.lower()
    events = [line[6:] for line in body.split(b"\n") if line.startswith(b"data: ")]
    assert echoed(events[-1]) == "sse"


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GARBAGE\r\n\r\n", 400),
        (b"POST /mcp HTTP/2.0\r\nhost: x\r\n\r\n", 505),
        (b"POST /mcp HTTP/1.1\r\ncontent-length: 2\r\n\r\n{}", 400),  # no Host
        (b"POST /mcp HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\n{}", 400),
        (b"POST /mcp HTTP/1.1\r\nhost: x\r\ntransfer-encoding: gzip\r\n\r\n", 501),
        (
            b"POST /mcp HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n"
            b"content-length: 3\r\n\r\n",
            400,
        ),
        (b"POST /mcp HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n", 400),
        (b"POST /mcp HTTP/1.1\r\nhost: x\r\n" + b"x-big: " + b"a" * 70000 + b"\r\n\r\n", 431),
    ],
)
async def test_bad_requests_are_refused_and_closed(
    address: tuple[str, int], request_bytes: bytes, status: int
) -> None:
    stream = await trio.open_tcp_stream(*address)
    async with stream:
        await stream.send_all(request_bytes)
        reader = Reader(stream)
        reader.expect()
        response, body = await reader.response()
        assert response.status_code == status
        assert json.loads(body)["error"]["code"] == -32600
        assert (b"connection", b"close") in response.headers
        assert await closed(stream)
    # the server is fine afterwards
    stream = await trio.open_tcp_stream(*address)
    async with stream:
        await stream.send_all(post(call("still here")))
        reader = Reader(stream)
        reader.expect()
        assert echoed((await reader.response())[1]) == "still here"


async def test_a_slow_head_is_cut_off(address: tuple[str, int]) -> None:
    """The whole head must arrive within the read timeout (1 s here): a slowloris client is
    disconnected."""
    stream = await trio.open_tcp_stream(*address)
    async with stream:
        await stream.send_all(b"POST /mcp HTTP/1.1\r\nhost: x\r\n")
        with trio.fail_after(4):
            for _ in range(20):
                await trio.sleep(0.1)  # real time: a drip against the Rust engine's read timeout
                try:
                    await stream.send_all(b"x-drip: 1\r\n")
                except trio.BrokenResourceError:
                    break
            assert await closed(stream)


async def test_an_idle_connection_is_closed(address: tuple[str, int]) -> None:
    stream = await trio.open_tcp_stream(*address)
    async with stream:
        await stream.send_all(post(call("then idle")))
        reader = Reader(stream)
        reader.expect()
        await reader.response()
        start = trio.current_time()
        assert await closed(stream)
        assert 0.5 < trio.current_time() - start < 3


async def test_connection_goes_on_while_a_handler_outlives_its_stream() -> None:
    """A 2025-11-25 handler that closes its stream (SSE polling) keeps running; the same
    connection serves the next request meanwhile."""
    server = mcpfast.Server("handoff")
    release = trio.Event()
    finished = trio.Event()

    @server.tool()
    async def poll(ctx: mcpfast.Context) -> str:
        await ctx.close_stream()
        await release.wait()
        finished.set()
        return "done"

    @server.tool()
    def quick() -> str:
        return "quick"

    async with running(server, engine="native") as url:
        async with httpx2.AsyncClient(timeout=5) as http:
            init = await http.post(
                url,
                json={
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "t", "version": "1"},
                    },
                },
                headers={"accept": "application/json, text/event-stream"},
            )
            session = init.headers["mcp-session-id"].encode()
        host, port = url.split("://")[1].split("/")[0].rsplit(":", 1)
        headers = (
            b"host: 127.0.0.1\r\ncontent-type: application/json\r\naccept: application/json, "
            b"text/event-stream\r\nmcp-protocol-version: 2025-11-25\r\nmcp-session-id: "
            + session
            + b"\r\n"
        )

        def legacy_call(name: str, id_: int) -> bytes:
            body = json.dumps(
                {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": name}}
            ).encode()
            return (
                b"POST /mcp HTTP/1.1\r\n"
                + headers
                + b"content-length: %d\r\n\r\n" % len(body)
                + body
            )

        stream = await trio.open_tcp_stream(host, int(port))
        async with stream:
            reader = Reader(stream)
            with trio.fail_after(5):
                await stream.send_all(legacy_call("poll", 1))
                reader.expect()
                response, body = await reader.response()  # the stream, closed by the handler
                assert dict(response.headers)[b"content-type"] == b"text/event-stream", body
                assert b"retry:" in body and b"done" not in body
                reader.next_request()
                await stream.send_all(legacy_call("quick", 2))
                reader.expect()
                _, answer = await reader.response()
                assert not finished.is_set(), "answered while the first handler still runs"
                assert json.loads(answer)["result"]["content"][0]["text"] == "quick"
                release.set()
                await finished.wait()


async def test_connections_past_the_cap_wait_while_every_one_is_busy() -> None:
    """At ``max_connections`` with every connection busy with a request, a new client waits
    in the backlog; once one is idle again (waiting for its next request) it makes room."""
    server = mcpfast.Server("busy")
    held: list[None] = []
    both, release = trio.Event(), trio.Event()

    @server.tool()
    async def hold() -> str:
        held.append(None)
        if len(held) == 2:
            both.set()
        await release.wait()
        return "held"

    @server.tool()
    def echo(text: str) -> str:
        return text

    async with running(server, engine="native", max_connections=2) as url:
        host, port = url.split("://")[1].split("/")[0].rsplit(":", 1)
        first = await trio.open_tcp_stream(host, int(port))
        second = await trio.open_tcp_stream(host, int(port))
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "hold", "arguments": {}, "_meta": meta()},
        }
        busy = post(json.dumps(body).encode()).replace(b"mcp-name: echo", b"mcp-name: hold")
        await first.send_all(busy)
        await second.send_all(busy)
        with trio.fail_after(10):
            await both.wait()  # both requests running
        third = await trio.open_tcp_stream(host, int(port))  # in the listen backlog
        async with first, second, third:
            await third.send_all(post(call("third")))
            reader = Reader(third)
            reader.expect()
            with trio.move_on_after(0.5) as waiting:
                await reader.response()
            assert waiting.cancelled_caught, "served while both connections were busy"
            release.set()
            with trio.fail_after(10):
                _, answer = await reader.response()
            assert echoed(answer) == "third"


async def test_a_client_that_stops_reading_is_disconnected() -> None:
    """A reply far larger than the socket buffers, to a client that never reads it: after the
    write timeout the server drops the connection (seen here by its slot, the only one,
    serving the next client)."""
    server = mcpfast.Server("big")

    @server.tool()
    def big() -> str:
        return "x" * (64 * 1024 * 1024)

    @server.tool()
    def echo(text: str) -> str:
        return text

    async with running(
        server, engine="native", max_connections=1, write_timeout_seconds=0.5, max_body=1 << 20
    ) as url:
        host, port = url.split("://")[1].split("/")[0].rsplit(":", 1)
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "big", "arguments": {}, "_meta": meta()},
            }
        ).encode()
        stuck = await trio.open_tcp_stream(host, int(port))
        async with stuck:
            await stuck.send_all(post(body).replace(b"mcp-name: echo", b"mcp-name: big"))
            # the server has taken the one connection and writes the reply, which nobody reads,
            # until the socket buffers are full: then every task of this process waits
            await trio.testing.wait_all_tasks_blocked()
            waiting = await trio.open_tcp_stream(host, int(port))
            async with waiting:
                await waiting.send_all(post(call("next")))
                reader = Reader(waiting)
                reader.expect()
                with trio.fail_after(10):
                    _, answer = await reader.response()
                assert echoed(answer) == "next"


# ------------------------------------------------------------------- what is not HTTP, at once


def client_hello() -> bytes:
    """The first flight of a real TLS client (the ssl module's, in memory)."""
    context = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


@pytest.fixture
async def patient() -> AsyncIterator[tuple[str, int]]:
    """The native engine with a read timeout far above the waits of the tests below."""
    async with running(demo_server, engine="native", read_timeout_seconds=30) as url:
        host, port = url.split("://")[1].split("/")[0].rsplit(":", 1)
        yield host, int(port)


@pytest.mark.parametrize(
    ("first_bytes", "status", "reason"),
    [
        (client_hello(), 400, "TLS handshake on a plain-HTTP port"),
        (bytes(range(256)), 400, "not an HTTP/1.x request line"),
        (b"\x80\x81\x82 binary", 400, "not an HTTP/1.x request line"),
        (b"hello world\r\n", 400, "not an HTTP/1.x request line"),
        (b"SSH-2.0-OpenSSH_9.6\r\n", 400, "not an HTTP/1.x request line"),
        (b"POST /mcp HTTP/2.0\r\nhost: x\r\n", 505, "HTTP version not supported"),
    ],
)
async def test_what_cannot_begin_a_request_is_refused_at_once(
    patient: tuple[str, int], first_bytes: bytes, status: int, reason: str
) -> None:
    """Bytes that cannot begin an HTTP/1.x request line (no blank line among them) get their
    answer and a close at once, not after ``read_timeout_seconds`` (30 s here)."""
    stream = await trio.open_tcp_stream(*patient)
    async with stream:
        with trio.fail_after(3):
            await stream.send_all(first_bytes)
            reader = Reader(stream)
            reader.expect()
            response, body = await reader.response()
            assert response.status_code == status
            assert reason in json.loads(body)["error"]["message"]
            assert await closed(stream)


async def test_a_request_line_in_pieces_is_waited_for(patient: tuple[str, int]) -> None:
    """The early refusal looks at what a request line may still become: a valid one arriving a
    few bytes at a time is served."""
    request = post(call("in pieces"))
    stream = await trio.open_tcp_stream(*patient)
    async with stream:
        reader = Reader(stream)
        reader.expect()
        with trio.fail_after(5):
            for cut in range(0, 40, 3):  # the request line and the start of the headers
                await stream.send_all(request[cut : cut + 3])
                await trio.testing.wait_all_tasks_blocked()  # the server read it, and waits
            await stream.send_all(request[39:])
            response, body = await reader.response()
        assert response.status_code == 200
        assert echoed(body) == "in pieces"


async def test_a_tls_client_is_told_at_once(patient: tuple[str, int]) -> None:
    """A real TLS handshake gets the plain 400 (which its TLS stack cannot read as a record)."""
    context = ssl.create_default_context()
    stream = await trio.open_tcp_stream(*patient)
    tls = trio.SSLStream(stream, context, server_hostname="localhost")
    with trio.fail_after(3), pytest.raises(trio.BrokenResourceError) as failed:
        await tls.do_handshake()
    assert isinstance(failed.value.__cause__, ssl.SSLError)
    await trio.aclose_forcefully(tls)
