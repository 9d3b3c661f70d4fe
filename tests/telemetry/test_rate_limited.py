"""A request refused by a rate limit, observed (issue 27): the counter
``mcpfast.server.rate_limited`` by reason and key kind, and the refused request's SERVER span,
failed with -32023 and marked with both; on a real server (the engine under test)."""

from __future__ import annotations

import httpx2

import mcpfast
from mcpfast.jsonrpc import RATE_LIMITED
from mcpfast.telemetry import metrics, semconv

from ..helpers import Wire, running
from .conftest import Recorded


async def test_a_refusal_is_counted_and_its_span_marked(otel: Recorded) -> None:
    server = mcpfast.Server("observed", method_rate_limits={"tools/list": "1/h"})

    @server.tool(rate_limit="1/h")
    def echo(text: str) -> str:
        return text

    async with running(server) as url, httpx2.AsyncClient(timeout=10) as http:
        wire = Wire(http, url)
        call = {"name": "echo", "arguments": {"text": "hi"}}
        assert [(await wire.modern("tools/call", call)).status for _ in range(3)] == [
            200,
            429,
            429,
        ]
        assert [(await wire.modern("tools/list")).status for _ in range(2)] == [200, 429]
    counted = {
        (p.attributes[metrics.LIMIT_REASON], p.attributes[metrics.LIMIT_KEY]): p.value
        for p in otel.points(metrics.RATE_LIMITED)
    }
    assert counted == {("rate", "tool"): 2, ("rate", "method"): 1}
    refused = [
        s
        for s in otel.spans("tools/call echo")
        if (s.attributes or {}).get(semconv.ERROR_TYPE) == str(RATE_LIMITED)
    ]
    assert len(refused) == 2
    attributes = dict(refused[0].attributes or {})
    assert attributes[metrics.LIMIT_KEY] == "tool"
    assert attributes[metrics.LIMIT_REASON] == "rate"
    assert refused[0].kind.name == "SERVER" and refused[0].status.status_code.name == "ERROR"
