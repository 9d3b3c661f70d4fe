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
        "--mcp-progress",
        action="store_true",
        env_var="MCPFAST_LOAD_PROGRESS",
        include_in_web_ui=False,
        help="print a JSON progress line every second and notes as lines (for mcpfast load)",
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
