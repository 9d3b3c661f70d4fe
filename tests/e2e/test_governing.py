"""Concurrency caps, deadlines and load shedding through the real stack, on both engines (issue
27, `server.core.governor`): a tool's deadline answers an ``isError`` result naming the tool and
the seconds (a plain ``def`` on a thread is let go; a task past it fails); a tool's cap queues
its calls and refuses past its queue or its queue timeout (-32023, 429, ``Retry-After``) while
other tools are served; a principal's cap holds one caller; a worker over its in-flight bound
sheds new requests (503) while health, notifications and the admitted call go on. The
arithmetic of the recent latency is `tests/server/test_governor.py`'s (virtual clock)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, Literal

import httpx2
import pytest
import trio

import mcpfast
from mcpfast.jsonrpc import RATE_LIMITED
from mcpfast.protocol.discovery import EraCache

from ..helpers import Wire, running

ENGINES = pytest.mark.parametrize("engine", ["hypercorn", "native"])
ERAS = pytest.mark.parametrize("era", ["modern", "legacy"])


class Gate:
    """Calls of ``hold`` wait here until it opens (``entered``: how many came in); ``most``:
    the most calls of ``work`` that ran at once."""

    def __init__(self) -> None:
        self.open = trio.Event()
        self.entered = 0
        self.running = 0
        self.most = 0


def governed(gate: Gate) -> mcpfast.Server:
    server = mcpfast.Server("governed", "1.0")

    @server.tool(concurrency=1)
    async def hold() -> str:
        """One at a time; waits for the gate."""
        gate.entered += 1
        await gate.open.wait()
        return "held"

    @server.tool(concurrency=1)
    async def work() -> str:
        """One at a time; 0.2 s of work."""
        gate.running += 1
        gate.most = max(gate.most, gate.running)
        await trio.sleep(0.2)
        gate.running -= 1
        return "worked"

    @server.tool()
    async def fast() -> str:
        return "fast"

    @server.tool(timeout=0.3)
    async def hang() -> str:
        await trio.sleep_forever()
        raise AssertionError

    @server.tool(timeout=0.3)
    def block() -> str:
        time.sleep(2)  # a plain def on a thread: let go at the deadline
        return "late"

    @server.tool()
    async def stall() -> str:
        await trio.sleep_forever()
        raise AssertionError

    @server.tool(task="optional", timeout=0.3)
    async def long_task() -> str:
        await trio.sleep_forever()
        raise AssertionError

    return server


@asynccontextmanager
async def serving(gate: Gate, engine: str, **config: Any) -> AsyncIterator[Wire]:
    async with running(governed(gate), engine=engine, **config) as url:
        async with httpx2.AsyncClient(timeout=10) as http:
            yield Wire(http, url)


def _text(result: mcpfast.types.ToolResult) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


@ENGINES
@ERAS
async def test_a_deadline_answers_an_is_error_result_naming_the_tool(
    engine: str, era: Literal["modern", "legacy"]
) -> None:
    async with (
        serving(Gate(), engine, tool_timeout_seconds=0.5) as wire,
        mcpfast.connect(wire.url, era, era_cache=EraCache()) as client,
    ):
        with trio.fail_after(5):
            hung = await client.call_tool("hang")
            started = time.monotonic()
            blocked = await client.call_tool("block")
            let_go = time.monotonic() - started
            stalled = await client.call_tool("stall")  # the server's default deadline
            assert (await client.call_tool("fast")).content[0].text == "fast"  # type: ignore[union-attr]
    assert hung.isError and _text(hung) == "Tool 'hang' timed out after 0.3 s"
    assert blocked.isError and _text(blocked) == "Tool 'block' timed out after 0.3 s"
    assert let_go < 1.5  # not the thread's 2 s: the answer went out at the deadline
    assert stalled.isError and _text(stalled) == "Tool 'stall' timed out after 0.5 s"


@ENGINES
async def test_a_task_past_its_deadline_fails(engine: str) -> None:
    async with (
        serving(Gate(), engine) as wire,
        mcpfast.connect(wire.url, "modern", era_cache=EraCache()) as client,
    ):
        started = await client.start_task("long_task")
        task_id = started["taskId"]
        with trio.fail_after(5):
            while (task := await client.get_task(task_id))["status"] == "working":
                await trio.sleep(0.05)
    assert task["status"] == "failed"  # isError would complete a modern task: a deadline fails it
    assert "Tool 'long_task' timed out after 0.3 s" in str(task)


def _call(name: str) -> tuple[str, dict[str, Any]]:
    return "tools/call", {"name": name, "arguments": {}}


def assert_concurrency_refusal(reply: Any) -> None:
    assert reply.status == 429, reply.messages
    error = reply.error
    assert error["code"] == RATE_LIMITED
    assert error["data"]["reason"] == "concurrency" and error["data"]["limit"] == 1
    assert reply.headers["retry-after"] == "1"


@ENGINES
async def test_a_tool_cap_runs_its_calls_one_at_a_time(engine: str) -> None:
    gate = Gate()
    async with serving(gate, engine) as wire:
        replies: list[Any] = []

        async def work() -> None:
            replies.append(await wire.modern(*_call("work")))

        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                for _ in range(3):
                    nursery.start_soon(work)
    assert [r.result["content"][0]["text"] for r in replies] == ["worked"] * 3
    assert gate.most == 1  # queued, never side by side (uncapped, they overlap: 0.2 s each)


@ENGINES
async def test_a_full_queue_refuses_at_once_and_other_tools_are_served(engine: str) -> None:
    gate = Gate()
    async with serving(gate, engine, concurrency_queue=0) as wire:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wire.modern, *_call("hold"))
            with trio.fail_after(5):
                while gate.entered < 1:
                    await trio.sleep(0.01)
            refused = await wire.modern(*_call("hold"))
            assert_concurrency_refusal(refused)
            assert "its queue is full" in refused.error["message"]
            served = await wire.modern(*_call("fast"))  # a slow tool holds its own slots only
            assert served.status == 200 and served.result["content"][0]["text"] == "fast"
            assert gate.entered == 1
            gate.open.set()


@ENGINES
@ERAS
async def test_a_queue_timeout_refuses_before_anything_ran(engine: str, era: str) -> None:
    gate = Gate()
    async with serving(gate, engine, queue_timeout_seconds=0.3) as wire:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wire.modern, *_call("hold"))
            with trio.fail_after(5):
                while gate.entered < 1:
                    await trio.sleep(0.01)
            if era == "modern":
                refused = await wire.modern(*_call("hold"))
            else:
                session, _ = await wire.initialize("2025-11-25")
                refused = await wire.legacy(
                    "tools/call",
                    {"name": "hold", "arguments": {}},
                    session=session,
                    version="2025-11-25",
                )
            assert_concurrency_refusal(refused)
            assert "no slot within 0.3 s" in refused.error["message"]
            assert gate.entered == 1  # the refused call never ran
            gate.open.set()


@ENGINES
async def test_a_principal_cap_holds_one_caller_to_its_share(engine: str) -> None:
    gate = Gate()
    config = {"max_concurrent_per_principal": 1, "concurrency_queue": 0}
    async with serving(gate, engine, **config) as wire:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wire.modern, *_call("hold"))
            with trio.fail_after(5):
                while gate.entered < 1:
                    await trio.sleep(0.01)
            refused = await wire.modern(*_call("fast"))  # same caller (address): over its share
            assert refused.status == 429 and refused.error["data"]["reason"] == "concurrency"
            assert "this caller's calls" in refused.error["message"]
            gate.open.set()
        again = await wire.modern(*_call("fast"))  # its slot given back: served
        assert again.status == 200


@ENGINES
async def test_behind_a_trusted_proxy_each_forwarded_caller_has_its_own_share(engine: str) -> None:
    """The cap's caller is the rate limits' (`access.principal`): behind ``trusted_proxy_hops``
    proxies, the address they appended to ``X-Forwarded-For``, not the proxy's own."""
    gate = Gate()
    config = {"max_concurrent_per_principal": 1, "concurrency_queue": 0, "trusted_proxy_hops": 1}
    alice, bob = {"x-forwarded-for": "10.0.0.1"}, {"x-forwarded-for": "10.0.0.2"}
    async with serving(gate, engine, **config) as wire:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(partial(wire.modern, *_call("hold"), headers=alice))
            with trio.fail_after(5):
                while gate.entered < 1:
                    await trio.sleep(0.01)
            assert (await wire.modern(*_call("fast"), headers=bob)).status == 200
            refused = await wire.modern(*_call("fast"), headers=alice)
            assert refused.status == 429 and refused.error["data"]["reason"] == "concurrency"
            gate.open.set()


@ENGINES
async def test_an_overloaded_worker_sheds_new_requests_but_not_health_or_admitted_work(
    engine: str,
) -> None:
    gate = Gate()
    async with serving(gate, engine, shed_in_flight=1) as wire:
        admitted: list[Any] = []

        async def hold() -> None:
            admitted.append(await wire.modern(*_call("hold")))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(hold)
            with trio.fail_after(5):
                while gate.entered < 1:
                    await trio.sleep(0.01)
            shed = await wire.modern("tools/list")
            assert shed.status == 503, shed.messages
            assert shed.error["code"] == RATE_LIMITED
            assert shed.error["data"]["reason"] == "overloaded"
            assert shed.headers["retry-after"] == "1"
            base = wire.url.rsplit("/", 1)[0]
            health = await wire.client.get(base + "/healthz")
            assert health.status_code == 200
            note = await wire.post(
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"mcp-protocol-version": "2025-11-25"},
            )
            assert note.status != 503
            gate.open.set()
        assert admitted[0].status == 200 and admitted[0].result["content"][0]["text"] == "held"
        served = await wire.modern("tools/list")
        assert served.status == 200
