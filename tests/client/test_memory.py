"""The real `Client` over `mcpfast.testing` against a real `Server`, in both eras: no sockets,
Trio's virtual clock for anything that waits."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio

import mcpfast.testing
from mcpfast import Context, Server
from mcpfast.client.connect import EraChoice
from mcpfast.errors import MCPError

from ..helpers import session_of

ERAS: list[EraChoice] = ["modern", "legacy"]


class Point(msgspec.Struct):
    x: int
    y: int


def build() -> Server:
    server = Server("memory", "1.0", instructions="for tests")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @server.tool()
    def point(x: int, y: int) -> Point:
        """A typed result: structured output."""
        return Point(x, y)

    @server.tool()
    async def count(ctx: Context, steps: int) -> str:
        for step in range(1, steps + 1):
            await trio.sleep(1)
            await ctx.report_progress(step, steps, f"step {step}")
        return "counted"

    @server.tool()
    async def greet(ctx: Context) -> str:
        answer = await ctx.elicit(
            "Name?",
            {"type": "object", "properties": {"name": {"type": "string"}}},
            key="name",
        )
        return f"Hello, {answer.get('content', {}).get('name')}!"

    @server.tool()
    async def chatty(ctx: Context) -> str:
        await ctx.info("working")
        return "said"

    @server.resource("memo://readme", mime_type="text/plain")
    def readme() -> str:
        return "read me"

    @server.prompt(arguments={"city": "A city"})
    def describe(city: str) -> str:
        return f"Describe {city}."

    @server.completion(prompt="describe")
    def cities(argument: str, value: str, context: dict[str, str]) -> list[str]:
        return [c for c in ("Paris", "Porto", "Rome") if c.startswith(value)]

    return server


def text(result: Any) -> str:
    return str(result.content[0].text)


@pytest.mark.parametrize("era", ERAS)
async def test_connects_in_the_era_asked_for(era: EraChoice) -> None:
    async with mcpfast.testing.connect(build(), era=era) as client:
        assert client.era == era
        if era == "modern":
            await client.discover()
        assert client.server_info["name"] == "memory"
        assert client.instructions == "for tests"
        assert "tools" in client.server_capabilities


async def test_auto_detects_the_modern_era() -> None:
    async with mcpfast.testing.connect(build(), era="auto") as client:
        assert client.era == "modern"
        assert client.discover_result is not None


@pytest.mark.parametrize("era", ERAS)
async def test_tools_and_structured_output(era: EraChoice) -> None:
    async with mcpfast.testing.connect(build(), era=era) as client:
        names = {t.name for t in await client.list_tools()}
        assert {"add", "point", "count", "greet"} <= names
        added = await client.call_tool("add", {"a": 2, "b": 3})
        assert added.structuredContent == {"result": 5}
        result = await client.call_tool("point", {"x": 1, "y": 2})
        assert result.structuredContent == {"x": 1, "y": 2}


@pytest.mark.parametrize("era", ERAS)
async def test_a_protocol_error_raises(era: EraChoice) -> None:
    async with mcpfast.testing.connect(build(), era=era) as client:
        with pytest.raises(MCPError):
            await client.call_tool("missing")


@pytest.mark.parametrize("era", ERAS)
async def test_progress(era: EraChoice, autojump_clock: trio.abc.Clock) -> None:
    seen: list[float] = []
    async with mcpfast.testing.connect(build(), era=era) as client:
        result = await client.call_tool(
            "count", {"steps": 3}, progress=lambda p: seen.append(p["progress"])
        )
    assert text(result) == "counted"
    assert seen == [1, 2, 3]


@pytest.mark.parametrize("era", ERAS)
async def test_elicitation(era: EraChoice) -> None:
    asked: list[dict[str, Any]] = []

    def answer(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"name": "Ada"}}

    async with mcpfast.testing.connect(
        build(),
        era=era,
        on_elicit=answer,
    ) as client:
        assert text(await client.call_tool("greet")) == "Hello, Ada!"
    assert asked[0]["message"] == "Name?"


@pytest.mark.parametrize("era", ERAS)
async def test_resources_prompts_and_completion(era: EraChoice) -> None:
    async with mcpfast.testing.connect(build(), era=era) as client:
        assert [r.uri for r in await client.list_resources()] == ["memo://readme"]
        read = await client.read_resource("memo://readme")
        assert read.contents[0].text == "read me"
        assert [p.name for p in await client.list_prompts()] == ["describe"]
        prompt = await client.get_prompt("describe", {"city": "Rome"})
        assert prompt.messages[0].content.text == "Describe Rome."  # type: ignore[union-attr]
        completion = await client.complete(
            {"type": "ref/prompt", "name": "describe"}, {"name": "city", "value": "P"}
        )
        assert completion.values == ["Paris", "Porto"]


@pytest.mark.parametrize("era", ERAS)
async def test_logs(era: EraChoice) -> None:
    logs: list[dict[str, Any]] = []
    async with mcpfast.testing.connect(
        build(),
        era=era,
        on_log=logs.append,
        log_level="info",
    ) as client:
        assert text(await client.call_tool("chatty")) == "said"
    assert [entry["data"] for entry in logs] == ["working"]


async def test_legacy_ping_and_session() -> None:
    async with mcpfast.testing.connect(build(), era="legacy") as client:
        await client.ping()
        assert session_of(client) is not None


async def test_modern_listen_hears_a_list_change() -> None:
    server = build()
    async with (
        mcpfast.testing.connect(server, era="modern") as client,
        client.listen(tools=True) as stream,
    ):
        first = await anext(aiter(stream))
        assert first["method"] == "notifications/subscriptions/acknowledged"
        server.remove_tool("chatty")
        change = await anext(aiter(stream))
        assert change["method"] == "notifications/tools/list_changed"


async def test_legacy_batch_under_2025_03_26() -> None:
    async with mcpfast.testing.connect(
        build(), era="legacy", legacy_version="2025-03-26"
    ) as client:
        assert client.protocol_version == "2025-03-26"
        results = await client.batch([("ping", None), ("nope/nothing", None)])
    assert results[0] == {}
    assert isinstance(results[1], MCPError)


@pytest.mark.parametrize("era", ERAS)
async def test_leaving_early_cancels_the_call(
    era: EraChoice, autojump_clock: trio.abc.Clock
) -> None:
    async with mcpfast.testing.connect(build(), era=era) as client:
        with trio.move_on_after(1.5) as scope:
            await client.call_tool("count", {"steps": 10})
        assert scope.cancelled_caught
        assert text(await client.call_tool("count", {"steps": 1})) == "counted"
