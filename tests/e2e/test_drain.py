"""Draining alike on both engines (issue 26, failures 4, 6, 7): ``mcpfast serve --workers 2``
on SIGTERM turns readiness 503 and refuses new connections at once (the parent holds no
listening socket), closes an idle keep-alive connection, answers what was received (with
``Connection: close``), then exits 0; the native drain answers a next request already in the
kernel buffer; and a connection the client closed never waits in CLOSE-WAIT."""

from __future__ import annotations

import json
import signal
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio
from trio.testing import wait_all_tasks_blocked

import mcpfast

from ..helpers import TEST_KEYS
from .processes import free_port, mcpfast_command, started_process
from .test_shutdown import HEADERS, SLOW_SERVER, _call, call_running

ENGINES = pytest.mark.parametrize("engine", ["hypercorn", "native"])
BOUND = 3.0
"""What "at once" may take: readiness 503, connections refused, a closed connection gone."""


def _post(body: dict[str, Any]) -> bytes:
    data = json.dumps(body).encode()
    head = "".join(f"{name}: {value}\r\n" for name, value in HEADERS.items())
    return (
        b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        + head.encode()
        + b"content-length: %d\r\n\r\n" % len(data)
        + data
    )


PROBE = b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"


class Reader:
    """Responses (with a ``content-length``) off one raw connection, in order."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buffer = b""

    async def response(self) -> tuple[dict[str, str], bytes]:
        """The next response's headers (lower-case names, with ``:status``) and body.

        Raises:
            EOFError: the server closed the connection first.
        """
        while b"\r\n\r\n" not in self.buffer:
            await self._more()
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        status, *lines = head.decode("latin-1").split("\r\n")
        headers = {":status": status.split()[1]}
        for line in lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers["content-length"])
        while len(self.buffer) < length:
            await self._more()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return headers, body

    async def closed(self) -> bool:
        """Whether the server closes the connection with nothing more sent."""
        try:
            await self._more()
        except EOFError:
            return not self.buffer
        return False

    async def _more(self) -> None:
        try:
            data = await self.stream.receive_some(65536)
        except trio.BrokenResourceError:
            data = b""
        if not data:
            raise EOFError
        self.buffer += data


async def _status(http: httpx2.AsyncClient, url: str) -> int:
    try:
        return (await http.get(url)).status_code
    except httpx2.TransportError:
        return 0


async def _until_status(
    http: httpx2.AsyncClient, url: str, status: int, bound: float, *, or_gone: bool = False
) -> int:
    """Until ``url`` answers ``status`` (or, ``or_gone``, refuses: a worker done draining);
    the status it ended with."""
    with trio.fail_after(bound):
        while (seen := await _status(http, url)) not in (status, 0 if or_gone else status):
            await trio.sleep(0.02)
    return seen


async def _until_refused(port: int) -> None:
    with trio.fail_after(BOUND):
        while True:
            try:
                stream = await trio.open_tcp_stream("127.0.0.1", port)
            except OSError:
                return
            await stream.aclose()
            await trio.sleep(0.02)


def _two_free_ports() -> int:
    """A free port whose successor is free too (two workers' metrics listeners)."""
    for _ in range(50):
        port = free_port()
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise RuntimeError("no two free ports in a row")


@ENGINES
async def test_two_workers_drain_on_sigterm(tmp_path: Path, engine: str, redis_url: str) -> None:
    target = tmp_path / "slow.py"
    target.write_text(SLOW_SERVER)
    port, metrics = free_port(), _two_free_ports()
    argv = mcpfast_command(
        "serve", f"{target}:server", "--port", str(port), "--engine", engine,
        "--workers", "2", "--bus", redis_url, "--metrics-port", str(metrics),
    )  # fmt: skip
    probes = [f"http://127.0.0.1:{p}/readyz" for p in (metrics, metrics + 1)]
    async with started_process(argv, port) as (url, process):
        async with httpx2.AsyncClient(timeout=10) as http:
            for probe in probes:
                await _until_status(http, probe, 200, 30)
            idle = Reader(await trio.open_tcp_stream("127.0.0.1", port))
            await idle.stream.send_all(PROBE)
            assert (await idle.response())[0][":status"] == "200"  # kept alive, idle now
            piped = Reader(await trio.open_tcp_stream("127.0.0.1", port))
            await piped.stream.send_all(_post(_call(2.0, tmp_path / "piped")) + PROBE)
            answers: list[httpx2.Response] = []

            async def in_flight() -> None:
                answers.append(
                    await http.post(url, json=_call(2.0, tmp_path / "a"), headers=HEADERS)
                )

            with trio.fail_after(15):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(in_flight)
                    await call_running(tmp_path / "a")
                    await call_running(tmp_path / "piped")
                    process.send_signal(signal.SIGTERM)
                    with trio.fail_after(BOUND):
                        seen = [
                            await _until_status(http, probe, 503, BOUND, or_gone=True)
                            for probe in probes
                        ]
                        assert 503 in seen  # the worker running a call drains, not ready
                        await _until_refused(port)
                        assert await idle.closed()
                    assert not answers, "the drain began while the call still ran"
                first, body = await piped.response()
                assert first[":status"] == "200" and b"slept 2.0" in body
                if engine == "native":  # the request behind it was received: answered too
                    assert first.get("connection") != "close"
                    second, _ = await piped.response()
                    assert (second[":status"], second["connection"]) == ("200", "close")
                else:  # Hypercorn answers one request per connection once it drains
                    assert first["connection"] == "close"
                assert await piped.closed()
                await trio.to_thread.run_sync(process.wait, abandon_on_cancel=True)
        assert answers[0].status_code == 200
        assert answers[0].headers["connection"] == "close"
        assert process.returncode == 0


async def test_the_native_drain_answers_a_request_in_the_kernel_buffer() -> None:
    """Failure 7: a keep-alive connection whose next request has reached the kernel but not
    the engine when the drain begins gets it answered (``Connection: close``): a proxy never
    sends a POST again."""
    go = trio.Event()
    client = socket.socket()

    async def trigger() -> None:
        await go.wait()
        client.send(PROBE)  # no checkpoint between this and the drain

    with trio.fail_after(10), client:
        async with _serving(mcpfast.Server("s"), "native", trigger) as port:
            await trio.to_thread.run_sync(client.connect, ("127.0.0.1", port))
            client.setblocking(False)
            client.send(PROBE)
            first = await _receive(client)
            assert first.startswith(b"HTTP/1.1 200") and b"connection: close" not in first
            await wait_all_tasks_blocked()  # the engine waits for the next head
            go.set()
            last = await _receive(client)
            assert last.startswith(b"HTTP/1.1 200") and b"connection: close" in last.lower()
            assert await _receive(client) == b""


async def _receive(sock: socket.socket) -> bytes:
    await trio.lowlevel.wait_readable(sock)
    return sock.recv(65536)


def _close_wait(port: int) -> int:
    """Sockets in CLOSE-WAIT on local ``port`` (this process's server: the port is its own)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as rows:
            for row in list(rows)[1:]:
                fields = row.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "08":
                    count += 1
    return count


SLEEPER = mcpfast.Server("sleeper")


@SLEEPER.tool()
async def nap(seconds: float, started: str) -> str:
    await trio.sleep(seconds)
    return "slept"


@ENGINES
async def test_a_connection_the_client_closed_is_closed_at_once(
    engine: str, tmp_path: Path
) -> None:
    """Failure 6: idle, answered, half-sent or mid-call, each closed by its client, none left
    in CLOSE-WAIT (Hypercorn kept them for its keep-alive timeout, 30 s)."""
    if not await trio.Path("/proc/net/tcp").exists():
        pytest.skip("reads /proc/net/tcp")
    async with _serving(SLEEPER, engine) as port:
        streams = []
        for _ in range(5):
            streams.append(await trio.open_tcp_stream("127.0.0.1", port))
            answered = Reader(await trio.open_tcp_stream("127.0.0.1", port))
            await answered.stream.send_all(PROBE)
            await answered.response()
            streams.append(answered.stream)
            half = await trio.open_tcp_stream("127.0.0.1", port)
            await half.send_all(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n")
            streams.append(half)
            calling = await trio.open_tcp_stream("127.0.0.1", port)
            await calling.send_all(_post(_call(60.0, tmp_path / "x")))
            streams.append(calling)
        await trio.sleep(0.2)  # every request has reached the server
        for stream in streams:
            await stream.aclose()
        with trio.fail_after(BOUND):
            while _close_wait(port):
                await trio.sleep(0.05)


@asynccontextmanager
async def _serving(
    server: mcpfast.Server, engine: str, trigger: Callable[[], Awaitable[None]] | None = None
) -> AsyncIterator[int]:
    """``server`` on a free port of loopback, until ``trigger`` returns if given (else until
    the block ends); yields the port."""
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(
            lambda task_status: mcpfast.serve(
                server,
                keys=TEST_KEYS,
                shutdown_trigger=trigger,
                task_status=task_status,
                port=0,
                engine=engine,
            )
        )
        yield int(urls[0].rsplit(":", 1)[1])
        if trigger is None:
            nursery.cancel_scope.cancel()
