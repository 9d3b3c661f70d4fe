"""What the client checks before it sends, over `mcpfast.testing` (the real `Client`
against a real `Server`, in memory): the content ``on_elicit`` returns is checked against the
request's ``requestedSchema`` before it is sent (EL5), and a request whose capability the
server did not advertise is refused with nothing sent (``completion/complete``)."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

import mcpfast.testing
from mcpfast import Context, Server
from mcpfast.client.connect import EraChoice
from mcpfast.client.peer import elicit_answer_problem
from mcpfast.errors import MCPError

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2},
        "age": {"type": "integer", "minimum": 0},
        "units": {"type": "string", "enum": ["C", "F"]},
        "size": {"type": "string", "oneOf": [{"const": "s", "title": "S"}, {"const": "l"}]},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}},
        "ok": {"type": "boolean"},
    },
    "required": ["name"],
}


def asking(seen: list[str]) -> Server:
    server = Server("asks", "1.0")

    @server.tool()
    async def ask(ctx: Context) -> str:
        try:
            answer = await ctx.elicit("Who?", SCHEMA, key="who")
        except MCPError as exc:
            seen.append(f"error {exc.code}")
            return f"refused {exc.code}"
        seen.append(f"answer {answer}")
        return f"got {answer.get('content')}"

    return server


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ({}, "required 'name'"),
        ({"name": 5}, "not of type string"),
        ({"name": "A"}, "minLength"),
        ({"name": "Ada", "age": 1.5}, "not of type integer"),
        ({"name": "Ada", "age": True}, "not of type integer"),
        ({"name": "Ada", "age": -1}, "minimum"),
        ({"name": "Ada", "units": "K"}, "not one of"),
        ({"name": "Ada", "size": "m"}, "not one of"),
        ({"name": "Ada", "tags": ["a", "c"]}, "holds 'c'"),
        ({"name": "Ada", "ok": "yes"}, "not of type boolean"),
        ({"name": "Ada", "extra": 1}, "does not name"),
    ],
)
def test_content_that_breaks_the_schema_is_named(content: dict[str, Any], why: str) -> None:
    params = {"message": "Who?", "requestedSchema": SCHEMA}
    problem = elicit_answer_problem(params, {"action": "accept", "content": content})
    assert problem is not None and why in problem


def test_conforming_answers_pass() -> None:
    params = {"message": "Who?", "requestedSchema": SCHEMA}
    full = {"name": "Ada", "age": 3, "units": "C", "size": "l", "tags": ["b"], "ok": False}
    assert elicit_answer_problem(params, {"action": "accept", "content": full}) is None
    assert elicit_answer_problem(params, {"action": "decline"}) is None
    assert elicit_answer_problem(params, {"action": "cancel"}) is None
    assert elicit_answer_problem(params, {"action": "maybe"}) is not None
    assert elicit_answer_problem(params, "yes") is not None


async def test_legacy_a_bad_answer_is_refused_minus_32602_and_never_sent() -> None:
    """EL5 (legacy): the server gets a JSON-RPC error -32602, not the bad content."""
    seen: list[str] = []
    sent: list[bytes] = []

    async def record(request: httpx2.Request) -> None:
        sent.append(request.content)

    def bad(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": 42}}

    async with mcpfast.testing.connect(asking(seen), era="legacy", on_elicit=bad) as client:
        client.connection.client.event_hooks["request"].append(record)  # type: ignore[attr-defined]
        result = await client.call_tool("ask")
    assert seen == ["error -32602"]
    assert result.content[0].text == "refused -32602"  # type: ignore[union-attr]
    assert not any(b'"name":42' in body.replace(b" ", b"") for body in sent)


async def test_modern_a_bad_answer_raises_minus_32602_and_is_never_sent() -> None:
    """EL5 (modern): the request raises MCPError -32602; no retry carries the content."""
    seen: list[str] = []
    sent: list[bytes] = []

    async def record(request: httpx2.Request) -> None:
        sent.append(request.content)

    def bad(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": "Ada", "units": "K"}}

    async with mcpfast.testing.connect(asking(seen), era="modern", on_elicit=bad) as client:
        client.connection.client.event_hooks["request"].append(record)  # type: ignore[attr-defined]
        with pytest.raises(MCPError) as caught:
            await client.call_tool("ask")
    assert caught.value.code == -32602
    assert seen == []
    assert not any(b"inputResponses" in body for body in sent)


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_a_conforming_answer_still_reaches_the_tool(era: EraChoice) -> None:
    seen: list[str] = []

    def good(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": "Ada", "tags": ["a"]}}

    async with mcpfast.testing.connect(asking(seen), era=era, on_elicit=good) as client:
        result = await client.call_tool("ask")
    assert result.content[0].text == "got {'name': 'Ada', 'tags': ['a']}"  # type: ignore[union-attr]


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_completion_not_advertised_is_minus_32601_and_nothing_sent(era: EraChoice) -> None:
    """Covers an implemented rule: a server without completions is never sent
    ``completion/complete``."""
    server = Server("plain", "1.0")

    @server.tool()
    def echo(text: str) -> str:
        return text

    sent: list[bytes] = []

    async def record(request: httpx2.Request) -> None:
        sent.append(request.content)

    async with mcpfast.testing.connect(server, era=era) as client:
        assert "completions" not in client.server_capabilities
        client.connection.client.event_hooks["request"].append(record)  # type: ignore[attr-defined]
        with pytest.raises(MCPError) as caught:
            await client.complete({"type": "ref/prompt", "name": "x"}, {"name": "a", "value": ""})
        assert sent == []
    assert caught.value.code == -32601


async def test_a_plain_def_tool_can_change_the_registry() -> None:
    """A ``def`` tool runs on a worker thread: a registry change it makes is published through
    the Trio loop (it used to fail with ``'RunContext' object has no attribute 'runner'``)."""
    server = mcpfast.Server("registry", "1")

    def extra() -> str:
        return "extra"

    @server.tool()
    def grow() -> str:
        server.add_tool(extra)
        return "grown"

    async with mcpfast.testing.connect(server, era="modern") as client:
        result = await client.call_tool("grow")
        assert not result.isError and result.content[0].text == "grown"  # type: ignore[union-attr]
        assert "extra" in {tool.name for tool in await client.list_tools()}
