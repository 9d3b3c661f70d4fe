"""``mcpfast load --engine fast``: request-per-exchange workloads at the speed of the server, not
of the generator (locust stays the engine of the stateful flows and the default).

`run_fast` has `mcpfast.load.processes.run_locust`'s signature, so ``--compare``, ``--fail-on``,
the reports and ``summary.json`` take either: it builds the plan in a process of its own
(`mcpfast.load.fastplan`: the suite's probe, every request built once), runs ``--processes``
load processes (`mcpfast.load.engine`), each with its share of the connections (``--users``) and
of the rate, then merges their tallies exactly (answers added, latency histograms added bucket
by bucket: `mcpfast.load.hdr`) and judges each distinct answer once with
`mcpfast.load.wire.judge`, the locust users' own rule.

``--rate SPEC`` makes the run an open loop: ``N`` requests per second, or stages
``N:DURATION,M:DURATION,...`` (the last rate held to the end of ``--run-time``); latency is then
measured from each request's scheduled time (coordinated omission corrected), and the report
says how many requests the generator sent late, and how late.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from . import EXIT_NOTHING_TO_RUN
from .fastclose import close_sessions
from .fastmix import connections, process_shares
from .fastrun import run_processes
from .hdr import Histogram
from .processes import Progress, child_env
from .report import ErrorGroup, Row, Summary
from .shapes import parse_duration, parse_shape
from .summary import Outcome
from .wire import error_group, judge

__all__ = ["PERCENTILES", "parse_rate", "rate_stages", "run_fast", "write_plan"]

PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9, 99.99)
REQUEST_TIMEOUT = 10.0
"""Seconds a request may take before it is counted as failed (its connection then reopened)."""
PLAN_TIMEOUT = 120.0


def parse_rate(spec: str, run_seconds: float) -> list[tuple[float, float]]:
    """``--rate``'s stages, (seconds, requests per second); the last lasts to the run's end.

    Raises:
        ValueError: not a rate, or a rate that is not positive.
    """
    stages: list[tuple[float, float]] = []
    for part in spec.split(","):
        rate_text, _, duration = part.strip().partition(":")
        try:
            rate = float(rate_text)
        except ValueError:
            raise ValueError(f"not a rate: {rate_text!r} (e.g. 1000 or 500:10s,2000:20s)") from None
        if not rate > 0:
            raise ValueError(f"a rate must be positive, got {rate_text!r}")
        stages.append((parse_duration(duration) if duration else 0.0, rate))
    used = sum(s for s, _ in stages[:-1])
    stages[-1] = (max(run_seconds - used, 0.0), stages[-1][1])
    return stages


def rate_stages(args: Any, seconds: float) -> list[tuple[float, float]]:
    """The open loop's stages of a run of ``seconds``: ``--rate``'s, or its one rate scaled
    over time by ``--shape`` (`mcpfast.load.shapes.Shape.rates`); none: a closed loop.

    Raises:
        ValueError: a bad ``--rate``, or stages with a ``--shape`` other than steady.
    """
    if not args.rate:
        return []
    stages = parse_rate(args.rate, seconds)
    shape = parse_shape(getattr(args, "shape", "steady"))
    if shape.kind == "steady":
        return stages
    if len(stages) > 1:
        raise ValueError("a --shape scales one rate (--rate N), not stages")
    return shape.rates(stages[0][1], seconds, args.users)


def _plan(args: Any, log: IO[str]) -> dict[str, Any]:
    options = {
        "url": args.url,
        "era": args.era,
        "tool": args.tool,
        "arguments": args.arguments,
        "protocol_version": args.protocol_version or "",
        "workloads": connections(getattr(args, "mix", ""), args.user_classes, args.users),
        "run_seconds": parse_duration(args.run_time),
        **{name: getattr(args, name, "") or "" for name in AUTH_OPTIONS},
    }
    done = subprocess.run(
        [sys.executable, "-m", "mcpfast.load.fastplan"],
        input=json.dumps(options),
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=PLAN_TIMEOUT,
        check=False,
    )
    log.write(done.stderr)
    if done.returncode != 0:
        return {"error": f"the probe failed (exit {done.returncode}): {done.stderr[-300:]}"}
    plan: dict[str, Any] = json.loads(done.stdout)
    return plan


def write_plan(path: Path, plan: dict[str, Any]) -> None:
    """Write ``plan`` (JSON) to ``path``, readable by its owner only: its requests carry the
    run's credentials."""
    path.unlink(missing_ok=True)
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as file:
        file.write(json.dumps(plan))


AUTH_OPTIONS = ("bearer_env", "client_id", "client_secret_env", "scope", "token_url", "auth_issuer")
"""The authorization options the plan takes (names of variables, never secrets)."""


def _shares(
    args: Any, groups: list[dict[str, Any]], stages: list[tuple[float, float]], seconds: float
) -> list[dict[str, Any]]:
    """Each load process's connections (of one workload's group: `fastmix.process_shares`),
    its share of the rate, and its group's ``first_kind`` (`_Merged.add`)."""
    processes = args.processes if args.processes > 0 else (os.cpu_count() or 1)
    processes = 1 if args.processes == 0 else processes
    counts = [int(g["count"]) for g in groups]
    return [
        {
            "first": first,
            "count": count,
            "first_kind": int(groups[group]["first_kind"]),
            "duration": seconds,
            "stages": [(s, r * count / args.users) for s, r in stages],
            "timeout": REQUEST_TIMEOUT,
        }
        for group, first, count in process_shares(counts, processes)
    ]


class _Merged:
    """The tallies of every load process, added up."""

    def __init__(self, kinds: int) -> None:
        self.answers: list[dict[tuple[int, str, str], int]] = [{} for _ in range(kinds)]
        self.histograms = [Histogram() for _ in range(kinds)]
        self.errors: list[dict[str, int]] = [{} for _ in range(kinds)]
        self.late = self.max_lag_us = 0
        self.elapsed = 0.0
        self.tallies: list[dict[str, Any]] = []
        self.backend = ""

    def add(self, tally: dict[str, Any], first_kind: int = 0) -> None:
        """Add a load process's tally, its kinds the plan's from ``first_kind`` on."""
        tally = _placed(tally, first_kind, len(self.answers))
        for i, kind in enumerate(tally["kinds"]):
            for status, content_type, body, count in kind["answers"]:
                key = (int(status), str(content_type), str(body))
                self.answers[i][key] = self.answers[i].get(key, 0) + int(count)
            for text, count in kind["errors"].items():
                self.errors[i][text] = self.errors[i].get(text, 0) + int(count)
            self.histograms[i].merge([Histogram.of(kind["counts"], kind["sum_us"], kind["max_us"])])
        self.late += int(tally["late"])
        self.max_lag_us = max(self.max_lag_us, int(tally["max_lag_us"]))
        self.elapsed = max(self.elapsed, float(tally["elapsed"]))
        self.backend = str(tally.get("backend", ""))
        self.tallies.append(tally)


def _placed(tally: dict[str, Any], first_kind: int, kinds: int) -> dict[str, Any]:
    """``tally`` with its kinds at their place among the plan's ``kinds``."""
    empty = {"answers": [], "counts": {}, "sum_us": 0, "max_us": 0, "errors": {}}
    mine = tally["kinds"]
    return {
        **tally,
        "kinds": [empty] * first_kind + mine + [empty] * (kinds - first_kind - len(mine)),
    }


Verdicts = list[dict[tuple[int, str, str], str | None]]


def _verdicts(merged: _Merged, kinds: list[dict[str, Any]]) -> Verdicts:
    """Each distinct answer of each kind judged once: its failure text, or None."""
    return [
        {
            key: judge(kind["method"], kind["id"], key[0], key[1], base64.b64decode(key[2])).failure
            for key in merged.answers[i]
        }
        for i, kind in enumerate(kinds)
    ]


def _failed(merged: _Merged, verdicts: Verdicts) -> list[dict[str, int]]:
    """Failures per kind by text: the engine's (no answer) and the judged answers'."""
    failed: list[dict[str, int]] = []
    for i, answers in enumerate(merged.answers):
        texts = dict(merged.errors[i])
        for key, count in answers.items():
            failure = verdicts[i][key]
            if failure is not None:
                texts[failure] = texts.get(failure, 0) + count
        failed.append(texts)
    return failed


def workers(merged: _Merged, verdicts: Verdicts) -> list[dict[str, Any]]:
    """Each load process's requests and failures."""
    shares = []
    for index, tally in enumerate(merged.tallies):
        requests = failures = 0
        for i, kind in enumerate(tally["kinds"]):
            for status, content_type, body, count in kind["answers"]:
                requests += count
                failures += count if verdicts[i][(status, content_type, body)] else 0
            errors = sum(kind["errors"].values())
            requests += errors
            failures += errors
        shares.append({"index": index, "requests": requests, "failures": failures})
    return shares


def _row(name: str, requests: int, failures: int, hist: Histogram, seconds: float) -> Row:
    return Row(
        kind="POST" if name else "",
        name=name or "Aggregated",
        requests=requests,
        failures=failures,
        rps=requests / seconds if seconds else 0.0,
        avg=hist.mean(),
        p50=hist.percentile(50),
        p95=hist.percentile(95),
        p99=hist.percentile(99),
        max=hist.max_us / 1000.0,
    )


def summarize(
    merged: _Merged, kinds: list[dict[str, Any]], verdicts: Verdicts
) -> tuple[Summary, dict[str, Any]]:
    """The run's `Summary` and its latency document (percentiles to p99.99 and histograms):
    one row per request name (kinds of two workloads may share one, as locust's would)."""
    failed = _failed(merged, verdicts)
    rows: list[Row] = []
    groups: dict[tuple[str, str, str], ErrorGroup] = {}
    seconds = merged.elapsed
    latency: dict[str, Any] = {}
    named: dict[str, list[int]] = {}
    for i, kind in enumerate(kinds):
        named.setdefault(kind["name"], []).append(i)
    for name, indices in named.items():
        requests = sum(
            sum(merged.answers[i].values()) + sum(merged.errors[i].values()) for i in indices
        )
        hist = Histogram().merge([merged.histograms[i] for i in indices])
        rows.append(
            _row(name, requests, sum(sum(failed[i].values()) for i in indices), hist, seconds)
        )
        latency[name] = _latency(hist)
        for text, count in (pair for i in indices for pair in failed[i].items()):
            key = error_group(text)
            group = groups.setdefault(key, ErrorGroup(*key, count=0))
            group.count += count
            if name not in group.names:
                group.names.append(name)
    total_hist = Histogram().merge(merged.histograms)
    total = _row(
        "", sum(r.requests for r in rows), sum(r.failures for r in rows), total_hist, seconds
    )
    latency["total"] = _latency(total_hist)
    errors = sorted(groups.values(), key=lambda g: -g.count)
    return Summary(rows, total, errors), latency


def _latency(hist: Histogram) -> dict[str, Any]:
    return {
        **{f"p{q:g}": hist.percentile(q) for q in PERCENTILES},
        "max": hist.max_us / 1000.0,
        "histogram": hist.document(),
    }


def schedule_note(merged: _Merged, requests: int) -> str:
    """The report's line on the generator against its schedule (open loop)."""
    if not merged.late:
        return "open loop: every request was sent on schedule (within 1 ms)"
    share = 100.0 * merged.late / requests if requests else 0.0
    return (
        f"the generator fell behind its schedule: {merged.late} of {requests} requests "
        f"({share:.2f}%) were sent more than 1 ms late, at most {merged.max_lag_us / 1000:.1f} ms "
        "(their latency counts from the schedule; more --users or --processes may keep up)"
    )


def run_fast(args: Any, out: Path, stream: IO[str], *, quiet: bool) -> Outcome:
    """Run the fast engine for ``args`` into ``out``: `run_locust`'s contract (its notes on
    ``stream``, the log in ``out/locust.log``; the latency percentiles, histograms and schedule
    in its ``extra``, for ``summary.json``)."""
    started, seconds, stages, notes = begin_run(args, out)
    with (out / "locust.log").open("w") as log:
        plan = planned(args, log, notes, stream, quiet=quiet)
        if plan is None:
            return Outcome(EXIT_NOTHING_TO_RUN, None, notes, None, [], out, 0.0)
        plan_path = out / "plan.json"
        write_plan(plan_path, plan)
        shares = _shares(args, plan["groups"], stages, seconds)
        ran = run_processes(
            plan_path, shares, out, log, Progress(stream, log, quiet=quiet), args.users
        )
        closed = close_sessions(plan)
    for note in ran.notes + ([closed] if closed else []):
        notes.append(note)
        _say(stream, note, quiet)
    if ran.code != 0 and not ran.stopped:
        return Outcome(ran.code, None, notes, plan["era"], [], out, time.monotonic() - started)
    merged = _Merged(len(plan["kinds"]))
    for share, tally in zip(shares, read_tallies(out, len(shares)), strict=True):
        if tally is not None:
            merged.add(tally, share["first_kind"])
    if ran.stopped:
        notes.append(f"stopped early ({ran.stopped}) after {merged.elapsed:.1f} s: a partial run")
        _say(stream, notes[-1], quiet)
    summary, rows, extra = conclude(args, plan, merged, stages, notes, stream, quiet=quiet)
    took = time.monotonic() - started
    shares_done = rows if len(rows) > 1 else []
    return Outcome(
        0,
        summary,
        notes,
        plan["era"],
        shares_done,
        out,
        took,
        extra=extra,
        interrupted=bool(ran.stopped),
    )


def begin_run(args: Any, out: Path) -> tuple[float, float, list[tuple[float, float]], list[str]]:
    """A run's start, local (`run_fast`) or distributed (`mcpfast.load.fastdist`): ``out``
    made; the start time (`time.monotonic`), the run's seconds (``--run-time``), its open-loop
    stages (`rate_stages`) and its notes (none yet)."""
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    seconds = parse_duration(args.run_time)
    return started, seconds, rate_stages(args, seconds), []


def planned(
    args: Any, log: IO[str], notes: list[str], stream: IO[str], *, quiet: bool
) -> dict[str, Any] | None:
    """The run's plan (`_plan`), its notes said on ``stream`` and added to ``notes``; None when
    it could not be built (why: the last note)."""
    plan = _plan(args, log)
    if "error" in plan:
        notes.append(str(plan["error"]))
        _say(stream, notes[-1], quiet)
        return None
    for note in plan["notes"]:
        notes.append(note)
        _say(stream, note, quiet)
    return plan


def read_tallies(out: Path, count: int) -> list[dict[str, Any] | None]:
    """The tallies the ``count`` load processes of `run_processes` wrote into ``out``, in
    order; None for one that wrote none (a run stopped early, before it could)."""
    paths = [out / f"tally-{i}.json" for i in range(count)]
    return [json.loads(path.read_text()) if path.exists() else None for path in paths]


def conclude(
    args: Any,
    plan: dict[str, Any],
    merged: _Merged,
    stages: list[tuple[float, float]],
    notes: list[str],
    stream: IO[str],
    *,
    quiet: bool,
) -> tuple[Summary, list[dict[str, Any]], dict[str, Any]]:
    """The run's `Summary`, each tally's row (`workers`) and what it adds to ``summary.json``;
    the engine's line (and the schedule's) said on ``stream`` and added to ``notes``."""
    verdicts = _verdicts(merged, plan["kinds"])
    summary, latency = summarize(merged, plan["kinds"], verdicts)
    total = latency["total"]
    notes.append(
        f"fast engine ({merged.backend}), {args.users} connections, "
        + ("open loop; latency from the schedule" if stages else "closed loop")
        + ": "
        + ", ".join(f"p{q:g} {_ms(total[f'p{q:g}'])}" for q in PERCENTILES)
        + " ms"
    )
    if stages:
        notes.append(schedule_note(merged, summary.requests))
    for note in notes[-2 if stages else -1 :]:
        _say(stream, note, quiet)
    extra = {
        "engine": {"name": "fast", "backend": merged.backend, "connections": args.users},
        "rate": [{"seconds": s, "rps": r} for s, r in stages] or None,
        "schedule": {"late": merged.late, "max_lag_ms": merged.max_lag_us / 1000}
        if stages
        else None,
        "latency": latency,
    }
    return summary, workers(merged, verdicts), extra


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _say(stream: IO[str], text: str, quiet: bool) -> None:
    if not quiet:
        stream.write(f"mcpfast load: {text}\n")
        stream.flush()
