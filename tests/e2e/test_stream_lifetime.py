"""``Config.max_stream_seconds`` (issue 27 part 9), both engines: a ``subscriptions/listen``
stream and a legacy GET stream end cleanly once they have lived that long, and mcpfast's own
client opens them again (the GET stream resuming with ``Last-Event-ID``) and still hears what
is published after."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
import trio

import mcpfast
from mcpfast.protocol.discovery import EraCache

from ..helpers import running

ENGINES = pytest.mark.parametrize("engine", ["hypercorn", "native"])
URI = "test://doc"
LIFETIME = 0.5


def _server() -> mcpfast.Server:
    server = mcpfast.Server("short-streams")
    server.resource(URI)(lambda: "doc")
    return server


async def _published_until(server: mcpfast.Server, heard: trio.Event) -> None:
    """Publish an update of `URI` every 0.2 s until it is ``heard`` (at most 10 s)."""
    with trio.fail_after(10):
        while not heard.is_set():
            await server.resource_updated(URI)
            with trio.move_on_after(0.2):
                await heard.wait()


@ENGINES
async def test_a_listen_stream_ends_at_its_lifetime_and_the_client_listens_again(
    engine: str,
) -> None:
    server = _server()
    methods: list[str | None] = []
    reasons: list[str] = []
    acknowledged = "notifications/subscriptions/acknowledged"
    heard = trio.Event()

    async def consume(events: AsyncIterator[dict[str, Any]]) -> None:
        async for event in events:
            methods.append(event.get("method"))
            if event.get("method") == "notifications/cancelled":
                reasons.append(event["params"]["reason"])
            if event.get("method") == "notifications/resources/updated":
                heard.set()

    async with (
        running(server, engine=engine, max_stream_seconds=LIFETIME) as url,
        mcpfast.connect(url, "modern", era_cache=EraCache()) as client,
        client.listen(resource_uris=[URI]) as events,
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(consume, events)
        with trio.fail_after(10):
            while methods.count(acknowledged) < 2:  # ended, and listened to again
                await trio.sleep(0.05)
        await _published_until(server, heard)
        nursery.cancel_scope.cancel()
    assert methods[0] == acknowledged
    assert reasons and "max_stream_seconds" in reasons[0]


@ENGINES
async def test_a_get_stream_ends_at_its_lifetime_and_the_client_resumes_it(engine: str) -> None:
    server = _server()
    gets: list[str | None] = []
    heard = trio.Event()

    async def seen(response: httpx2.Response) -> None:
        if response.request.method == "GET":
            gets.append(response.request.headers.get("last-event-id"))

    async def note(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/resources/updated" and params.get("uri") == URI:
            heard.set()

    async with (
        running(server, engine=engine, max_stream_seconds=LIFETIME) as url,
        httpx2.AsyncClient(event_hooks={"response": [seen]}) as http,
        mcpfast.connect(
            url, "legacy", http_client=http, on_notification=note, era_cache=EraCache()
        ) as client,
    ):
        await client.subscribe(URI)
        with trio.fail_after(10):
            while len(gets) < 3:  # the first stream, and two that resumed it
                await trio.sleep(0.05)
        await _published_until(server, heard)
    assert gets[0] is None and all(gets[1:3]), gets  # each new one resumed with Last-Event-ID
