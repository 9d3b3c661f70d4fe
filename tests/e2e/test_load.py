"""``mcpfast load`` through the real stack (the locust suite in a child process, a few seconds
each) against FastMCP, the official SDK's server and the demo server: user classes whose feature
the server lacks are skipped with one line each, a feature that fails at run time with -32601
stops its users after one try, no other request fails, and the printed summary is locust's own
statistics for the run (its CSV and its final table in the log), request kind by request kind."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest
import trio

from ..helpers import REPO
from .processes import demo_process, free_port, mcpfast_command, server_process

SDK_SERVER = Path(__file__).with_name("sdk_server.py")
FASTMCP_ECHO = Path(__file__).parent / "peers" / "fastmcp_echo.py"
NO_LISTEN = (
    "mcpfast load: skipping ListenUser: the server does not advertise subscriptions: "
    "no listChanged, no resources.subscribe (2026-07-28)"
)
NO_RESOURCES = "mcpfast load: skipping ResourceUser: the server lists no resources ({era})"


@asynccontextmanager
async def demo_server() -> AsyncIterator[str]:
    """`demo_process`, for a locust run: skips without locust (`_require`)."""
    _require("locust", "the load extra")
    async with demo_process() as url:
        yield url


def _require(module: str, extra: str) -> None:
    """Skip when ``module`` is missing (a failure under CI=true, whose setup installs it). Looked
    up, never imported: locust would bring gevent into this Trio process."""
    if importlib.util.find_spec(module) is None:
        reason = f"{module} ({extra}) is not installed"
        if os.environ.get("CI") == "true":
            pytest.fail(reason + " and CI=true requires it")
        pytest.skip(reason)


@dataclass
class Run:
    """One ``mcpfast load`` run: its exit status, what it printed, and the files it left."""

    code: int
    output: str
    out: Path

    @property
    def lines(self) -> list[str]:
        return self.output.splitlines()

    def stats(self) -> dict[str, dict[str, str]]:
        """``load_stats.csv`` (the CSV locust writes), by request name."""
        with (self.out / "load_stats.csv").open(newline="") as handle:
            rows = list(csv.DictReader(handle))
        assert len({r["Name"] for r in rows}) == len(rows), rows  # names are unique
        return {row["Name"]: row for row in rows}

    def requests(self, name: str) -> int:
        row = self.stats().get(name)
        return int(row["Request Count"]) if row is not None else 0

    def spawned(self) -> dict[str, int]:
        """How many users of each class locust started (its "All users spawned" log line)."""
        log = (self.out / "locust.log").read_text()
        found = re.search(r"All users spawned: (\{.*?\})", log)
        assert found is not None, log
        counts: dict[str, int] = json.loads(found.group(1))
        return counts


async def _load(url: str, out: Path, *extra: str, seconds: int = 2, expect: int = 0) -> Run:
    """Run ``mcpfast load URL`` for ``seconds`` (bounded), expecting exit status ``expect``."""
    argv = mcpfast_command(
        "load", url, "-t", f"{seconds}s", "-u", "10", "--stream-seconds", "1", "--out", str(out)
    )
    # LOCUST_WAIT_FOR_WORKERS_REPORT_AFTER_RAMP_UP: how long locust's master waits, at most, for
    # its workers' spawn reports before it logs the users spawned (`Run.spawned`): its default,
    # 1 s, is too short on a busy machine, and the line then counts none.
    env = {
        "LOCUST_WAIT_FOR_WORKERS_REPORT_AFTER_RAMP_UP": str(seconds),
        **os.environ,
        "PYTHONPATH": str(REPO / "python"),
    }
    with trio.fail_after(seconds + 25):
        done = await trio.run_process(
            [*argv, *extra], capture_stdout=True, capture_stderr=True, check=False, env=env
        )
    output = done.stdout.decode()
    log = out / "locust.log"
    detail = output + done.stderr.decode() + (log.read_text() if log.exists() else "")
    assert done.returncode == expect, detail
    print(output)
    return Run(done.returncode, output, out)


def _check_ran(run: Run, *, failures: int = 0) -> None:
    """A run that did load the server: ``failures`` failed requests, every report written, and
    a summary equal to locust's own statistics."""
    total = run.stats()["Aggregated"]
    assert int(total["Failure Count"]) == failures, run.output
    assert int(total["Request Count"]) >= 10, run.output  # few when the cores are busy
    for name in ("load_stats_history.csv", "load_failures.csv", "report.html", "locust.log"):
        assert (run.out / name).stat().st_size > 0, name
    if importlib.util.find_spec("matplotlib") is not None:
        assert (run.out / "chart.png").read_bytes()[:4] == b"\x89PNG"
    _check_summary_is_locusts(run)


# ------------------------------------------------------------------- the summary vs locust's


def _summary(output: str) -> dict[str, list[str]]:
    """The printed per-request table: name -> [reqs, fails, req/s, p50, p95, p99, max]."""
    lines = output.splitlines()
    start = next(
        i for i, line in enumerate(lines) if line.split()[:3] == ["request", "reqs", "fails"]
    )
    rows: dict[str, list[str]] = {}
    for line in lines[start + 2 :]:
        if not line.strip():
            break
        cells = line.split()
        rows[" ".join(cells[:-7])] = cells[-7:]
    return rows


_TABLE_ROW = re.compile(
    r"^(?:\S+)?\s+(?P<name>\S.*?)\s+(?P<reqs>\d+)\s+(?P<fails>\d+)\(\s*[\d.]+%\)\s+\|"
    r".*\|\s+(?P<rps>[\d.]+)\s+[\d.]+\s*$"
)


def _locust_table(log: str) -> dict[str, dict[str, str]]:
    """Locust's final statistics as it printed them at exit (requests, failures, req/s, and the
    50/95/99% columns of its percentile table), by request name ("Aggregated": the total)."""
    final = log[log.index("Shutting down (exit code") :]
    rows: dict[str, dict[str, str]] = {}
    requests, percentiles = final.split("Response time percentiles", 1)
    for line in requests.splitlines():
        found = _TABLE_ROW.match(line)
        if found is not None:
            rows[found["name"]] = found.groupdict()
    for line in percentiles.splitlines():
        cells = line.split()
        if len(cells) < 13 or not all(c.isdigit() for c in cells[-12:]):
            continue
        name = " ".join(cells[1:-12]) if cells[0] != "Aggregated" else "Aggregated"
        p50, p95, p99 = cells[-12], cells[-7], cells[-5]
        rows[name].update(p50=p50, p95=p95, p99=p99)
    return rows


def _check_summary_is_locusts(run: Run) -> None:
    """Every request kind locust recorded is in the summary, and its numbers (and the total's)
    are locust's: the CSV it writes and the table it prints at exit."""
    summary = _summary(run.output)
    csv_rows = run.stats()
    printed = _locust_table((run.out / "locust.log").read_text())
    assert set(summary) == {n if n != "Aggregated" else "total" for n in csv_rows}, summary
    assert set(printed) == set(csv_rows), (printed, csv_rows)
    for name, row in csv_rows.items():
        reqs, fails, rps, p50, p95, p99, _ = summary["total" if name == "Aggregated" else name]
        ours = (int(reqs), int(fails), rps, p50, p95, p99)
        theirs = (
            int(row["Request Count"]),
            int(row["Failure Count"]),
            f"{float(row['Requests/s']):.1f}",
            row["50%"],
            row["95%"],
            row["99%"],
        )
        assert ours == theirs, (name, ours, theirs)
        shown = printed[name]
        assert (int(shown["reqs"]), int(shown["fails"])) == ours[:2], (name, shown)
        assert (shown["p50"], shown["p95"], shown["p99"]) == ours[3:], (name, shown)
        assert abs(float(shown["rps"]) - float(row["Requests/s"])) < 0.006, (name, shown)
    total = csv_rows["Aggregated"]
    assert f"{total['Request Count']} requests, " in run.output
    assert sum(int(r["Request Count"]) for n, r in csv_rows.items() if n != "Aggregated") == int(
        total["Request Count"]
    )


# ---------------------------------------------------------------------------------- servers


async def test_load_against_fastmcp_skips_what_it_lacks(tmp_path: Path) -> None:
    """Five runs side by side against two FastMCP servers (one stateless)."""
    _require("locust", "the load extra")
    _require("fastmcp", "the interop extra")
    port = free_port()
    runs: dict[str, Run] = {}

    async def load(key: str, url: str, *extra: str, seconds: int = 2, expect: int = 0) -> None:
        runs[key] = await _load(url, tmp_path / key, *extra, seconds=seconds, expect=expect)

    stateless_port = free_port()
    fastmcp = [sys.executable, str(FASTMCP_ECHO)]
    async with (
        server_process([*fastmcp, str(port)], port) as url,
        server_process([*fastmcp, str(stateless_port), "stateless"], stateless_port) as no_get,
    ):
        async with trio.open_nursery() as nursery:  # side by side: the servers have cores to spare
            # 4 s: a legacy user's first tools/call comes after initialize, initialized and
            # tools/list, which a busy machine can stretch past the default 2 s
            nursery.start_soon(load, "mix", url, "-t", "4s")
            # nothing left once the classes it cannot serve are skipped
            only: tuple[str, ...] = ("--user-class", "listen", "--user-class", "resources")
            nursery.start_soon(partial(load, "empty", url, *only, expect=3))
            # a capability claimed but not served
            claiming = url.replace("/mcp", "/overclaiming/mcp")
            only = ("--user-class", "listen", "--user-class", "tools", "-u", "5")
            nursery.start_soon(partial(load, "overclaiming", claiming, *only, expect=1))
            # ... and nothing else to run: the run ends early
            only = ("--user-class", "listen")
            overclaimed = partial(load, "overclaiming-only", claiming, *only, seconds=LONG)
            nursery.start_soon(partial(overclaimed, expect=1))
            # legacy sessions without a GET stream
            nursery.start_soon(partial(load, "legacy", no_get, "--era", "legacy"))
    _check_the_mix(runs["mix"])
    _check_nothing_to_run(runs["empty"])
    _check_overclaimed(runs["overclaiming"])
    _check_overclaimed_alone(runs["overclaiming-only"])
    _check_no_get_stream(runs["legacy"])


def _check_the_mix(run: Run) -> None:
    """The default mix against FastMCP: what it lacks skipped up front, the rest error-free."""
    assert run.lines.count(NO_LISTEN) == 1, run.output
    assert run.lines.count(NO_RESOURCES.format(era="2026-07-28")) == 1, run.output
    assert sum("skipping" in line for line in run.lines) == 2, run.output
    assert set(run.spawned()) == {"ToolCallUser", "DiscoverUser", "LegacySessionUser"}
    assert run.requests("subscriptions/listen") == run.requests("resources/read") == 0
    assert run.requests("tools/call echo") > 0 and run.requests("legacy tools/call echo") > 0
    _check_ran(run)
    assert "0 failures (0.00%)" in run.output and "p99" in run.output


def _check_nothing_to_run(run: Run) -> None:
    """Only classes FastMCP cannot serve: said why, no load, exit status 3 (checked by _load)."""
    assert NO_LISTEN in run.lines and NO_RESOURCES.format(era="2026-07-28") in run.lines
    assert any(
        line.startswith("mcpfast load: nothing to run: every user class of the run")
        for line in run.lines
    ), run.output
    assert "request  " not in run.output  # no summary: nothing ran


LONG = 30
"""Seconds: the ``-t`` of a run that must end before it (FastMCP's overclaimed listen)."""

STOPS = (
    "mcpfast load: ListenUser stops: the server answered subscriptions/listen "
    "with HTTP 404 JSON-RPC -32601 (Method not found)"
)


def _check_overclaimed(run: Run) -> None:
    """Listen claimed but not served: one -32601 per ListenUser at most, said once; the tool
    calls go on; those -32601 are the run's only failures."""
    listened = run.requests("subscriptions/listen")
    assert 1 <= listened <= run.spawned()["ListenUser"]
    assert [line for line in run.lines if "ListenUser stops" in line] == [STOPS], run.output
    _check_ran(run, failures=listened)


def _check_overclaimed_alone(run: Run) -> None:
    """The same with ListenUser alone: once it stops there is nothing to load, the run ends."""
    said = [line for line in run.lines if line.startswith("mcpfast load: ")]
    assert said[1:] == [STOPS, "mcpfast load: every user class has stopped: the run ends"]
    listened = run.requests("subscriptions/listen")
    assert 1 <= listened <= run.spawned()["ListenUser"]
    assert run.stats()["Aggregated"]["Failure Count"] == str(listened)
    assert float(run.lines[-1].split()[1].rstrip("s")) < LONG  # it did not run its -t
    _check_summary_is_locusts(run)


def _check_no_get_stream(run: Run) -> None:
    """Legacy sessions of a stateless FastMCP, which answers GET with 405: ListenUser skipped."""
    assert [line for line in run.lines if "skipping" in line] == [
        NO_RESOURCES.format(era="2025-11-25 session"),
        "mcpfast load: skipping ListenUser: the server offers no GET stream: it answered HTTP 405 "
        "(2025-11-25 session)",
    ], run.output
    assert run.requests("legacy GET stream") == 0 and run.requests("legacy tools/call echo")
    _check_ran(run)


async def test_load_against_the_demo_server_skips_nothing(tmp_path: Path) -> None:
    _require("locust", "the load extra")
    port = free_port()
    async with server_process(mcpfast_command("serve", "--port", str(port)), port) as url:
        run = await _load(url, tmp_path)
    assert not any("skipping" in line for line in run.lines), run.output
    assert len(run.spawned()) == 5  # every user class ran, in both eras
    for name in (
        "tools/call echo",
        "server/discover",
        "tools/list",
        "resources/read",
        "legacy initialize",
        "legacy tools/call echo",
        "subscriptions/listen",
    ):
        assert run.requests(name) > 0, (name, run.output)
    _check_ran(run)


@pytest.mark.parametrize("mode", ["stateless", "session"])
async def test_load_against_the_official_sdk_server(mode: str, tmp_path: Path) -> None:
    _require("locust", "the load extra")
    if importlib.util.find_spec("mcp") is None:
        pytest.skip("the official SDK (pip install mcp) is not installed")
    port = free_port()
    # stateless: era detection (the SDK answers 2026-07-28); session: every user in legacy sessions
    extra = () if mode == "stateless" else ("--era", "legacy")
    async with server_process([sys.executable, str(SDK_SERVER), str(port), mode], port) as url:
        run = await _load(url, tmp_path, *extra)
    era = "2026-07-28" if mode == "stateless" else "2025-11-25 session"
    assert [line for line in run.lines if "skipping" in line] == [NO_RESOURCES.format(era=era)]
    assert run.requests("legacy tools/call echo") > 0, run.output
    if mode == "stateless":
        assert run.requests("tools/call echo") > 0 and run.requests("subscriptions/listen") > 0
    else:
        assert run.requests("legacy GET stream") > 0, run.output
    _check_ran(run)
