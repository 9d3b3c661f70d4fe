"""Whether telemetry is live, decided once per server or client at construction.

Live means a real (SDK) TracerProvider or MeterProvider is installed: the global ones
(`opentelemetry.trace.set_tracer_provider`, `opentelemetry.metrics.set_meter_provider`), or
those `use` names. Configure the SDK before serving or connecting: what is constructed before
keeps doing nothing. With neither live, `current` is None and the callers skip every span,
metric and ``_meta`` key.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry import metrics, trace
from opentelemetry.metrics import MeterProvider, NoOpMeterProvider
from opentelemetry.metrics._internal import _ProxyMeterProvider
from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider, Tracer, TracerProvider

from .metrics import Instruments

SCOPE = "mcpfast"

_chosen: list[tuple[TracerProvider | None, MeterProvider | None]] = []
_made: dict[tuple[int, int], Telemetry] = {}


class Telemetry:
    """The tracer (None when tracing is off) and instruments (None when metrics are off)."""

    __slots__ = ("instruments", "tracer")

    def __init__(self, tracer: Tracer | None, instruments: Instruments | None) -> None:
        self.tracer = tracer
        self.instruments = instruments


@contextmanager
def use(
    tracer_provider: TracerProvider | None = None, meter_provider: MeterProvider | None = None
) -> Iterator[None]:
    """Within the block, servers and clients constructed use these providers instead of the
    global ones (None: that signal is off); for tests and embedding, since the global providers
    can be set only once per process."""
    _chosen.append((tracer_provider, meter_provider))
    try:
        yield
    finally:
        _chosen.pop()


def _providers() -> tuple[TracerProvider | None, MeterProvider | None]:
    if _chosen:
        return _chosen[-1]
    tp: TracerProvider | None = trace.get_tracer_provider()
    mp: MeterProvider | None = metrics.get_meter_provider()
    if isinstance(tp, ProxyTracerProvider | NoOpTracerProvider):
        tp = None
    if isinstance(mp, _ProxyMeterProvider | NoOpMeterProvider):
        mp = None
    return tp, mp


def current() -> Telemetry | None:
    """The telemetry to record into, None when neither traces nor metrics are live."""
    tp, mp = _providers()
    if tp is None and mp is None:
        return None
    key = (id(tp), id(mp))
    made = _made.get(key)
    if made is None:
        tracer = tp.get_tracer(SCOPE) if tp is not None else None
        instruments = Instruments(mp.get_meter(SCOPE)) if mp is not None else None
        made = _made[key] = Telemetry(tracer, instruments)
    return made
