"""A session ended by ``DELETE`` stays ended (404) for as long as any of its ids could be valid,
on both buses, however many other sessions end meanwhile: the in-process bus never drops an
unexpired ending (past its bound it refuses every session started before the ones it forgot),
and Redis keeps each ending for at least ``session_seconds``."""

from __future__ import annotations

import base64
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
import msgspec
import pytest
import trio

import mcpfast
from mcpfast.server.config import Config
from mcpfast.server.state.local_bus import LocalBus
from mcpfast.server.state.redis_bus import RedisBus
from mcpfast.server.state.sessions import Session

from ..helpers import Wire, running

VERSION = "2025-11-25"
BOUND = 8
"""The endings (and live records) the bus under test keeps."""


def session_of(session_id: str) -> Session:
    payload = session_id.split(".")[3]
    raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    return msgspec.json.decode(raw, type=Session)


@asynccontextmanager
async def serving(engine: str, bus: LocalBus | RedisBus) -> AsyncIterator[Wire]:
    async with running(mcpfast.Server("endings", "1.0", bus=bus), engine=engine) as url:
        async with httpx2.AsyncClient(timeout=10) as http:
            yield Wire(http, url)


async def status(wire: Wire, session: str) -> int:
    return (await wire.legacy("ping", {}, session=session, version=VERSION)).status


async def end(wire: Wire, session: str) -> None:
    """DELETE ``session``: 204, or 404 once a tiny bound's watermark passed its start."""
    headers = {"mcp-session-id": session, "mcp-protocol-version": VERSION}
    assert (await wire.client.delete(wire.url, headers=headers)).status_code in (204, 404)
    assert await status(wire, session) == 404


async def end_many(wire: Wire, count: int) -> None:
    for _ in range(count):
        session, _ = await wire.initialize(VERSION)
        await end(wire, session)


async def test_an_ending_outlives_the_in_process_bound(engine: str) -> None:
    async with serving(engine, LocalBus(max_sessions=BOUND)) as wire:
        first, _ = await wire.initialize(VERSION)
        await end(wire, first)
        await end_many(wire, 3 * BOUND)
        assert await status(wire, first) == 404


async def test_past_the_bound_sessions_started_before_are_refused(engine: str) -> None:
    """Fail closed: a forgotten ending takes the sessions started up to it along (Unix
    seconds); a session started after it lives."""
    async with serving(engine, LocalBus(max_sessions=BOUND)) as wire:
        earlier, _ = await wire.initialize(VERSION)
        await end_many(wire, 2 * BOUND)
        assert await status(wire, earlier) == 404
        # real time: the next second, past the mark (session ids carry Unix seconds, and
        # state/sessions.py and the bus read the wall clock: no injected clock yet)
        await trio.sleep(int(time.time()) + 1 - time.time())
        later, _ = await wire.initialize(VERSION)
        assert await status(wire, later) == 200


@pytest.mark.slow
async def test_redis_keeps_an_ending_as_long_as_an_id_may_be_valid(
    engine: str, redis_url: str
) -> None:
    async with serving(engine, RedisBus(redis_url, max_sessions=BOUND)) as wire:
        first, _ = await wire.initialize(VERSION)
        await end(wire, first)
        await end_many(wire, 3 * BOUND)
        assert await status(wire, first) == 404
        key = f"mcpfast:session:{{{session_of(first).id}}}:ended"
        assert await pttl(redis_url, key) >= 1000 * Config().session_seconds


async def pttl(url: str, key: str) -> int:
    """``PTTL key`` of the Redis at ``url``, over RESP."""
    host, port = url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)
    stream = await trio.open_tcp_stream(host, int(port))
    async with stream:
        await stream.send_all(f"*2\r\n$4\r\nPTTL\r\n${len(key)}\r\n{key}\r\n".encode())
        with trio.fail_after(5):
            line = await stream.receive_some()
    assert line.startswith(b":"), line
    return int(line[1:].strip())
