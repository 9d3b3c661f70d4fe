"""The worker's bounded table of buckets (`state.buckets.LocalBuckets`) on Trio's virtual
clock, and what the `Limiter` takes from (`core.limiter`)."""

from __future__ import annotations

import trio

import mcpfast
from mcpfast.protocol.limits import parse_rate
from mcpfast.server.config import Config
from mcpfast.server.core.limiter import limiter_for
from mcpfast.server.state.buckets import LocalBuckets
from mcpfast.server.state.local_bus import LocalBus


async def test_local_buckets_refill_on_trios_clock(autojump_clock: trio.abc.Clock) -> None:
    buckets = LocalBuckets()
    rate = parse_rate("2/min")
    assert [buckets.take(["k"], [rate]).admitted for _ in range(3)] == [True, True, False]
    await trio.sleep(29)
    assert not buckets.take(["k"], [rate]).admitted
    await trio.sleep(1)
    assert buckets.take(["k"], [rate]).admitted


async def test_local_buckets_are_bounded(autojump_clock: trio.abc.Clock) -> None:
    """A client inventing keys cannot grow the table: the least recently used go."""
    buckets = LocalBuckets(max_buckets=100)
    rate = parse_rate("1/min")
    assert buckets.take(["kept"], [rate]).admitted
    for i in range(1000):
        buckets.take([f"k{i}"], [rate])
        if i % 50 == 0:
            assert not buckets.take(["kept"], [rate]).admitted  # used: kept
    assert len(buckets) == 100


def test_no_limit_anywhere_means_no_limiter() -> None:
    server = mcpfast.Server("plain")

    @server.tool()
    def free() -> str:
        return "ok"

    assert limiter_for(server, Config(), LocalBus()) is None


def test_the_buckets_a_request_takes_from() -> None:
    server = mcpfast.Server("s", rate_limit="100/min", method_rate_limits={"tools/list": "5/s"})

    @server.tool(rate_limit="2/min")
    def echo() -> str:
        return ""

    config = Config(method_rate_limits={"tools/list": "1/s"}, tool_rate_limits={"other": "3/h"})
    limiter = limiter_for(server, config, LocalBus())
    assert limiter is not None
    assert limiter.limits_of("tools/call", "echo") == (
        ["*", "t:echo"],
        [parse_rate("100/min"), parse_rate("2/min")],
    )
    assert limiter.limits_of("tools/list", None)[1][1] == parse_rate("1/s")  # the config wins
    assert limiter.limits_of("tools/call", "other")[0] == ["*", "t:other"]
    assert limiter.limits_of("tools/call", "unknown")[0] == ["*"]
