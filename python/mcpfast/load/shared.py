"""What the load suite's process shares (gevent, no Trio): its options' values (`option`; the
options themselves are `mcpfast.load.options`), the state every user sees (`SHARED`: what the
probe found, what the run has learnt since), and what it writes besides locust's own output
(progress lines, the final CSV statistics)."""

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
from .wire import error_group, rate_limited

log = logging.getLogger("mcpfast.load")


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
            "rate_limited": sum(
                e.occurrences
                for e in environment.stats.errors.values()
                if rate_limited(*error_group(str(e.error))[:2])
            ),
            "rps": round(total.current_rps, 1),
            "p50": total.get_current_response_time_percentile(0.5)
            or total.get_response_time_percentile(0.5),
            "p95": total.get_current_response_time_percentile(0.95)
            or total.get_response_time_percentile(0.95),
        }
        sys.stdout.write(PROGRESS_PREFIX + json.dumps(line) + "\n")
        sys.stdout.flush()
