"""The `Bus` contract, on `LocalBus` and on two `RedisBus` workers sharing one Redis: what one
worker publishes, records or saves is seen by the other."""

from __future__ import annotations

import trio

from mcpfast.protocol.limits import parse_rate
from mcpfast.server.state.sessions import SessionRecord

from .conftest import Pair

WAIT = 5.0
"""Bound on a cross-worker delivery (a pub/sub round trip through Redis)."""


async def test_published_events_reach_subscribers_and_replay_on_any_worker(pair: Pair) -> None:
    publisher, listener = pair
    start = await listener.head()
    async with listener.subscribe(["tools", "prompts"]) as events:
        first = await publisher.publish("tools", {"method": "a", "params": {}})
        await publisher.publish("other", {"method": "b"})
        third = await publisher.publish("prompts", {"method": "c"})
        with trio.fail_after(WAIT):
            assert await events.receive() == (first, "tools", {"method": "a", "params": {}})
            assert await events.receive() == (third, "prompts", {"method": "c"})
    assert await listener.head() == third
    replayed = await listener.replay(start, ["tools", "prompts"])
    assert replayed == [
        (first, "tools", {"method": "a", "params": {}}),
        (third, "prompts", {"method": "c"}),
    ]
    assert await listener.replay(first, ["prompts"]) == [(third, "prompts", {"method": "c"})]
    assert await listener.replay(third, ["tools"]) == []
    assert await listener.replay("nonsense", ["tools"]) is None


async def test_a_notification_is_claimed_once(pair: Pair) -> None:
    one, other = pair
    assert await one.claim("session", "e1", "stream-a") == "stream-a"
    assert await other.claim("session", "e1", "stream-b") == "stream-a"
    assert await other.claim("session", "e2", "stream-b") == "stream-b"
    assert await one.claim("another", "e1", "stream-c") == "stream-c"


async def test_a_key_is_claimed_once_on_any_worker_until_it_expires(pair: Pair) -> None:
    one, other = pair
    claimed = trio.current_time()
    assert await one.claim_once("owner", "k1", 2.0)  # long enough for a busy machine's checks
    assert not await other.claim_once("owner", "k1", 60)
    assert not await one.claim_once("owner", "k1", 60)
    assert await other.claim_once("owner", "k2", 60)
    assert await one.claim_once("another", "k1", 60)
    await trio.sleep_until(claimed + 2.3)  # the expiry is Redis's (real time)
    assert await other.claim_once("owner", "k1", 60)
    assert not await one.claim_once("owner", "k2", 60)


async def test_sessions_saved_on_one_worker_load_on_the_other(pair: Pair) -> None:
    saver, loader = pair
    assert await loader.load_session("s1") is None
    await saver.save_session("s1", SessionRecord(seen=1.0, log_level="debug"), 60)
    with trio.fail_after(WAIT):
        while (record := await loader.load_session("s1")) is None:
            await trio.sleep(0.01)
    assert record.log_level == "debug"
    await loader.save_session("s1", SessionRecord(seen=2.0, ended=True), 60)
    await loader.save_session("s1", SessionRecord(seen=3.0, log_level="info"), 60)  # too late
    with trio.fail_after(WAIT):
        while not ((record := await saver.load_session("s1")) and record.ended):
            await trio.sleep(0.01)
    ended = await loader.load_session("s1")
    assert ended is not None and ended.ended


async def test_session_records_expire(pair: Pair) -> None:
    saver, loader = pair
    await saver.save_session("brief", SessionRecord(seen=1.0), 0.2)
    await saver.save_session("kept", SessionRecord(seen=1.0), 60)
    await trio.sleep(0.4)  # the expiry is Redis's (real time)
    assert await loader.load_session("brief") is None
    assert await saver.load_session("brief") is None
    assert await loader.load_session("kept") is not None


async def test_a_stream_recorded_on_one_worker_is_followed_on_the_other(pair: Pair) -> None:
    recorder, follower = pair
    stream = await recorder.open_stream("owner", 10)
    priming = await recorder.record(stream, b"")
    first = await recorder.record(stream, b"one")
    assert not await recorder.followed(stream)
    async with follower.follow("intruder", priming) as denied:
        assert denied is None
    async with follower.follow("owner", "nosuchstream.1") as unknown:
        assert unknown is None
    async with follower.follow("owner", priming) as events:
        assert events is not None
        with trio.fail_after(WAIT):
            assert await anext(events) == (first, b"one")
            assert await recorder.followed(stream)
            second = await recorder.record(stream, b"two")
            assert await anext(events) == (second, b"two")
            await recorder.interrupt(stream)  # the connection ends, the stream goes on
            assert [event async for event in events] == []
    async with follower.follow("owner", first) as events:
        assert events is not None
        with trio.fail_after(WAIT):
            assert await anext(events) == (second, b"two")
            last = await recorder.record(stream, b"answer", final=True)
            assert [event async for event in events] == [(last, b"answer")]
    async with follower.follow("owner", priming) as events:  # a finished stream: its log
        assert events is not None
        with trio.fail_after(WAIT):
            got = [event async for event in events]
    assert got == [(first, b"one"), (second, b"two"), (last, b"answer")]
    ids = {
        priming,
        first,
        second,
        last,
        await recorder.record(await recorder.open_stream("o", 1), b""),
    }
    assert len(ids) == 5


async def test_a_stream_keeps_its_last_events(pair: Pair) -> None:
    recorder, follower = pair
    stream = await recorder.open_stream("owner", 2)
    ids = [await recorder.record(stream, str(n).encode()) for n in range(5)]
    ids.append(await recorder.record(stream, b"end", final=True))
    async with follower.follow("owner", ids[0]) as events:
        assert events is not None
        with trio.fail_after(WAIT):
            got = [data async for _, data in events]
    assert got == [b"4", b"end"]


async def test_signals_reach_listeners_on_any_worker(pair: Pair) -> None:
    sender, listener = pair
    # A signal sent before the listener below listens, seen through an earlier listener: in a
    # cluster a PUBLISH reaches the other nodes asynchronously, and one still on its way when
    # the listener subscribes would be delivered to it.
    async with listener.signals(listener.worker) as earlier:
        await sender.signal(listener.worker, b"nobody listens yet")
        with trio.fail_after(WAIT):
            assert await earlier.receive() == b"nobody listens yet"
    async with listener.signals(listener.worker) as received, listener.signals("other") as other:
        await sender.signal(listener.worker, b"hello")
        await sender.signal("other", b"there")
        with trio.fail_after(WAIT):
            assert await received.receive() == b"hello"
            assert await other.receive() == b"there"
        with trio.move_on_after(0.05):
            await received.receive()
            raise AssertionError("a signal sent before listening arrived")


async def test_task_records_are_shared_and_expire(pair: Pair) -> None:
    saver, loader = pair
    await saver.save_task("t1", b"first", 60, "owner")
    await saver.save_task("t2", b"second", 0.2, "owner")
    await saver.save_task("t3", b"third", 60, "owner")
    await saver.save_task("t4", b"unowned", 60, None)
    await saver.save_task("t1", b"first, updated", 60, "owner")
    assert await loader.load_task("t1") == b"first, updated"
    assert await loader.load_task("t4") == b"unowned"
    assert await loader.load_task("nope") is None
    assert await loader.task_ids("owner") == ["t1", "t2", "t3"]
    assert await loader.task_ids("nobody") == []
    await trio.sleep(0.4)  # real time: the expiry is Redis's
    assert await loader.load_task("t2") is None
    assert await loader.task_ids("owner") == ["t1", "t3"]


async def test_rate_limit_buckets_are_shared_all_or_none(pair: Pair) -> None:
    """A principal's buckets: what one worker takes the other sees (with `LocalBus`, the one
    process); a request takes from all its buckets or none; another principal's are its own.
    On a Cluster the keys of one principal share a slot (else CROSSSLOT)."""
    one, other = pair
    four, one_per_hour = parse_rate("4/h"), parse_rate("1/h")
    assert (await one.take_tokens("alice", ["*"], [four])).remaining == 3
    assert (await other.take_tokens("alice", ["*"], [four])).remaining == 2
    both = await one.take_tokens("alice", ["*", "t:search"], [four, one_per_hour])
    assert both.admitted and both.limit == 1 and both.remaining == 0
    refused = await other.take_tokens("alice", ["*", "t:search"], [four, one_per_hour])
    assert not refused.admitted and refused.which == 1 and 3_590_000 < refused.retry_after_ms
    last = await other.take_tokens("alice", ["*"], [four])  # the refusal took nothing
    assert last.admitted and last.remaining == 0
    assert not (await one.take_tokens("alice", ["*"], [four])).admitted
    assert (await one.take_tokens("bob", ["*"], [four])).remaining == 3
