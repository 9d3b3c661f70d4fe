"""``mcpfast load --engine fast`` with ``--mix`` and ``--shape`` through the real stack (the demo
server on the engine under test, the load run as the CLI runs it), on its Rust engine and its
Trio twin (``MCPFAST_NO_EXTENSIONS=1``). An open loop makes the counts exact: each connection
carries an equal share of the rate, so a workload's requests are in its connections' proportion,
and a shape's stages schedule a known number of requests."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpfast.load.report import read_history

from .processes import free_port, server_process
from .test_load_fast import _demo_argv, _fast, _names

LISTS = {"server/discover", "tools/list", "resources/list", "prompts/list"}


@pytest.mark.parametrize("python", [False, True], ids=["rust", "trio"])
async def test_a_mix_shares_the_connections_by_weight(python: bool, tmp_path: Path) -> None:
    """7 connections by tools=4,lists=1,session=2 at 140/s for 2 s (20/s each, in three load
    processes: one per workload): 160 tool calls, 40 list requests (as many of each kind, in
    turn), 80 legacy session calls; none failed. A closed loop runs every workload too."""
    port = free_port()
    mix = ("--mix", "tools=4,lists=1,session=2", "-u", "7")
    async with server_process(_demo_argv(port), port) as url:
        opened = await _fast(url, tmp_path / "open", *mix, "--rate", "140", no_extensions=python)
        closed = await _fast(url, tmp_path / "closed", *mix, no_extensions=python)
    names = _names(opened)
    tools, session = names.pop("tools/call echo"), names.pop("legacy tools/call echo")
    assert (tools, sum(names.values()), session) == (160, 40, 80), opened["requests"]
    assert set(names) >= LISTS and len(set(names.values())) == 1, names  # each kind in turn
    assert opened["total"]["failures"] == 0, opened["errors"]
    assert len(opened["workers"]) == 3
    assert "the connections by workload: tools 4, lists 1, session 2" in opened["notes"]
    assert set(_names(closed)) == set(_names(opened)), closed["requests"]
    assert all(count > 0 for count in _names(closed).values()), closed["requests"]
    assert closed["total"]["failures"] == 0, closed["errors"]


async def test_workloads_naming_the_same_requests_share_their_row(tmp_path: Path) -> None:
    """In the legacy era the tools workload's calls are the session workload's: one row (as
    locust's), both workloads' requests in it; ``--user-class`` twice is an equal mix."""
    port = free_port()
    async with server_process(_demo_argv(port), port) as url:
        summary = await _fast(
            url,
            tmp_path,
            *("--era", "legacy", "--user-class", "tools", "--user-class", "session"),
            *("-u", "2", "--rate", "40"),
        )
    assert _names(summary) == {"legacy tools/call echo": 80}, summary["requests"]
    assert summary["total"]["failures"] == 0, summary["errors"]


@pytest.mark.parametrize("python", [False, True], ids=["rust", "trio"])
async def test_a_ramp_of_the_arrival_rate(python: bool, tmp_path: Path) -> None:
    """``--rate 100 --shape ramp`` for 4 s: four one-second steps at the ramp's mean rate (12.5
    to 87.5/s), half the requests of the steady rate, the throughput rising second by second."""
    port = free_port()
    async with server_process(_demo_argv(port), port) as url:
        summary = await _fast(
            url, tmp_path, "-t", "4s", "--rate", "100", "--shape", "ramp", no_extensions=python
        )
    assert [(s["seconds"], s["rps"]) for s in summary["rate"]] == [
        (1.0, 12.5),
        (1.0, 37.5),
        (1.0, 62.5),
        (1.0, 87.5),
        (0.0, 100.0),
    ]
    assert 195 <= summary["total"]["requests"] <= 205, summary["total"]  # steady: 400
    assert summary["total"]["failures"] == 0, summary["errors"]
    rps = [p.rps for p in read_history(tmp_path / "load_stats_history.csv") if p.t > 0]
    assert len(rps) >= 3 and rps[-1] > 2 * rps[0], rps  # second by second: about 13, 37, 62, 87
