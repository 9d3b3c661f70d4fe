"""Client spans through the real stack: the JSON-RPC id each request went under, the traced
``initialize``, and a modern ``input_required`` round whose answers continue the trace."""

from __future__ import annotations

import sys
from typing import Any

import pytest
import trio

import mcpfast
from mcpfast.client import EraCache
from mcpfast.server.framework.context import Context
from mcpfast.telemetry import semconv

from ..helpers import running
from .conftest import Recorded

FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
WAIT = 10.0


def _server() -> mcpfast.Server:
    server = mcpfast.Server("asking", "1.0")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @server.tool()
    async def ask(ctx: Context) -> str:
        """Elicits."""
        answer = await ctx.elicit("Who?", FORM, key="who")
        return str(answer["content"]["name"])

    return server


def _elicited(seen: list[dict[str, Any]]) -> Any:
    def on_elicit(params: dict[str, Any]) -> dict[str, Any]:
        seen.append(params)
        return {"action": "accept", "content": {"name": "Ada"}}

    return on_elicit


async def test_modern_input_requests_carry_the_trace_and_the_answer_is_a_child(
    otel: Recorded,
) -> None:
    seen: list[dict[str, Any]] = []
    async with (
        running(_server()) as url,
        mcpfast.connect(
            url, "modern", era_cache=EraCache(), timeout=WAIT, on_elicit=_elicited(seen)
        ) as client,
    ):
        with trio.fail_after(WAIT):
            result = await client.call_tool("ask", {})
    assert not result.isError
    first, retry = sorted(
        (s for s in otel.spans("tools/call ask") if s.kind.name == "SERVER"),
        key=lambda s: s.start_time or 0,
    )
    answered = otel.span("elicitation/create", "SERVER")
    assert answered.parent is not None and answered.parent.span_id == first.context.span_id
    assert answered.context.trace_id == first.context.trace_id
    assert seen and "traceparent" in seen[0]["_meta"]
    callers = [s for s in otel.spans("tools/call ask") if s.kind.name == "CLIENT"]
    assert len(callers) == 2  # the call and its retry, each its own CLIENT span
    assert {s.context.span_id for s in callers} == {
        s.parent.span_id for s in (first, retry) if s.parent is not None
    }


async def test_client_spans_have_the_request_id_and_initialize_is_traced(
    otel: Recorded,
) -> None:
    async with (
        running(_server()) as url,
        mcpfast.connect(url, "legacy", era_cache=EraCache(), timeout=WAIT) as client,
    ):
        with trio.fail_after(WAIT):
            await client.call_tool("add", {"a": 1, "b": 2})
    call = otel.span("tools/call add", "CLIENT")
    served = otel.span("tools/call add", "SERVER")
    attrs = dict(call.attributes or {})
    assert attrs[semconv.REQUEST_ID] == dict(served.attributes or {})[semconv.REQUEST_ID]
    init = otel.span("initialize", "CLIENT")
    init_served = otel.span("initialize", "SERVER")
    init_attrs = dict(init.attributes or {})
    assert init_attrs[semconv.METHOD] == "initialize"
    assert init_attrs[semconv.REQUEST_ID] == dict(init_served.attributes or {})[semconv.REQUEST_ID]
    assert init_attrs[semconv.SESSION_ID] and init_attrs[semconv.SERVER_ADDRESS] == "127.0.0.1"
    assert init_served.parent is not None and init_served.parent.span_id == init.context.span_id
    assert semconv.REQUEST_ID not in otel.points(semconv.CLIENT_OPERATION_DURATION)[0].attributes


@pytest.mark.slow
async def test_stdio_initialize_is_traced_with_its_request_id(otel: Recorded) -> None:
    """Over a pipe: a real ``mcpfast serve --stdio`` process (with no SDK of its own)."""
    command = [sys.executable, "-m", "mcpfast", "serve", "--stdio"]
    with trio.fail_after(30):
        async with mcpfast.connect(command, "legacy", era_cache=EraCache(), timeout=WAIT) as client:
            await client.call_tool("echo", {"text": "hi"})
    init = otel.span("initialize", "CLIENT")
    attrs = dict(init.attributes or {})
    assert attrs[semconv.TRANSPORT] == "pipe" and attrs[semconv.REQUEST_ID]
    call = dict(otel.span("tools/call echo", "CLIENT").attributes or {})
    assert call[semconv.REQUEST_ID] != attrs[semconv.REQUEST_ID]
