"""Spans and metrics through the real stack: a real mcpfast client and server on loopback
(the engine under test, `tests.helpers.ENGINE`), and the stdio engine over memory streams."""

from __future__ import annotations

from typing import Any

import httpx2
import trio
import trio.testing
from opentelemetry import trace
from opentelemetry.trace import StatusCode

import mcpfast
from mcpfast.client import EraCache
from mcpfast.server import serve_stdio
from mcpfast.server.framework.context import Context
from mcpfast.telemetry import semconv

from ..helpers import running
from .conftest import Recorded

FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def _server() -> mcpfast.Server:
    server = mcpfast.Server("traced", "1.0")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @server.tool()
    def broken() -> str:
        """Fails."""
        raise ValueError("no")

    @server.tool()
    async def ask(ctx: Context) -> str:
        """Elicits."""
        answer = await ctx.elicit("Who?", FORM, key="who")
        return str(answer["content"]["name"])

    @server.prompt()
    def greeting() -> str:
        return "hello"

    return server


def _connect(url: str, era: str, **kw: Any) -> Any:
    return mcpfast.connect(url, era, era_cache=EraCache(), timeout=10, **kw)  # type: ignore[arg-type]


async def test_modern_client_span_is_parent_of_server_span(otel: Recorded) -> None:
    async with running(_server()) as url, _connect(url, "modern") as client:
        with trio.fail_after(10):
            assert (await client.call_tool("add", {"a": 1, "b": 2})).structuredContent
            await client.get_prompt("greeting")
    client_span = otel.span("tools/call add", "CLIENT")
    server_span = otel.span("tools/call add", "SERVER")
    assert server_span.parent is not None and client_span.context is not None
    assert server_span.parent.span_id == client_span.context.span_id
    assert server_span.context.trace_id == client_span.context.trace_id
    attrs = dict(server_span.attributes or {})
    assert attrs[semconv.METHOD] == "tools/call"
    assert attrs[semconv.TOOL_NAME] == "add"
    assert attrs[semconv.OPERATION_NAME] == "execute_tool"
    assert attrs[semconv.PROTOCOL_VERSION] == "2026-07-28"
    assert attrs[semconv.TRANSPORT] == "tcp" and attrs[semconv.PROTOCOL_NAME] == "http"
    assert semconv.REQUEST_ID in attrs and semconv.SESSION_ID not in attrs
    client_attrs = dict(client_span.attributes or {})
    assert client_attrs[semconv.SERVER_ADDRESS] == "127.0.0.1"
    assert isinstance(client_attrs[semconv.SERVER_PORT], int)
    prompt = otel.span("prompts/get greeting", "SERVER")
    assert dict(prompt.attributes or {})[semconv.PROMPT_NAME] == "greeting"
    points = otel.points(semconv.SERVER_OPERATION_DURATION)
    tool_points = [p for p in points if p.attributes.get(semconv.TOOL_NAME) == "add"]
    assert tool_points and tool_points[0].count == 1
    assert semconv.REQUEST_ID not in tool_points[0].attributes
    assert otel.points(semconv.CLIENT_OPERATION_DURATION)
    counted = otel.points("mcpfast.server.requests")
    assert any(
        p.attributes["mcpfast.era"] == "modern" and p.attributes["mcpfast.status"] == "ok"
        for p in counted
    )


async def test_legacy_session_spans_errors_and_session_duration(otel: Recorded) -> None:
    async with running(_server()) as url:
        async with _connect(url, "legacy") as client:
            with trio.fail_after(10):
                result = await client.call_tool("broken", {})
                assert result.isError
                try:
                    await client.call_tool("missing", {})
                except mcpfast.MCPError:
                    pass
            session = client.connection.session
        init = otel.span("initialize", "SERVER")
        assert dict(init.attributes or {})[semconv.METHOD] == "initialize"
        broken = otel.span("tools/call broken", "SERVER")
        attrs = dict(broken.attributes or {})
        assert attrs[semconv.SESSION_ID] and attrs[semconv.PROTOCOL_VERSION] == "2025-11-25"
        assert session is not None
        assert attrs[semconv.ERROR_TYPE] == "tool_error"
        assert broken.status.status_code is StatusCode.ERROR
        missing = otel.span("tools/call missing", "SERVER")
        missing_attrs = dict(missing.attributes or {})
        assert missing_attrs[semconv.ERROR_TYPE] == missing_attrs[semconv.STATUS_CODE]
        assert str(missing_attrs[semconv.STATUS_CODE]).startswith("-32")
        client_missing = otel.span("tools/call missing", "CLIENT")
        assert client_missing.status.status_code is StatusCode.ERROR
        assert otel.spans("notifications/initialized")
        assert otel.points(semconv.SERVER_SESSION_DURATION)
        assert otel.points(semconv.CLIENT_SESSION_DURATION)


async def test_elicitation_round_trip_is_traced_as_children(otel: Recorded) -> None:
    def on_elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": "Ada"}}

    async with running(_server()) as url, _connect(url, "legacy", on_elicit=on_elicit) as client:
        with trio.fail_after(10):
            result = await client.call_tool("ask", {})
        assert not result.isError
    call = otel.span("tools/call ask", "SERVER")
    asked = otel.span("elicitation/create", "CLIENT")
    answered = otel.span("elicitation/create", "SERVER")
    assert asked.parent is not None and asked.parent.span_id == call.context.span_id
    assert answered.parent is not None and answered.parent.span_id == asked.context.span_id
    assert answered.context.trace_id == otel.span("tools/call ask", "CLIENT").context.trace_id


async def test_a_task_runs_in_the_span_of_the_request_that_started_it(otel: Recorded) -> None:
    server = mcpfast.Server("tasks", "1.0")
    seen: list[Any] = []

    @server.tool(task="optional")
    async def slow() -> str:
        """Runs as a task."""
        seen.append(trace.get_current_span().get_span_context())
        return "done"

    async with running(server) as url, _connect(url, "legacy") as client:
        with trio.fail_after(10):
            started = await client.start_task("slow", {})
            await client.task_result(started["task"]["taskId"])
    call = otel.span("tools/call slow", "SERVER")
    assert seen and seen[0].span_id == call.context.span_id


async def test_without_an_sdk_nothing_is_recorded_and_no_trace_context_is_sent() -> None:
    sent: list[httpx2.Request] = []

    async def record(request: httpx2.Request) -> None:
        sent.append(request)

    assert mcpfast.telemetry.current() is None
    async with (
        running(_server()) as url,
        httpx2.AsyncClient(timeout=10, event_hooks={"request": [record]}) as http,
        mcpfast.connect(url, "modern", era_cache=EraCache(), http_client=http) as client,
    ):
        with trio.fail_after(10):
            await client.call_tool("add", {"a": 1, "b": 2})
        assert client.telemetry is None
    calls = [r for r in sent if b"tools/call" in r.content]
    assert calls
    for request in calls:
        assert b"traceparent" not in request.content and "traceparent" not in request.headers


async def test_stdio_spans_are_pipe_transport(otel: Recorded) -> None:
    to_server_send, to_server_receive = trio.testing.memory_stream_pair()
    from_server_send, from_server_receive = trio.testing.memory_stream_pair()
    lines = [
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add",'
        b'"arguments":{"a":1,"b":2},"_meta":{"io.modelcontextprotocol/protocolVersion":'
        b'"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}}',
    ]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(
            lambda: serve_stdio(_server(), stdin=to_server_receive, stdout=from_server_send)
        )
        for line in lines:
            await to_server_send.send_all(line + b"\n")
        with trio.fail_after(10):
            answer = await from_server_receive.receive_some()
        assert b'"result"' in answer
        await to_server_send.aclose()
    span = otel.span("tools/call add", "SERVER")
    assert dict(span.attributes or {})[semconv.TRANSPORT] == "pipe"
    assert span.context.trace_id == 0x4BF92F3577B34DA6A3CE929D0E0E4736
    assert span.parent is not None and span.parent.span_id == 0x00F067AA0BA902B7
