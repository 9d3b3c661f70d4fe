"""Slow and flooding clients do not starve a well-behaved one (both engines): a thousand
connections that send their head a byte at a time (slowloris), hundreds that send requests and
never read, and (native engine) a flood of connections past ``max_connections``, while a
well-behaved client opens a fresh connection per request and is timed. Its requests must all
succeed (never refused, never dropped) and its p99 stay under `P99_BOUND` seconds.

The server runs in a process of its own, so the attackers' event loop is not the server's."""

from __future__ import annotations

import statistics
import sys
import time

import httpx2
import pytest
import trio

from ..helpers import ENGINE, meta
from .processes import free_port, server_process

SLOWLORIS = 1000
NEVER_READING = 300
FLOOD = 600
MAX_CONNECTIONS = 400
GOOD_REQUESTS = 100
P99_BOUND = 1.0
"""Seconds: what the well-behaved client's slowest 1% may take while it all goes on, on a quiet
machine; on a busy one, `SLOWER` times its own p99 before the attack (a starved client waits
seconds, or its requests fail)."""
SLOWER = 6

SERVE = """
import sys, trio, mcpfast
from mcpfast.demo import server
config = mcpfast.Config(
    port=int(sys.argv[1]), engine=sys.argv[2], max_connections=int(sys.argv[3]),
    read_timeout_seconds=30.0,
)
trio.run(mcpfast.serve, server, config)
"""

BODY = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "echo", "arguments": {"text": "good"}, "_meta": meta()},
}
HEADERS = {
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "echo",
}


async def _slowloris(port: int, opened: list[int], stop: trio.Event) -> None:
    """One connection sending a request head a byte at a time, never finishing it."""
    try:
        stream = await trio.open_tcp_stream("127.0.0.1", port)
    except OSError:
        return
    opened.append(1)
    head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 10_000
    async with stream:
        for byte in head:
            if stop.is_set():
                return
            try:
                await stream.send_all(bytes([byte]))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            with trio.move_on_after(0.5):
                await stop.wait()


async def _never_reading(port: int, stop: trio.Event) -> None:
    """One connection that pipelines a few requests, never reads an answer, and stays open."""
    try:
        stream = await trio.open_tcp_stream("127.0.0.1", port)
    except OSError:
        return
    request = _request()
    async with stream:
        try:
            with trio.move_on_after(1):
                await stream.send_all(request * 5)
            await stop.wait()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return


async def _flood(port: int, stop: trio.Event) -> None:
    """Connections opened and held open, doing nothing, as fast as they come."""
    held: list[trio.SocketStream] = []
    try:
        while not stop.is_set() and len(held) < FLOOD:
            try:
                with trio.move_on_after(1):
                    held.append(await trio.open_tcp_stream("127.0.0.1", port))
            except OSError:
                await trio.sleep(0.01)
        await stop.wait()
    finally:
        for stream in held:
            await trio.aclose_forcefully(stream)


async def _good_client(url: str) -> list[float]:
    """``GOOD_REQUESTS`` calls, each on a fresh connection: their durations (raises on any
    failure: a refused, dropped or wrong answer)."""
    durations = []
    for _ in range(GOOD_REQUESTS):
        start = time.perf_counter()
        async with httpx2.AsyncClient(timeout=10) as http:
            reply = await http.post(url, json=BODY, headers=HEADERS)
        assert reply.status_code == 200, reply.text
        assert "good" in reply.text
        durations.append(time.perf_counter() - start)
    return durations


@pytest.mark.serial  # thousands of sockets: the machine to itself
async def test_a_good_client_is_served_among_slow_and_flooding_ones() -> None:
    port = free_port()
    argv = [sys.executable, "-c", SERVE, str(port), ENGINE, str(MAX_CONNECTIONS)]
    async with server_process(argv, port) as url:
        baseline = await _good_client(url)
        stop = trio.Event()
        opened: list[int] = []
        async with trio.open_nursery() as attackers:
            for _ in range(SLOWLORIS):
                attackers.start_soon(_slowloris, port, opened, stop)
            for _ in range(NEVER_READING):
                attackers.start_soon(_never_reading, port, stop)
            if ENGINE == "native":  # past max_connections: the native engine's cap
                attackers.start_soon(_flood, port, stop)
            with trio.fail_after(10):
                while len(opened) < SLOWLORIS * 0.9:
                    await trio.sleep(0.05)
            await trio.sleep(1)  # real time: every attacker at work on the server process
            try:
                with trio.fail_after(120):
                    durations = await _good_client(url)
            finally:
                stop.set()
    p99 = sorted(durations)[int(0.99 * len(durations)) - 1]
    before = sorted(baseline)[int(0.99 * len(baseline)) - 1]
    assert p99 < max(P99_BOUND, SLOWER * before), (
        f"p99 {p99:.3f} s among attackers (median {statistics.median(durations):.4f} s; "
        f"without them p99 {before:.4f} s)"
    )


@pytest.mark.skipif(ENGINE != "native", reason="max_connections is the native engine's")
async def test_at_the_limit_a_new_client_closes_the_longest_idle_connection() -> None:
    """With every slot taken by idle keep-alive connections nothing is closed until a new
    client comes; then the one idle longest makes room, and the new client is answered."""
    limit = 8
    port = free_port()
    argv = [sys.executable, "-c", SERVE, str(port), ENGINE, str(limit)]
    request = _request()
    async with server_process(argv, port):
        held = []
        for _ in range(limit):
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            held.append(stream)
            await trio.sleep(0.05)  # real time: an order of arrival the server process sees
        for stream in held:  # all are served, then idle: nothing made room yet
            assert b" 200 " in await _exchange(stream, request)
        await trio.sleep(0.5)  # real time: the server process's idle clocks tell them apart
        newcomer = await trio.open_tcp_stream("127.0.0.1", port)
        with trio.fail_after(5):
            assert b" 200 " in await _exchange(newcomer, request)
        with trio.fail_after(5):
            assert await held[0].receive_some() == b""  # the longest idle: closed
        for stream in held[1:]:
            assert b" 200 " in await _exchange(stream, request)
        for stream in [*held, newcomer]:
            await trio.aclose_forcefully(stream)


def _request() -> bytes:
    body = httpx2.Request("POST", "http://127.0.0.1/mcp", json=BODY).content
    return (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        + b"".join(f"{k}: {v}\r\n".encode() for k, v in HEADERS.items())
        + b"Content-Length: %d\r\n\r\n" % len(body)
        + body
    )


async def _exchange(stream: trio.SocketStream, request: bytes) -> bytes:
    """Send one request and read its whole (Content-Length) answer."""
    await stream.send_all(request)
    data = b""
    with trio.fail_after(5):
        while b"\r\n\r\n" not in data:
            data += await stream.receive_some()
        head, _, body = data.partition(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        while len(body) < length:
            body += await stream.receive_some()
    return head + b"\r\n\r\n" + body
