"""One MCP operation as telemetry sees it: its span (SERVER for what the peer asked, CLIENT for
what this side asks) and its duration histogram, with the outcome recorded once.

`Operation` is made by `serving` or `asking` only when telemetry is live (`state.current`);
the callers hold None otherwise and skip it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, Status, StatusCode

from ..errors import MCPError
from . import metrics, propagation, semconv
from .state import Telemetry

_asked: ContextVar[Operation | None] = ContextVar("mcpfast_asked", default=None)
"""The CLIENT operation of the request being sent in this context (`asking`), if any."""


class Operation:
    """A span in progress (or None when tracing is off) and the attributes of its metrics."""

    __slots__ = ("attrs", "era", "error", "histogram", "span", "start", "telemetry")

    def __init__(
        self,
        telemetry: Telemetry,
        kind: SpanKind,
        name: str,
        attrs: dict[str, Any],
        parent: Context | None,
        era: str | None,
    ) -> None:
        self.telemetry = telemetry
        self.attrs = attrs
        self.era = era
        self.error: str | None = None
        tracer = telemetry.tracer
        self.span = (
            tracer.start_span(name, context=parent, kind=kind, attributes=attrs)
            if tracer is not None
            else None
        )
        instruments = telemetry.instruments
        self.histogram = None
        if instruments is not None:
            server = kind is SpanKind.SERVER
            self.histogram = (
                instruments.server_operation if server else instruments.client_operation
            )
        self.start = time.perf_counter()

    def set(self, key: str, value: Any) -> None:
        """Add an attribute (to the span and, if a metric key, to its metrics)."""
        self.attrs[key] = value
        if self.span is not None:
            self.span.set_attribute(key, value)

    def fail(self, code: int | str, message: str | None = None) -> None:
        """The operation failed: a JSON-RPC error ``code`` (also ``rpc.response.status_code``),
        or another low-cardinality error type; the first failure recorded wins."""
        if self.error is not None:
            return
        self.error = str(code)
        self.set(semconv.ERROR_TYPE, self.error)
        if isinstance(code, int):
            self.set(semconv.STATUS_CODE, self.error)
        if self.span is not None:
            self.span.set_status(Status(StatusCode.ERROR, message))

    def result(self, result: Any) -> None:
        """A tool result with ``isError`` fails the operation as ``tool_error``."""
        is_error = (
            result.get("isError") if isinstance(result, dict) else getattr(result, "isError", None)
        )
        if is_error is True:
            self.fail(semconv.TOOL_ERROR, "the tool reported an error")

    def end(self, exc: BaseException | None) -> None:
        """End the span and record the duration (``exc``: what ended it, if it raised)."""
        if exc is not None and self.error is None:
            self.fail(type(exc).__qualname__, str(exc) or None)
            if self.span is not None and isinstance(exc, Exception):
                self.span.record_exception(exc)
        if self.span is not None:
            self.span.end()
        attrs = self.attrs
        if self.histogram is not None:
            keys = semconv.METRIC_KEYS
            self.histogram.record(
                time.perf_counter() - self.start, {k: v for k, v in attrs.items() if k in keys}
            )
        instruments = self.telemetry.instruments
        if self.era is not None and instruments is not None:
            status = self.error or "ok"
            instruments.requests.add(
                1,
                {
                    semconv.METHOD: attrs[semconv.METHOD],
                    metrics.ERA: self.era,
                    metrics.STATUS: status,
                },
            )


@contextmanager
def _current(op: Operation) -> Iterator[Operation]:
    """``op``'s span current within the block; the block's exception ends it as a failure (an
    `MCPError` as its JSON-RPC code)."""
    try:
        if op.span is None:
            yield op
        else:
            with trace.use_span(
                op.span, end_on_exit=False, record_exception=False, set_status_on_exception=False
            ):
                yield op
    except BaseException as exc:
        if isinstance(exc, MCPError):
            op.fail(exc.code, exc.message)
        op.end(exc)
        raise
    op.end(None)


@contextmanager
def serving(
    telemetry: Telemetry,
    *,
    method: str,
    name: str | None,
    id_: int | str | None,
    version: str | None,
    era: str | None,
    params: bytes | None,
    headers: Mapping[str, str] | None,
    session_id: str | None = None,
    meta: Mapping[str, Any] | None = None,
    transport: Mapping[str, Any] | None = None,
) -> Iterator[Operation]:
    """The SERVER operation of one message received (its span current within the block),
    its parent the trace context in its ``_meta`` (``meta``, else read from the raw
    ``params``), else in the HTTP ``headers`` (None: stdio). ``era`` None: not counted in
    the request counter, `metrics.REQUESTS` (the client answering a server's request);
    ``transport``: the network attributes when they are not those ``headers`` imply."""
    attrs = semconv.attributes(method, name, id_, version)
    attrs.update(semconv.transport(headers is not None) if transport is None else transport)
    if session_id is not None:
        attrs[semconv.SESSION_ID] = session_id
    parent = None
    if telemetry.tracer is not None:
        parent = propagation.extract(meta or propagation.meta_of(params), headers)
    op = Operation(telemetry, SpanKind.SERVER, semconv.span_name(method, name), attrs, parent, era)
    with _current(op):
        yield op


@contextmanager
def asking(
    telemetry: Telemetry,
    *,
    method: str,
    name: str | None,
    version: str | None,
    transport: Mapping[str, Any],
    session_id: str | None = None,
) -> Iterator[Operation]:
    """The CLIENT operation of one request sent (its span current within the block, so that
    `propagation.inject` carries it)."""
    attrs: dict[str, Any] = semconv.attributes(method, name, None, version)
    attrs.update(transport)
    if session_id is not None:
        attrs[semconv.SESSION_ID] = session_id
    op = Operation(telemetry, SpanKind.CLIENT, semconv.span_name(method, name), attrs, None, None)
    token = _asked.set(op)
    try:
        with _current(op):
            yield op
    finally:
        _asked.reset(token)


def identify(id_: int | str) -> None:
    """The request being sent (in `asking`) has the JSON-RPC id ``id_`` (its last, when it is
    re-issued): its CLIENT span says so (``jsonrpc.request.id``). The transports call it once
    they assign the id; outside `asking` it does nothing."""
    op = _asked.get()
    if op is not None:
        op.set(semconv.REQUEST_ID, str(id_))


def recording() -> bool:
    """Whether a recording span is current (a server-to-client request is traced only then)."""
    return trace.get_current_span().is_recording()
