"""``requestState`` carries every answer of a multi-round-trip call so far: it is bounded by
``request_state_max_bytes`` (1 MiB by default), and a round that would pass the bound fails
with -32602 naming it, through a real server and the real client."""

from __future__ import annotations

from typing import Any

import pytest

import mcpfast
from mcpfast.server.state import request_state as state

from ..helpers import TEST_KEYS, running

SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}


def rounds_server() -> mcpfast.Server:
    server = mcpfast.Server("rounds", "1")

    @server.tool()
    async def rounds(n: int, ctx: mcpfast.Context) -> str:
        """Ask ``n`` questions, one round each; the answers' total length."""
        total = 0
        for index in range(n):
            answer = await ctx.elicit(f"question {index}", SCHEMA)
            total += len(answer["content"]["text"])
        return str(total)

    return server


def answering(size: int) -> Any:
    def on_elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"text": "x" * size}}

    return on_elicit


def state_length(size: int) -> int:
    """The length of the ``requestState`` that carries one answer of ``size`` characters."""
    answers = {"elicitation-0": answering(size)({})}
    return len(state.mint(TEST_KEYS, "0" * 32, answers, 1 << 30))


async def call(url: str, n: int, size: int) -> mcpfast.ToolResult:
    async with mcpfast.connect(url, era="modern", on_elicit=answering(size)) as client:
        return await client.call_tool("rounds", {"n": n})


async def test_answers_far_past_64_kib_go_on() -> None:
    # Four rounds of 60 KB answers: the last retry carries about 320 KB of state.
    async with running(rounds_server()) as url:
        result = await call(url, 4, 60_000)
    assert result.content[0].text == str(4 * 60_000)  # type: ignore[union-attr]


@pytest.mark.parametrize("over", [0, 1])
async def test_the_limit_is_exact_and_named(over: int) -> None:
    size = 20_000
    limit = state_length(size) - over
    async with running(rounds_server(), request_state_max_bytes=limit) as url:
        if not over:
            result = await call(url, 2, size)
            assert result.content[0].text == str(2 * size)  # type: ignore[union-attr]
            return
        with pytest.raises(mcpfast.MCPError) as caught:
            await call(url, 2, size)
    assert caught.value.code == -32602
    assert "request_state_max_bytes" in caught.value.message
    assert caught.value.data == {"reason": "too large", "limit": limit, "size": limit + 1}
