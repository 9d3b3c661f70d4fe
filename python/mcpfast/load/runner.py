"""``mcpfast load URL``: the locust suite headless in a child process, live progress, a summary
and the report files (CSV, HTML, PNG, ``summary.json``); ``--web`` runs locust's web UI instead.

``--processes N`` runs N load processes on this host (locust workers of a local master);
``--master`` / ``--worker --master-host H`` spread them over hosts, the master showing the
progress and writing the reports. ``--fail-on EXPR`` thresholds (`mcpfast.load.thresholds`) end
the run with exit status 4 when one holds; ``--json PATH`` places the JSON summary
(`mcpfast.load.summary`; ``-``: on stdout); ``-q`` leaves out the live progress. ``--compare``
runs the same workload against several servers in interleaved rounds
(`mcpfast.load.compare`). The exit statuses are in `EPILOG`.

locust runs on gevent, which must never be imported into a Trio process: this module only starts
``python -m locust -f <mcpfast/load/locustfile.py>`` and reads what it writes. ``--engine fast``
(its master and workers too) needs neither locust nor gevent: it runs on mcpfast's base install.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from . import EXIT_NOTHING_TO_RUN, command, shapes
from .compare import run_compare
from .fast import rate_stages, run_fast
from .fastdist import run_fast_master
from .fastmix import connections
from .fastworker import run_fast_worker
from .mix import parse_mix
from .options import USER_CLASSES
from .processes import child_env, run_locust, wait
from .report import Summary, format_summary, read_history, write_chart
from .summary import Outcome, summary_document, write_document
from .thresholds import (
    EXIT_THRESHOLDS,
    Threshold,
    ThresholdError,
    Verdict,
    evaluate,
    format_verdicts,
)
from .thresholds import parse as parse_threshold


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``load`` subcommand's options (`mcpfast.load.options`) and help: `DESCRIPTION`,
    then `EPILOG`."""
    parser.description = DESCRIPTION
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    command.add_arguments(parser)


DESCRIPTION = """\
Load-test an MCP server with locust: the suite runs headless in a child process with live
progress, then prints a summary and writes the reports (CSV, HTML, PNG, summary.json);
--web runs locust's web UI instead. --engine fast sends prebuilt requests from Rust instead of
locust (it needs no locust: mcpfast's base install runs it).

--processes N runs N load processes on this host; --master and --worker --master-host H spread
them over hosts. --fail-on EXPR ends the run with exit status 4 when a threshold holds;
--json PATH writes the JSON summary (- for stdout); -q leaves out the live progress;
--compare runs the same workload against several servers in interleaved rounds."""

EPILOG = """\
exit status:
  0  no request failed (with --fail-on: every threshold passed)
  1  some requests failed (without --fail-on; with it, the thresholds decide)
  2  usage error (a bad --fail-on, URL or combination), or locust (or the fast engine) could
     not run
  3  nothing could run: the server offers none of the selected user classes' features, or
     did not answer the probe
  4  a --fail-on threshold failed (the lines above say which)

thresholds (--fail-on EXPR, repeatable; the run fails when EXPR holds):
  [NAME:]METRIC OP VALUE[UNIT]: METRIC p50, p95, p99, avg, max (ms or s; default ms),
  errors (failed requests in % of requests), failures, requests (counts), rps; OP >, >=, <, <=;
  NAME: one request name of the summary, e.g. "tools/call echo:p99>20ms" (default: the total).
  e.g. --fail-on "p99>50ms" --fail-on "errors>0.1%" --fail-on "rps<1000"

distributed:
  mcpfast load URL --processes 4                        # 4 load processes on this host
  mcpfast load URL --master --expect-workers 2          # a master (headless, the reports) ...
  mcpfast load --worker --master-host MASTER            # ... and its workers, on any host
  mcpfast load URL --engine fast --master --expect-workers 2   # the fast engine's ...
  mcpfast load --worker --engine fast --master-host MASTER     # ... and its workers

compare (the same workload against each server, interleaved in rounds):
  mcpfast load --compare mcpfast=URL1 sdk=URL2 --rounds 3 -t 10s
"""


class UsageError(Exception):
    """Options that cannot run together, or a ``--fail-on`` that cannot be parsed."""


def check_usage(args: Any) -> list[Threshold]:
    """The run's thresholds, once its options are known to fit together.

    Raises:
        UsageError: they do not (the message says why).
    """
    try:
        thresholds = [parse_threshold(text) for text in args.fail_on]
    except ThresholdError as exc:
        raise UsageError(f"--fail-on: {exc}") from None
    if args.compare:
        if args.url:
            raise UsageError("give the servers to --compare, not a URL besides")
        if args.master or args.worker or args.web:
            raise UsageError("--compare runs on one host: not with --master, --worker or --web")
        if args.rounds < 1:
            raise UsageError("--rounds must be at least 1")
    elif args.label:
        raise UsageError("--label names --compare URLs")
    elif not args.url and not args.worker:
        raise UsageError("the server's URL is missing")
    if args.master and args.worker:
        raise UsageError("--master or --worker, not both")
    if args.master and args.processes:
        raise UsageError(
            "--processes starts a local master and its workers: not with --master (a --worker "
            "host may run several: --worker --processes N)"
        )
    if args.master and args.expect_workers < 1:
        raise UsageError("--expect-workers must be at least 1")
    if args.worker and (thresholds or args.json):
        raise UsageError("--fail-on and --json belong to the master, not to a worker")
    if args.processes < -1:
        raise UsageError("--processes: a count, or -1 for one per core")
    check_flows(args)
    check_engine(args)
    return thresholds


def check_engine(args: Any) -> None:
    """Refuse what the fast engine does not run, and ``--rate`` without it.

    Raises:
        UsageError: with the reason.
    """
    if getattr(args, "engine", "locust") != "fast":
        if getattr(args, "rate", ""):
            raise UsageError("--rate needs --engine fast (an open loop)")
        return
    if args.web:
        raise UsageError("--web is locust's web UI: not with --engine fast")
    if args.master and args.users < args.expect_workers:
        raise UsageError("--engine fast --master: each worker needs a connection (--users)")
    if getattr(args, "shape", "steady") != "steady" and not args.rate:
        raise UsageError(
            "--shape needs --rate with --engine fast: it shapes the arrival rate (its --users "
            "connections are all open from the start)"
        )
    if getattr(args, "dpop", False):
        raise UsageError("--dpop signs every request anew: not with --engine fast (prebuilt)")
    try:
        command.check_auth(args)
    except SystemExit as exc:
        raise UsageError(str(exc)) from None
    if args.users < 1:
        raise UsageError("--users must be at least 1 (the fast engine's connections)")
    try:
        connections(getattr(args, "mix", ""), args.user_classes, args.users)
    except ValueError as exc:
        raise UsageError(f"--engine fast: {exc}") from None
    try:
        rate_stages(args, shapes.parse_duration(args.run_time))
    except ValueError as exc:
        raise UsageError(f"--rate: {exc}") from None


def check_flows(args: Any) -> None:
    """Refuse a ``--shape``, ``--mix`` or ``--resume-arguments`` that is not one.

    Raises:
        UsageError: with the reason.
    """
    try:
        shapes.parse_shape(getattr(args, "shape", "steady"))
    except ValueError as exc:
        raise UsageError(f"--shape: {exc}") from None
    if getattr(args, "mix", ""):
        if args.user_classes:
            raise UsageError("give --mix or --user-class, not both")
        try:
            parse_mix(args.mix, USER_CLASSES)
        except ValueError as exc:
            raise UsageError(f"--mix: {exc}") from None
    given = getattr(args, "resume_arguments", "")
    try:
        parsed = json.loads(given) if given else {}
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise UsageError("--resume-arguments must be a JSON object")


def parameters(args: Any) -> dict[str, Any]:
    """The run's parameters, for the JSON summary."""
    return {
        "url": args.url,
        "users": args.users,
        "spawn_rate": args.spawn_rate if args.spawn_rate is not None else args.users,
        "run_time": args.run_time,
        "era": args.era,
        "user_classes": [USER_CLASSES[c] for c in args.user_classes or ()] or "all",
        "mix": getattr(args, "mix", "") or None,
        "shape": getattr(args, "shape", None),
        "tool": args.tool or None,
        "processes": args.processes,
        "master": args.master,
        "expect_workers": args.expect_workers if args.master else None,
        "fail_on": list(args.fail_on),
        "engine": getattr(args, "engine", "locust"),
        "rate": getattr(args, "rate", "") or None,
    }


def exit_status(outcome: Outcome, verdicts: list[Verdict], thresholds: bool) -> int:
    """0, 1, 2, 3 or `EXIT_THRESHOLDS` (see `EPILOG`)."""
    if outcome.code == EXIT_NOTHING_TO_RUN:
        return EXIT_NOTHING_TO_RUN
    if outcome.summary is None or outcome.code != 0:
        return 2
    if thresholds:
        return EXIT_THRESHOLDS if any(v.failed for v in verdicts) else 0
    return 1 if outcome.summary.failures else 0


def format_workers(workers: list[dict[str, Any]], summary: Summary) -> str:
    """``load processes: 2; worker 0: 5123 requests (2561.5 req/s), worker 1: ...``; a
    fast-engine master's rows are workers of several load processes each: ``workers: 2; worker
    0 (2 load processes): ...``."""
    total = summary.total
    seconds = total.requests / total.rps if total is not None and total.rps else 0.0
    shares = ", ".join(
        f"worker {w['index']}"
        + (f" ({w['processes']} load processes)" if "processes" in w else "")
        + f": {w['requests']} requests"
        + (f" ({w['requests'] / seconds:.1f} req/s)" if seconds else "")
        for w in workers
    )
    counted = "workers" if workers and "processes" in workers[0] else "load processes"
    return f"{counted}: {len(workers)}; {shares}"


def locust_installed() -> bool:
    """Whether locust can be imported, looked up and never imported (it would bring gevent in);
    a finder that refuses it (ModuleNotFoundError) counts as not installed."""
    try:
        return importlib.util.find_spec("locust") is not None
    except ImportError:
        return False


def run(args: Any, out_stream: IO[str] | None = None) -> int:
    """Run the load test (or the worker, or the comparison); the exit status of `EPILOG`."""
    stdout = out_stream or sys.stdout
    try:
        thresholds = check_usage(args)
    except UsageError as exc:
        print(f"mcpfast load: error: {exc}", file=sys.stderr)
        return 2
    fast = getattr(args, "engine", "locust") == "fast"
    if not fast and not locust_installed():  # the locust engine: runs, --web, workers, --compare
        print("mcpfast load needs locust: pip install 'mcpfast[load]'", file=sys.stderr)
        return 2
    load = (run_fast_master if args.master else run_fast) if fast else run_locust
    if args.compare:
        return run_compare(args, thresholds, stdout, load)
    out = Path(args.out)
    if args.web:
        out.mkdir(parents=True, exist_ok=True)
        print(
            f"mcpfast load: locust's web UI on http://127.0.0.1:{args.web_port} (Ctrl-C to stop)",
            file=stdout,
        )
        return wait(subprocess.Popen(command.locust_command(args, out), env=child_env()))
    if args.worker:
        return run_worker(args, stdout)
    human = sys.stderr if args.json == "-" else stdout
    if not args.quiet:
        print(
            f"mcpfast load: {args.url} for {args.run_time} with {args.users} users"
            + (f" on {args.expect_workers} workers" if args.master else "")
            + f"; reports in {out}/",
            file=human,
        )
    outcome = load(args, out, human, quiet=args.quiet)
    verdicts = evaluate(thresholds, outcome.summary) if outcome.summary is not None else []
    status = exit_status(outcome, verdicts, bool(thresholds))
    json_path = args.json or str(out / "summary.json")
    document = summary_document(
        outcome.summary or Summary([], None, []),  # nothing ran: the notes say why
        parameters=parameters(args),
        era=outcome.era,
        notes=outcome.notes,
        verdicts=verdicts,
        workers=outcome.workers,
        exit_status=status,
        extra=outcome.extra,
    )
    write_document(document, json_path, stdout)
    if status == EXIT_NOTHING_TO_RUN:
        if args.quiet:  # the reason, said only in the notes
            print("\n".join(f"mcpfast load: {n}" for n in outcome.notes), file=human)
        print(f"mcpfast load: no load was run; locust's log: {outcome.log_path}", file=human)
        return status
    if outcome.summary is None:
        engine = "the fast engine" if fast else "locust"
        print(
            f"mcpfast load: {engine} failed (exit {outcome.code}); its log, {outcome.log_path}:",
            file=human,
        )
        lines = outcome.log_path.read_text().splitlines(keepends=True)
        print("".join(lines[-30:]), file=human)
        return 2
    _print_results(args, outcome, verdicts, human, json_path)
    return status


def _print_results(
    args: Any, outcome: Outcome, verdicts: list[Verdict], human: IO[str], json_path: str
) -> None:
    """The summary (unless it went to stdout as JSON), the thresholds, the reports, the chart."""
    summary = outcome.summary
    assert summary is not None
    if args.json != "-":
        print("", file=human)
        print(format_summary(summary), file=human)
    if outcome.workers:
        print(format_workers(outcome.workers, summary), file=human)
    if verdicts:
        print("", file=human)
        print(format_verdicts(verdicts), file=human)
    prefix, out = outcome.prefix, outcome.out
    chart = out / "chart.png"
    points = read_history(f"{prefix}_stats_history.csv")
    title = f"{args.url}: {args.users} users, {args.run_time}"
    drew = bool(points) and write_chart(points, chart, title=title)
    if args.quiet:
        return
    written = [
        str(path)
        for path in (
            Path(f"{prefix}_stats.csv"),
            Path(f"{prefix}_stats_history.csv"),
            Path(f"{prefix}_failures.csv"),
            out / "report.html",
            chart,
            Path(json_path),
            outcome.log_path,
        )
        if str(path) != "-" and path.exists()
    ]
    print("", file=human)
    print("reports: " + ", ".join(written), file=human)
    if points and not drew:
        print("(no chart: matplotlib is not installed; pip install 'mcpfast[load]')", file=human)
    print(f"took {outcome.took:.1f}s", file=human)


def run_worker(args: Any, stdout: IO[str]) -> int:
    """A worker of the master at ``--master-host``: its notes and errors on ``stdout``, its log
    in ``--out``; 0 when it ran until its master quit, 2 when it could not (no master).
    ``--engine fast``: `run_fast_worker`."""
    if getattr(args, "engine", "locust") == "fast":
        return run_fast_worker(args, stdout)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    where = f"{args.master_host}:{args.master_port}"
    if not args.quiet:
        print(f"mcpfast load: a worker of the master at {where}; its log in {out}/", file=stdout)
    outcome = run_locust(args, out, stdout, quiet=args.quiet)
    if outcome.code != 0:
        print(
            f"mcpfast load: the worker failed (exit {outcome.code}); its log: {outcome.log_path}",
            file=stdout,
        )
        return 2
    if not args.quiet:
        print(f"mcpfast load: the master at {where} quit; took {outcome.took:.1f}s", file=stdout)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m mcpfast.load.runner URL ...`` (the same as ``mcpfast load``)."""
    parser = argparse.ArgumentParser(prog="mcpfast load")
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
