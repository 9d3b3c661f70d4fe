"""The suite's run, once per process and once per run (locust's event hooks, registered by the
locustfile): the probe before any user starts (`setup`), the user classes left out (`on_init`),
``--mcp-shape`` (`McpShape`), and the watch that ends a run nothing is left to load
(`start_watching`; greenlets it kills at the end: `kill_at_end`). Runs under gevent.
"""

from __future__ import annotations

from typing import Any

import gevent  # type: ignore[import-untyped]
from locust import LoadTestShape
from locust.env import Environment
from locust.runners import MasterRunner, WorkerRunner

from . import EXIT_NOTHING_TO_RUN, elicit, notify, resume
from .auth import AuthError, credentials_from_options
from .offers import OPT_IN, flow_skip_reasons, flows_left_out, skip_reasons
from .probe import ProbeError, probe
from .shapes import Shape, parse_shape
from .shared import (
    SHARED,
    count_worker_reports,
    log,
    option,
    report_progress,
    write_final_stats,
    write_workers,
)

__all__ = ["McpShape", "kill_at_end", "on_init", "setup", "start_watching", "stop_watching"]


def setup(environment: Environment) -> str | None:
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


def on_init(environment: Environment, runner: Any = None, **_: Any) -> None:
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
    problem = setup(environment)
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


_watchers: list[gevent.Greenlet] = []
WATCH_INTERVAL = 0.25


def kill_at_end(greenlet: gevent.Greenlet) -> None:
    """Kill ``greenlet`` when the run stops (`stop_watching`), as the watchers are."""
    _watchers.append(greenlet)


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


def start_watching(environment: Environment, **_: Any) -> None:
    """At the start of a run (not on a worker): `_watch`, and the progress lines when asked."""
    if isinstance(environment.runner, WorkerRunner):
        return
    _watchers.append(gevent.spawn(_watch, environment))
    if option(environment, "mcp_progress", False):
        _watchers.append(gevent.spawn(report_progress, environment))


def stop_watching(**_: Any) -> None:
    """At the end of a run: kill the watchers and what `kill_at_end` was given."""
    current = gevent.getcurrent()
    while _watchers:
        watcher = _watchers.pop()
        if watcher is not current:  # the watcher that is ending the run ends by itself
            watcher.kill(block=False)
