"""A handler's own ``except Exception:`` or nursery does not hide the modern era's control
signals: ``ctx.elicit`` still ends the run with ``input_required`` (2026-07-28), and the same
handler still gets its live answer in a legacy session; ``ctx.start_task`` still becomes a
task."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
import trio

import mcpfast
from mcpfast import Context
from mcpfast.client import EraCache
from mcpfast.client.connect import EraChoice

from ..helpers import Wire, running

app = mcpfast.Server("signals", "1")
FORM = {"type": "object", "properties": {"name": {"type": "string"}}}


@app.tool()
async def guarded(ctx: Context) -> str:
    """Asks inside ``try/except Exception``."""
    try:
        answer = await ctx.elicit("Your name?", FORM)
    except Exception:
        return "swallowed"
    return f"hello {answer['content']['name']}"


@app.tool()
async def nursery(ctx: Context) -> str:
    """Asks from a task of its own nursery (the signal leaves it in an exception group)."""
    answers: list[dict[str, Any]] = []

    async def ask() -> None:
        answers.append(await ctx.elicit("Your name?", FORM))

    async with trio.open_nursery() as tasks:
        tasks.start_soon(ask)
    return f"hello {answers[0]['content']['name']}"


@app.tool(task="optional", defer_task=True)
async def deferred(ctx: Context) -> str:
    """Becomes a task inside ``try/except Exception``."""
    try:
        await ctx.start_task()
    except Exception:
        return "swallowed"
    return "done"


def _accept(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada"}}


@pytest.fixture
async def url() -> AsyncIterator[str]:
    async with running(app) as served:
        yield served


@pytest.mark.parametrize("tool", ["guarded", "nursery"])
async def test_modern_asks_through_except_and_nursery(url: str, tool: str) -> None:
    caps: dict[str, Any] = {"elicitation": {}}
    async with httpx2.AsyncClient(timeout=10) as http:
        wire = Wire(http, url)
        first = await wire.modern("tools/call", {"name": tool, "arguments": {}}, capabilities=caps)
        assert first.result["resultType"] == "input_required"
        (key,) = first.result["inputRequests"]
        second = await wire.modern(
            "tools/call",
            {
                "name": tool,
                "arguments": {},
                "inputResponses": {key: _accept({})},
                "requestState": first.result["requestState"],
            },
            capabilities=caps,
        )
    assert second.result["resultType"] == "complete"
    assert second.result["content"][0]["text"] == "hello Ada"


@pytest.mark.parametrize("era", ["modern", "legacy"])
@pytest.mark.parametrize("tool", ["guarded", "nursery"])
async def test_the_client_gets_the_answer_in_both_eras(url: str, era: EraChoice, tool: str) -> None:
    async with mcpfast.connect(url, era, on_elicit=_accept, era_cache=EraCache()) as client:
        result = await client.call_tool(tool)
    assert result.isError is not True
    assert result.content[0].text == "hello Ada"  # type: ignore[union-attr]


async def test_start_task_through_except(url: str) -> None:
    caps: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    async with httpx2.AsyncClient(timeout=10) as http:
        wire = Wire(http, url)
        created = await wire.modern(
            "tools/call", {"name": "deferred", "arguments": {}}, capabilities=caps
        )
        assert created.result["resultType"] == "task"
        with trio.fail_after(5):
            while (
                got := await wire.modern(
                    "tasks/get", {"taskId": created.result["taskId"]}, capabilities=caps
                )
            ).result["status"] != "completed":
                await trio.sleep(0.02)
    assert got.result["result"]["content"][0]["text"] == "done"
