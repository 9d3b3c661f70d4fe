"""The machine-readable summary of a load run (``summary.json``, or ``--json PATH``).

`summary_document` builds it: ``parameters`` (what was asked: URL, users, run time, ...),
``era`` (what the probe detected: ``{"era", "version"}``, or null when unknown), ``total`` and
``requests`` (per request name: requests, failures, rps, avg, p50, p95, p99, max; times in
milliseconds, null when not measured), ``errors`` (failures grouped by HTTP status, JSON-RPC
code and problem), ``rate_limited`` (the failures that were HTTP 429 or -32023), ``workers``
(per load process of a distributed run: its index, requests and failures; empty for a single
process; per worker of a fast-engine master, with its name and number of load processes),
``thresholds`` (each ``--fail-on`` with its measured
value and verdict), ``notes`` (what the run said: skipped classes, stopped classes) and
``exit_status``; a fast engine run (`mcpfast.load.fast`) adds ``engine``, ``rate``,
``schedule`` and ``latency`` (p50 to p99.99 per request name, and the histograms, merged
exactly across processes). Pure but for `write_document`. `Outcome` is what one locust run left.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from .report import Row, Summary
from .thresholds import Verdict

__all__ = ["Outcome", "row_document", "summary_document", "write_document"]


@dataclass
class Outcome:
    """What one headless locust run left: its exit status, its summary (None: no statistics
    were written), what it said, and where its files are."""

    code: int
    summary: Summary | None
    notes: list[str]
    era: dict[str, str] | None
    workers: list[dict[str, Any]]
    out: Path
    took: float
    interrupted: bool = False
    """Ctrl-C (or SIGTERM) stopped it early."""
    extra: dict[str, Any] | None = None
    """What the fast engine adds to ``summary.json`` (`mcpfast.load.fast`): ``engine``, ``rate``,
    ``schedule`` (late sends) and ``latency`` (percentiles to p99.99, histograms)."""

    @property
    def log_path(self) -> Path:
        return self.out / "locust.log"

    @property
    def prefix(self) -> Path:
        return self.out / "load"


def row_document(row: Row) -> dict[str, Any]:
    """One request name's numbers (``kind`` is the HTTP method, empty for the total)."""
    return asdict(row)


def verdict_document(verdict: Verdict) -> dict[str, Any]:
    t = verdict.threshold
    return {
        "expression": t.text,
        "name": t.name,
        "metric": t.metric,
        "op": t.op,
        "value": t.value,
        "unit": t.unit(),
        "measured": verdict.measured,
        "failed": verdict.failed,
    }


def summary_document(
    summary: Summary,
    *,
    parameters: dict[str, Any],
    era: dict[str, str] | None,
    notes: list[str],
    verdicts: list[Verdict],
    workers: list[dict[str, Any]],
    exit_status: int,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON object of a run (see the module's docstring), with the fast engine's ``extra``."""
    return {
        "parameters": parameters,
        "era": era,
        "total": row_document(summary.total) if summary.total is not None else None,
        "requests": [row_document(r) for r in summary.rows],
        "errors": [asdict(g) for g in summary.errors],
        "rate_limited": summary.rate_limited,
        "workers": workers,
        "thresholds": [verdict_document(v) for v in verdicts],
        "notes": notes,
        "exit_status": exit_status,
        **(extra or {}),
    }


def write_document(document: dict[str, Any], path: str, stdout: IO[str]) -> None:
    """Write ``document`` as indented JSON to ``path`` (``-``: to ``stdout``)."""
    text = json.dumps(document, indent=2) + "\n"
    if path == "-":
        stdout.write(text)
        stdout.flush()
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text)
