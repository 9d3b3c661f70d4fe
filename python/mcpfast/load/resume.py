"""Resumption after a dropped stream (gevent, no Trio), in a legacy session (2025-03-26 to
2025-11-25: SSE event ids, GET + ``Last-Event-ID``; 2026-07-28 has no resumption).

`resumed_call` is the locustfile's ``ResumeUser`` task: a ``tools/call`` with a
``_meta.progressToken`` of a tool that reports progress (the demo's ``slow``; ``--mcp-resume-tool``
names it), whose SSE response is read up to its first message (a priming event of 2025-11-25 is
read past) and then dropped: the connection is closed. The stream is resumed at once with GET +
``Last-Event-ID`` of that message (not after the ``retry`` the server asked for, which is its
delay for streams it ends itself) and read until the call's result. The rest of the stream must
arrive exactly once: no event id nor progress seen before the drop comes again, the progress
keeps increasing, the result comes once and is judged as every result is (`wire.judge`).
Recorded as ``resume tools/call NAME`` (the time to the first message) and ``resume GET
Last-Event-ID`` (the time to the resumed result), failures named by HTTP status and problem
(``HTTP 200 event replayed after resuming``).

A server that answers the call with plain JSON, sends events without ids, sends the result as the
first event or refuses the GET (405) cannot be tested so: `Outcome.unsupported` says why, and
`prepare` tries one such call before the run (outside locust's statistics) so that the class is
skipped up front.
"""

from __future__ import annotations

import json
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import gevent  # type: ignore[import-untyped]

from .. import jsonrpc
from ..protocol import sse
from ..protocol.session import SESSION_HEADER
from . import wire
from .auth import Credentials
from .connection import Connection, Say, content_type, header, said
from .offers import Offer
from .probe import ProbeError, Tool, pick_tool, probe_client

PREFIX = "resume "
"""What the names of the resumption requests begin with."""
EVENT_TIMEOUT = 10.0
"""The longest wait for the first message, and for the result after resuming."""
AFTER_RESULT = 0.5
"""How long a resumed stream that stays open is read after the result (a second result fails)."""


@dataclass
class Outcome:
    """How one resumed call went: ``failure`` (None: it went through; already recorded), and
    ``unsupported``: why this server or tool cannot be tested so (stop asking)."""

    failure: str | None = None
    unsupported: str | None = None


@dataclass
class Seen:
    """What the call's stream delivered: the ids of its message events, the last progress."""

    token: str
    ids: set[str] = field(default_factory=set)
    progress: float | None = None

    def problem(self, event: sse.Event, message: dict[str, Any]) -> str | None:
        """Take one message event; what is wrong with it (a replay), else None."""
        if event.id is not None:
            if event.id in self.ids:
                return "HTTP 200 event replayed after resuming"
            self.ids.add(event.id)
        params = (
            message.get("params") if message.get("method") == "notifications/progress" else None
        )
        if isinstance(params, dict) and params.get("progressToken") == self.token:
            value = params.get("progress")
            if isinstance(value, (int, float)):
                if self.progress is not None and value <= self.progress:
                    return "HTTP 200 progress replayed after resuming"
                self.progress = value
        return None


class EventReader:
    """The events of a streamed response as sent (ids, ``retry``, empty priming events), read
    line by line; at most one event is buffered."""

    def __init__(self, response: Any) -> None:
        self.raw = getattr(response, "_response", None)
        self.decoder = sse.Decoder()
        self.ready: deque[sse.Event] = deque()

    def next_event(self, timeout: float) -> sse.Event | None:
        """The next event; None when the stream ended or none came within ``timeout`` s.

        Raises:
            TooLarge: an event grew past the decoder's limit (a ValueError).
        """
        with gevent.Timeout(timeout, False):
            while not self.ready:
                line = self.raw.readline(b"\n") if self.raw is not None else b""
                if not line:
                    return None
                self.ready.extend(self.decoder.events(line))
        return self.ready.popleft() if self.ready else None

    def close(self) -> None:
        """Close the connection (an unfinished response is never returned to the pool)."""
        if self.raw is not None:
            self.raw.release()
            self.raw = None


def _message(event: sse.Event) -> dict[str, Any] | None:
    """The one JSON-RPC message an event carries; None when it carries none or several, or
    its data is not JSON."""
    try:
        found = sse.messages_of(event)
    except ValueError:
        return None
    return found[0] if len(found) == 1 else None


def _is_response(message: dict[str, Any], id_: int | str) -> bool:
    return message.get("id") == id_ and ("result" in message or "error" in message)


def resumed_call(connection: Connection, tool: Tool) -> Outcome:
    """One call of ``tool`` in ``connection``'s session (opened first when it is not): its
    stream dropped after the first message and resumed (see the module's docstring)."""
    if not connection.initialized and not connection.initialize():
        return Outcome(failure=connection.problem or "no session")
    id_ = connection.ids.next_id()
    seen = Seen(f"resume-{id_}")
    params = {
        "name": tool.name,
        "arguments": tool.arguments,
        "_meta": {"progressToken": seen.token},
    }
    body = jsonrpc.request(id_, "tools/call", params)
    outcome, last = _dropped(connection, id_, tool.name, body, seen)
    if outcome is not None:
        return outcome
    assert last is not None
    return _resumed(connection, id_, last, seen)


def _dropped(
    connection: Connection, id_: int | str, name: str, body: bytes, seen: Seen
) -> tuple[Outcome | None, str | None]:
    """POST the call and read its stream up to the first message (into ``seen``), then drop
    it: (None, the message's event id), or the outcome when there is nothing to resume."""
    headers = {**connection.state.headers(), "accept-encoding": "identity"}
    label = connection.label(f"tools/call {name}")
    with connection.request("POST", label, headers, body, stream=True) as (response, started):
        status = response.status_code
        if status == 0:
            return Outcome(failure="no answer"), None
        if connection.state.expired(status, headers.get(SESSION_HEADER)):
            response.request_meta["name"] = label + " (session expired: 404)"
            response.success()
            connection.initialized = False
            return Outcome(), None
        connection.state.adopt(header(response, SESSION_HEADER))
        if status != 200 or not content_type(response).startswith("text/event-stream"):
            answer = wire.judge(
                "tools/call", id_, status, content_type(response), response.content or b""
            )
            connection.settle(response, answer)
            if answer.failure is not None:
                return Outcome(answer.failure, said(answer) if answer.not_offered else None), None
            return Outcome(unsupported=f"{name} answered plain JSON: no stream to resume"), None
        reader = EventReader(response)
        outcome, last = _first(reader, id_, name, seen)
        response.request_meta["response_time"] = (time.perf_counter() - started) * 1000
        if outcome is not None and outcome.failure is not None:
            connection.settle(response, wire.Answer(outcome.failure, status=200))
        else:
            response.success()
    reader.close()  # the drop
    return outcome, last


def _first(
    reader: EventReader, id_: int | str, name: str, seen: Seen
) -> tuple[Outcome | None, str | None]:
    """Read up to the first message (into ``seen``): (None, its event id), or why there is
    nothing to resume."""
    while True:
        event = reader.next_event(EVENT_TIMEOUT)
        if event is None:
            return Outcome(f"HTTP 200 no message within {EVENT_TIMEOUT:g} s"), None
        if not event.data:
            continue  # the priming event (2025-11-25)
        message = _message(event)
        if message is None:
            return Outcome("HTTP 200 event data is not a JSON object"), None
        if event.id is None:
            return Outcome(unsupported="the server's SSE events carry no ids: no resumption"), None
        if _is_response(message, id_):
            why = f"{name} sent its result as the first event (it reports no progress)"
            return Outcome(unsupported=why), None
        seen.problem(event, message)  # the first: nothing to replay yet
        return None, event.id


def _resumed(connection: Connection, id_: int | str, last: str, seen: Seen) -> Outcome:
    """GET + ``Last-Event-ID`` ``last``, read until the result (timed), checked for replays."""
    headers = {**connection.state.stream_headers(last), "accept-encoding": "identity"}
    headers.pop("content-type", None)
    name = connection.label("GET Last-Event-ID")
    with connection.request("GET", name, headers, stream=True) as (response, started):
        status = response.status_code
        if status == 0:
            return Outcome(failure="no answer")
        if status != 200 or not content_type(response).startswith("text/event-stream"):
            text = f"HTTP {status}" if status != 200 else "HTTP 200 not an event stream"
            connection.settle(response, wire.Answer(text, status=status))
            why = "GET with Last-Event-ID answered HTTP 405" if status == 405 else None
            return Outcome(text, why)
        reader = EventReader(response)
        answer = _rest(reader, id_, seen)
        response.request_meta["response_time"] = (time.perf_counter() - started) * 1000
        connection.settle(response, answer)
    reader.close()
    return Outcome(answer.failure)


def _rest(reader: EventReader, id_: int | str, seen: Seen) -> wire.Answer:
    """The resumed stream's events up to the result, then (briefly) past it: the result
    judged, or the first replay."""
    final: dict[str, Any] | None = None
    while True:
        event = reader.next_event(AFTER_RESULT if final is not None else EVENT_TIMEOUT)
        if event is None:
            break
        if not event.data:
            continue  # 2025-11-25 opens a resumed stream with the client's own point again
        message = _message(event)
        if message is None:
            return wire.Answer("HTTP 200 event data is not a JSON object", status=200)
        problem = seen.problem(event, message)
        if problem is None and final is not None and _is_response(message, id_):
            problem = "HTTP 200 result sent twice"
        if problem is not None:
            return wire.Answer(problem, message, status=200)
        if final is None and _is_response(message, id_):
            final = message
    if final is None:
        return wire.Answer(f"HTTP 200 no result within {EVENT_TIMEOUT:g} s of resuming", status=200)
    return wire.judge("tools/call", id_, 200, "application/json", json.dumps(final).encode())


def prepare(
    offer: Offer, host: str, tool: str, arguments: str, note: Say, auth: Credentials | None
) -> None:
    """Pick ResumeUser's tool (``tool`` with ``arguments``: the options; default the tool the
    users call) into ``offer`` and try one resumed call of it, outside locust's statistics:
    ``offer.resume_problem`` says why it cannot run (None: it can)."""
    if offer.legacy_problem is not None:
        return  # skipped for that already (`offers.skip_reason`)
    try:
        picked = pick_tool(tool or offer.tool or "", arguments, offer.tools, note)
    except ProbeError as exc:
        offer.resume_problem = str(exc)
        return
    if picked is None:
        offer.resume_problem = "the server lists no tool to call (give --resume-tool)"
        return
    offer.resume_tool, offer.resume_arguments = picked.name, picked.arguments
    connection = Connection(probe_client(host), "legacy", offer.legacy_version, auth=auth)
    try:
        offer.resume_problem = resumed_call(connection, picked).unsupported
    finally:
        connection.close()
