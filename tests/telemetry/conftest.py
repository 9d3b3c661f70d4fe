"""An OpenTelemetry SDK per test: its spans and metrics in memory, given to the servers and
clients the test builds through `mcpfast.telemetry.use` (the global providers stay unset, so
other tests run with no SDK)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcpfast import telemetry


class Recorded:
    """What one test's SDK recorded."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        found = list(self.exporter.get_finished_spans())
        return [s for s in found if name is None or s.name == name]

    def span(self, name: str, kind: str) -> ReadableSpan:
        matching = [s for s in self.spans(name) if s.kind.name == kind]
        assert len(matching) == 1, [(s.name, s.kind.name) for s in self.spans()]
        return matching[0]

    def points(self, metric: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        out: list[Any] = []
        for resource in data.resource_metrics if data is not None else []:
            for scope in resource.scope_metrics:
                for m in scope.metrics:
                    if m.name == metric:
                        out.extend(m.data.data_points)
        return out


@pytest.fixture
def otel() -> Iterator[Recorded]:
    recorded = Recorded()
    with telemetry.use(recorded.tracer_provider, recorded.meter_provider):
        yield recorded
