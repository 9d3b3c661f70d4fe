"""The suite's users (`McpUser` and its classes; the locustfile's docstring says what each
does). Each task is `connected`: it runs with the user's `Connection`, made on first use in the
detected era. Runs under gevent.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import gevent  # type: ignore[import-untyped]
from locust import FastHttpUser, constant, task
from locust.exception import StopUser

from ..protocol.capabilities import unadvertised
from ..protocol.methods import LIST_KEYS
from . import churn, elicit, notify, resume, wire
from .connection import Connection, said
from .lasting import held
from .lifecycle import kill_at_end, setup
from .offers import listen_filter
from .probe import Tool
from .shared import SHARED, log, option

__all__ = [
    "DiscoverUser",
    "ElicitUser",
    "LegacySessionUser",
    "ListenUser",
    "McpUser",
    "NotifyUser",
    "ResourceUser",
    "ResumeUser",
    "SessionChurnUser",
    "ToolCallUser",
    "connected",
]


class McpUser(FastHttpUser):
    """The base of the MCP users: a `Connection` in the detected era, made on first use.

    A user whose class was skipped (the server does not offer its feature) or stopped (the server
    answered -32601 or HTTP 405 at run time) stops at its next task without a request.
    """

    abstract = True
    wait_time = constant(0)
    connection: Connection | None = None
    prefix: str | None = None
    """What its requests' names begin with (None: the era's, `Connection.label`)."""
    era: str | None = None
    """The era its users speak whatever the server's newest (None: the server's)."""

    def mcp(self) -> Connection | None:
        """This user's connection (None while the server is unknown: the probe failed).

        Raises:
            StopUser: this user's class was skipped or stopped.
        """
        if not SHARED.ready:
            problem = setup(self.environment)
            if problem is not None:
                SHARED.note(problem)
                gevent.sleep(1.0)
                return None
        name = type(self).__name__
        if name in SHARED.skipped or name in SHARED.stopped:
            raise StopUser()
        if self.connection is None:
            wanted = self.era or SHARED.era
            version = SHARED.version if wanted == SHARED.era else SHARED.offer.legacy_version
            self.connection = Connection(
                self.client, wanted, version, say=SHARED.note, auth=SHARED.auth
            )
            self.connection.transport.param_headers = SHARED.param_headers
            if self.prefix is not None:
                self.connection.prefix = self.prefix
        return self.connection

    def send(
        self,
        connection: Connection,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        name: str | None = None,
    ) -> wire.Answer | None:
        """`Connection.call`, stopping this user's class when the server lacks the method."""
        answer = connection.call(method, params, name=name)
        self.check(connection.label(name or method), answer)
        return answer

    def check(self, label: str, answer: wire.Answer | None) -> None:
        """Stop every user of this class, said once, when ``answer`` says the server lacks what
        ``label`` asked for (JSON-RPC -32601 or HTTP 405): asking again cannot help.

        Raises:
            StopUser: it does.
        """
        if answer is None or not answer.not_offered:
            return
        self.stop_class(f"the server answered {label} with {said(answer)}")

    def stop_class(self, why: str) -> NoReturn:
        """Stop every user of this class for the rest of the run, said once (`_watch` ends the
        run when no class is left).

        Raises:
            StopUser: always.
        """
        name = type(self).__name__
        SHARED.stopped.setdefault(name, why)
        SHARED.note(f"{name} stops: {SHARED.stopped[name]}")
        raise StopUser()

    def on_stop(self) -> None:
        if self.connection is not None:
            try:
                self.connection.close()
            except Exception:  # the run is ending: a failed DELETE is not worth a traceback
                log.debug("closing the session failed", exc_info=True)

    def stream_seconds(self) -> float:
        return float(option(self.environment, "mcp_stream_seconds", 10.0))


User = TypeVar("User", bound=McpUser)


def connected(body: Callable[[User, Connection], None]) -> Callable[[User], None]:
    """A task run with the user's connection (`McpUser.mcp`), or skipped while the server is
    unknown (the probe failed; it is tried again at the next task)."""

    @functools.wraps(body)
    def run(self: User) -> None:
        connection = self.mcp()
        if connection is not None:
            body(self, connection)

    return run


class ToolCallUser(McpUser):
    """``tools/call``, stateless in the modern era."""

    weight = 4

    @task
    @connected
    def call_tool(self, connection: Connection) -> None:
        tool = SHARED.tool
        if tool is None:  # skipped up front; this is a class picked in the web UI
            raise StopUser()
        self.send(
            connection,
            "tools/call",
            {"name": tool.name, "arguments": tool.arguments},
            name=f"tools/call {tool.name}",
        )


class DiscoverUser(McpUser):
    """``server/discover`` (``ping`` in the legacy era) and the list calls; a method the server
    turns out to lack (-32601, 405) is dropped, said once."""

    weight = 2

    @task
    @connected
    def discover_or_list(self, connection: Connection) -> None:
        methods = ["server/discover" if connection.era == "modern" else "ping"]
        methods += [m for m in LIST_KEYS if unadvertised(m, SHARED.capabilities) is None]
        methods = [m for m in methods if connection.label(m) not in SHARED.dropped]
        if not methods:
            self.stop_class("the server lacks every method it calls")
        method = random.choice(methods)
        answer = connection.call(method, {})
        if answer is not None and answer.not_offered:
            label = connection.label(method)
            SHARED.dropped.add(label)
            SHARED.note(f"DiscoverUser drops {label}: the server answered {said(answer)}")


class ResourceUser(McpUser):
    """``resources/read`` of the listed resources."""

    weight = 1

    @task
    @connected
    def read_resource(self, connection: Connection) -> None:
        if not SHARED.offer.resources:
            raise StopUser()
        self.send(connection, "resources/read", {"uri": random.choice(SHARED.offer.resources)})


class LegacySessionUser(McpUser):
    """A legacy session whatever the server's newest era: initialize once, then ``tools/call``,
    ``tools/list`` (``ping`` instead when the session offers no tools) and ``ping``."""

    weight = 2
    era = "legacy"

    @task(3)
    @connected
    def call_tool(self, connection: Connection) -> None:
        tool = SHARED.tool
        if tool is None or "tools" not in SHARED.offer.legacy_capabilities:
            self.send(connection, "ping", {})
            return
        self.send(
            connection,
            "tools/call",
            {"name": tool.name, "arguments": tool.arguments},
            name=f"tools/call {tool.name}",
        )

    @task(1)
    @connected
    def list_tools(self, connection: Connection) -> None:
        tools = "tools" in SHARED.offer.legacy_capabilities
        self.send(connection, "tools/list" if tools else "ping", {})

    @task(1)
    @connected
    def ping(self, connection: Connection) -> None:
        self.send(connection, "ping", {})


class ListenUser(McpUser):
    """Long-lived streams: ``subscriptions/listen`` (modern) or the GET stream (legacy), each
    held for ``--mcp-stream-seconds`` and opened again when it ends early (`lasting.held`)."""

    weight = 1

    @task
    @connected
    def hold_stream(self, connection: Connection) -> None:
        if connection.era == "modern":
            notifications = listen_filter(SHARED.offer)
            if not notifications:  # skipped up front; this is a class picked in the web UI
                raise StopUser()
            seconds = self.stream_seconds()
            answer = held(seconds, lambda left: connection.listen(left, notifications))
            self.check("subscriptions/listen", answer)
            return

        def attempt(left: float) -> wire.Answer | None:
            self.subscribe(connection)  # again in a session that replaced an expired one
            return connection.get_stream(left)

        self.check("legacy GET stream", held(self.stream_seconds(), attempt))

    def subscribe(self, connection: Connection) -> None:
        """``resources/subscribe`` of the first listed resource, once per session, when the
        server offers subscriptions: the GET stream then carries its updates too."""
        offer = SHARED.offer
        resources = offer.capabilities.get("resources")
        if not (isinstance(resources, dict) and resources.get("subscribe") is True):
            return
        if not offer.resources or "legacy resources/subscribe" in SHARED.dropped:
            return
        if connection.initialized and connection.subscribed:
            return
        answer = connection.call("resources/subscribe", {"uri": offer.resources[0]})
        if answer is not None and answer.not_offered:
            SHARED.dropped.add("legacy resources/subscribe")
            SHARED.note(f"ListenUser drops resources/subscribe: the server answered {said(answer)}")
        connection.subscribed = answer is not None and answer.failure is None


class SessionChurnUser(McpUser):
    """Legacy, run only when named: a new session per iteration (`mcpfast.load.churn`)."""

    weight = 1
    prefix = churn.PREFIX
    era = "legacy"

    @task
    @connected
    def churn_session(self, connection: Connection) -> None:
        if SHARED.tool is None:  # skipped up front; this is a class picked in the web UI
            raise StopUser()
        answer = churn.iterate(connection, SHARED.tool, SHARED.note)
        self.check(connection.label("tools/call"), answer)


class ResumeUser(McpUser):
    """Legacy, run only when named: a call's stream dropped after its first message and resumed
    with GET + ``Last-Event-ID`` (`mcpfast.load.resume`)."""

    weight = 1
    prefix = resume.PREFIX
    era = "legacy"

    @task
    @connected
    def resume_call(self, connection: Connection) -> None:
        offer = SHARED.offer
        if offer.resume_tool is None:  # skipped up front; this is a class picked in the web UI
            raise StopUser()
        outcome = resume.resumed_call(connection, Tool(offer.resume_tool, offer.resume_arguments))
        if outcome.unsupported is not None:
            self.stop_class(outcome.unsupported)


class NotifyUser(McpUser):
    """Run with a trigger tool (``--mcp-notify-tool``) or when named: streams held while the
    process's trigger makes the server notify them, each notification's latency recorded
    (`mcpfast.load.notify`)."""

    weight = 1

    @task
    @connected
    def await_notifications(self, connection: Connection) -> None:
        if notify.PROCESS.trigger is None:  # skipped up front; a class picked in the web UI
            raise StopUser()
        trigger = notify.start_trigger(self.environment)
        if trigger is not None:
            kill_at_end(trigger)
        label, answer = notify.listen(connection, self.environment, self.stream_seconds())
        self.check(label, answer)


class ElicitUser(McpUser):
    """Run with a tool to call (``--mcp-elicit-tool``) or when named: calls it and answers
    every elicitation it asks, in either era (`mcpfast.load.elicit`)."""

    weight = 1

    @task
    @connected
    def call_and_answer(self, connection: Connection) -> None:
        tool = elicit.PROCESS.tool
        if tool is None:  # skipped up front; this is a class picked in the web UI
            raise StopUser()
        if not connection.declared:
            elicit.declare(connection)
        answer = elicit.call_tool(connection, self.environment, tool.name, tool.arguments)
        self.check(connection.label(f"elicit tools/call {tool.name}"), answer)
