"""The server of the two-worker test, run as ``mcpfast serve tests/telemetry/span_server.py:server``:
it installs the OpenTelemetry SDK first, with an exporter that appends each finished span as one
JSON line to the file ``$MCPFAST_SPANS`` names (so the test reads what each process traced)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

import mcpfast
from mcpfast import Context


class JsonLines(SpanExporter):
    """Each span a JSON line: name, kind, ids (hex), parent span id, attributes, status."""

    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with open(self.path, "a", encoding="utf-8") as out:
            for span in spans:
                out.write(json.dumps(row(span)) + "\n")
        return SpanExportResult.SUCCESS


def row(span: ReadableSpan) -> dict[str, Any]:
    context = span.get_span_context()
    assert context is not None
    return {
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": format(context.trace_id, "032x"),
        "span_id": format(context.span_id, "016x"),
        "parent": format(span.parent.span_id, "016x") if span.parent is not None else None,
        "attributes": dict(span.attributes or {}),
        "status": span.status.status_code.name,
    }


provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(JsonLines(os.environ["MCPFAST_SPANS"])))
trace.set_tracer_provider(provider)  # before the server is built and served

server = mcpfast.Server("spans", "1.0")


@server.tool()
async def ask(ctx: Context) -> str:
    """Elicits a name."""
    answer = await ctx.elicit(
        "Name?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="name"
    )
    return f"hello {answer['content']['name']}"
