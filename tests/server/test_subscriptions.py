"""Legacy resource subscriptions reach the session's GET stream, however the stream's opening
and the subscribe interleave (on the `Endpoint` in memory, Trio's virtual clock)."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from trio.testing import MockClock, wait_all_tasks_blocked

from mcpfast.server.state.local_bus import LocalBus
from mcpfast.server.state.sessions import SessionRecord

from .conftest import Recorder, build, serving


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_a_subscribe_while_the_get_stream_opens_reaches_it(
    version: str, autojump_clock: MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GET reads the session before the subscribe and subscribes to the bus after it (the
    official SDK opens its GET stream while the client goes on): the update still arrives."""
    server = build()
    async with serving(server) as wire:
        session, _ = await wire.initialize(version)
        bus = server.bus
        assert isinstance(bus, LocalBus)
        load = bus.load_session
        read, go = trio.Event(), trio.Event()

        async def held(session_id: str) -> SessionRecord | None:
            record = await load(session_id)
            read.set()
            await go.wait()
            return record

        streams: list[Recorder] = []

        async def open_stream() -> None:
            streams.append(await wire.stream(session, version))

        monkeypatch.setattr(bus, "load_session", held)
        wire.nursery.start_soon(open_stream)
        await read.wait()  # the GET has read the session: no subscription yet
        monkeypatch.setattr(bus, "load_session", load)
        subscribed = await wire.legacy(
            "resources/subscribe", {"uri": "test://doc"}, session=session, version=version
        )
        assert subscribed.status == 200
        go.set()
        await wait_all_tasks_blocked()
        await server.resource_updated("test://doc")
        await wait_all_tasks_blocked()
        (stream,) = streams
        updates: list[Any] = [m["method"] for m in stream.messages]
        assert updates == ["notifications/resources/updated"]
        stream.disconnect()
