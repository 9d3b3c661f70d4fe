"""The governor observed (issue 27 part 8), on a real server (the engine under test): a call
that waited for its tool's cap (``mcpfast.server.queue.wait``, the span event
``mcpfast.queued``), a call past its deadline (``mcpfast.server.deadlines``, the span event
``mcpfast.deadline``), refusals by a cap and by shedding (``mcpfast.server.rate_limited`` by
reason and key kind), and the same in the access log's ``queued_ms`` and ``overran``."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import trio

import mcpfast
from mcpfast.telemetry import metrics

from ..helpers import Wire, running
from .conftest import Recorded


def governed(release: trio.Event) -> mcpfast.Server:
    server = mcpfast.Server("governed")

    @server.tool(concurrency=1)
    async def hold() -> str:
        await release.wait()
        return "held"

    @server.tool(timeout=0.2)
    async def hang() -> str:
        await trio.sleep_forever()
        raise AssertionError

    return server


def _call(name: str) -> tuple[str, dict[str, object]]:
    return "tools/call", {"name": name, "arguments": {}}


async def test_waits_deadlines_and_refusals_are_measured_marked_and_logged(
    otel: Recorded, tmp_path: Path
) -> None:
    release = trio.Event()
    log = tmp_path / "access.log"
    config = {"access_log": str(log), "log_format": "json", "shed_in_flight": 3}
    config |= {"concurrency_queue": 1, "queue_timeout_seconds": 30}
    async with (
        running(governed(release), **config) as url,
        httpx2.AsyncClient(timeout=10) as http,
    ):
        wire = Wire(http, url)
        statuses: list[int] = []

        async def hold() -> None:
            statuses.append((await wire.modern(*_call("hold"))).status)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(hold)
            nursery.start_soon(hold)  # one holds the slot, one waits in the queue
            with trio.fail_after(5):
                while not otel.points(metrics.QUEUED) or not any(
                    p.value for p in otel.points(metrics.QUEUED)
                ):
                    await trio.sleep(0.01)
            refused = await wire.modern(*_call("hold"))  # the queue's one place is taken
            assert refused.status == 429
            assert (await wire.modern(*_call("hang"))).result["isError"]
            await wire.modern(*_call("hang"))
            release.set()
        assert statuses == [200, 200]
        with trio.fail_after(5):
            while len(log.read_text().splitlines()) < 5:
                await trio.sleep(0.01)
    [wait] = otel.points(metrics.QUEUE_WAIT)
    assert wait.count == 1 and wait.attributes == {"mcpfast.cap": "tool"}
    deadlines = otel.points(metrics.DEADLINES)
    assert [(p.attributes["gen_ai.tool.name"], p.value) for p in deadlines] == [("hang", 2)]
    refusals = {
        (p.attributes[metrics.LIMIT_REASON], p.attributes[metrics.LIMIT_KEY]): p.value
        for p in otel.points(metrics.RATE_LIMITED)
    }
    assert refusals == {("concurrency", "tool"): 1}
    events = [e.name for s in otel.spans() for e in s.events]
    assert events.count("mcpfast.queued") == 1 and events.count("mcpfast.deadline") == 2
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert sum(1 for r in records if r["queued_ms"]) == 1
    assert [r["overran"] for r in records if r["overran"]] == ["hang", "hang"]


async def test_a_shed_request_is_counted(otel: Recorded) -> None:
    release = trio.Event()
    async with (
        running(governed(release), shed_in_flight=1) as url,
        httpx2.AsyncClient(timeout=10) as http,
    ):
        wire = Wire(http, url)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wire.modern, *_call("hold"))
            with trio.fail_after(5):
                while (shed := await wire.modern("tools/list")).status != 503:
                    await trio.sleep(0.01)  # until the held call is in flight
            assert shed.error["data"]["reason"] == "overloaded"
            release.set()
    refusals = {
        (p.attributes[metrics.LIMIT_REASON], p.attributes[metrics.LIMIT_KEY]): p.value
        for p in otel.points(metrics.RATE_LIMITED)
    }
    assert refusals == {("overloaded", "worker"): 1}
