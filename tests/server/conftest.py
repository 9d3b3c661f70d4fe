"""The server's `Endpoint` driven directly: raw JSON-RPC bytes in, a recording `Responder` out,
no sockets and no httpx2. Time is Trio's: tests that take ``autojump_clock`` (and, for the
wall-clock rules of tokens, ``wall_clock``) wait instantly."""

from __future__ import annotations

import json
import math
import types
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from mcpfast import Context, Server
from mcpfast.protocol import sse
from mcpfast.protocol.http import JSON, STREAM_HEADERS, Headers
from mcpfast.server.config import Config
from mcpfast.server.core.endpoint import Endpoint
from mcpfast.server.state import local_bus, local_streams, sessions
from mcpfast.server.state import request_state as state

from ..helpers import TEST_KEYS, Requests

JSON_FIRST = "application/json, text/event-stream"
SSE_FIRST = "text/event-stream, application/json"


class Recorder:
    """A `Responder` that records one exchange: the head, a JSON body or the SSE events (also
    fed to a channel, to await them one by one), and whether the stream was closed."""

    def __init__(self) -> None:
        self.status = 0
        """The HTTP status (0 until the head went out)."""
        self.headers: dict[str, str] = {}
        self.body = b""
        self.events: list[sse.Event] = []
        self.keepalives = 0
        self.started = trio.Event()
        self.closed = trio.Event()
        self.gone = trio.Event()
        self._send, self._receive = trio.open_memory_channel[sse.Event](math.inf)

    def _start(self, status: int, headers: Headers) -> None:
        assert not self.status, "the head went out twice"
        self.status = status
        self.headers = {k.decode().lower(): v.decode() for k, v in headers}
        self.started.set()

    async def reply(self, status: int, body: bytes, headers: Headers | None = None) -> None:
        self._start(status, [*([(b"content-type", JSON)] if body else []), *(headers or [])])
        self.body = body
        self.closed.set()

    async def open_stream(self, headers: Headers | None = None) -> None:
        self._start(200, [*STREAM_HEADERS, *(headers or [])])

    async def send(
        self, message: bytes, event_id: str | None = None, retry_ms: int | None = None
    ) -> None:
        assert self.started.is_set() and not self.closed.is_set()
        event = sse.Event(data=message.decode(), id=event_id, retry=retry_ms)
        self.events.append(event)
        self._send.send_nowait(event)
        await trio.lowlevel.checkpoint()

    async def keepalive(self) -> None:
        self.keepalives += 1
        await trio.lowlevel.checkpoint()

    async def close(self) -> None:
        self.closed.set()
        self._send.close()

    async def wait_disconnect(self) -> None:
        await self.gone.wait()

    def watch(self, scope: trio.CancelScope) -> None:
        return None  # `wait_disconnect` tells

    def disconnect(self) -> None:
        """The client goes away."""
        self.gone.set()

    async def next_message(self) -> dict[str, Any]:
        """The next JSON-RPC message of the stream (priming events skipped)."""
        async for event in self._receive:
            found = sse.messages_of(event)
            if found:
                return found[0]
        raise AssertionError("the stream ended")

    @property
    def streaming(self) -> bool:
        return self.headers.get("content-type", "").startswith("text/event-stream")

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The JSON-RPC messages: the JSON body's (a batch: each), or each event's."""
        if self.streaming:
            return [m for e in self.events for m in sse.messages_of(e)]
        if not self.body:
            return []
        loaded = json.loads(self.body)
        return loaded if isinstance(loaded, list) else [loaded]

    @property
    def message(self) -> dict[str, Any]:
        return self.messages[-1]

    @property
    def result(self) -> Any:
        return self.message["result"]

    @property
    def error(self) -> Any:
        return self.message["error"]


class Wire(Requests):
    """Raw exchanges with one running `Endpoint`: builds bodies and headers like a client
    (`Requests`)."""

    def __init__(self, endpoint: Endpoint, nursery: trio.Nursery) -> None:
        super().__init__()
        self.endpoint = endpoint
        self.server = endpoint.server
        self.nursery = nursery

    @staticmethod
    def _headers(extra: dict[str, str | None] | None, method: str = "POST") -> dict[str, str]:
        base: dict[str, str | None] = {"host": "127.0.0.1", "accept": JSON_FIRST}
        if method == "POST":
            base["content-type"] = "application/json"
        base.update({k.lower(): v for k, v in (extra or {}).items()})
        return {k: v for k, v in base.items() if v is not None}

    async def exchange(
        self, method: str, headers: dict[str, str | None] | None = None, body: bytes = b""
    ) -> Recorder:
        """One whole exchange: returns once the endpoint has answered."""
        recorder = Recorder()
        await self.endpoint.handle(method, self._headers(headers, method), body, recorder)
        assert recorder.status, "the endpoint returned without answering"
        return recorder

    def spawn(
        self, method: str, headers: dict[str, str | None] | None = None, body: bytes = b""
    ) -> Recorder:
        """An exchange run in the background (until it ends or the `serving` block does)."""
        recorder = Recorder()
        self.nursery.start_soon(
            self.endpoint.handle, method, self._headers(headers, method), body, recorder
        )
        return recorder

    async def start(
        self, method: str, headers: dict[str, str | None] | None = None, body: bytes = b""
    ) -> Recorder:
        """An exchange run in the background: returns once its head went out."""
        recorder = self.spawn(method, headers, body)
        await recorder.started.wait()
        return recorder

    async def stream(
        self, session: str, version: str, last: str | None = None, **headers: str | None
    ) -> Recorder:
        """A GET stream of ``session`` (resuming after ``last``), once its head went out."""
        extra = session_headers(session, version, accept="text/event-stream", **headers)
        if last is not None:
            extra["last-event-id"] = last
        return await self.start("GET", extra)

    async def post(
        self, body: Any, headers: dict[str, str | None] | None = None, *, raw: bytes | None = None
    ) -> Recorder:
        return await self.exchange("POST", headers, raw if raw is not None else encode(body))

    async def modern(
        self, method: str, params: dict[str, Any] | None = None, **kw: Any
    ) -> Recorder:
        body, headers = self.modern_body(method, params, **kw)
        return await self.post(body, headers)

    async def legacy(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session: str | None,
        version: str,
        notification: bool = False,
    ) -> Recorder:
        body = self.legacy_body(method, params, notification=notification)
        return await self.post(body, session_headers(session, version))

    async def initialize(
        self, version: str, capabilities: dict[str, Any] | None = None
    ) -> tuple[str, Recorder]:
        """``initialize`` then ``notifications/initialized``: the session id and the reply."""
        reply = await self.post(self.initialize_body(version, capabilities))
        session = reply.headers["mcp-session-id"]
        done = await self.legacy(
            "notifications/initialized",
            session=session,
            version=reply.result["protocolVersion"],
            notification=True,
        )
        assert done.status == 202
        return session, reply


def session_headers(
    session: str | None, version: str, **extra: str | None
) -> dict[str, str | None]:
    return {"mcp-session-id": session, "mcp-protocol-version": version, **extra}


def encode(body: Any) -> bytes:
    return json.dumps(body).encode()


def build() -> Server:
    """A fresh server (its own bus) with a tool for each kind of behaviour."""
    server = Server("server-tests", "1.0", instructions="for tests", cache_ttl_ms=5000)

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.tool()
    async def chatty(ctx: Context) -> str:
        await ctx.report_progress(1, 2, "half")
        await ctx.info("working")
        return "said"

    @server.tool()
    async def greet(ctx: Context) -> str:
        answer = await ctx.elicit(
            "Name?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="name"
        )
        return f"Hello, {answer['content']['name']}!"

    @server.resource("test://doc", mime_type="text/plain")
    def doc() -> str:
        return "doc"

    @server.prompt(arguments={"city": "A city"})
    def describe(city: str) -> str:
        return f"Describe {city}."

    return server


@asynccontextmanager
async def serving(server: Server, config: Config | None = None) -> AsyncIterator[Wire]:
    """A running `Endpoint` for ``server`` and a `Wire` to it; background exchanges end with
    the block."""
    endpoint = Endpoint(server, config or Config(), TEST_KEYS)
    async with endpoint.running(), trio.open_nursery() as nursery:
        yield Wire(endpoint, nursery)
        nursery.cancel_scope.cancel()


@pytest.fixture
def server() -> Server:
    return build()


@pytest.fixture
async def wire(server: Server) -> AsyncIterator[Wire]:
    async with serving(server) as wire:
        yield wire


EPOCH = 1_800_000_000.0
"""The Unix time at Trio time 0 under `wall_clock`."""


@pytest.fixture
def wall_clock(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> Iterator[trio.testing.MockClock]:
    """``autojump_clock``, with the wall clock of tokens and session records following it, so
    that ``trio.sleep`` ages session ids, ``requestState`` and bus records instantly. (A test
    takes this as an argument: pytest-trio finds the clock among a test's arguments.)"""
    fake = types.SimpleNamespace(
        time=lambda: EPOCH + trio.current_time(), monotonic=trio.current_time
    )
    for module in (sessions, state, local_bus, local_streams):
        monkeypatch.setattr(module, "time", fake)
    yield autojump_clock
