"""The access log (``Config.access_log``): one line per HTTP request at the MCP path, written
when its answer ends (a stream: when it closes). A line holds the time, the era, the JSON-RPC
method, the tool, prompt or resource it names, the HTTP status, the JSON-RPC error code (and a
-32023 refusal's reason), the duration, the trace id (of the OpenTelemetry span current when
the answer starts, else of the ``traceparent`` header), and what the governor did
(`governor.Marks`: the wait for caps' slots, a deadline passed);
never a token, a header's value, an argument or a task id (only its `task_records.redact` digest).
Installed by the `Endpoint` only when on: the default path does not pass here at all."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any, Literal, TextIO

import msgspec
import trio
from opentelemetry import trace

from ... import codec
from ...errors import CodecError
from ...jsonrpc import RATE_LIMITED
from ...protocol.http import Headers
from ...protocol.routing import post_era
from ..seams import Responder
from ..state.task_records import TASK_METHODS, redact
from .governor import Marks, marks

Handler = Callable[[str, Mapping[str, str], bytes, Responder], Awaitable[None]]
"""How the endpoint answers one exchange: method, headers, body, responder."""

_TRACEPARENT = re.compile(r"[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}")


class AccessRecord(msgspec.Struct):
    """One request, as the access log writes it (JSON: these keys; text: ``key=value``)."""

    time: str
    """When the request arrived (UTC, ISO 8601, milliseconds)."""
    era: str | None
    """``modern`` or ``legacy``; None for a body that is not JSON-RPC."""
    method: str | None
    """The JSON-RPC method (``batch`` for a batch; None: a response, or no valid message)."""
    name: str | None
    """The tool, prompt or resource (URI) the request names; of a task, the `task_records.redact`
    digest of its id (which grants access)."""
    status: int
    error: int | None
    """The JSON-RPC error code of the answer (None: a result, or no JSON-RPC answer): an
    error answered with HTTP 200 is an error all the same."""
    duration_ms: float
    trace_id: str | None
    queued_ms: float | None = None
    """How long its tool call waited for concurrency caps' slots (`governor`); None: none."""
    overran: str | None = None
    """The tool whose deadline the request's call passed (cancelled; an ``isError`` answer)."""
    refused: str | None = None
    """A -32023 refusal's ``data.reason`` (``rate``, ``concurrency``, ``overloaded``)."""


class _Answer(msgspec.Struct):
    error: _Error | None = None


class _Error(msgspec.Struct):
    code: int
    data: Any = None

    @property
    def refused(self) -> str | None:
        """A -32023 refusal's ``data.reason``."""
        data = self.data
        if self.code != RATE_LIMITED or not isinstance(data, dict):
            return None
        reason = data.get("reason")
        return reason if isinstance(reason, str) else None


_ANSWER = msgspec.json.Decoder(_Answer)


def _error_of(message: bytes) -> _Error | None:
    """The ``error`` of a JSON-RPC answer, else None (a result, a batch, not JSON-RPC)."""
    if b'"error"' not in message:
        return None
    try:
        return _ANSWER.decode(message).error
    except msgspec.DecodeError:
        return None


class _Watched:
    """A `Responder` that notes the status, the trace id and the JSON-RPC error code (the
    first, of a stream) of what it answers."""

    __slots__ = ("_inner", "error", "status", "trace_id")

    def __init__(self, inner: Responder) -> None:
        self._inner = inner
        self.status = 0
        self.error: _Error | None = None
        self.trace_id: str | None = None

    def _started(self, status: int) -> None:
        self.status = status
        context = trace.get_current_span().get_span_context()
        if context.is_valid:
            self.trace_id = format(context.trace_id, "032x")

    async def reply(self, status: int, body: bytes, headers: Headers | None = None) -> None:
        self._started(status)
        self.error = _error_of(body)
        await self._inner.reply(status, body, headers)

    async def open_stream(self, headers: Headers | None = None) -> None:
        self._started(200)
        await self._inner.open_stream(headers)

    async def send(
        self, message: bytes, event_id: str | None = None, retry_ms: int | None = None
    ) -> None:
        if self.error is None:
            self.error = _error_of(message)
        await self._inner.send(message, event_id, retry_ms)

    async def keepalive(self) -> None:
        await self._inner.keepalive()

    async def close(self) -> None:
        await self._inner.close()

    async def wait_disconnect(self) -> None:
        await self._inner.wait_disconnect()

    def watch(self, scope: trio.CancelScope) -> AbstractContextManager[None] | None:
        return self._inner.watch(scope)


class AccessLog:
    """Writes an `AccessRecord` per exchange to ``target`` (``"-"``: stderr, else a file,
    appended to and line-buffered), as text or JSON lines. Writing is synchronous, as
    Hypercorn's access log is.

    Raises:
        OSError: the file cannot be opened (at construction, so at start-up).
    """

    def __init__(self, target: str, form: Literal["text", "json"], max_depth: int) -> None:
        # The file lives as long as the server (the process).
        self._file: TextIO | None = (
            None if target == "-" else open(target, "a", buffering=1, encoding="utf-8")
        )
        self._json = form == "json"
        self._max_depth = max_depth

    def wrap(self, handler: Handler) -> Handler:
        """``handler``, logging each exchange it answers (even one it fails or is cancelled in:
        status 0 when nothing was answered)."""

        async def logged(
            method: str, headers: Mapping[str, str], body: bytes, responder: Responder
        ) -> None:
            arrived = time.time()
            start = time.perf_counter()
            watched = _Watched(responder)
            noted = Marks()
            token = marks.set(noted)
            try:
                await handler(method, headers, body, watched)
            finally:
                marks.reset(token)
                elapsed = (time.perf_counter() - start) * 1000
                line = self.record(arrived, elapsed, method, headers, body, watched)
                line.queued_ms = round(noted.queued_ms, 3) if noted.queued_ms else None
                line.overran = noted.overran
                self.write(line)

        return logged

    def record(
        self,
        arrived: float,
        elapsed_ms: float,
        method: str,
        headers: Mapping[str, str],
        body: bytes,
        watched: _Watched,
    ) -> AccessRecord:
        era, rpc_method, name = self._describe(method, headers, body)
        error = watched.error
        stamp = datetime.fromtimestamp(arrived, UTC).isoformat(timespec="milliseconds")
        return AccessRecord(
            time=stamp.replace("+00:00", "Z"),
            era=era,
            method=rpc_method,
            name=name,
            status=watched.status,
            error=error.code if error is not None else None,
            refused=error.refused if error is not None else None,
            duration_ms=round(elapsed_ms, 3),
            trace_id=watched.trace_id or _traceparent_id(headers.get("traceparent")),
        )

    def _describe(
        self, method: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[str | None, str | None, str | None]:
        """The era, JSON-RPC method and name of an exchange (the body framed again: only with
        the log on)."""
        if method != "POST":
            return ("legacy", None, None) if method in ("GET", "DELETE") else (None, None, None)
        try:
            batch, messages = codec.frame(body, self._max_depth)
        except CodecError:
            return None, None, None
        if batch:
            return "legacy", "batch", None
        message = messages[0]
        if message.kind == codec.KIND_INVALID:
            return None, None, None
        era = post_era(message.kind, message.method, message.version, headers)
        name = message.name
        if name is not None and message.method in TASK_METHODS:
            name = redact(name)
        return era, message.method, name

    def write(self, record: AccessRecord) -> None:
        """Write one line (to the file, else to the current ``sys.stderr``)."""
        line = msgspec.json.encode(record).decode() if self._json else _text(record)
        out = self._file if self._file is not None else sys.stderr
        out.write(line + "\n")
        if self._file is None:
            out.flush()


def _traceparent_id(header: str | None) -> str | None:
    """The trace id of a valid W3C ``traceparent`` (only those 32 hex digits are kept)."""
    if header is None:
        return None
    match = _TRACEPARENT.fullmatch(header.strip())
    if match is None or match.group(1) == "0" * 32:
        return None
    return match.group(1)


def _text(record: AccessRecord) -> str:
    """``key=value`` pairs; a value with spaces, quotes or ``=`` is a JSON string."""
    parts = []
    for field in record.__struct_fields__:
        value = getattr(record, field)
        text = "-" if value is None else str(value)
        if any(c in text for c in ' "=\\') or not text.isprintable():
            text = msgspec.json.encode(text).decode()
        parts.append(f"{field}={text}")
    return " ".join(parts)
