"""What the client declares, and its cache, over `mcpfast.testing` (the real `Client` against a real `Server`, in
memory): the tasks extension per request, the cache after ``input_required`` rounds and after
``resources/updated``, elicitation modes, ``sampling.tools``, ``server/discover`` on a forced
modern connection, and the server refusing ``x-mcp-header`` declarations clients would drop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import msgspec
import pytest
import trio

import mcpfast.testing
from mcpfast import Context, Header, Server
from mcpfast.client.connect import EraChoice
from mcpfast.client.peer import Peer
from mcpfast.errors import MCPError, TransportError
from mcpfast.types import TASKS_EXTENSION

ERAS: list[EraChoice] = ["modern", "legacy"]
CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"


def build(reads: list[str]) -> Server:
    server = Server("corners", "1.0")

    @server.tool(task="optional")
    async def work(n: int) -> str:
        return f"worked {n}"

    @server.resource("memo://plain", mime_type="text/plain")
    def plain() -> str:
        reads.append("plain")
        return f"plain {len(reads)}"

    @server.resource("memo://asks", mime_type="text/plain")
    async def asks(ctx: Context) -> str:
        answer = await ctx.elicit(
            "Word?", {"type": "object", "properties": {"w": {"type": "string"}}}, key="w"
        )
        reads.append("asks")
        return f"asked {answer.get('content', {}).get('w')} {len(reads)}"

    @server.tool()
    async def visit(ctx: Context) -> str:
        answer = await ctx.elicit_url("Go there", "https://example.com/consent")
        return f"visited: {answer['action']}"

    @server.tool()
    async def pick(ctx: Context) -> str:
        tools = [{"name": "look", "inputSchema": {"type": "object"}}]
        answer = await ctx.sample("Pick a tool", tools=tools)
        return f"sampled: {answer['content']['text']}"

    return server


class Recorder:
    """Every request body the client sends (through an httpx2 event hook)."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    async def __call__(self, request: Any) -> None:
        body = request.content
        if body:
            decoded = msgspec.json.decode(body)
            if isinstance(decoded, dict):
                self.bodies.append(decoded)

    def declared(self, method: str) -> list[dict[str, Any]]:
        """The declared client capabilities of each ``method`` request sent."""
        return [
            b["params"]["_meta"][CAPABILITIES] for b in self.bodies if b.get("method") == method
        ]


def _keeping(seen: list[Any]) -> Callable[[Any], bool]:
    """An ``on_discover`` hook that keeps what it is given and accepts the server."""

    def accept(discovered: Any) -> bool:
        seen.append(discovered)
        return True

    return accept


# ------------------------------------------------------------------------- 1. tasks extension


async def test_a_tool_call_after_a_task_is_a_plain_call() -> None:
    async with mcpfast.testing.connect(build([]), era="modern") as client:
        task = await client.start_task("work", {"n": 1})
        assert task["resultType"] == "task"
        assert (await client.get_task(task["taskId"]))["taskId"] == task["taskId"]
        result = await client.call_tool("work", {"n": 2})
        assert result.content[0].text == "worked 2"  # type: ignore[union-attr]


async def test_the_tasks_extension_is_declared_by_the_task_requests_only() -> None:
    recorder = Recorder()
    server = build([])
    async with mcpfast.testing.connect(server, era="modern") as client:
        client.connection.client.event_hooks["request"].append(recorder)  # type: ignore[attr-defined]
        task = await client.start_task("work", {"n": 1})
        await client.get_task(task["taskId"])
        await client.call_tool("work", {"n": 2})
        await client.list_tools()
    starts, plain = recorder.declared("tools/call")
    assert starts["extensions"] == {TASKS_EXTENSION: {}}
    assert "extensions" not in plain
    assert recorder.declared("tasks/get")[0]["extensions"] == {TASKS_EXTENSION: {}}
    assert "extensions" not in recorder.declared("tools/list")[0]


async def test_the_task_methods_need_the_modern_era_or_2025_11_25() -> None:
    server = build([])
    async with mcpfast.testing.connect(server, era="legacy", legacy_version="2025-06-18") as client:
        with pytest.raises(TransportError, match="2025-11-25 session"):
            await client.start_task("work", {"n": 1})


# ------------------------------------------------------------------------------ 4. the cache


async def test_a_result_reached_through_input_rounds_is_not_cached() -> None:
    reads: list[str] = []
    asked: list[str] = []

    def answer(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        return {"action": "accept", "content": {"w": "hi"}}

    async with mcpfast.testing.connect(build(reads), era="modern", on_elicit=answer) as client:
        first = await client.read_resource("memo://asks")
        second = await client.read_resource("memo://asks")
        assert first.contents[0].text == "asked hi 1"
        assert second.contents[0].text == "asked hi 2"
        assert asked == ["Word?", "Word?"]
        # a result without rounds is cached (ttlMs 60 s)
        await client.read_resource("memo://plain")
        await client.read_resource("memo://plain")
    assert reads == ["asks", "asks", "plain"]


async def test_resources_updated_empties_the_cached_read_of_that_uri() -> None:
    reads: list[str] = []
    server = build(reads)
    async with (
        mcpfast.testing.connect(server, era="modern") as client,
        client.listen(resource_uris=["memo://plain"]) as stream,
    ):
        events = aiter(stream)
        assert (await anext(events))["method"] == "notifications/subscriptions/acknowledged"
        assert (await client.read_resource("memo://plain")).contents[0].text == "plain 1"
        assert (await client.read_resource("memo://plain")).contents[0].text == "plain 1"
        await server.resource_updated("memo://plain")
        with trio.fail_after(5):
            update = await anext(events)
        assert update["method"] == "notifications/resources/updated"
        assert (await client.read_resource("memo://plain")).contents[0].text == "plain 2"
    assert reads == ["plain", "plain"]


# ------------------------------------------------------------------------ 4. elicitation modes


def _accept(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept"}


@pytest.mark.parametrize("era", ERAS)
async def test_url_mode_is_declared_only_when_asked_for(era: EraChoice) -> None:
    seen: list[dict[str, Any]] = []

    def answer(params: dict[str, Any]) -> dict[str, Any]:
        seen.append(params)
        return {"action": "accept"}

    async with mcpfast.testing.connect(build([]), era=era, on_elicit=answer) as client:
        if era == "modern":
            with pytest.raises(MCPError) as refused:
                await client.call_tool("visit")
            assert refused.value.code == -32021
        else:
            result = await client.call_tool("visit")
            assert result.isError
    assert seen == []
    async with mcpfast.testing.connect(
        build([]), era=era, on_elicit=answer, elicitation_url=True
    ) as client:
        result = await client.call_tool("visit")
        assert result.content[0].text == "visited: accept"  # type: ignore[union-attr]
    assert [p["mode"] for p in seen] == ["url"]


@pytest.mark.parametrize(
    ("version", "url", "mode", "answered"),
    [
        (None, False, "form", True),
        (None, False, "url", False),
        (None, True, "url", True),
        (None, True, "telepathy", False),
        ("2025-11-25", False, "url", False),
        ("2025-11-25", True, "url", True),
        ("2025-11-25", True, "form", True),
        ("2025-06-18", True, "url", False),
        ("2025-06-18", True, "form", True),
    ],
)
async def test_an_undeclared_elicitation_mode_is_invalid_params(
    version: str | None, url: bool, mode: str, answered: bool
) -> None:
    peer = Peer(on_elicit=_accept, elicitation_url=url)
    peer.version = version
    params = {"mode": mode, "message": "m"}
    if answered:
        assert await peer.answer("elicitation/create", params) == {"action": "accept"}
        return
    with pytest.raises(MCPError) as refused:
        await peer.answer("elicitation/create", params)
    assert refused.value.code == -32602
    reply = msgspec.json.decode(
        await peer.reply_to({"id": 7, "method": "elicitation/create", "params": params})
    )
    assert reply["error"]["code"] == -32602 and reply["id"] == 7


# ---------------------------------------------------------------------------- 2e. sampling.tools


@pytest.mark.parametrize("era", ERAS)
async def test_connect_declares_sampling_tools_when_asked(era: EraChoice) -> None:
    seen: list[dict[str, Any]] = []

    def sample(params: dict[str, Any]) -> dict[str, Any]:
        seen.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "look"}, "model": "m"}

    async with mcpfast.testing.connect(build([]), era=era, on_sample=sample) as client:
        if era == "modern":
            with pytest.raises(MCPError):
                await client.call_tool("pick")
        else:
            assert (await client.call_tool("pick")).isError
    assert seen == []
    async with mcpfast.testing.connect(
        build([]), era=era, on_sample=sample, sampling_tools=True
    ) as client:
        assert (await client.call_tool("pick")).content[0].text == "sampled: look"  # type: ignore[union-attr]
    assert seen[0]["tools"][0]["name"] == "look"


# ------------------------------------------------------------- 3. discover on a forced modern


async def test_a_forced_modern_connection_has_its_discover_result_and_hook() -> None:
    seen: list[Any] = []
    async with mcpfast.testing.connect(
        build([]), era="modern", on_discover=_keeping(seen)
    ) as client:
        assert client.discover_result is not None
        assert client.server_info["name"] == "corners"
    assert seen == [client.discover_result]
    with pytest.raises(TransportError, match="discover hook"):
        async with mcpfast.testing.connect(build([]), era="modern", on_discover=lambda d: False):
            pass


# ------------------------------------------------------------- 3. x-mcp-header registration


class Inner(msgspec.Struct):
    region: Annotated[str, Header("Region")]


def test_the_server_refuses_a_header_on_a_nested_struct() -> None:
    server = Server("x", "1")

    def deploy(inner: Inner) -> str:
        return inner.region

    with pytest.raises(ValueError, match=r"tool 'deploy'.*'Region'.*\$defs/Inner") as refused:
        server.add_tool(deploy)
    assert "top-level argument" in str(refused.value)
    assert "deploy" not in server.tools


@pytest.mark.parametrize(
    "prop",
    [
        {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}},
        {"anyOf": [{"type": "string", "x-mcp-header": "A"}, {"type": "null"}]},
        {"$ref": "#/$defs/A"},
    ],
)
def test_the_server_refuses_unreachable_declarations(prop: dict[str, Any]) -> None:
    server = Server("x", "1")
    schema = {
        "type": "object",
        "properties": {"a": prop},
        "$defs": {"A": {"type": "string", "x-mcp-header": "A"}},
    }
    with pytest.raises(ValueError, match=r"tool 'bad'.*not statically reachable"):
        server.add_tool(lambda a: a, name="bad", input_schema=schema)
    assert "bad" not in server.tools


def test_a_header_on_a_top_level_argument_is_served() -> None:
    server = Server("x", "1")

    def deploy(region: Annotated[str, Header("Region")], size: int = 1) -> str:
        return region

    server.add_tool(deploy)
    assert server.tools["deploy"].headers == (("Region", ("region",)),)
