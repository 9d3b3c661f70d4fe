"""Smoke runs of ``mcpfast load`` (the locust suite, a few seconds each) against the demo server and
the official SDK's server: no failure, a non-trivial request count, every report file written."""

from __future__ import annotations

import csv
import importlib.util
import os
import sys
from pathlib import Path

import pytest
import trio

from ..helpers import REPO
from .processes import free_port, mcpfast_command, server_process

SDK_SERVER = Path(__file__).with_name("sdk_server.py")


def _require(module: str, extra: str) -> None:
    """Skip when ``module`` is missing (a failure under CI=true, whose setup installs it). Looked
    up, never imported: locust would bring gevent into this Trio process."""
    if importlib.util.find_spec(module) is None:
        reason = f"{module} ({extra}) is not installed"
        if os.environ.get("CI") == "true":
            pytest.fail(reason + " and CI=true requires it")
        pytest.skip(reason)


async def _load(url: str, out: Path, *extra: str) -> tuple[str, dict[str, dict[str, str]]]:
    argv = mcpfast_command(
        "load", url, "-t", "3s", "-u", "10", "--stream-seconds", "1", "--out", str(out), *extra
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    with trio.fail_after(30):
        done = await trio.run_process(
            argv, capture_stdout=True, capture_stderr=True, check=False, env=env
        )
    output = done.stdout.decode()
    assert done.returncode == 0, output + done.stderr.decode() + (out / "locust.log").read_text()
    with (out / "load_stats.csv").open(newline="") as handle:
        rows = {row["Name"]: row for row in csv.DictReader(handle)}
    total = rows["Aggregated"]
    assert total["Failure Count"] == "0", output
    assert int(total["Request Count"]) >= 100, output
    for name in (
        "load_stats.csv",
        "load_stats_history.csv",
        "load_failures.csv",
        "report.html",
        "locust.log",
    ):
        assert (out / name).stat().st_size > 0, name
    if importlib.util.find_spec("matplotlib") is not None:
        assert (out / "chart.png").read_bytes()[:4] == b"\x89PNG"
    assert "0 failures (0.00%)" in output and "req/s" in output
    print(output)
    return output, rows


async def test_load_smoke_against_the_demo_server(tmp_path: Path) -> None:
    _require("locust", "the load extra")
    port = free_port()
    async with server_process(mcpfast_command("serve", "--port", str(port)), port) as url:
        output, rows = await _load(url, tmp_path)
    # every user class ran, in both eras
    for name in (
        "era probe (server/discover)",
        "tools/call echo",
        "server/discover",
        "tools/list",
        "resources/read",
        "legacy initialize",
        "legacy tools/call echo",
        "subscriptions/listen",
    ):
        assert int(rows[name]["Request Count"]) > 0, (name, output)
    assert "p50" in output and "p95" in output and "p99" in output


@pytest.mark.parametrize("mode", ["stateless", "session"])
async def test_load_smoke_against_the_official_sdk_server(mode: str, tmp_path: Path) -> None:
    _require("locust", "the load extra")
    if importlib.util.find_spec("mcp") is None:
        pytest.skip("the official SDK (pip install mcp) is not installed")
    port = free_port()
    # stateless: era detection (the SDK answers 2026-07-28); session: every user in legacy sessions
    extra = () if mode == "stateless" else ("--era", "legacy")
    async with server_process([sys.executable, str(SDK_SERVER), str(port), mode], port) as url:
        output, rows = await _load(url, tmp_path, *extra)
    assert int(rows["legacy tools/call echo"]["Request Count"]) > 0, output
    if mode == "stateless":
        assert int(rows["tools/call echo"]["Request Count"]) > 0, output
    else:
        assert int(rows["legacy GET stream"]["Request Count"]) > 0, output
