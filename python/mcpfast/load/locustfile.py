"""A locust suite that speaks MCP to any server URL, in either era.

    locust -f loadtests/locustfile.py --host http://127.0.0.1:8000/mcp
    mcpfast load http://127.0.0.1:8000/mcp            # the same, headless, with a summary

This module holds the users and locust's event hooks. Before any user starts (locust's ``init``
event, once per process) the server is probed (`mcpfast.load.probe`) with the client's own
rules: the era (`mcpfast.protocol.discovery.Negotiation` on ``server/discover`` probes;
``--mcp-era`` forces one), its capabilities, its tools and resources, a trial legacy session and,
in the legacy era, a trial GET stream. The probe's requests are not part of the load and are not
in locust's statistics. Every user class whose feature the server does not offer is left out of
the run, with one line saying why (`mcpfast.load.offers` holds the rules); when none is left the
process exits with status 3. A server that answers -32601 or HTTP 405 at run time anyway stops
the users that need it (said once), instead of being asked again in a tight loop.

In the modern era (2026-07-28) every request is a stateless POST with ``_meta`` and the mirrored
``MCP-Protocol-Version`` / ``Mcp-Method`` / ``Mcp-Name`` / ``Mcp-Param-*`` headers; in the legacy
era each user keeps a session (``initialize`` + ``notifications/initialized``, ``Mcp-Session-Id``
replaced when re-minted, re-initialized on 404: `mcpfast.protocol.session`), through its
`mcpfast.load.connection.Connection`. ``--mcp-version`` pins the revision (and so the era:
`mcpfast.load.pinning`): every ``initialize`` offers a pinned legacy one, and the probe refuses
a server that negotiates another; said once (``protocol version 2025-06-18 pinned (legacy
era)``). With ``--mcp-bearer-env`` or ``--mcp-client-id`` every
request is authorized (`mcpfast.load.auth`: one token per process, shared by its users).
Every answer is judged
(`mcpfast.load.wire.judge`): a JSON-RPC error in a 200 answer, a result of the wrong shape and a
tool result with ``isError`` are failures, named by HTTP status and JSON-RPC code so locust's
failure table groups them.

User classes (weights in brackets, summing to 10 so that ten users run one of each at least):

* `ToolCallUser` [4]: ``tools/call`` of ``--mcp-tool`` with ``--mcp-arguments`` (JSON); without
  them, the first read-only tool of ``tools/list`` (else the first tool), with arguments built
  from its input schema (`mcpfast.load.arguments`).
* `DiscoverUser` [2]: ``server/discover`` (legacy era: ``ping``) and the list calls the server's
  capabilities offer.
* `ResourceUser` [1]: ``resources/read`` of the listed resources.
* `LegacySessionUser` [2]: always legacy: initialize once, then ``tools/call``, ``tools/list``
  and ``ping`` in the session.
* `ListenUser` [1]: long-lived streams: ``subscriptions/listen`` of what the server advertises
  (modern) or the session's GET stream (legacy, after ``resources/subscribe`` of a resource when
  the server offers subscriptions), held ``--mcp-stream-seconds`` then closed and opened again;
  its latency is the time to the acknowledgement (modern) or to the stream's headers (legacy).

Two classes join the run only when their tool is given (``--mcp-notify-tool``,
``--mcp-elicit-tool``) or they are named (`mcpfast.load.offers.FLOW_TOOLS`):

* `NotifyUser` [1]: streams of one resource's updates held while the process's trigger calls
  the tool; each notification timed from its trigger, the late ones lost (`mcpfast.load.notify`).
* `ElicitUser` [1]: calls the tool and answers what it asks, in either era
  (`mcpfast.load.elicit`).

Two more run only when named (`mcpfast.load.offers.OPT_IN`), both in legacy sessions:

* `SessionChurnUser` [1]: a session per iteration: ``initialize``, ``tools/call``, ``DELETE``
  (`mcpfast.load.churn`).
* `ResumeUser` [1]: a call's stream dropped after its first message and resumed with GET +
  ``Last-Event-ID``, nothing replayed (`mcpfast.load.resume`; ``--mcp-resume-tool``).

``--mcp-shape`` (`McpShape`, `mcpfast.load.shapes`) ramps or spikes the users; the default,
``steady``, runs as locust does without a shape.

With ``--csv PREFIX``, ``PREFIX_stats.csv``, ``PREFIX_failures.csv`` and
``PREFIX_exceptions.csv`` are written once more when locust quits, from its final statistics
(locust itself last writes them up to a second before the end, before the users' ``on_stop``).

This file runs under gevent (locust's), never inside a Trio process: ``mcpfast load`` starts
locust in a child process.
"""

from __future__ import annotations

import random
from typing import Any, NoReturn

import gevent  # type: ignore[import-untyped]
from locust import FastHttpUser, LoadTestShape, constant, events, task
from locust import runners as locust_runners
from locust.env import Environment
from locust.exception import StopUser
from locust.runners import MasterRunner, WorkerRunner

from mcpfast.load import EXIT_NOTHING_TO_RUN, churn, elicit, notify, resume, wire
from mcpfast.load.auth import AuthError, credentials_from_options
from mcpfast.load.command import add_suite_options
from mcpfast.load.connection import Connection, said
from mcpfast.load.offers import (
    OPT_IN,
    flow_skip_reasons,
    flows_left_out,
    listen_filter,
    skip_reasons,
)
from mcpfast.load.probe import ProbeError, Tool, probe
from mcpfast.load.shapes import Shape, parse_shape
from mcpfast.load.shared import (
    SHARED,
    count_worker_reports,
    log,
    option,
    report_progress,
    write_final_stats,
    write_workers,
)
from mcpfast.protocol.capabilities import unadvertised
from mcpfast.protocol.methods import LIST_KEYS


def _setup(environment: Environment) -> str | None:
    """Probe the server once per process (`mcpfast.load.probe.probe`); None when done, else
    why it failed."""
    with SHARED.lock:
        if SHARED.ready:
            return None
        host = environment.host
        if not host:
            return "no host: give --host (or the web UI's Host)"
        try:
            SHARED.auth = credentials_from_options(
                host,
                bearer_env=str(option(environment, "mcp_bearer_env", "")),
                client_id=str(option(environment, "mcp_client_id", "")),
                client_secret_env=str(option(environment, "mcp_client_secret_env", "")),
                scope=str(option(environment, "mcp_scope", "")),
                token_url=str(option(environment, "mcp_token_url", "")),
                issuer=str(option(environment, "mcp_auth_issuer", "")),
                dpop=bool(option(environment, "mcp_dpop", False)),
                note=SHARED.note,
            )
            if SHARED.auth is not None:
                SHARED.auth.start()
        except AuthError as exc:
            return f"no token: {exc}"
        try:
            probed = probe(
                host,
                str(option(environment, "mcp_era", "auto")),
                str(option(environment, "mcp_tool", "")),
                str(option(environment, "mcp_arguments", "")),
                SHARED.note,
                SHARED.auth,
                pinned=str(option(environment, "mcp_version", "")),
            )
        except ProbeError as exc:
            return str(exc)
        offer = SHARED.offer = probed.offer
        if option(environment, "mcp_version", "") and not SHARED.quiet:
            SHARED.note(f"protocol version {offer.version} pinned ({offer.era} era)")
        SHARED.tool, SHARED.param_headers = probed.tool, probed.param_headers
        classes = [c.__name__ for c in environment.user_classes]
        if "ResumeUser" in classes:
            resume.prepare(
                offer,
                host,
                str(option(environment, "mcp_resume_tool", "")),
                str(option(environment, "mcp_resume_arguments", "")),
                SHARED.note,
                SHARED.auth,
            )
        SHARED.skipped = skip_reasons(classes, offer)
        problem = _prepare_flows(environment, offer, classes)
        if problem is not None:
            return problem
        for name, reason in SHARED.skipped.items():
            if not SHARED.quiet:  # a worker's master says it
                SHARED.note(f"skipping {name}: {reason}")
        log.info("era %s (%s); tool %s", offer.era, offer.version, SHARED.tool)
        SHARED.ready = True
        return None


def _flow_tools(environment: Environment) -> dict[str, str]:
    """The tools given for the `offers.FLOW_TOOLS` classes, by class."""
    return {
        "NotifyUser": str(option(environment, "mcp_notify_tool", "")),
        "ElicitUser": str(option(environment, "mcp_elicit_tool", "")),
    }


def _prepare_flows(environment: Environment, offer: Any, classes: list[str]) -> str | None:
    """Prepare the flow classes of the run (`notify.prepare`, `elicit.prepare`) and add their
    skip reasons to ``SHARED.skipped``; None, else why the options are wrong."""
    try:
        if "NotifyUser" in classes:
            notify.prepare(environment, offer, SHARED.note)
        if "ElicitUser" in classes:
            elicit.prepare(environment, offer, SHARED.note)
    except ValueError as exc:
        return str(exc)
    tools = _flow_tools(environment)
    SHARED.skipped.update(flow_skip_reasons(classes, offer, tools, notify.PROCESS.uri))
    return None


def _on_init(environment: Environment, runner: Any = None, **_: Any) -> None:
    """Probe before any user starts; leave out the user classes the server cannot serve and
    exit with `EXIT_NOTHING_TO_RUN` when none is left (or, headless, when the probe failed).
    Without a host yet (the web UI asks for it) the first user probes."""
    SHARED.progress = bool(option(environment, "mcp_progress", False))
    SHARED.quiet = isinstance(runner, WorkerRunner)
    _choose_shape(environment)
    named = bool(getattr(environment.parsed_options, "user_classes", None))
    if not named:  # the default mix: no `OPT_IN` classes
        classes = environment.user_classes
        classes[:] = [c for c in classes if c.__name__ not in OPT_IN]
    left_out = flows_left_out(
        [c.__name__ for c in environment.user_classes], named, _flow_tools(environment)
    )
    environment.user_classes[:] = [
        c for c in environment.user_classes if c.__name__ not in left_out
    ]
    if not SHARED.quiet:

        def final_stats(**_: Any) -> None:
            write_final_stats(environment)
            write_workers(environment)

        environment.events.quit.add_listener(final_stats)  # type: ignore[no-untyped-call]
        if isinstance(runner, MasterRunner):
            count_worker_reports(environment)
    if not environment.host:
        return
    problem = _setup(environment)
    if SHARED.quiet:
        return
    headless = bool(getattr(environment.parsed_options, "headless", False))
    if problem is not None:
        SHARED.note(problem)
        if headless:
            raise SystemExit(EXIT_NOTHING_TO_RUN)
        return
    remaining = [c for c in environment.user_classes if c.__name__ not in SHARED.skipped]
    if not remaining:
        names = ", ".join(c.__name__ for c in environment.user_classes)
        SHARED.note(f"nothing to run: every user class of the run ({names}) is skipped")
        raise SystemExit(EXIT_NOTHING_TO_RUN)
    environment.user_classes[:] = remaining


def _choose_shape(environment: Environment) -> None:
    """Follow ``--mcp-shape`` (`McpShape`); ``steady`` leaves locust without a shape, as
    it runs without this suite's shape class.

    Raises:
        SystemExit: the shape is not one (`mcpfast.load.shapes.parse_shape`).
    """
    try:
        spec = parse_shape(str(option(environment, "mcp_shape", "steady")))
    except ValueError as exc:
        raise SystemExit(f"--mcp-shape: {exc}") from None
    shape = environment.shape_class
    if isinstance(shape, McpShape):
        shape.spec = spec
        if spec.kind == "steady":
            environment.shape_class = None


class McpShape(LoadTestShape):
    """The users over time that ``--mcp-shape`` asks for (`mcpfast.load.shapes.Shape.tick`,
    asked once a second), ``--users`` the most; it ends the run at ``--run-time``."""

    use_common_options = True
    spec = Shape()

    def tick(self) -> tuple[int, float] | None:
        assert self.runner is not None
        options = self.runner.environment.parsed_options
        users = int(getattr(options, "num_users", None) or 1)
        run_time = getattr(options, "run_time", None)
        elapsed = self.get_run_time()  # type: ignore[no-untyped-call]
        return self.spec.tick(elapsed, users, float(run_time) if run_time else None)


# ------------------------------------------------------------------------------------- users


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

    def mcp(self, era: str | None = None) -> Connection | None:
        """This user's connection (None while the server is unknown: the probe failed).

        Raises:
            StopUser: this user's class was skipped or stopped.
        """
        if not SHARED.ready:
            problem = _setup(self.environment)
            if problem is not None:
                SHARED.note(problem)
                gevent.sleep(1.0)
                return None
        name = type(self).__name__
        if name in SHARED.skipped or name in SHARED.stopped:
            raise StopUser()
        if self.connection is None:
            wanted = era or SHARED.era
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


class ToolCallUser(McpUser):
    """``tools/call``, stateless in the modern era."""

    weight = 4

    @task
    def call_tool(self) -> None:
        connection = self.mcp()
        if connection is None:
            return
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
    def discover_or_list(self) -> None:
        connection = self.mcp()
        if connection is None:
            return
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
    def read_resource(self) -> None:
        connection = self.mcp()
        if connection is None:
            return
        if not SHARED.offer.resources:
            raise StopUser()
        self.send(connection, "resources/read", {"uri": random.choice(SHARED.offer.resources)})


class LegacySessionUser(McpUser):
    """A legacy session whatever the server's newest era: initialize once, then ``tools/call``,
    ``tools/list`` (``ping`` instead when the session offers no tools) and ``ping``."""

    weight = 2

    @task(3)
    def call_tool(self) -> None:
        connection = self.mcp("legacy")
        if connection is None:
            return
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
    def list_tools(self) -> None:
        connection = self.mcp("legacy")
        if connection is not None:
            tools = "tools" in SHARED.offer.legacy_capabilities
            self.send(connection, "tools/list" if tools else "ping", {})

    @task(1)
    def ping(self) -> None:
        connection = self.mcp("legacy")
        if connection is not None:
            self.send(connection, "ping", {})


class ListenUser(McpUser):
    """Long-lived streams: ``subscriptions/listen`` (modern) or the GET stream (legacy)."""

    weight = 1

    @task
    def hold_stream(self) -> None:
        connection = self.mcp()
        if connection is None:
            return
        if connection.era == "modern":
            notifications = listen_filter(SHARED.offer)
            if not notifications:  # skipped up front; this is a class picked in the web UI
                raise StopUser()
            answer = connection.listen(self.stream_seconds(), notifications)
            self.check("subscriptions/listen", answer)
            return
        self.subscribe(connection)
        self.check("legacy GET stream", connection.get_stream(self.stream_seconds()))

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

    @task
    def churn_session(self) -> None:
        connection = self.mcp("legacy")
        if connection is None:
            return
        if SHARED.tool is None:  # skipped up front; this is a class picked in the web UI
            raise StopUser()
        answer = churn.iterate(connection, SHARED.tool, SHARED.note)
        self.check(connection.label("tools/call"), answer)


class ResumeUser(McpUser):
    """Legacy, run only when named: a call's stream dropped after its first message and resumed
    with GET + ``Last-Event-ID`` (`mcpfast.load.resume`)."""

    weight = 1
    prefix = resume.PREFIX

    @task
    def resume_call(self) -> None:
        connection = self.mcp("legacy")
        if connection is None:
            return
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
    def await_notifications(self) -> None:
        connection = self.mcp()
        if connection is None:
            return
        if notify.PROCESS.trigger is None:  # skipped up front; a class picked in the web UI
            raise StopUser()
        trigger = notify.start_trigger(self.environment)
        if trigger is not None:
            _watchers.append(trigger)  # killed at the end of the run, as the watchers are
        label, answer = notify.listen(connection, self.environment, self.stream_seconds())
        self.check(label, answer)


class ElicitUser(McpUser):
    """Run with a tool to call (``--mcp-elicit-tool``) or when named: calls it and answers
    every elicitation it asks, in either era (`mcpfast.load.elicit`)."""

    weight = 1

    @task
    def call_and_answer(self) -> None:
        connection = self.mcp()
        if connection is None:
            return
        tool = elicit.PROCESS.tool
        if tool is None:  # skipped up front; this is a class picked in the web UI
            raise StopUser()
        if not connection.declared:
            elicit.declare(connection)
        answer = elicit.call_tool(connection, self.environment, tool.name, tool.arguments)
        self.check(connection.label(f"elicit tools/call {tool.name}"), answer)


# ----------------------------------------------------------------------- progress and idling


_watchers: list[gevent.Greenlet] = []
WATCH_INTERVAL = 0.25


def _idle(environment: Environment) -> bool:
    """Every user class of the run is skipped or stopped, and its users are gone."""
    runner = environment.runner
    names = {c.__name__ for c in environment.user_classes}
    stopped = names <= SHARED.skipped.keys() | SHARED.stopped.keys()
    return stopped and runner is not None and runner.user_count == 0


def _watch(environment: Environment) -> None:
    """End the run (headless; under the web UI, stop it) once `_idle`: nothing is left to load.
    A worker leaves that to its master (which sees no classes stop, so it runs on)."""
    while not _idle(environment):
        gevent.sleep(WATCH_INTERVAL)
    SHARED.note("every user class has stopped: the run ends")
    runner = environment.runner
    assert runner is not None
    if getattr(environment.parsed_options, "headless", False):
        runner.quit()
    else:
        runner.stop()


def _start_watching(environment: Environment, **_: Any) -> None:
    if isinstance(environment.runner, WorkerRunner):
        return
    _watchers.append(gevent.spawn(_watch, environment))
    if option(environment, "mcp_progress", False):
        _watchers.append(gevent.spawn(report_progress, environment))


def _stop_watching(**_: Any) -> None:
    current = gevent.getcurrent()
    while _watchers:
        watcher = _watchers.pop()
        if watcher is not current:  # the watcher that is ending the run ends by itself
            watcher.kill(block=False)


# a worker reports its statistics to its master every second (locust's default is 3 s), so that
# the master's live progress moves as smoothly as a single process's
locust_runners.WORKER_REPORT_INTERVAL = 1.0
# locust's EventHook.add_listener is unannotated
events.init_command_line_parser.add_listener(add_suite_options)  # type: ignore[no-untyped-call]
events.init.add_listener(_on_init)  # type: ignore[no-untyped-call]
events.test_start.add_listener(_start_watching)  # type: ignore[no-untyped-call]
events.test_stop.add_listener(_stop_watching)  # type: ignore[no-untyped-call]
