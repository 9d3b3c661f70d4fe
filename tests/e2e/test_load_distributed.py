"""``mcpfast load`` over several load processes (``--processes 2`` on this host; a master and two
workers on loopback) against the demo server, and its CI output (thresholds, exit status 4, the
JSON summary, quiet): the master's summary is locust's own statistics, every load process
contributed, and ``summary.json`` holds the same numbers."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import trio

from ..helpers import REPO
from .processes import free_port, mcpfast_command
from .test_load import Run, _check_ran, _load, _require, demo_server


def _document(run: Run, name: str = "summary.json") -> dict[str, Any]:
    document: dict[str, Any] = json.loads((run.out / name).read_text())
    return document


def _check_workers(run: Run, count: int) -> None:
    """``count`` load processes each sent requests; theirs add up to the master's total."""
    document = _document(run)
    workers = document["workers"]
    assert [w["index"] for w in workers] == list(range(count)), workers
    assert all(w["requests"] > 0 for w in workers), workers
    total = int(run.stats()["Aggregated"]["Request Count"])
    assert sum(w["requests"] for w in workers) == total == document["total"]["requests"]
    line = next(line for line in run.lines if line.startswith("load processes: "))
    assert line.startswith(f"load processes: {count}; worker 0: {workers[0]['requests']} requests")
    assert document["era"] == {"era": "modern", "version": "2026-07-28"}


async def test_two_processes_on_one_host_with_thresholds(tmp_path: Path) -> None:
    """``--processes 2``: one summary of both, each note once; one threshold fails: exit 4."""
    async with demo_server() as url:
        run = await _load(
            url,
            tmp_path,
            "--processes",
            "2",
            "--fail-on",
            "requests<1",
            "--fail-on",
            "tools/call echo:p50>0ms",
            seconds=3,
            expect=4,
        )
    _check_ran(run)
    _check_workers(run, 2)
    assert run.spawned() and sum(run.spawned().values()) == 10
    notes = [
        line for line in run.lines if line.startswith("mcpfast load: ") and "for 3s" not in line
    ]
    assert len(notes) == len(set(notes)), notes  # the two workers' notes, said once
    assert "  pass requests<1: requests = " in run.output
    assert "  FAIL tools/call echo:p50>0ms: tools/call echo: p50 = " in run.output
    assert "1 of 2 thresholds failed: tools/call echo:p50>0ms" in run.output
    verdicts = _document(run)["thresholds"]
    assert [(v["expression"], v["failed"]) for v in verdicts] == [
        ("requests<1", False),
        ("tools/call echo:p50>0ms", True),
    ]
    assert _document(run)["exit_status"] == 4


async def _worker(port: int, out: Path, results: dict[str, str]) -> None:
    argv = mcpfast_command("load", "--worker", "--master-port", str(port), "--out", str(out))
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    with trio.fail_after(60):
        done = await trio.run_process(
            argv, capture_stdout=True, capture_stderr=True, check=False, env=env
        )
    log = out / "locust.log"
    results[out.name] = done.stdout.decode() + done.stderr.decode()
    assert done.returncode == 0, results[out.name] + (log.read_text() if log.exists() else "")


async def test_a_master_and_two_workers(tmp_path: Path) -> None:
    """``--master --expect-workers 2`` and two ``--worker`` processes (no URL: the master gives
    it, and the options): both workers load the server, the master has the summary."""
    port = free_port()
    master: dict[str, Run] = {}
    workers: dict[str, str] = {}

    async def run_master(url: str) -> None:
        master["run"] = await _load(
            url,
            tmp_path / "master",
            "--master",
            "--expect-workers",
            "2",
            "--master-bind-host",
            "127.0.0.1",
            "--master-bind-port",
            str(port),
            "--user-class",
            "tools",
            "--user-class",
            "session",
            seconds=3,
        )

    async with demo_server() as url, trio.open_nursery() as nursery:
        nursery.start_soon(run_master, url)
        for name in ("worker-1", "worker-2"):
            nursery.start_soon(_worker, port, tmp_path / name, workers)
    run = master["run"]
    _check_ran(run)
    _check_workers(run, 2)
    # the workers report every class they know, the ones they were given none of at 0
    spawned = {name for name, count in run.spawned().items() if count}
    assert spawned == {"ToolCallUser", "LegacySessionUser"}, run.spawned()
    assert run.requests("tools/call echo") > 0 and run.requests("legacy tools/call echo") > 0
    assert "on 2 workers" in run.lines[0]
    log = (run.out / "locust.log").read_text()
    assert "2 workers connected" in log
    for output in workers.values():
        assert "mcpfast load: a worker of the master at 127.0.0.1:" in output
        assert "quit; took" in output


async def test_quiet_and_json_on_stdout(tmp_path: Path) -> None:
    """``-q --json -``: stdout is the JSON summary alone; no progress lines anywhere."""
    async with demo_server() as url:
        argv = mcpfast_command(
            "load", url, "-t", "2s", "-u", "4", "--user-class", "tools", "-q", "--json", "-",
            "--out", str(tmp_path), "--fail-on", "failures>0",
        )  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
        with trio.fail_after(40):
            done = await trio.run_process(
                argv, capture_stdout=True, capture_stderr=True, check=False, env=env
            )
    stdout, stderr = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, stdout + stderr
    document = json.loads(stdout)
    assert document["total"]["requests"] > 0 and document["total"]["failures"] == 0
    assert [r["name"] for r in document["requests"]] == ["tools/call echo"]
    assert document["thresholds"][0]["expression"] == "failures>0"
    assert document["parameters"]["users"] == 4 and document["exit_status"] == 0
    assert not (tmp_path / "summary.json").exists()
    assert "req/s" not in stderr and "users" not in stderr  # no progress, no table
    assert "pass failures>0: failures = 0" in stderr
    assert "reports:" not in stderr


async def test_processes_end_with_their_master_when_nothing_runs(tmp_path: Path) -> None:
    """No server: the master says so and exits 3; its workers do not hold the run open (they
    would wait 60 s for its heartbeat); ``summary.json`` says why."""
    _require("locust", "the load extra")
    url = f"http://127.0.0.1:{free_port()}/mcp"  # nothing listens
    started = trio.current_time()
    run = await _load(url, tmp_path, "--processes", "2", expect=3)
    assert trio.current_time() - started < 20
    assert any("did not answer the probe" in line for line in run.lines), run.output
    document = _document(run)
    assert document["exit_status"] == 3 and document["total"] is None
    assert any("did not answer the probe" in note for note in document["notes"])
