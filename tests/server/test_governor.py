"""`server.core.governor` on Trio's virtual clock: the recent latency that sheds and decays, what
shedding lets through, the queue timeout, and the principals' table that forgets idle callers.
The same rules through the real stack: `tests/e2e/test_governing.py`."""

from __future__ import annotations

import pytest
import trio

import mcpfast
from mcpfast import codec
from mcpfast.errors import RateLimited
from mcpfast.server.access import AccessToken, current_access
from mcpfast.server.core.governor import HALF_LIFE, Governor
from mcpfast.server.framework.registry import ToolEntry


def _entry(concurrency: int | None = None) -> ToolEntry:
    server = mcpfast.Server("g")

    @server.tool(concurrency=concurrency)
    async def work() -> str:
        return "ok"

    return server.tools["work"]


async def test_recent_latency_sheds_then_decays_so_the_worker_serves_again(
    autojump_clock: trio.abc.Clock,
) -> None:
    governor = Governor(mcpfast.Config(shed_latency_ms=100))
    assert governor.shedding and governor.overloaded() is None
    for _ in range(10):
        with governor.flight():
            await trio.sleep(1.0)  # one slow call after another
    refusal = governor.overloaded()
    assert isinstance(refusal, RateLimited)
    assert refusal.reason == "overloaded" and refusal.http_status == 503
    assert refusal.headers == [(b"retry-after", b"1")]
    await trio.sleep(4 * HALF_LIFE)  # nothing admitted meanwhile: the average halved 4 times
    assert governor.overloaded() is None


async def test_in_flight_bound_and_what_shedding_lets_through(
    autojump_clock: trio.abc.Clock,
) -> None:
    governor = Governor(mcpfast.Config(shed_in_flight=1))
    _, request = codec.frame(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}', 64)
    _, answer = codec.frame(b'{"jsonrpc":"2.0","id":"s1","result":{}}', 64)
    _, note = codec.frame(b'{"jsonrpc":"2.0","method":"notifications/initialized"}', 64)
    assert governor.shed(request) is None
    with governor.flight():
        assert isinstance(governor.shed(request), RateLimited)
        assert governor.shed(answer) is None and governor.shed(note) is None
    assert governor.shed(request) is None


def test_shedding_is_off_by_default() -> None:
    assert not Governor(mcpfast.Config()).shedding


async def test_a_queue_timeout_refuses_and_the_slot_goes_on(
    autojump_clock: trio.abc.Clock,
) -> None:
    governor = Governor(mcpfast.Config(queue_timeout_seconds=5))
    entry = _entry(concurrency=1)
    release = trio.Event()

    async def holder(task_status: trio.TaskStatus[None]) -> None:
        async with governor.slots(entry):
            task_status.started()
            await release.wait()

    async with trio.open_nursery() as nursery:
        await nursery.start(holder)
        started = trio.current_time()
        with pytest.raises(RateLimited) as refused:
            async with governor.slots(entry):
                raise AssertionError("ran past the cap")
        assert trio.current_time() - started == pytest.approx(5)
        assert refused.value.reason == "concurrency" and refused.value.http_status == 429
        release.set()
    async with governor.slots(entry):  # the slot was given back
        pass


async def test_the_principals_table_forgets_idle_callers(autojump_clock: trio.abc.Clock) -> None:
    governor = Governor(mcpfast.Config(max_concurrent_per_principal=2))
    entry = _entry()
    for n in range(100):
        token = current_access.set(AccessToken(subject=f"user{n}", client_id="c"))
        try:
            async with governor.slots(entry):
                assert len(governor._principals) == 1
        finally:
            current_access.reset(token)
    assert governor._principals == {}
