"""The fast engine's live view: every load process's progress lines (`mcpfast.load.engine`'s
`Reporter`: one a second, the first all zeros) added up second by second into one status line
(`mcpfast.load.processes.Progress`, the locust engine's) and one row of
``PREFIX_stats_history.csv`` (locust's columns, the ``Aggregated`` row only), which
`mcpfast.load.report.read_history` reads for the chart.

Line ``k`` of each process is its second ``k`` (the last, its whole tally: its run's end): row
``k`` is written once every process has said it or ended (an ended process keeps its last
numbers), stamped with the latest ``elapsed`` of its lines. ``failures`` here are requests with
no answer; answers are judged at the end (`mcpfast.load.fast`). Pure but for its two outputs.
"""

from __future__ import annotations

import csv
import json
from collections import deque
from typing import IO, Any

from . import PROGRESS_PREFIX
from .hdr import Histogram, highest
from .processes import Progress

__all__ = ["HISTORY_COLUMNS", "Live"]

PERCENTILES = ("50%", "66%", "75%", "80%", "90%", "95%", "98%", "99%", "99.9%", "99.99%", "100%")
HISTORY_COLUMNS = (
    "Timestamp",
    "User Count",
    "Type",
    "Name",
    "Requests/s",
    "Failures/s",
    *PERCENTILES,
    "Total Request Count",
    "Total Failure Count",
    "Total Median Response Time",
    "Total Average Response Time",
    "Total Min Response Time",
    "Total Max Response Time",
    "Total Average Content Size",
)
"""locust's ``--csv-full-history`` columns (the minimum and the content size: ``N/A``)."""


class _Process:
    """One load process's lines not yet added, and its numbers so far."""

    def __init__(self) -> None:
        self.pending: deque[dict[str, Any]] = deque()
        self.last: dict[str, Any] = {"answered": 0, "failed": 0, "sum_us": 0, "max_us": 0}
        self.ended = False
        self.said = False


class Live:
    """Adds up ``processes`` processes' progress lines (`add`, then `ended` at each one's end)
    second by second: a status line on ``progress``, a row on ``history`` stamped
    ``started`` (Unix seconds) plus the lines' ``elapsed``."""

    def __init__(
        self,
        processes: int,
        connections: int,
        started: float,
        progress: Progress,
        history: IO[str],
    ) -> None:
        self.processes = [_Process() for _ in range(processes)]
        self.connections = connections
        self.started = started
        self.progress = progress
        self.history = history
        self.writer = csv.writer(history)
        self.writer.writerow(HISTORY_COLUMNS)
        self.total = Histogram()
        self.before = (0, 0, 0.0)
        """The requests, failures and elapsed seconds of the row before."""

    def add(self, index: int, line: dict[str, Any]) -> None:
        """Process ``index``'s next line."""
        process = self.processes[index]
        process.pending.append(line)
        process.said = True
        self._flush()

    def ended(self, index: int) -> None:
        """Process ``index`` wrote its last line."""
        self.processes[index].ended = True
        self._flush()

    def said(self, index: int) -> bool:
        """Whether process ``index`` has written a line (its first: it took over Ctrl-C)."""
        return self.processes[index].said

    def _flush(self) -> None:
        while all(p.pending or p.ended for p in self.processes) and any(
            p.pending for p in self.processes
        ):
            second = Histogram()
            elapsed = 0.0
            for process in self.processes:
                if process.pending:
                    process.last = process.pending.popleft()
                    second.merge([Histogram.of(process.last.get("counts") or {}, 0, 0)])
                    elapsed = max(elapsed, float(process.last.get("elapsed") or 0.0))
            self._second(second, elapsed)

    def _second(self, second: Histogram, elapsed: float) -> None:
        answered = sum(int(p.last["answered"]) for p in self.processes)
        failed = sum(int(p.last["failed"]) for p in self.processes)
        sum_us = sum(int(p.last["sum_us"]) for p in self.processes)
        max_us = max(int(p.last["max_us"]) for p in self.processes)
        top = max(second.counts, default=None)
        second.max_us = max_us if top is None else min(max_us, highest(top))
        self.total.merge([second])
        requests, before = answered + failed, self.before
        self.before = (requests, failed, elapsed)
        seconds = elapsed - before[2]
        line = {
            "elapsed": elapsed,
            "users": self.connections,
            "requests": requests,
            "failures": failed,
            "p50": second.percentile(50),
            "p95": second.percentile(95),
        }
        self.progress.feed(PROGRESS_PREFIX + json.dumps(line) + "\n")
        cells = [second.percentile(float(q.rstrip("%"))) for q in PERCENTILES]
        self.writer.writerow(
            [
                f"{self.started + elapsed:.2f}",
                self.connections,
                "",
                "Aggregated",
                _cell((requests - before[0]) / seconds if seconds > 0 else 0.0),
                _cell((failed - before[1]) / seconds if seconds > 0 else 0.0),
                *(_cell(c) for c in cells),
                requests,
                failed,
                _cell(self.total.percentile(50)),
                _cell(sum_us / answered / 1000.0 if answered else None),
                "N/A",
                _cell(max_us / 1000.0 if answered else None),
                "N/A",
            ]
        )
        self.history.flush()


def _cell(value: float | None) -> str:
    return "N/A" if value is None else f"{value:.2f}"
