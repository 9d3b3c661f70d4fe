"""Traces across two real server processes sharing one Redis (``mcpfast serve --bus``), each
exporting its spans to a file (`span_server`), behind the round-robin proxy of the scale-out
tests: a legacy client's call lands on one process, its elicitation answer on the other."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

import mcpfast
from mcpfast.client import EraCache

from ..e2e.processes import free_port, mcpfast_command, server_process
from ..e2e.round_robin import round_robin
from ..helpers import ENGINE
from .conftest import Recorded

pytestmark = pytest.mark.slow

KEYS = "k1:c2NhbGUtb3V0LXRlc3Qta2V5LTMyLWJ5dGVzLW9rISE="
SERVED = Path(__file__).with_name("span_server.py")
WAIT = 20.0


@asynccontextmanager
async def _workers(tmp_path: Path, bus: str) -> AsyncIterator[list[tuple[str, Path]]]:
    """Two processes of `span_server` on ``bus``: their URLs (no path) and span files."""
    async with AsyncExitStack() as stack:
        out = []
        for index in range(2):
            port = free_port()
            spans = tmp_path / f"spans-{index}.jsonl"
            argv = mcpfast_command(
                "serve", f"{SERVED}:server", "--port", str(port), "--engine", ENGINE, "--bus", bus
            )
            env = {"MCPFAST_KEYS": KEYS, "MCPFAST_SPANS": str(spans)}
            url = await stack.enter_async_context(server_process(argv, port, env))
            out.append((url.removesuffix("/mcp"), spans))
        yield out


def _read(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def _one(spans: list[dict[str, Any]], name: str, kind: str) -> dict[str, Any]:
    found = [s for s in spans if s["name"] == name and s["kind"] == kind]
    assert len(found) == 1, [(s["name"], s["kind"]) for s in spans]
    return found[0]


async def test_a_trace_spans_the_client_and_both_workers(
    otel: Recorded, redis_url: str, tmp_path: Path
) -> None:
    def on_elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": "Ada"}}

    async with (
        _workers(tmp_path, redis_url) as workers,
        round_robin([url for url, _ in workers]) as proxy,
    ):
        async with mcpfast.connect(
            proxy.url + "/mcp",
            "legacy",
            open_get_stream=False,
            era_cache=EraCache(),
            timeout=WAIT,
            on_elicit=on_elicit,
        ) as client:
            with trio.fail_after(WAIT):
                result = await client.call_tool("ask")
        assert result.content[0].text == "hello Ada"  # type: ignore[union-attr]
        # initialize, notifications/initialized, tools/call, the answer's POST, DELETE
        called, answered = proxy.served[2], proxy.served[3]
        assert called != answered
    one, other = _read(workers[called][1]), _read(workers[answered][1])
    caller = otel.span("tools/call ask", "CLIENT")
    trace_id = format(caller.context.trace_id, "032x")

    tool = _one(one, "tools/call ask", "SERVER")
    assert tool["parent"] == format(caller.context.span_id, "016x")
    assert tool["trace_id"] == trace_id and tool["status"] == "UNSET"  # it completed, no error
    asked = _one(one, "elicitation/create", "CLIENT")
    assert asked["parent"] == tool["span_id"] and asked["trace_id"] == trace_id
    reply = otel.span("elicitation/create", "SERVER")
    assert reply.parent is not None and format(reply.parent.span_id, "016x") == asked["span_id"]

    assert other, "the other process exported nothing"
    client_spans = {format(s.context.span_id, "016x") for s in otel.spans()}
    for span in other:  # its part in this trace (none for a JSON-RPC response) hangs off ours
        if span["trace_id"] == trace_id:
            assert span["parent"] in client_spans, span
