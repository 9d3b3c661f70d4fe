"""The client never gives up on a live stream (issue 26, failure 2), both engines: a legacy
session's GET stream and a ``subscriptions/listen`` stream outlive a Redis outage longer than
5 reconnects, waiting at least each 503's ``Retry-After`` between attempts, and hear a
notification published after Redis is back; a session gone (404) is renewed: a new
``initialize``, the subscriptions made again, the stream on in the new session.

Through a Redis outage the jitter is set to 0, so every wait seen between two refused attempts
is the server's ``Retry-After`` (the schedule itself is `tests/protocol/test_backoff.py`'s and
`tests/client/test_stream_backoff.py`'s).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
import trio

import mcpfast
from mcpfast.client.http import ModernHttp
from mcpfast.client.legacy import LegacyHttp
from mcpfast.errors import BusUnavailable
from mcpfast.protocol.discovery import EraCache
from mcpfast.server.state.keys import KeyRing

from ..helpers import TEST_KEYS, running
from ..redis_server import RedisServer

ENGINES = pytest.mark.parametrize("engine", ["hypercorn", "native"])
URI = "test://doc"
OUTAGE_ATTEMPTS = 6
"""Refused attempts seen while Redis is away: more than the 5 the client once gave up after."""
NEW_KEYS = KeyRing(keys={"k2": b"fedcba9876543210fedcba9876543210"}, signing="k2")
"""The key of a server that forgot every session the first one signed."""


def _server() -> mcpfast.Server:
    server = mcpfast.Server("bused")
    server.resource(URI)(lambda: "doc")
    return server


class Seen:
    """What the client sent and was answered, in order (an httpx2 response hook)."""

    def __init__(self) -> None:
        self.answers: list[tuple[float, str, str | None, int, httpx2.Headers]] = []
        """(when, HTTP method, MCP method of a POST, status, request headers)."""

    async def __call__(self, response: httpx2.Response) -> None:
        request = response.request
        method = None
        if request.method == "POST" and request.content:
            method = json.loads(request.content).get("method")
        when = trio.current_time()
        self.answers.append((when, request.method, method, response.status_code, request.headers))

    def refused(self, verb: str, method: str | None = None) -> list[float]:
        """When the attempts (``verb``, MCP ``method``) answered 503 were answered."""
        return [t for t, v, m, s, _ in self.answers if (v, m, s) == (verb, method, 503)]

    def since(self, index: int) -> list[str | None]:
        """The MCP methods POSTed after the ``index``-th answer."""
        return [m for _, v, m, _, _ in self.answers[index:] if v == "POST"]


async def _refused_often(seen: Seen, verb: str, method: str | None = None) -> list[float]:
    """Wait until `OUTAGE_ATTEMPTS` attempts were refused (at most 30 s): their times."""
    with trio.fail_after(30):
        while len(seen.refused(verb, method)) < OUTAGE_ATTEMPTS:
            await trio.sleep(0.05)
    return seen.refused(verb, method)


def _waited_each_retry_after(times: list[float]) -> None:
    """The server's ``Retry-After: 1`` kept between refused attempts (the jitter is 0)."""
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert all(gap >= 0.95 for gap in gaps), gaps


async def _published_until(server: mcpfast.Server, heard: trio.Event) -> None:
    """Publish an update of `URI` every 0.2 s until it is ``heard`` (at most 30 s)."""
    with trio.fail_after(30):
        while not heard.is_set():
            try:
                await server.resource_updated(URI)
            except BusUnavailable:
                pass  # Redis is not back in this worker yet
            with trio.move_on_after(0.2):
                await heard.wait()


@ENGINES
async def test_the_get_stream_outlives_a_redis_outage(
    engine: str, redis_server: RedisServer
) -> None:
    server = _server()
    seen = Seen()
    heard = trio.Event()

    async def note(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/resources/updated" and params.get("uri") == URI:
            heard.set()

    async with (
        running(server, engine=engine, bus=redis_server.url) as url,
        httpx2.AsyncClient(event_hooks={"response": [seen]}) as http,
        mcpfast.connect(
            url, "legacy", http_client=http, on_notification=note, era_cache=EraCache()
        ) as client,
    ):
        assert isinstance(client.connection, LegacyHttp)
        client.connection._stream._random = lambda: 0.0
        await client.subscribe(URI)
        redis_server.stop()
        times = await _refused_often(seen, "GET")
        _waited_each_retry_after(times)
        resumed = [h.get("last-event-id") for _, v, _, s, h in seen.answers if s == 503]
        assert all(resumed), resumed  # each attempt resumes where the stream was
        redis_server.start()
        await _published_until(server, heard)


@ENGINES
async def test_a_listen_stream_outlives_a_redis_outage(
    engine: str, redis_server: RedisServer
) -> None:
    server = _server()
    seen = Seen()
    async with (
        running(server, engine=engine, bus=redis_server.url) as url,
        httpx2.AsyncClient(event_hooks={"response": [seen]}) as http,
        mcpfast.connect(url, "modern", http_client=http, era_cache=EraCache()) as client,
    ):
        assert isinstance(client.connection, ModernHttp)
        client.connection.random = lambda: 0.0
        methods: list[str | None] = []
        heard = trio.Event()

        async def consume(events: AsyncIterator[dict[str, Any]]) -> None:
            async for event in events:  # the stream is read, and so reopened, as it is iterated
                methods.append(event.get("method"))
                if event.get("method") == "notifications/resources/updated":
                    heard.set()

        async with client.listen(resource_uris=[URI]) as events, trio.open_nursery() as nursery:
            nursery.start_soon(consume, events)
            with trio.fail_after(10):
                while not methods:
                    await trio.sleep(0.01)
            redis_server.stop()
            times = await _refused_often(seen, "POST", "subscriptions/listen")
            _waited_each_retry_after(times)
            redis_server.start()
            await _published_until(server, heard)
            nursery.cancel_scope.cancel()
    acknowledged = "notifications/subscriptions/acknowledged"
    assert methods[0] == acknowledged
    assert acknowledged in methods[1:]  # the new stream's own acknowledgement came first


async def _serve(
    server: mcpfast.Server, engine: str, port: int, keys: KeyRing, *, task_status: Any
) -> None:
    config = mcpfast.Config(port=port, engine="native" if engine == "native" else "hypercorn")
    await mcpfast.serve(server, config, keys=keys, task_status=task_status)


@ENGINES
async def test_a_session_gone_is_renewed_and_subscribed_again(engine: str) -> None:
    """The server stops while the GET stream is open, and comes back on the same port with a
    new key (the session is gone: 404): the client reconnects until it is back (more refused
    connections than the 5 it once gave up after, then the 404), initializes a new session, subscribes again, and hears an
    update in it."""
    server = _server()
    seen = Seen()
    heard = trio.Event()

    async def note(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/resources/updated":
            heard.set()

    tried: list[str] = []

    async def sent(request: httpx2.Request) -> None:
        if request.method == "GET":
            tried.append(request.method)

    async with trio.open_nursery() as nursery:
        first = trio.CancelScope()

        async def once(task_status: Any) -> None:
            with first:
                await _serve(server, engine, 0, TEST_KEYS, task_status=task_status)

        url = (await nursery.start(once))[0] + "/mcp"
        port = httpx2.URL(url).port
        assert port is not None
        async with (
            httpx2.AsyncClient(event_hooks={"request": [sent], "response": [seen]}) as http,
            mcpfast.connect(
                url, "legacy", http_client=http, on_notification=note, era_cache=EraCache()
            ) as client,
        ):
            legacy = client.connection
            assert isinstance(legacy, LegacyHttp)
            legacy._stream._random = lambda: 0.1
            await client.subscribe(URI)
            old = legacy.session
            first.cancel()
            gets = len(tried)
            with trio.fail_after(20):  # more attempts at the closed port than the 5 of old
                while len(tried) < gets + OUTAGE_ATTEMPTS:
                    await trio.sleep(0.05)
            mark = len(seen.answers)
            await nursery.start(_serve, server, engine, port, NEW_KEYS)
            await _published_until(server, heard)
            assert legacy.session not in (None, old)
            posted = seen.since(mark)
            assert posted[:3] == ["initialize", "notifications/initialized", "resources/subscribe"]
            assert [s for _, v, _, s, _ in seen.answers[mark:] if v == "GET"][:2] == [404, 200]
        nursery.cancel_scope.cancel()
