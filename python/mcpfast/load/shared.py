"""What the load suite's process shares (gevent, no Trio): its command-line options, the state
every user sees (`SHARED`: what the probe found, what the run has learnt since), and what it
writes besides locust's own output (progress lines, the final CSV statistics)."""

from __future__ import annotations

import csv
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gevent  # type: ignore[import-untyped]
from gevent.lock import Semaphore  # type: ignore[import-untyped]
from locust.env import Environment
from locust.stats import PERCENTILES_TO_REPORT, StatsCSV

from ..versions import MODERN
from . import NOTE_PREFIX, PROGRESS_PREFIX
from .auth import Credentials
from .offers import Offer
from .probe import Tool

log = logging.getLogger("mcpfast.load")
ERAS = ("auto", "modern", "legacy")


def add_options(parser: Any) -> None:
    parser.add_argument(
        "--mcp-tool",
        default="",
        env_var="MCPFAST_LOAD_TOOL",
        help="the tool ToolCallUser calls (default: one picked from tools/list)",
    )
    parser.add_argument(
        "--mcp-arguments",
        default="",
        env_var="MCPFAST_LOAD_ARGUMENTS",
        help="its arguments as a JSON object (default: built from its input schema)",
    )
    parser.add_argument(
        "--mcp-era",
        default="auto",
        choices=ERAS,
        env_var="MCPFAST_LOAD_ERA",
        help="auto (detect, as the mcpfast client does), modern or legacy",
    )
    parser.add_argument(
        "--mcp-stream-seconds",
        type=float,
        default=10.0,
        env_var="MCPFAST_LOAD_STREAM_SECONDS",
        help="how long ListenUser holds each stream open",
    )
    parser.add_argument(
        "--mcp-bearer-env",
        default="",
        metavar="VAR",
        include_in_web_ui=False,
        help="send the bearer token held in this environment variable",
    )
    parser.add_argument(
        "--mcp-client-id",
        default="",
        include_in_web_ui=False,
        help="get a client_credentials token as this client (one per process, renewed)",
    )
    parser.add_argument(
        "--mcp-client-secret-env",
        default="",
        metavar="VAR",
        include_in_web_ui=False,
        help="the environment variable holding the client's secret",
    )
    parser.add_argument(
        "--mcp-scope",
        default="",
        include_in_web_ui=False,
        help="the scopes to ask for, space-separated (default: the challenge's or the "
        "resource metadata's)",
    )
    parser.add_argument(
        "--mcp-dpop",
        action="store_true",
        include_in_web_ui=False,
        help="DPoP-bound client_credentials tokens: one key per process, a proof per request",
    )
    parser.add_argument(
        "--mcp-token-url",
        default="",
        include_in_web_ui=False,
        help="the token endpoint (default: discovered from the server's metadata)",
    )
    parser.add_argument(
        "--mcp-auth-issuer",
        default="",
        include_in_web_ui=False,
        help="the authorization server the client's secret is for (needed with "
        "--mcp-client-id unless --mcp-token-url is given)",
    )
    parser.add_argument(
        "--mcp-progress",
        action="store_true",
        env_var="MCPFAST_LOAD_PROGRESS",
        include_in_web_ui=False,
        help="print a JSON progress line every second and notes as lines (for mcpfast load)",
    )
    add_flow_options(parser)


def add_flow_options(parser: Any) -> None:
    """The options of `NotifyUser` (`mcpfast.load.notify`) and `ElicitUser`
    (`mcpfast.load.elicit`): each class joins the default mix when its tool is given."""
    parser.add_argument(
        "--mcp-notify-tool",
        default="",
        env_var="MCPFAST_LOAD_NOTIFY_TOOL",
        help="the tool NotifyUser's trigger calls to make the server send "
        "notifications/resources/updated (NotifyUser runs only with it)",
    )
    parser.add_argument(
        "--mcp-notify-arguments",
        default="",
        env_var="MCPFAST_LOAD_NOTIFY_ARGUMENTS",
        help="its arguments as a JSON object, {uri} standing for the URI listened to (default: "
        "built from its input schema, its uri argument the URI listened to)",
    )
    parser.add_argument(
        "--mcp-notify-uri",
        default="",
        env_var="MCPFAST_LOAD_NOTIFY_URI",
        help="the resource NotifyUser listens to, {process} standing for a token unique to the "
        "load process (default: the first listed resource)",
    )
    parser.add_argument(
        "--mcp-notify-interval",
        type=float,
        default=1.0,
        env_var="MCPFAST_LOAD_NOTIFY_INTERVAL",
        help="seconds between the trigger's calls (one trigger per load process)",
    )
    parser.add_argument(
        "--mcp-notify-timeout",
        type=float,
        default=5.0,
        env_var="MCPFAST_LOAD_NOTIFY_TIMEOUT",
        help="seconds after which a notification that has not come is recorded as lost",
    )
    parser.add_argument(
        "--mcp-elicit-tool",
        default="",
        env_var="MCPFAST_LOAD_ELICIT_TOOL",
        help="the tool ElicitUser calls, answering what it asks (ElicitUser runs only with it)",
    )
    parser.add_argument(
        "--mcp-elicit-arguments",
        default="",
        env_var="MCPFAST_LOAD_ELICIT_ARGUMENTS",
        help="its arguments as a JSON object (default: built from its input schema)",
    )
    parser.add_argument(
        "--mcp-version",
        default="",
        env_var="MCPFAST_LOAD_VERSION",
        help="pin the protocol revision (its era implied; default: the era's newest)",
    )
    parser.add_argument(
        "--mcp-shape",
        default="steady",
        env_var="MCPFAST_LOAD_SHAPE",
        help="steady, ramp[:over=30s] or spike[:base=N,at=10s,for=5s] (mcpfast.load.shapes)",
    )
    parser.add_argument(
        "--mcp-resume-tool",
        default="",
        env_var="MCPFAST_LOAD_RESUME_TOOL",
        help="the tool ResumeUser calls, one that reports progress (default: the users' tool)",
    )
    parser.add_argument(
        "--mcp-resume-arguments",
        default="",
        env_var="MCPFAST_LOAD_RESUME_ARGUMENTS",
        help="its arguments as a JSON object (default: built from its input schema)",
    )


def option(environment: Environment, name: str, default: Any) -> Any:
    options = environment.parsed_options
    value = getattr(options, name, None) if options is not None else None
    return default if value in (None, "") else value


@dataclass
class Shared:
    """What every user of this process shares: what the server offers, found once by the probe
    (``offer``, ``tool``, ``param_headers``; ``skipped``: user class -> why it cannot run), and
    what the run has learnt since (``stopped``: user class -> the answer that stopped it;
    ``dropped``: request labels the server turned out to lack; ``notes``: what was said).
    """

    lock: Semaphore = field(default_factory=Semaphore)
    ready: bool = False
    offer: Offer = field(default_factory=lambda: Offer("modern", MODERN))
    tool: Tool | None = None
    param_headers: dict[str, Any] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    stopped: dict[str, str] = field(default_factory=dict)
    dropped: set[str] = field(default_factory=set)
    notes: set[str] = field(default_factory=set)
    auth: Credentials | None = None
    """The process's credentials (None: unauthenticated)."""
    progress: bool = False
    quiet: bool = False
    """A worker process: its master says what the probe found."""
    workers: dict[str, dict[str, int]] = field(default_factory=dict)
    """A master's workers, by client id: their ``index``, ``requests`` and ``failures`` so far
    (`count_worker_reports`)."""

    @property
    def era(self) -> str:
        return self.offer.era

    @property
    def version(self) -> str:
        return self.offer.version

    @property
    def capabilities(self) -> dict[str, Any]:
        return self.offer.capabilities

    def note(self, text: str) -> None:
        """Say ``text`` once per process: a ``MCPFAST-NOTE`` line on stdout under
        ``--mcp-progress`` (``mcpfast load`` prints it as is), else a warning in locust's log."""
        if text in self.notes:
            return
        self.notes.add(text)
        if self.progress:
            sys.stdout.write(NOTE_PREFIX + text + "\n")
            sys.stdout.flush()
        else:
            log.warning(text)


SHARED = Shared()


def write_final_stats(environment: Environment) -> None:
    """Rewrite ``PREFIX_stats.csv``, ``PREFIX_failures.csv`` and ``PREFIX_exceptions.csv`` from
    locust's final statistics (each replaced whole, so locust's own open handles cannot mix in).
    """
    prefix = option(environment, "csv_prefix", None)
    if not prefix:
        return
    writer = StatsCSV(environment, PERCENTILES_TO_REPORT)
    outputs: tuple[tuple[str, Callable[[Any], None]], ...] = (
        ("_stats.csv", writer.requests_csv),
        ("_failures.csv", writer.failures_csv),
        ("_exceptions.csv", writer.exceptions_csv),
    )
    for suffix, write in outputs:
        path = f"{prefix}{suffix}"
        with open(path + ".final", "w", newline="") as handle:
            write(csv.writer(handle))
        os.replace(path + ".final", path)


def count_worker_reports(environment: Environment) -> None:
    """On a master: add up each worker's requests and failures from its stats reports (each
    report holds what the worker recorded since its previous one) into ``SHARED.workers``."""

    def counted(client_id: str, data: dict[str, Any], **_: Any) -> None:
        total = data.get("stats_total") or {}
        runner: Any = environment.runner
        worker = SHARED.workers.setdefault(
            client_id, {"index": runner.get_worker_index(client_id), "requests": 0, "failures": 0}
        )
        worker["requests"] += int(total.get("num_requests", 0))
        worker["failures"] += int(total.get("num_failures", 0))

    def cleared(**_: Any) -> None:  # locust clears its statistics when a test starts
        SHARED.workers.clear()

    environment.events.worker_report.add_listener(counted)  # type: ignore[no-untyped-call]
    environment.events.test_start.add_listener(cleared)  # type: ignore[no-untyped-call]


def write_workers(environment: Environment) -> None:
    """``PREFIX_workers.json``: `SHARED.workers` (a master's; nothing written without workers)."""
    prefix = option(environment, "csv_prefix", None)
    if not prefix or not SHARED.workers:
        return
    workers = sorted(SHARED.workers.values(), key=lambda w: w["index"])
    with open(f"{prefix}_workers.json", "w") as handle:
        json.dump(workers, handle)


def report_progress(environment: Environment) -> None:
    """A ``MCPFAST-PROGRESS`` line every second (for ``mcpfast load``)."""
    started = time.monotonic()
    while True:
        gevent.sleep(1.0)
        total = environment.stats.total
        line = {
            "elapsed": round(time.monotonic() - started, 1),
            "users": environment.runner.user_count if environment.runner is not None else 0,
            "requests": total.num_requests,
            "failures": total.num_failures,
            "rps": round(total.current_rps, 1),
            "p50": total.get_current_response_time_percentile(0.5)
            or total.get_response_time_percentile(0.5),
            "p95": total.get_current_response_time_percentile(0.95)
            or total.get_response_time_percentile(0.95),
        }
        sys.stdout.write(PROGRESS_PREFIX + json.dumps(line) + "\n")
        sys.stdout.flush()
