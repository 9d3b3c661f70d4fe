"""Extensions (SEP-2133) and MCP Apps (SEP-1865) through real servers on both engines and the
real client, in both eras: the client declares what it supports (`connect(extensions=...)`)
and reads the server's (`Client.server_extensions`), a handler sees the negotiation, the tasks
extension still works beside them, and a tool's app is found and read (`Client.tool_app`), or
left out with its text kept for a client without the extension."""

from __future__ import annotations

from typing import Any

import pytest
import trio

import mcpfast
from mcpfast import Context, Server
from mcpfast.client import APPS
from mcpfast.demo import server as demo_server
from mcpfast.protocol.apps import APP_MIME_TYPE, UI_EXTENSION
from mcpfast.types import TASKS_EXTENSION, TextContent

from ..helpers import running

X = "com.example/x"
ENGINES = pytest.mark.parametrize("engine", ["hypercorn", "native"])
ERAS = pytest.mark.parametrize("era", ["modern", "legacy"])


def negotiating_server() -> Server:
    server = Server("ext", extensions={X: {"level": 2}})

    @server.tool()
    async def probe(ctx: Context) -> dict[str, Any]:
        return {"supported": ctx.supports_extension(X), "settings": ctx.client_extension(X)}

    @server.tool(task="optional")
    async def slow() -> str:
        await trio.sleep(0.01)
        return "done"

    return server


@ENGINES
@ERAS
async def test_both_sides_declare_and_negotiate(engine: str, era: Any) -> None:
    async with running(negotiating_server(), engine=engine) as url:
        async with mcpfast.connect(url, era, extensions={X: {"mode": "fast"}}) as client:
            assert client.server_extensions[X] == {"level": 2}
            declared = await client.call_tool("probe")
        async with mcpfast.connect(url, era) as plain:
            undeclared = await plain.call_tool("probe")
    assert declared.structuredContent == {"supported": True, "settings": {"mode": "fast"}}
    assert undeclared.structuredContent == {"supported": False, "settings": None}


@ENGINES
async def test_the_tasks_extension_beside_another(engine: str) -> None:
    async with (
        running(negotiating_server(), engine=engine) as url,
        mcpfast.connect(url, "modern", extensions={X: {}}) as client,
    ):
        assert set(client.server_extensions) == {X, TASKS_EXTENSION}
        task = await client.start_task("slow")
        assert task["resultType"] == "task"
        with trio.fail_after(10):
            while (state := await client.get_task(task["taskId"]))["status"] != "completed":
                await trio.sleep(0.01)
        assert state["result"]["content"][0]["text"] == "done"
        plain = await client.call_tool("slow")  # no task asked for: the tool's result
        assert plain.content == [TextContent(text="done")]


async def test_connect_refuses_bad_extensions() -> None:
    cases: list[tuple[Any, str]] = [
        ({"nope": {}}, "reverse-DNS"),
        ({TASKS_EXTENSION: {}}, "per request"),
        ({X: [1]}, "object"),
    ]
    for extensions, says in cases:
        with pytest.raises(ValueError, match=says):
            async with mcpfast.connect("http://127.0.0.1:9/mcp", extensions=extensions):
                pass


@ENGINES
@ERAS
async def test_the_demo_app(engine: str, era: Any) -> None:
    ui = {UI_EXTENSION: APPS}
    async with running(demo_server, engine=engine) as url:
        async with mcpfast.connect(url, era, extensions=ui) as client:
            assert UI_EXTENSION in client.server_extensions
            app = await client.tool_app("clock")
            result = await client.call_tool("clock")
            assert await client.tool_app("echo") is None
        async with mcpfast.connect(url, era) as plain:
            hidden = await plain.tool_app("clock")
            fallback = await plain.call_tool("clock")
            page = await plain.read_resource("ui://demo/clock")
    assert app is not None and app.uri == "ui://demo/clock"
    assert "ui/initialize" in app.html and app.visibility == ["model", "app"]
    assert app.ui == {"csp": {}, "prefersBorder": True}
    assert isinstance(result.structuredContent, dict) and "UTC" in result.structuredContent["time"]
    assert hidden is None  # no link for a client without the extension
    (text,) = fallback.content
    assert isinstance(text, TextContent) and "UTC" in text.text
    assert page.contents[0].mimeType == APP_MIME_TYPE  # still readable by URI
