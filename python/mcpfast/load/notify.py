"""Notification latency (gevent, no Trio): listeners hold streams while a trigger calls a tool that
makes the server announce an update, and the time from each trigger to each listener's receipt is
recorded.

`NotifyUser` (in the locustfile) listens to one resource URI (`notify_uri`: ``--mcp-notify-uri``,
else the first listed resource): ``subscriptions/listen`` of it (modern), or ``resources/subscribe``
once per session and the session's GET stream (legacy); each stream is held
``--mcp-stream-seconds``, then opened again. One trigger per load process (`start_trigger`, a
greenlet started by the process's first `NotifyUser`) calls ``--mcp-notify-tool`` with
``--mcp-notify-arguments`` every ``--mcp-notify-interval`` seconds; its calls are requests of
their own (``notify tools/call NAME``).

What is measured: each ``notifications/resources/updated`` of the URI a listener receives is
attributed to the oldest trigger *of its own process* that was sent after the listener's stream
opened (after the acknowledgement, modern; after the stream's headers, legacy) and that it has
not been attributed yet, and recorded as the request ``notification resources/updated``
(``legacy notification resources/updated``) whose time is from that trigger's call being sent to
the receipt. A trigger call that fails is not expected. A trigger whose notification has not come
within ``--mcp-notify-timeout`` seconds is recorded as a failure (``NotificationLost``) for every
listener that awaited it (checked after each trigger call, and when a stream closes; the triggers
a closing stream awaited for less than the timeout are forgotten). A notification that finds no
trigger outstanding is not timed: a trigger sent before the stream opened, another process's
trigger, or the server's own.

With several load processes every listener also receives the other processes' notifications: a
notification of another process's trigger that lands between one of its own triggers and that
trigger's notification is taken for it (the latency then reads low by at most the gap between the
two triggers). Exact attribution needs one URI per process: ``{process}`` in ``--mcp-notify-uri``
is replaced by a token unique to the process, and ``{uri}`` in the notify arguments by the URI
(a server that accepts subscriptions to URIs it does not list, as mcpfast does, is needed for that).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import gevent  # type: ignore[import-untyped]
from locust.contrib.fasthttp import FastHttpSession
from locust.env import Environment

from . import wire
from .arguments import arguments_for
from .connection import Connection, Hold, Say
from .events import Events
from .lasting import held
from .offers import Offer
from .probe import pick_tool
from .shared import SHARED, option

__all__ = [
    "PROCESS",
    "NotificationLost",
    "Trigger",
    "Triggers",
    "listen",
    "notify_arguments",
    "notify_uri",
    "prepare",
    "start_trigger",
]

UPDATED = "notifications/resources/updated"
NOTIFICATION = "notification resources/updated"
"""The name of a notification's record (legacy: ``legacy notification ...``)."""
REQUEST_TYPE = "SSE"
PROCESS_TOKEN = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
"""What ``{process}`` in ``--mcp-notify-uri`` stands for: unique to this load process."""


class NotificationLost(Exception):
    """A trigger's notification did not reach a listener in time (the failure locust records)."""


# --------------------------------------------------------------------------- the bookkeeping


@dataclass(eq=False)
class Listener:
    """One held stream: its request name and the sequence number of the next trigger it awaits."""

    name: str
    next: int


@dataclass
class Triggers:
    """One process's trigger calls (their send times, by sequence number) and the listeners that
    await their notifications. Pure (no gevent, no I/O, never yields): safe between greenlets.

    ``sent`` holds the triggers from sequence number ``base`` on (None: the call failed, nothing
    is expected); it is trimmed to what some listener still awaits, so it holds at most the
    triggers of one ``timeout``."""

    sent: list[float | None] = field(default_factory=list)
    base: int = 0
    listeners: list[Listener] = field(default_factory=list)

    @property
    def end(self) -> int:
        return self.base + len(self.sent)

    def sending(self, now: float) -> int:
        """A trigger is being sent at ``now``: its sequence number."""
        self.sent.append(now)
        return self.end - 1

    def failed(self, seq: int) -> None:
        """The trigger ``seq`` failed: no notification is expected of it."""
        if seq >= self.base:
            self.sent[seq - self.base] = None

    def join(self, name: str) -> Listener:
        """A stream opened: it awaits the triggers sent from now on."""
        listener = Listener(name, self.end)
        self.listeners.append(listener)
        return listener

    def leave(self, listener: Listener, now: float, timeout: float) -> int:
        """A stream closed at ``now``: how many triggers it awaited longer than ``timeout``
        seconds (lost); the younger ones it awaited are forgotten (neither received nor lost:
        the stream closed before they were due)."""
        lost = self._overdue(listener, now, timeout)
        self.listeners.remove(listener)
        self.trim()
        return lost

    def _skip_failed(self, listener: Listener) -> None:
        while listener.next < self.end and self.sent[listener.next - self.base] is None:
            listener.next += 1

    def received(self, listener: Listener, now: float) -> float | None:
        """A notification reached ``listener`` at ``now``: the seconds since the trigger it is
        attributed to (None: none outstanding: it is not timed)."""
        self._skip_failed(listener)
        if listener.next >= self.end:
            return None
        sent = self.sent[listener.next - self.base]
        assert sent is not None
        listener.next += 1
        self.trim()
        return now - sent

    def lost(self, now: float, timeout: float) -> list[tuple[Listener, int]]:
        """Each listener that awaited triggers longer than ``timeout`` seconds at ``now``, with
        how many (those triggers are given up)."""
        out = [(listener, self._overdue(listener, now, timeout)) for listener in self.listeners]
        self.trim()
        return [(listener, count) for listener, count in out if count]

    def _overdue(self, listener: Listener, now: float, timeout: float) -> int:
        """Give up the triggers ``listener`` awaited longer than ``timeout``: how many."""
        count = 0
        while True:
            self._skip_failed(listener)
            if listener.next >= self.end:
                return count
            sent = self.sent[listener.next - self.base]
            if sent is None or now - sent <= timeout:
                return count
            listener.next += 1
            count += 1

    def trim(self) -> None:
        """Forget the triggers no listener awaits any more."""
        keep = min((listener.next for listener in self.listeners), default=self.end)
        if keep > self.base:
            del self.sent[: keep - self.base]
            self.base = keep


# --------------------------------------------------------------------------------- options


def notify_uri(given: str, offer: Offer) -> str | None:
    """The URI the listeners subscribe to: ``given`` (``{process}`` replaced by `PROCESS_TOKEN`),
    else the first listed resource (None: none)."""
    if given:
        return given.replace("{process}", PROCESS_TOKEN)
    return offer.resources[0] if offer.resources else None


def notify_arguments(given: str, uri: str, schema: dict[str, Any] | None) -> dict[str, Any]:
    """The trigger tool's arguments: ``given`` (JSON, every ``{uri}`` in its strings replaced by
    ``uri``), else built from its input ``schema`` (`arguments_for`) with ``uri`` as its ``uri``
    argument when it has one.

    Raises:
        ValueError: ``given`` is not a JSON object.
    """
    if given:
        parsed = json_object(given, "--mcp-notify-arguments")
        return {k: _substituted(v, uri) for k, v in parsed.items()}
    arguments = arguments_for(schema)
    properties = (schema or {}).get("properties")
    if isinstance(properties, dict) and "uri" in properties:
        arguments["uri"] = uri
    return arguments


def json_object(text: str, flag: str) -> dict[str, Any]:
    """``text`` read as a JSON object (an option's value).

    Raises:
        ValueError: it is not one (the message names ``flag``).
    """
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise ValueError(f"{flag} must be a JSON object, got {text!r}")
    return parsed


def _substituted(value: Any, uri: str) -> Any:
    if isinstance(value, str):
        return value.replace("{uri}", uri)
    if isinstance(value, list):
        return [_substituted(v, uri) for v in value]
    if isinstance(value, dict):
        return {k: _substituted(v, uri) for k, v in value.items()}
    return value


# ----------------------------------------------------------------------------- the trigger


@dataclass
class Trigger:
    """What the process's trigger calls, how often, and how long a notification may take."""

    tool: str
    arguments: dict[str, Any]
    interval: float
    timeout: float


def record(environment: Environment, name: str, seconds: float, error: Exception | None) -> None:
    """One notification (or its loss) as a locust request named ``name``."""
    environment.events.request.fire(  # type: ignore[no-untyped-call]
        request_type=REQUEST_TYPE,
        name=name,
        response_time=seconds * 1000,
        response_length=0,
        exception=error,
        context={},
    )


def sweep(environment: Environment, triggers: Triggers, timeout: float) -> None:
    """Record a `NotificationLost` for every trigger a listener awaited over ``timeout``."""
    for listener, count in triggers.lost(time.perf_counter(), timeout):
        record_lost(environment, listener.name, timeout, count)


def record_lost(environment: Environment, name: str, timeout: float, count: int) -> None:
    """``count`` `NotificationLost` failures of the request ``name``."""
    for _ in range(count):
        error = NotificationLost(f"none within {timeout:g}s of its trigger")
        record(environment, name, timeout, error)


def _trigger_loop(
    environment: Environment, connection: Connection, trigger: Trigger, triggers: Triggers
) -> None:
    params = {"name": trigger.tool, "arguments": trigger.arguments}
    while True:
        started = time.perf_counter()
        seq = triggers.sending(started)
        answer = connection.call("tools/call", params, name=f"notify tools/call {trigger.tool}")
        if answer is None or answer.failure is not None:
            triggers.failed(seq)
        sweep(environment, triggers, trigger.timeout)
        gevent.sleep(max(0.0, trigger.interval - (time.perf_counter() - started)))


@dataclass
class Process:
    """This load process's notify setup (`prepare`) and bookkeeping: the URI listened to (None:
    not prepared, or nothing to listen to), what the trigger calls, the trigger's greenlet."""

    triggers: Triggers = field(default_factory=Triggers)
    uri: str | None = None
    trigger: Trigger | None = None
    greenlet: gevent.Greenlet | None = None


PROCESS = Process()


def prepare(environment: Environment, offer: Offer, note: Say) -> None:
    """Read the notify options into `PROCESS` (once per process, after the probe): the URI
    (`notify_uri`) and, when a tool is given, the trigger (`notify_arguments`).

    Raises:
        ValueError: ``--mcp-notify-arguments`` is not a JSON object.
    """
    PROCESS.uri = notify_uri(str(option(environment, "mcp_notify_uri", "")), offer)
    name = str(option(environment, "mcp_notify_tool", ""))
    if not name or PROCESS.uri is None:
        return
    tool = pick_tool(name, "", offer.tools, note)
    assert tool is not None  # a tool named is always picked
    arguments = notify_arguments(
        str(option(environment, "mcp_notify_arguments", "")), PROCESS.uri, tool.schema
    )
    PROCESS.trigger = Trigger(
        name,
        arguments,
        float(option(environment, "mcp_notify_interval", 1.0)),
        float(option(environment, "mcp_notify_timeout", 5.0)),
    )


def start_trigger(environment: Environment) -> gevent.Greenlet | None:
    """Spawn the process's trigger unless it runs (None then): a greenlet that calls the tool
    every ``interval`` seconds in the run's era (legacy: in a session of its own) through a
    client of its own whose requests locust counts, and sweeps for lost notifications after each
    call. The caller kills it at the end of the run (killed mid-call, it leaves at most one
    unanswered request)."""
    trigger = PROCESS.trigger
    running = PROCESS.greenlet is not None and not PROCESS.greenlet.dead
    if trigger is None or running:
        return None
    bound = max(trigger.timeout, 5.0)
    client = FastHttpSession(
        environment.host,
        environment.events.request,
        None,
        connection_timeout=bound,
        network_timeout=bound,
    )
    connection = Connection(client, SHARED.era, SHARED.version, say=SHARED.note, auth=SHARED.auth)
    connection.transport.param_headers = SHARED.param_headers
    PROCESS.greenlet = gevent.spawn(
        _trigger_loop, environment, connection, trigger, PROCESS.triggers
    )
    return PROCESS.greenlet


# --------------------------------------------------------------------------- the listeners


def hold_listening(
    environment: Environment, triggers: Triggers, uri: str, name: str, timeout: float
) -> Hold:
    """A `connection.Hold` for an open stream: joins ``triggers`` as a listener named ``name``,
    records every ``notifications/resources/updated`` of ``uri`` that comes within the seconds
    held (attributed by `Triggers.received`), then leaves (recording the triggers it awaited
    over ``timeout`` seconds as lost)."""

    def hold(reader: Events, seconds: float) -> None:
        listener = triggers.join(name)
        deadline = time.monotonic() + seconds
        try:
            while (left := deadline - time.monotonic()) > 0:
                message = reader.next_message(left)
                if message is None:
                    return
                if not _updated(message, uri):
                    continue
                latency = triggers.received(listener, time.perf_counter())
                if latency is not None:
                    record(environment, name, latency, None)
        finally:
            lost = triggers.leave(listener, time.perf_counter(), timeout)
            record_lost(environment, name, timeout, lost)

    return hold


def _updated(message: dict[str, Any], uri: str) -> bool:
    params = message.get("params")
    return (
        message.get("method") == UPDATED and isinstance(params, dict) and params.get("uri") == uri
    )


def listen(
    connection: Connection, environment: Environment, seconds: float
) -> tuple[str, wire.Answer | None]:
    """Hold one stream that receives the updates of `PROCESS`'s URI for ``seconds`` (opened
    again when it ends early: `lasting.held`), recording each notification
    (`hold_listening`): ``subscriptions/listen`` (modern), or the session's GET stream after
    ``resources/subscribe`` (legacy, once per session: again in a session that replaced one
    that expired). The label of the last
    request and its judged answer (None: no HTTP answer), for the caller to stop on an answer
    that says the server lacks it."""
    uri, trigger = PROCESS.uri, PROCESS.trigger
    assert uri is not None and trigger is not None
    name = connection.label(NOTIFICATION)
    hold = hold_listening(environment, PROCESS.triggers, uri, name, trigger.timeout)
    if connection.era == "modern":
        filter_ = {"resourceSubscriptions": [uri]}
        return "subscriptions/listen", held(
            seconds, lambda left: connection.listen(left, filter_, hold)
        )
    refused: list[wire.Answer | None] = []

    def attempt(left: float) -> wire.Answer | None:
        if not (connection.initialized and connection.subscribed):  # again in a new session
            answer = connection.call("resources/subscribe", {"uri": uri})
            connection.subscribed = answer is not None and answer.failure is None
            if not connection.subscribed:
                refused.append(answer)
                return answer
        return connection.get_stream(left, hold=hold)

    answer = held(seconds, attempt)
    if refused and refused[-1] is answer:
        return "legacy resources/subscribe", answer
    return "legacy GET stream", answer
