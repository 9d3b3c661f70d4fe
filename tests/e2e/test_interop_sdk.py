"""Interop: the official Python SDK client (`mcp`) against the mcpfast demo server, both eras."""

from __future__ import annotations

from typing import Any

import pytest

mcp = pytest.importorskip("mcp", reason="the official SDK (pip install mcp) is not installed")
from mcp import Client, types  # noqa: E402

from ..helpers import running  # noqa: E402
from .test_legacy import app as legacy_app  # noqa: E402


async def test_sdk_client_in_modern_mode_uses_the_demo(demo_url: str) -> None:
    async with Client(demo_url, mode="2026-07-28") as client:
        tools = await client.list_tools()
        assert {"echo", "add", "slow", "greet"} <= {t.name for t in tools.tools}
        echo = await client.call_tool("echo", {"text": "from the sdk"})
        assert echo.content[0].text == "from the sdk"
        add = await client.call_tool("add", {"a": 20, "b": 22})
        assert add.structured_content == {"result": 42}
        read = await client.read_resource("demo://readme")
        assert "mcpfast demo" in read.contents[0].text
        prompt = await client.get_prompt("describe", {"city": "Porto"})
        assert "Porto" in prompt.messages[0].content.text


async def test_sdk_client_auto_mode_discovers_the_modern_era(demo_url: str) -> None:
    async with Client(demo_url) as client:
        result = await client.call_tool("echo", {"text": "auto"})
        assert result.content[0].text == "auto"


async def test_sdk_client_modern_answers_input_required(demo_url: str) -> None:
    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": "Grace"})

    async with Client(demo_url, mode="2026-07-28", elicitation_callback=elicit) as client:
        result = await client.call_tool("greet", {})
        assert result.content[0].text == "Hello, Grace!"


async def test_sdk_client_legacy_mode_with_elicitation_and_sampling() -> None:
    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": "Lin"})

    async def sample(context: Any, params: Any) -> types.CreateMessageResult:
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="beep"),
            model="test-model",
        )

    async def roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///work")])

    async with (
        running(legacy_app) as url,
        Client(
            url,
            mode="legacy",
            elicitation_callback=elicit,
            sampling_callback=sample,
            list_roots_callback=roots,
        ) as client,
    ):
        add = await client.call_tool("add", {"a": 1, "b": 2})
        assert add.structured_content == {"result": 3}
        named = await client.call_tool("ask_name", {})
        assert named.content[0].text == "hello Lin"
        sampled = await client.call_tool("ask_model", {"prompt": "say beep"})
        assert sampled.content[0].text == "model said beep"
        listed = await client.call_tool("roots", {})
        assert listed.content[0].text == "file:///work"
