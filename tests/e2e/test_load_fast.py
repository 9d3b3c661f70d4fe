"""``mcpfast load --engine fast`` through the real stack: the demo server on the engine under
test, the official SDK's server and FastMCP (each from PyPI), every answer judged; its Rust
engine and its Trio twin (``MCPFAST_NO_EXTENSIONS=1``) side by side on one server, in an open
loop so that both send the same requests; and the open loop's latency correction against a
server that pauses 200 ms every two seconds (`peers/stall_server.py`)."""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from ..helpers import ENGINE, REPO
from .processes import free_port, mcpfast_command, server_process
from .test_load import FASTMCP_ECHO, SDK_SERVER

STALL_SERVER = Path(__file__).parent / "peers" / "stall_server.py"
CLOSING_SERVER = Path(__file__).parent / "peers" / "closing_server.py"


async def _fast(
    url: str,
    out: Path,
    *extra: str,
    no_extensions: bool = False,
    expect: int = 0,
    summary: bool = True,
) -> dict[str, Any]:
    """``mcpfast load URL --engine fast`` (its runner's module: the same command) for 2 s with
    4 connections (bounded): its ``summary.json``, after it exited ``expect``."""
    argv = [sys.executable, "-m", "mcpfast.load.runner", *([url] if url else [])]
    argv += ["--engine", "fast"]
    argv += ["-u", "4", "-t", "2s", "--out", str(out), *extra]
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    env["MCPFAST_NO_EXTENSIONS"] = "1" if no_extensions else ""
    with trio.fail_after(150):  # a busy machine: the probe, the processes, the run
        done = await trio.run_process(
            argv, capture_stdout=True, capture_stderr=True, check=False, env=env
        )
    log = out / "locust.log"
    detail = done.stdout.decode() + done.stderr.decode() + (log.read_text() if log.exists() else "")
    assert done.returncode == expect, detail
    if not summary:
        return {}
    document: dict[str, Any] = json.loads((out / "summary.json").read_text())
    assert document["engine"]["backend"] == ("python" if no_extensions else "rust"), document
    return document


def _names(summary: dict[str, Any]) -> dict[str, int]:
    return {r["name"]: r["requests"] for r in summary["requests"]}


def _answers(out: Path) -> set[tuple[int, str, bytes]]:
    """The distinct answers the load processes saw (status, content type, body)."""
    answers = set()
    for tally in out.glob("tally-*.json"):
        for kind in json.loads(tally.read_text())["kinds"]:
            for status, content_type, body, _ in kind["answers"]:
                answers.add((status, content_type, base64.b64decode(body)))
    return answers


def _demo_argv(port: int) -> list[str]:
    return mcpfast_command("serve", "--port", str(port), "--engine", ENGINE)


@pytest.mark.parametrize(
    ("workload", "names"),
    [
        ("tools", {"tools/call echo"}),
        ("lists", {"server/discover", "tools/list", "resources/list", "prompts/list"}),
        ("session", {"legacy tools/call echo"}),
    ],
)
async def test_fast_engine_against_the_demo_server(
    workload: str, names: set[str], tmp_path: Path
) -> None:
    """Each workload's requests, named as the locust users name them, none failed; two load
    processes' histograms merged into the total (its count is every request's)."""
    port = free_port()
    async with server_process(_demo_argv(port), port) as url:
        summary = await _fast(url, tmp_path, "--user-class", workload, "--processes", "2")
    assert set(_names(summary)) >= names, summary["requests"]
    assert summary["total"]["failures"] == 0, summary["errors"]
    assert summary["total"]["requests"] > 0
    histogram = summary["latency"]["total"]["histogram"]["counts"]
    assert sum(histogram.values()) == summary["total"]["requests"]
    assert len(summary["workers"]) == 2
    assert sum(w["requests"] for w in summary["workers"]) == summary["total"]["requests"]
    for key in ("p50", "p99", "p99.9", "p99.99"):
        assert summary["latency"]["total"][key] is not None


async def test_fast_engine_thresholds_and_compare(tmp_path: Path) -> None:
    """``--fail-on`` judged against the fast engine's summary (a passing and a failing
    threshold: exit 4), and ``--compare`` running it against two servers."""
    port = free_port()
    async with server_process(_demo_argv(port), port) as url:
        failed = await _fast(
            url,
            tmp_path / "fail-on",
            "--fail-on",
            "failures>0",
            "--fail-on",
            "rps<100000000",
            expect=4,
        )
        argv = ["--compare", f"a={url}", f"b={url}", "--rounds", "1", "-t", "1s"]
        await _fast("", tmp_path / "compare", *argv, summary=False)
    assert [t["failed"] for t in failed["thresholds"]] == [False, True], failed["thresholds"]
    compared = json.loads((tmp_path / "compare" / "compare.json").read_text())
    assert [s["label"] for s in compared["servers"]] == ["a", "b"]
    assert all(s["requests"] > 0 and s["failures"] == 0 for s in compared["servers"]), compared


@pytest.mark.timeout(240)  # four runs, each with its probe, processes and chart
async def test_rust_and_its_twin_judge_alike(tmp_path: Path) -> None:
    """On one server, at one rate (an open loop: both send the same requests): the same counts,
    the same distinct answers, the same verdicts, for a good call and a refused one."""
    port = free_port()
    runs: dict[tuple[str, bool], dict[str, Any]] = {}
    cases = {"good": ("--tool", "echo"), "bad": ("--tool", "echo", "--arguments", "{}")}
    async with server_process(_demo_argv(port), port) as url:
        for case, extra in cases.items():
            for python in (False, True):
                out = tmp_path / f"{case}-{python}"
                expect = 1 if case == "bad" else 0
                summary = await _fast(
                    url, out, *extra, "--rate", "100", no_extensions=python, expect=expect
                )
                runs[case, python] = {"summary": summary, "answers": _answers(out)}
    for case in cases:
        rust, twin = runs[case, False], runs[case, True]
        assert rust["answers"] == twin["answers"]
        assert _names(rust["summary"]) == _names(twin["summary"]) == {"tools/call echo": 200}
        assert rust["summary"]["errors"] == twin["summary"]["errors"]
    assert runs["good", False]["summary"]["total"]["failures"] == 0
    bad = runs["bad", False]["summary"]
    assert bad["total"]["failures"] == 200, bad
    assert [(e["status"], e["code"]) for e in bad["errors"]] == [("200", "-")], bad["errors"]
    assert "isError" in bad["errors"][0]["problem"]


PEERS = {
    "sdk stateless": ("mcp", [sys.executable, str(SDK_SERVER), "{port}", "stateless"], ()),
    "sdk session": (
        "mcp",
        [sys.executable, str(SDK_SERVER), "{port}", "session"],
        ("--era", "legacy"),
    ),
    "fastmcp": ("fastmcp", [sys.executable, str(FASTMCP_ECHO), "{port}"], ()),
}


@pytest.mark.parametrize("peer", sorted(PEERS))
async def test_fast_engine_against_peer_servers(peer: str, tmp_path: Path) -> None:
    """The official SDK's server (stateless 2026-07-28, and legacy sessions opened beforehand)
    and FastMCP: every call answered and judged a success."""
    module, argv, extra = PEERS[peer]
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")
    port = free_port()
    command = [a.format(port=port) for a in argv]
    async with server_process(command, port) as url:
        summary = await _fast(url, tmp_path, *extra)
    assert summary["total"]["requests"] > 0
    assert summary["total"]["failures"] == 0, summary["errors"]
    assert summary["era"]["era"] == ("legacy" if extra else "modern"), summary["era"]


async def test_open_loop_shows_the_pauses_a_closed_loop_hides(tmp_path: Path) -> None:
    """Every call waits out a 200 ms pause every 2 s. Closed loop, 4 connections: a pause
    delays 4 requests among hundreds, its p95 stays low. Open loop at 100/s: the requests due
    during a pause (a tenth of the run) count from when they were due, so its p99 shows the
    pause (and its p95, the requests due in the middle of a pause), and the report says
    requests were sent late."""
    port = free_port()
    argv = [sys.executable, str(STALL_SERVER), str(port), ENGINE]
    async with server_process(argv, port) as url:
        closed = await _fast(url, tmp_path / "closed", "-t", "4s")
        opened = await _fast(url, tmp_path / "open", "-t", "4s", "--rate", "100")
    assert closed["total"]["failures"] == opened["total"]["failures"] == 0
    assert closed["total"]["p95"] < 50.0, closed["latency"]["total"]
    # counted from when they were sent, the requests due in a pause would be quick: only the
    # 8 under way when a pause began (2%) would be slow, and p95 low, as in the closed loop
    assert opened["total"]["p95"] >= 50.0, opened["latency"]["total"]
    assert opened["latency"]["total"]["p99"] >= 150.0, opened["latency"]["total"]
    assert opened["schedule"]["late"] > 0
    assert any("fell behind its schedule" in note for note in opened["notes"]), opened["notes"]


@pytest.mark.parametrize("python", [False, True], ids=["rust", "trio"])
async def test_an_answer_read_with_the_connections_end_is_counted(
    python: bool, tmp_path: Path
) -> None:
    """A server that closes each connection right after its answer (``Connection: close``):
    the answer and the end often arrive in one read; the answer counts, the end is no failure
    (the Rust engine counted it ``ConnectionError(closed)`` once in a while)."""
    port = free_port()
    async with server_process([sys.executable, str(CLOSING_SERVER), str(port)], port) as url:
        summary = await _fast(url, tmp_path, "--user-class", "tools", no_extensions=python)
    assert summary["total"]["requests"] > 50, summary["total"]
    assert summary["total"]["failures"] == 0, summary["errors"]
