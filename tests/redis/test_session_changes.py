"""A change of a legacy session's state keeps the change another worker made a moment earlier,
whose news has not reached this worker's mirror yet: it is based on what Redis holds, not on the
mirror (`sessions.current`). A real server on each engine, a real redis-server; the other
worker's save is written into Redis without its news, as it stands while that news is in flight
(a client's ``logging/setLevel`` on one worker, then its ``resources/subscribe`` on another)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import coredis
import httpx2
import msgspec
import pytest
import trio

import mcpfast
from mcpfast.server.state.redis_bus import RedisBus
from mcpfast.server.state.sessions import SessionRecord

from ..helpers import Wire, running
from ..security.test_session_endings import session_of
from .test_redis_bus import mirrored

pytestmark = pytest.mark.slow

VERSION = "2025-11-25"
URI = "test://items/one"


@pytest.fixture(params=["hypercorn", "native"])
def engine(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


def items(bus: RedisBus) -> mcpfast.Server:
    server = mcpfast.Server("changes", bus=bus)

    @server.resource("test://items/{name}")
    def item(name: str) -> str:
        return name

    return server


async def saved_elsewhere(url: str, prefix: str, session_id: str, record: SessionRecord) -> None:
    """``record`` in Redis as another worker's save leaves it, its news not published."""
    async with coredis.Redis.from_url(url) as client:
        key = f"{prefix}session:{{{session_id}}}"
        await client.set(key, msgspec.json.encode(record), px=60_000)


@pytest.mark.parametrize(
    ("elsewhere", "method", "params", "kept"),
    [
        (
            SessionRecord(seen=0.0, log_level="warning"),
            "resources/subscribe",
            {"uri": URI},
            SessionRecord(seen=0.0, log_level="warning", subscriptions=[URI]),
        ),
        (
            SessionRecord(seen=0.0, subscriptions=[URI]),
            "logging/setLevel",
            {"level": "error"},
            SessionRecord(seen=0.0, log_level="error", subscriptions=[URI]),
        ),
        (
            SessionRecord(seen=0.0, log_level="info", subscriptions=[URI, "test://items/two"]),
            "resources/unsubscribe",
            {"uri": URI},
            SessionRecord(seen=0.0, log_level="info", subscriptions=["test://items/two"]),
        ),
    ],
    ids=["subscribe", "setLevel", "unsubscribe"],
)
async def test_a_change_keeps_another_workers_change_not_yet_mirrored(
    engine: str,
    redis_url: str,
    elsewhere: SessionRecord,
    method: str,
    params: dict[str, Any],
    kept: SessionRecord,
) -> None:
    prefix = f"changes-{uuid.uuid4().hex}:"
    bus = RedisBus(redis_url, prefix=prefix)
    async with (
        running(items(bus), engine=engine) as url,
        httpx2.AsyncClient(timeout=10) as http,
    ):
        wire = Wire(http, url)
        token, _ = await wire.initialize(VERSION)
        session_id = session_of(token).id
        assert (await wire.legacy("ping", {}, session=token, version=VERSION)).status == 200
        await mirrored(redis_url, bus, session_id)  # this worker's copy: no record
        elsewhere.seen = kept.seen = 1.0
        await saved_elsewhere(redis_url, prefix, session_id, elsewhere)
        assert await bus.load_session(session_id) is None  # the copy has not heard of it
        reply = await wire.legacy(method, params, session=token, version=VERSION)
        assert reply.status == 200 and reply.result == {}, reply.response.text
        record = await bus.load_session(session_id, fresh=True)
        assert record is not None
        assert (record.log_level, record.subscriptions) == (kept.log_level, kept.subscriptions)


async def test_a_touch_keeps_another_workers_change_not_yet_mirrored(
    engine: str, redis_url: str
) -> None:
    """A request with a stale id writes the session's record again (its use noted): with the
    state Redis holds, not this worker's older copy of it."""
    prefix = f"changes-{uuid.uuid4().hex}:"
    bus = RedisBus(redis_url, prefix=prefix)
    limits = {"session_refresh_seconds": 1.0, "session_seconds": 60}
    async with (
        running(items(bus), engine=engine, **limits) as url,
        httpx2.AsyncClient(timeout=10) as http,
    ):
        wire = Wire(http, url)
        token, _ = await wire.initialize(VERSION)
        session_id = session_of(token).id
        level = await wire.legacy(
            "logging/setLevel", {"level": "info"}, session=token, version=VERSION
        )
        assert level.status == 200, level.response.text
        await mirrored(redis_url, bus, session_id)  # this worker's copy: the level only
        await trio.sleep(2.1)  # real time: the id (dated to the second) and the copy go stale
        subscribed = SessionRecord(seen=time.time(), log_level="info", subscriptions=[URI])
        await saved_elsewhere(redis_url, prefix, session_id, subscribed)
        copy = await bus.load_session(session_id)
        assert copy is not None and not copy.subscriptions  # not heard of it
        reply = await wire.legacy("ping", {}, session=token, version=VERSION)
        assert reply.status == 200 and reply.headers.get("mcp-session-id"), reply.response.text
        record = await bus.load_session(session_id, fresh=True)
        assert record is not None and record.seen > subscribed.seen  # written again
        assert (record.log_level, record.subscriptions) == ("info", [URI])
