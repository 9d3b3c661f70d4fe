"""The flows of ``mcpfast load`` that hurt servers, through the real stack (the locust suite in a
child process, a few seconds each) against the demo server on the engine under test: ramp and
spike shapes (the user counts locust recorded follow them), weighted mixes (the users locust
spawned follow the weights), session churn (a session per call, as many DELETEs as
initializes) and resumption of a dropped stream (GET + ``Last-Event-ID``, nothing replayed)."""

from __future__ import annotations

import csv
import json
import os
import re
from functools import partial
from pathlib import Path

import pytest
import trio

from ..helpers import REPO
from .processes import mcpfast_command
from .test_load import Run, _check_ran, _load, demo_server


def _users_over_time(run: Run) -> list[int]:
    """The ``User Count`` of each second, from locust's stats history (``--csv-full-history``)."""
    with (run.out / "load_stats_history.csv").open(newline="") as handle:
        return [int(r["User Count"]) for r in csv.DictReader(handle) if r["Name"] == "Aggregated"]


def _progress_users(run: Run) -> list[int]:
    """The users of each printed progress line."""
    return [int(m.group(1)) for m in re.finditer(r"s  users\s+(\d+)  req/s", run.output)]


async def test_ramp_and_spike_shapes(tmp_path: Path) -> None:
    runs: dict[str, Run] = {}

    async def load(key: str, url: str, seconds: int, *extra: str) -> None:
        runs[key] = await _load(url, tmp_path / key, *extra, seconds=seconds)

    async with demo_server() as url, trio.open_nursery() as nursery:
        nursery.start_soon(load, "ramp", url, 5, "--shape", "ramp:over=4s")
        spike = ("-u", "12", "--shape", "spike:base=2,at=2s,for=2s")
        nursery.start_soon(partial(load, "spike", url, 7, *spike))
    ramp = _users_over_time(runs["ramp"])
    rising = [n for n in ramp if n > 0]
    assert rising == sorted(rising) and rising[0] < 10 and max(rising) == 10, ramp
    assert len(set(rising)) >= 3, ramp  # it climbed, not jumped
    shown = _progress_users(runs["ramp"])
    climb = shown[: shown.index(10) + 1] if 10 in shown else shown
    assert climb == sorted(climb) and climb[0] < climb[-1] == 10, runs["ramp"].output
    _check_spike(_users_over_time(runs["spike"]))
    _check_spike(_progress_users(runs["spike"]))
    for run in runs.values():
        _check_ran(run)


def _check_spike(users: list[int]) -> None:
    """The base (2 users), then the peak (12), then the base again."""
    assert max(users) == 12, users
    first, last = users.index(12), len(users) - 1 - users[::-1].index(12)
    assert 2 in users[:first] and 2 in users[last:], users


async def test_a_weighted_mix_with_session_churn(tmp_path: Path) -> None:
    async with demo_server() as url:
        run = await _load(url, tmp_path, "-u", "14", "--mix", "tools=4,churn=1,session=2")
    assert run.spawned() == {"ToolCallUser": 8, "SessionChurnUser": 2, "LegacySessionUser": 4}
    assert not any("skipping" in line for line in run.lines), run.output
    opened = run.requests("churn initialize")
    assert opened >= 5, run.output
    assert abs(opened - run.requests("churn DELETE session")) <= 2, run.output  # ± the 2 users
    assert abs(opened - run.requests("churn tools/call echo")) <= 2, run.output
    assert abs(opened - run.requests("churn notifications/initialized")) <= 2, run.output
    assert run.requests("tools/call echo") > 0 and run.requests("legacy tools/call echo") > 0
    _check_ran(run)


async def test_resumption_after_a_dropped_stream(tmp_path: Path) -> None:
    """Resumed with the demo's ``slow``; with the default tool (``echo``, plain JSON answers)
    there is nothing to resume: skipped up front, and nothing else to run (exit 3)."""
    runs: dict[str, Run] = {}
    slow = json.dumps({"steps": 3, "delay": 0.05})

    async def load(key: str, url: str, *extra: str, expect: int = 0) -> None:
        runs[key] = await _load(url, tmp_path / key, *extra, seconds=3, expect=expect)

    async with demo_server() as url, trio.open_nursery() as nursery:
        resume = ("-u", "3", "--user-class", "resume", "--resume-tool", "slow")
        nursery.start_soon(partial(load, "slow", url, *resume, "--resume-arguments", slow))
        nursery.start_soon(partial(load, "echo", url, "--user-class", "resume", expect=3))
    run = runs["slow"]
    assert not any("skipping" in line or "stops" in line for line in run.lines), run.output
    called, resumed = (
        run.requests("resume tools/call slow"),
        run.requests("resume GET Last-Event-ID"),
    )
    assert resumed >= 5 and called - 3 <= resumed <= called, run.output  # ± those cut by the end
    assert run.requests("resume initialize") <= 3, run.output  # one session per user
    _check_ran(run)
    assert (
        "mcpfast load: skipping ResumeUser: echo answered plain JSON: no stream to resume "
        "(2025-11-25 session)"
    ) in runs["echo"].lines, runs["echo"].output


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("--mix", "tools=4,bogus=1"), "--mix: unknown user class 'bogus'"),
        (("--mix", "tools=0"), "--mix: tools: the weight must be a whole number from 1"),
        (("--mix", "tools=1", "--user-class", "lists"), "give --mix or --user-class, not both"),
        (("--shape", "spike:peak=3"), "--shape: spike: unknown parameter 'peak=3'"),
        (("--shape", "ramp:over=soon"), "--shape: not a duration: 'soon'"),
        (("--resume-arguments", "[1]"), "--resume-arguments must be a JSON object"),
    ],
)
async def test_bad_flows_are_usage_errors(
    flags: tuple[str, ...], said: str, tmp_path: Path
) -> None:
    """Refused before anything runs (exit 2): no server needed, no locust started."""
    out = tmp_path / "out"
    argv = mcpfast_command("load", "http://127.0.0.1:9/mcp", "--out", str(out), *flags)
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    with trio.fail_after(20):
        done = await trio.run_process(
            argv, capture_stdout=True, capture_stderr=True, check=False, env=env
        )
    assert done.returncode == 2, done
    assert said in done.stderr.decode(), done.stderr
    assert not out.exists()
