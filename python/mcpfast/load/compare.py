"""``mcpfast load --compare [NAME=]URL ...``: the same workload against several servers,
interleaved in rounds so that drift of the machine (other load, heat, frequency) hits them
alike, then one table, ``compare.json`` and ``compare.png`` in ``--out``.

Round 1 runs the servers in the order given, round 2 in the reverse order, and so on; each run
is a whole ``mcpfast load`` run (``-t`` long, the same users and options), its reports in
``OUT/round-R/NAME/``. The table gives, per server, the **median over the rounds** of req/s,
p50 and p99 (the aggregate of each run), the failures summed over the rounds, and the ratios
to the first server: ``req/s x`` (its req/s over the first's: above 1 is faster) and
``p99 x`` (its p99 over the first's: below 1 is faster). ``compare.json`` holds every round's
numbers besides. ``--fail-on`` thresholds apply to every run of every server; the lines say
which server and round failed, and the exit status is then 4. A run that cannot load its
server (exit 2 or 3) ends the comparison with that status; Ctrl-C ends it after the run under
way has stopped (exit 130).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from .report import table
from .summary import Outcome
from .thresholds import EXIT_THRESHOLDS, Threshold, Verdict, evaluate

__all__ = ["Server", "compare_document", "format_compare", "parse_servers", "run_compare"]


@dataclass
class Server:
    """One server of the comparison and the aggregate numbers of its rounds."""

    label: str
    url: str
    rounds: list[dict[str, Any]] = field(default_factory=list)

    def median(self, key: str) -> float | None:
        values = [r[key] for r in self.rounds if r.get(key) is not None]
        return float(statistics.median(values)) if values else None

    @property
    def failures(self) -> int:
        return sum(int(r["failures"]) for r in self.rounds)

    @property
    def requests(self) -> int:
        return sum(int(r["requests"]) for r in self.rounds)


def parse_servers(values: list[str], labels: list[str]) -> list[Server]:
    """The servers of ``--compare`` values (``NAME=URL`` or ``URL``) and ``--label`` names.

    Raises:
        ValueError: fewer than two servers, labels that do not match the URLs one to one, or
            two servers of the same name.
    """
    if len(values) < 2:
        raise ValueError("--compare needs at least two servers")
    if labels and len(labels) != len(values):
        raise ValueError(f"{len(labels)} --label for {len(values)} --compare URLs")
    servers = []
    for index, value in enumerate(values):
        name, sep, rest = value.partition("=")
        if sep and "://" not in name:
            label, url = name.strip(), rest
        else:
            label, url = "", value
        if labels:
            label = labels[index]
        if not urlsplit(url).scheme.startswith("http"):
            raise ValueError(f"--compare: {url!r} is not an http(s) URL")
        servers.append(Server(label or _default_label(url), url))
    names = [s.label for s in servers]
    if len(set(names)) != len(names):
        raise ValueError(f"--compare: two servers share a name ({', '.join(names)}): use NAME=URL")
    return servers


def _default_label(url: str) -> str:
    parts = urlsplit(url)
    return parts.netloc + (parts.path if parts.path not in ("", "/mcp") else "")


def _directory(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_") or "server"


def round_order(servers: list[Server], round_index: int) -> list[Server]:
    """The order of round ``round_index`` (0-based): as given, then reversed, alternately."""
    return list(servers) if round_index % 2 == 0 else list(reversed(servers))


def _ratio(value: float | None, first: float | None) -> float | None:
    if value is None or not first:
        return None
    return value / first


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def compare_document(servers: list[Server], parameters: dict[str, Any]) -> dict[str, Any]:
    """``compare.json``: the parameters, then per server its rounds and medians and the ratios
    to the first server."""
    first = servers[0]
    return {
        "parameters": parameters,
        "aggregate": "median of the rounds",
        "servers": [
            {
                "label": s.label,
                "url": s.url,
                "rounds": s.rounds,
                "rps": s.median("rps"),
                "p50": s.median("p50"),
                "p99": s.median("p99"),
                "requests": s.requests,
                "failures": s.failures,
                "rps_ratio": _ratio(s.median("rps"), first.median("rps")),
                "p99_ratio": _ratio(s.median("p99"), first.median("p99")),
            }
            for s in servers
        ],
    }


def format_compare(document: dict[str, Any]) -> str:
    """The comparison table of a `compare_document`."""
    headers = ["server", "req/s", "p50 ms", "p99 ms", "failures", "req/s x", "p99 x"]
    lines = [
        [
            s["label"],
            _fmt(s["rps"]),
            _fmt(s["p50"], 0),
            _fmt(s["p99"], 0),
            str(s["failures"]),
            _fmt(s["rps_ratio"], 2),
            _fmt(s["p99_ratio"], 2),
        ]
        for s in document["servers"]
    ]
    rounds = len(document["servers"][0]["rounds"])
    out = table(headers, lines, right={1, 2, 3, 4, 5, 6})
    first = document["servers"][0]["label"]
    out.append("")
    out.append(
        f"req/s, p50 and p99: the median of {rounds} round{'s' if rounds != 1 else ''}; "
        f"failures: their sum; x: the ratio to {first}"
    )
    return "\n".join(out)


def parameters_text(document: dict[str, Any]) -> str:
    """The run parameters of a `compare_document` in one line (the chart's subtitle)."""
    p = document["parameters"]
    classes = (
        p["user_classes"] if isinstance(p["user_classes"], str) else ",".join(p["user_classes"])
    )
    parts = [
        f"{p['users']} users",
        f"{p['run_time']} x {p['rounds']} round{'s' if p['rounds'] != 1 else ''}",
        f"era {p['era']}",
        f"user classes {classes}",
    ]
    if p.get("tool"):
        parts.append(f"tool {p['tool']}")
    if p.get("started"):
        parts.append(str(p["started"]))
    return ", ".join(parts)


def write_compare_chart(document: dict[str, Any], path: Path) -> bool:
    """``compare.png``: bars of req/s and of p50/p99 per server, under the servers compared and
    the run parameters (`parameters_text`, also the PNG's ``Title`` and ``Description``);
    False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    servers = document["servers"]
    labels = [s["label"] for s in servers]
    nan = math.nan
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4.5), dpi=100)
    positions = list(range(len(labels)))
    left.bar(positions, [s["rps"] or 0.0 for s in servers], color="tab:blue")
    left.set_title("requests/s (median of the rounds)")
    width = 0.4
    p50 = [s["p50"] if s["p50"] is not None else nan for s in servers]
    p99 = [s["p99"] if s["p99"] is not None else nan for s in servers]
    right.bar([p - width / 2 for p in positions], p50, width, label="p50", color="tab:green")
    right.bar([p + width / 2 for p in positions], p99, width, label="p99", color="tab:orange")
    right.set_title("latency, ms (median of the rounds)")
    right.legend(loc="upper left")
    for axes in (left, right):
        axes.set_xticks(positions)
        axes.set_xticklabels(labels, rotation=15, ha="right")
        axes.grid(True, axis="y", alpha=0.3)
    title = "mcpfast load --compare: " + " vs ".join(labels)
    figure.suptitle(f"{title}\n{parameters_text(document)}", fontsize=10)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    metadata = {"Title": title, "Description": parameters_text(document)}
    figure.savefig(str(path), format="png", metadata=metadata)
    plt.close(figure)
    return True


def _round_numbers(outcome: Outcome, round_index: int, verdicts: list[Verdict]) -> dict[str, Any]:
    assert outcome.summary is not None
    total = outcome.summary.total
    return {
        "round": round_index + 1,
        "requests": total.requests if total is not None else 0,
        "failures": total.failures if total is not None else 0,
        "rps": total.rps if total is not None else None,
        "p50": total.p50 if total is not None else None,
        "p99": total.p99 if total is not None else None,
        "out": str(outcome.out),
        "thresholds": [
            {"expression": v.threshold.text, "measured": v.measured, "failed": v.failed}
            for v in verdicts
        ],
    }


def run_compare(
    args: Any,
    thresholds: list[Threshold],
    stdout: IO[str],
    run_locust: Callable[..., Outcome],
) -> int:
    """Run the comparison of ``args.compare`` (see the module's docstring), each run through
    ``run_locust`` (`mcpfast.load.processes.run_locust`); the exit status: 0, 1 (some requests
    failed, without ``--fail-on``), 2 (bad servers, or a run could not load its server), 3, 4
    (a threshold failed) or 130 (interrupted). ``--json -``: ``compare.json``'s document on
    ``stdout``, the other lines on stderr."""
    try:
        servers = parse_servers(args.compare, args.label)
    except ValueError as exc:
        print(f"mcpfast load: error: {exc}", file=sys.stderr)
        return 2
    human = sys.stderr if args.json == "-" else stdout
    out = Path(args.out)
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(
        f"mcpfast load: comparing {len(servers)} servers, {args.rounds} rounds of "
        f"{args.run_time} with {args.users} users each; reports in {out}/",
        file=human,
    )
    failed: list[str] = []
    for round_index in range(args.rounds):
        for server in round_order(servers, round_index):
            run_args = argparse.Namespace(**{**vars(args), "url": server.url, "compare": []})
            where = out / f"round-{round_index + 1}" / _directory(server.label)
            outcome = run_locust(run_args, where, human, quiet=True)
            if outcome.summary is None or outcome.code != 0:
                reason = "\n".join(f"mcpfast load: {n}" for n in outcome.notes)
                print(
                    (reason + "\n" if reason else "")
                    + f"mcpfast load: {server.label} could not be loaded (exit {outcome.code}); "
                    f"locust's log: {outcome.log_path}",
                    file=human,
                )
                return 3 if outcome.code == 3 else 2
            if outcome.interrupted:
                print("mcpfast load: interrupted: the comparison ends", file=human)
                return 130
            verdicts = evaluate(thresholds, outcome.summary)
            numbers = _round_numbers(outcome, round_index, verdicts)
            server.rounds.append(numbers)
            failed += [
                f"{server.label} round {round_index + 1}: {v.describe()}"
                for v in verdicts
                if v.failed
            ]
            print(
                f"round {round_index + 1}/{args.rounds}  {server.label}: "
                f"{_fmt(numbers['rps'])} req/s, p50 {_fmt(numbers['p50'], 0)} ms, "
                f"p99 {_fmt(numbers['p99'], 0)} ms, {numbers['failures']} failures",
                file=human,
            )
    for server in servers:
        server.rounds.sort(key=lambda r: int(r["round"]))
    parameters = {
        "users": args.users,
        "run_time": args.run_time,
        "rounds": args.rounds,
        "era": args.era,
        "user_classes": list(args.user_classes or ()) or "all",
        "tool": args.tool,
        "fail_on": list(args.fail_on),
        "started": started,
    }
    document = compare_document(servers, parameters)
    document["thresholds_failed"] = failed
    json_path = Path(args.json) if args.json and args.json != "-" else out / "compare.json"
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(document, indent=2) + "\n")
    print("", file=human)
    print(format_compare(document), file=human)
    chart = out / "compare.png"
    drew = write_compare_chart(document, chart)
    print("", file=human)
    print(f"reports: {json_path}" + (f", {chart}" if drew else ""), file=human)
    if not drew:
        print("(no chart: matplotlib is not installed; pip install 'mcpfast[load]')", file=human)
    if args.json == "-":
        stdout.write(json.dumps(document, indent=2) + "\n")
    if thresholds:
        for line in failed:
            print(f"threshold {line}", file=human)
        if failed:
            return EXIT_THRESHOLDS
        print(f"all {len(thresholds)} thresholds passed on every server", file=human)
        return 0
    return 1 if any(s.failures for s in servers) else 0
