"""OpenTelemetry traces and metrics for mcpfast's server and client, on `opentelemetry-api` only.

Telemetry is live when a real TracerProvider or MeterProvider is installed (the SDK's) before a
server starts serving or a client connects: that is decided once, at construction
(`state.current`). Otherwise no span or metric work is done at all, and no ``_meta`` key is
added to a request. Names, attributes and the span-name rule are `semconv`'s.
"""

from .state import Telemetry, current, use

__all__ = ["Telemetry", "current", "use"]
