"""Reports of a load run, from the CSV files locust writes with ``--csv PREFIX``.

`read_summary` reads ``PREFIX_stats.csv`` (per request name and the aggregate) and
``PREFIX_failures.csv`` (failures grouped by HTTP status, JSON-RPC code and problem, using the
failure texts the MCP users give; refusals counted apart: `Summary.unauthorized` for 401s,
`Summary.forbidden` for 403s, `Summary.rate_limited` for 429s and -32023); `format_summary`
prints them as plain-text tables (no dependency), with a line ``unauthorized: N, forbidden: N,
rate limited: N, other failures: N`` when some requests were refused; `write_chart` draws
throughput and p50/p95 latency over time from ``PREFIX_stats_history.csv`` into a PNG
(matplotlib, from the ``load`` extra).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

from .wire import error_group, rate_limited

__all__ = [
    "ErrorGroup",
    "Point",
    "Row",
    "Summary",
    "format_summary",
    "read_history",
    "read_summary",
    "table",
    "write_chart",
]


@dataclass
class Row:
    """One request name's statistics (times in milliseconds)."""

    kind: str
    name: str
    requests: int
    failures: int
    rps: float
    avg: float
    p50: float | None
    p95: float | None
    p99: float | None
    max: float


@dataclass
class ErrorGroup:
    """Failures with the same HTTP status, JSON-RPC code and problem."""

    status: str
    code: str
    problem: str
    count: int
    names: list[str] = field(default_factory=list)


@dataclass
class Summary:
    rows: list[Row]
    total: Row | None
    errors: list[ErrorGroup]

    @property
    def requests(self) -> int:
        return self.total.requests if self.total is not None else 0

    @property
    def failures(self) -> int:
        return self.total.failures if self.total is not None else 0

    def with_status(self, status: str) -> int:
        """How many failures were answered with HTTP ``status`` (e.g. ``"401"``)."""
        return sum(g.count for g in self.errors if g.status == status)

    @property
    def unauthorized(self) -> int:
        """Failures answered 401: no token, or one the server does not accept."""
        return self.with_status("401")

    @property
    def forbidden(self) -> int:
        """Failures answered 403: a token the server accepts, without the scope needed."""
        return self.with_status("403")

    @property
    def rate_limited(self) -> int:
        """Failures the server refused for now (`wire.rate_limited`: HTTP 429, or -32023)."""
        return sum(g.count for g in self.errors if rate_limited(g.status, g.code))


@dataclass
class Point:
    """One second of the run: users, throughput, failures and windowed latency percentiles."""

    t: float
    users: int
    rps: float
    fps: float
    p50: float | None
    p95: float | None


def _number(text: str | None) -> float | None:
    if text is None or text.strip() in ("", "N/A"):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _read(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def read_summary(prefix: str | Path) -> Summary:
    """The summary of a run whose CSV files start with ``prefix``."""
    prefix = str(prefix)
    rows: list[Row] = []
    total: Row | None = None
    for record in _read(Path(prefix + "_stats.csv")):
        row = Row(
            kind=record.get("Type", ""),
            name=record.get("Name", ""),
            requests=int(_number(record.get("Request Count")) or 0),
            failures=int(_number(record.get("Failure Count")) or 0),
            rps=_number(record.get("Requests/s")) or 0.0,
            avg=_number(record.get("Average Response Time")) or 0.0,
            p50=_number(record.get("50%")),
            p95=_number(record.get("95%")),
            p99=_number(record.get("99%")),
            max=_number(record.get("Max Response Time")) or 0.0,
        )
        if row.name == "Aggregated" and not row.kind:
            total = row
        else:
            rows.append(row)
    groups: dict[tuple[str, str, str], ErrorGroup] = {}
    for record in _read(Path(prefix + "_failures.csv")):
        status, code, problem = error_group(record.get("Error", ""))
        group = groups.setdefault((status, code, problem), ErrorGroup(status, code, problem, 0))
        group.count += int(_number(record.get("Occurrences")) or 0)
        name = record.get("Name", "")
        if name and name not in group.names:
            group.names.append(name)
    errors = sorted(groups.values(), key=lambda g: -g.count)
    return Summary(rows, total, errors)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def table(headers: list[str], lines: list[list[str]], right: set[int]) -> list[str]:
    """``lines`` under ``headers`` in aligned columns (those in ``right`` right-aligned)."""
    widths = [
        max(len(h), *(len(line[i]) for line in lines)) if lines else len(h)
        for i, h in enumerate(headers)
    ]

    def render(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [render(headers), render(["-" * w for w in widths]), *(render(line) for line in lines)]


def format_summary(summary: Summary) -> str:
    """The per-request table, the aggregate line and the grouped errors, as text."""
    out: list[str] = []
    headers = ["request", "reqs", "fails", "req/s", "p50 ms", "p95 ms", "p99 ms", "max ms"]
    lines = [
        [
            r.name,
            str(r.requests),
            str(r.failures),
            f"{r.rps:.1f}",
            _ms(r.p50),
            _ms(r.p95),
            _ms(r.p99),
            _ms(r.max),
        ]
        for r in sorted(summary.rows, key=lambda r: -r.requests)
    ]
    if summary.total is not None:
        t = summary.total
        lines.append(
            [
                "total",
                str(t.requests),
                str(t.failures),
                f"{t.rps:.1f}",
                _ms(t.p50),
                _ms(t.p95),
                _ms(t.p99),
                _ms(t.max),
            ]
        )
    out.extend(table(headers, lines, right={1, 2, 3, 4, 5, 6, 7}))
    out.append("")
    if summary.total is not None:
        t = summary.total
        share = 100.0 * t.failures / t.requests if t.requests else 0.0
        out.append(
            f"{_count(t.requests, 'request')}, {_count(t.failures, 'failure')} ({share:.2f}%), "
            f"{t.rps:.1f} req/s, "
            f"p50 {_ms(t.p50)} ms, p95 {_ms(t.p95)} ms, p99 {_ms(t.p99)} ms"
        )
        out.extend(_refusals(summary, t.failures))
    else:
        out.append("no requests were recorded")
    if summary.errors:
        out.append("")
        out.append("errors by HTTP status and JSON-RPC code:")
        error_lines = [
            [g.status, g.code, g.problem or "-", str(g.count), ", ".join(g.names)]
            for g in summary.errors
        ]
        out.extend(
            "  " + line
            for line in table(
                ["HTTP", "JSON-RPC", "problem", "count", "requests"], error_lines, right={3}
            )
        )
    return "\n".join(out)


def _refusals(summary: Summary, failures: int) -> list[str]:
    """The line counting refusals apart from the other ``failures`` (none: no refusal)."""
    parts = []
    if summary.unauthorized or summary.forbidden:
        parts.append(f"unauthorized: {summary.unauthorized}, forbidden: {summary.forbidden}")
    if summary.rate_limited:
        parts.append(f"rate limited: {summary.rate_limited}")
    refused = summary.unauthorized + summary.forbidden + summary.rate_limited
    return [", ".join([*parts, f"other failures: {failures - refused}"])] if parts else []


def read_history(path: str | Path) -> list[Point]:
    """The aggregate rows of ``PREFIX_stats_history.csv``, one point per second of the run.

    Throughput comes from the growth of the total request count between rows (locust's own
    ``Requests/s`` column lags at the start); latency is locust's windowed percentiles, left out
    (None) until that window has data.
    """
    points: list[Point] = []
    previous: tuple[float, float, float] | None = None
    start: float | None = None
    for record in _read(Path(path)):
        if record.get("Name") != "Aggregated":
            continue
        stamp = _number(record.get("Timestamp"))
        if stamp is None:
            continue
        count = _number(record.get("Total Request Count")) or 0.0
        failed = _number(record.get("Total Failure Count")) or 0.0
        start = stamp if start is None else start
        rps = fps = 0.0
        if previous is not None:
            elapsed = stamp - previous[0]
            if elapsed <= 0:
                continue
            rps = (count - previous[1]) / elapsed
            fps = (failed - previous[2]) / elapsed
        previous = (stamp, count, failed)
        p50 = _number(record.get("50%"))
        p95 = _number(record.get("95%"))
        points.append(
            Point(
                t=stamp - start,
                users=int(_number(record.get("User Count")) or 0),
                rps=rps,
                fps=fps,
                p50=p50 if p50 else None,
                p95=p95 if p95 else None,
            )
        )
    return points


def write_chart(points: list[Point], path: str | Path, *, title: str = "") -> bool:
    """A PNG of requests/s (and failures/s) and p50/p95 latency over time; False when matplotlib
    is not installed (``pip install 'mcpfast[load]'``)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    nan = math.nan
    times = [p.t for p in points]
    figure, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(9, 6), dpi=100)
    top.plot(times, [p.rps for p in points], label="requests/s", color="tab:blue")
    if any(p.fps for p in points):
        top.plot(times, [p.fps for p in points], label="failures/s", color="tab:red")
    top.set_ylabel("requests/s")
    top.set_ylim(bottom=0)
    top.grid(True, alpha=0.3)
    users = top.twinx()
    users.plot(times, [p.users for p in points], label="users", color="tab:gray", linestyle=":")
    users.set_ylabel("users")
    users.set_ylim(bottom=0)
    handles, labels = top.get_legend_handles_labels()
    more_handles, more_labels = users.get_legend_handles_labels()
    top.legend(handles + more_handles, labels + more_labels, loc="lower right")
    bottom.plot(
        times, [p.p50 if p.p50 is not None else nan for p in points], label="p50", color="tab:green"
    )
    bottom.plot(
        times,
        [p.p95 if p.p95 is not None else nan for p in points],
        label="p95",
        color="tab:orange",
    )
    bottom.set_ylabel("latency (ms, 10 s window)")
    bottom.set_xlabel("seconds")
    bottom.set_ylim(bottom=0)
    bottom.grid(True, alpha=0.3)
    bottom.legend(loc="upper left")
    if title:
        top.set_title(title)
    figure.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(str(path), format="png")
    plt.close(figure)
    return True
