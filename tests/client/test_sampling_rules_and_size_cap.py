"""The client's sampling rules and size cap, in memory (`mcpfast.testing`, or the `Peer` alone): the 2025-11-25 sampling
rules on tool use (``client/sampling.mdx``: tool results alone in their message, each tool use
answered by the next message) checked before ``on_sample`` runs, a handler's refusal of an
``input_required`` request raised as itself, and ``max_message_bytes`` without sockets (a
response, and an event on the legacy GET stream)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio
import trio.testing

import mcpfast.testing
from mcpfast import Context, Server
from mcpfast.client.peer import Peer, tool_messages_problem
from mcpfast.errors import MCPError, TransportError


def _text(role: str, text: str = "t") -> dict[str, Any]:
    return {"role": role, "content": {"type": "text", "text": text}}


def _use(*ids: str) -> dict[str, Any]:
    blocks = [{"type": "tool_use", "id": i, "name": "w", "input": {}} for i in ids]
    return {"role": "assistant", "content": blocks}


def _results(*ids: str, extra: bool = False) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [
        {"type": "tool_result", "toolUseId": i, "content": []} for i in ids
    ]
    if extra:
        blocks.append({"type": "text", "text": "and"})
    return {"role": "user", "content": blocks if len(blocks) != 1 else blocks[0]}


VALID = {
    "no tools": [_text("user"), _text("assistant"), _text("user")],
    "one round": [_text("user"), _use("a"), _results("a"), _text("assistant")],
    "parallel uses": [_text("user"), _use("a", "b"), _results("b", "a")],
    "two rounds": [_text("user"), _use("a"), _results("a"), _use("b"), _results("b")],
}
INVALID = {
    "mixed result": ([_text("user"), _use("a"), _results("a", extra=True)], "mixes"),
    "text after a use": ([_text("user"), _use("a"), _text("user")], "must be the tool results"),
    "a result missing": ([_text("user"), _use("a", "b"), _results("a")], "missing ['b']"),
    "an unmatched result": ([_text("user"), _use("a"), _results("a", "z")], "unmatched ['z']"),
    "a result for nothing": ([_text("user"), _results("a")], "for no tool use"),
    "a use left open": ([_text("user"), _use("a")], "have no results"),
    "a use by the user": ([{"role": "user", "content": _use("a")["content"]}], "assistant"),
}


@pytest.mark.parametrize("name", VALID)
def test_conversations_that_keep_the_tool_rules_pass(name: str) -> None:
    assert tool_messages_problem(VALID[name]) is None


@pytest.mark.parametrize("name", INVALID)
def test_conversations_that_break_the_tool_rules_are_named(name: str) -> None:
    messages, words = INVALID[name]
    problem = tool_messages_problem(messages)
    assert problem is not None and words in problem


async def test_the_peer_refuses_them_before_on_sample_runs() -> None:
    called: list[Any] = []
    peer = Peer(on_sample=called.append, sampling_tools=True)
    messages, _ = INVALID["mixed result"]
    with pytest.raises(MCPError) as refused:
        await peer.answer("sampling/createMessage", {"messages": messages, "maxTokens": 5})
    assert refused.value.code == -32602 and called == []
    await peer.answer("sampling/createMessage", {"messages": VALID["one round"], "maxTokens": 5})
    assert len(called) == 1


def _server() -> Server:
    server = Server("gaps", "1.0")

    @server.tool()
    async def misuse(ctx: Context) -> str:
        messages, _ = INVALID["a use left open"]
        answer = await ctx.sample(messages, tools=[{"name": "w", "inputSchema": {}}])
        return str(answer)

    @server.tool()
    def big(size: int) -> str:
        return "x" * size

    return server


async def test_a_refused_input_request_raises_the_refusal_itself() -> None:
    """Before: the `MCPError` came out of the rounds' nursery inside an exception group."""
    async with mcpfast.testing.connect(
        _server(), era="modern", on_sample=lambda p: {}, sampling_tools=True
    ) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("misuse")
    assert refused.value.code == -32602 and "have no results" in refused.value.message


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_max_message_bytes_in_memory(era: Any) -> None:
    async with mcpfast.testing.connect(_server(), era=era, max_message_bytes=1500) as client:
        assert (await client.call_tool("big", {"size": 100})).content[0].text == "x" * 100  # type: ignore[union-attr]
        with pytest.raises(TransportError, match=r"max_message_bytes \(1,500 bytes\)"):
            await client.call_tool("big", {"size": 3000})


async def test_max_message_bytes_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_message_bytes"):
        async with mcpfast.testing.connect(_server(), max_message_bytes=0):
            pass


async def test_a_get_stream_event_over_the_limit_gives_the_stream_up_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="mcpfast.client")
    server = _server()
    uri = "memo://" + "u" * 600

    @server.resource(uri, mime_type="text/plain")
    def long_named() -> str:
        return "doc"

    async with mcpfast.testing.connect(server, era="legacy", max_message_bytes=500) as client:
        await client.subscribe(uri)
        await trio.testing.wait_all_tasks_blocked()
        await server.resource_updated(uri)  # its event on the GET stream is over 500 bytes
        await trio.testing.wait_all_tasks_blocked()  # in memory: the stream was read
        assert caplog.records
        assert (await client.call_tool("big", {"size": 10})).content[0].text == "x" * 10  # type: ignore[union-attr]
    (record,) = [r for r in caplog.records if r.name == "mcpfast.client"]
    assert "GET stream" in record.getMessage() and "max_message_bytes (500 bytes)" in (
        record.getMessage()
    )
