"""`RedisBus` beyond the contract: the session mirror (no Redis round trip on the hot path) and
failure behaviour (a Redis killed, frozen and restarted mid-test), against a real redis-server."""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import AsyncIterator

import pytest
import trio

from mcpfast.errors import BusUnavailable
from mcpfast.server.state.redis_bus import RedisBus
from mcpfast.server.state.sessions import SessionRecord

from ..redis_server import RedisServer

pytestmark = pytest.mark.slow

BOUND = 2.0
"""The `timeout_seconds` of the buses here."""


def commands_processed(url: str) -> int:
    """Redis's count of the commands it processed (``INFO stats``), over a raw connection."""
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"INFO stats\r\n")
        reply = b""
        while b"total_commands_processed:" not in reply or not reply.endswith(b"\r\n"):
            reply += sock.recv(65536)
    line = reply.split(b"total_commands_processed:")[1].split(b"\r\n")[0]
    return int(line)


async def mirrored(url: str, bus: RedisBus, session_id: str) -> None:
    """Load ``session_id`` until a load makes no Redis round trip (the first may run while a
    save's broadcast is on its way, and is then not mirrored)."""
    with trio.fail_after(5):
        while True:
            before = commands_processed(url)
            await bus.load_session(session_id)
            if commands_processed(url) - before == 1:  # the first INFO
                return


@pytest.fixture
async def workers(redis_url: str) -> AsyncIterator[tuple[RedisBus, RedisBus]]:
    first, second = RedisBus(redis_url), RedisBus(redis_url)
    async with first.attached(), second.attached():
        yield first, second


async def test_loads_come_from_the_mirror_and_saves_invalidate_it(
    redis_url: str, workers: tuple[RedisBus, RedisBus]
) -> None:
    saver, loader = workers
    await saver.save_session("known", SessionRecord(seen=1.0, log_level="debug"), 60)
    assert (await loader.load_session("known")) == SessionRecord(seen=1.0, log_level="debug")
    assert await loader.load_session("never saved") is None
    await mirrored(redis_url, loader, "known")
    await mirrored(redis_url, loader, "never saved")
    before = commands_processed(redis_url)
    for _ in range(100):
        record = await loader.load_session("known")
        assert record is not None and record.log_level == "debug"
        assert await loader.load_session("never saved") is None
    assert commands_processed(redis_url) - before <= 3  # the INFO itself (and a keepalive)

    await saver.save_session("known", SessionRecord(seen=2.0, log_level="error"), 60)
    await saver.save_session("never saved", SessionRecord(seen=2.0), 60)
    with trio.fail_after(5):
        while (record := await loader.load_session("known")) and record.log_level != "error":
            await trio.sleep(0.005)
        while await loader.load_session("never saved") is None:
            await trio.sleep(0.005)
    await saver.save_session("known", SessionRecord(seen=3.0, ended=True), 60)
    with trio.fail_after(5):
        while not ((record := await loader.load_session("known")) and record.ended):
            await trio.sleep(0.005)
    await mirrored(redis_url, loader, "known")
    before = commands_processed(redis_url)
    for _ in range(100):
        record = await loader.load_session("known")
        assert record is not None and record.ended
    assert commands_processed(redis_url) - before <= 3


async def test_the_saver_reads_its_own_write(workers: tuple[RedisBus, RedisBus]) -> None:
    saver, _ = workers
    await saver.save_session("s", SessionRecord(seen=1.0, log_level="debug"), 60)
    assert await saver.load_session("s") == SessionRecord(seen=1.0, log_level="debug")
    await saver.save_session("s", SessionRecord(seen=2.0, log_level="info"), 60)
    assert await saver.load_session("s") == SessionRecord(seen=2.0, log_level="info")


async def test_redis_down_is_bounded_ends_listeners_and_recovers(redis_server: RedisServer) -> None:
    one, other = (
        RedisBus(redis_server.url, timeout_seconds=BOUND, max_backoff_seconds=0.2) for _ in range(2)
    )
    async with one.attached(), other.attached():
        await one.save_session("s", SessionRecord(seen=1.0), 60)
        assert await other.load_session("s") is not None  # mirrored
        stream = await one.open_stream("owner", 10)
        priming = await one.record(stream, b"")
        async with (
            other.subscribe(["tools"]) as events,
            other.signals("x") as signals,
            other.follow("owner", priming) as followed,
        ):
            assert followed is not None
            redis_server.stop()
            with trio.fail_after(2 * BOUND):  # every listener ends
                with pytest.raises(trio.EndOfChannel):
                    await events.receive()
                with pytest.raises(trio.EndOfChannel):
                    await signals.receive()
                assert [event async for event in followed] == []
        for call in (
            lambda: one.publish("tools", {"method": "m"}),
            lambda: other.load_session("s"),  # the mirror is not trusted any more
            lambda: one.save_session("s", SessionRecord(seen=2.0), 60),
            lambda: one.claim("o", "e", "c"),
            lambda: one.record(stream, b"lost"),
            lambda: other.replay("0-0", ["tools"]),
            lambda: one.save_task("t", b"r", 60, None),
            lambda: one.signal("x", b""),
        ):
            started = time.monotonic()
            with pytest.raises(BusUnavailable):
                await call()
            assert time.monotonic() - started < 1.5 * BOUND
        with pytest.raises(BusUnavailable):
            async with other.subscribe(["tools"]):
                pass

        redis_server.start()
        with trio.fail_after(10):
            while True:
                try:
                    async with other.subscribe(["tools"]) as events:
                        event_id = await one.publish("tools", {"method": "back"})
                        assert await events.receive() == (event_id, "tools", {"method": "back"})
                        break
                except BusUnavailable:
                    await trio.sleep(0.05)
        assert await other.load_session("s") is None  # that Redis kept nothing
        await one.save_session("s", SessionRecord(seen=3.0, log_level="info"), 60)
        with trio.fail_after(5):
            while await other.load_session("s") is None:
                await trio.sleep(0.01)
        async with other.signals("x") as signals:
            await one.signal("x", b"hello")
            with trio.fail_after(5):
                assert await signals.receive() == b"hello"


async def test_a_frozen_redis_is_refused_within_the_bound(redis_server: RedisServer) -> None:
    bus = RedisBus(redis_server.url, timeout_seconds=BOUND, max_backoff_seconds=0.2)
    async with bus.attached():
        await bus.save_session("s", SessionRecord(seen=1.0), 60)
        assert redis_server.process is not None
        os.kill(redis_server.process.pid, signal.SIGSTOP)
        try:
            for call in (
                lambda: bus.publish("tools", {"method": "m"}),
                lambda: bus.save_session("s", SessionRecord(seen=2.0), 60),
                lambda: bus.load_task("t"),
            ):
                started = time.monotonic()
                with pytest.raises(BusUnavailable):
                    await call()
                assert time.monotonic() - started < 1.5 * BOUND
        finally:
            os.kill(redis_server.process.pid, signal.SIGCONT)
        with trio.fail_after(10):
            while True:
                try:
                    await bus.publish("tools", {"method": "m"})
                    break
                except BusUnavailable:
                    await trio.sleep(0.05)


async def test_the_bus_starts_without_redis_and_connects_later(redis_server: RedisServer) -> None:
    redis_server.stop()
    bus = RedisBus(redis_server.url, timeout_seconds=BOUND, max_backoff_seconds=0.2)
    async with bus.attached():
        with pytest.raises(BusUnavailable):
            await bus.load_session("s")
        redis_server.start()
        with trio.fail_after(10):
            while True:
                try:
                    async with bus.subscribe(["t"]) as events:
                        event_id = await bus.publish("t", {"method": "m"})
                        assert (await events.receive())[0] == event_id
                        break
                except BusUnavailable:
                    await trio.sleep(0.05)


async def test_replay_refuses_what_the_log_no_longer_holds(redis_url: str) -> None:
    bus = RedisBus(redis_url, log_size=10)
    async with bus.attached():
        start = await bus.head()
        assert start == "0-0"
        assert await bus.replay(start, ["t"]) == []
        ids = [await bus.publish("t", {"method": str(n)}) for n in range(500)]
        assert await bus.replay(start, ["t"]) is None  # trimmed
        replayed = await bus.replay(ids[-3], ["t"])
        assert replayed is not None and [event[0] for event in replayed] == ids[-2:]
        assert await bus.replay("99999999999999-0", ["t"]) is None  # from another Redis


async def test_a_slow_subscriber_is_dropped(redis_url: str) -> None:
    one, other = RedisBus(redis_url), RedisBus(redis_url, buffer=4)
    async with one.attached(), other.attached():
        async with other.subscribe(["t"]) as slow, other.subscribe(["t"]) as keeping_up:
            for n in range(10):
                await one.publish("t", {"method": str(n)})
                with trio.fail_after(5):
                    assert (await keeping_up.receive())[2] == {"method": str(n)}
            got = [await slow.receive() for _ in range(4)]
            assert [event[2]["method"] for event in got] == ["0", "1", "2", "3"]
            with pytest.raises(trio.EndOfChannel):
                await slow.receive()
