"""The fast load engine while it runs, through the real stack (the demo server on the engine
under test, real sockets): `run_load`'s ``progress`` on the Rust engine and on its Trio twin
alike (its calls, its numbers, stopping early, an exception raised); ``mcpfast load --engine
fast`` stopped by Ctrl-C (both backends: a prompt exit with the partial run's summary); the
per-second history that draws the chart; and the legacy sessions the plan opened, closed after
the run."""

from __future__ import annotations

import base64
import csv
import importlib.util
import itertools
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import trio

from mcpfast.load import engine_trio

from ..helpers import ENGINE, REPO
from .processes import free_port, mcpfast_command, server_process
from .test_load_fast import _fast

RunLoad = Callable[..., Any]


def _backends() -> list[Any]:
    backends: list[Any] = [pytest.param(engine_trio.run_load, id="trio")]
    try:
        from mcpfast._rust import run_load
    except ImportError:  # no built extension
        return backends
    return [pytest.param(run_load, id="rust"), *backends]


def _demo_argv(port: int) -> list[str]:
    return mcpfast_command("serve", "--port", str(port), "--engine", ENGINE)


def _ping(port: int) -> bytes:
    """A legacy ``ping`` without a session: the demo server answers it (an error answer, which
    the engine counts as any other: answers are judged later)."""
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    head = f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
    head += f"accept: application/json, text/event-stream\r\ncontent-length: {len(body)}\r\n\r\n"
    return head.encode() + body


async def _run(run_load: RunLoad, port: int, seconds: float, progress: Any) -> Any:
    cycles = [[_ping(port)]] * 2
    with trio.fail_after(seconds + 60):
        return await trio.to_thread.run_sync(
            run_load, "127.0.0.1", port, cycles, seconds, [], 5.0, progress
        )


@pytest.mark.parametrize("run_load", _backends())
async def test_progress_counts_stops_and_raises_alike(run_load: RunLoad) -> None:
    """``progress`` is called at each whole second with the numbers so far (answered = the
    buckets' sum, growing; nothing failed; never more than the tally); a true result stops the
    run at that second with the tally so far; an exception stops it and is raised as is."""
    calls: list[tuple[Any, ...]] = []

    def record(*numbers: Any) -> bool:
        calls.append(numbers)
        return False

    port = free_port()
    async with server_process(_demo_argv(port), port):
        kinds, _, _, elapsed = await _run(run_load, port, 2.5, record)
        assert [len(c) for c in calls] == [5, 5], calls  # at 1 s and 2 s
        tally = sum(sum(k[1].values()) for k in kinds)
        for answered, failed, counts, sum_us, max_us in calls:
            assert answered == sum(counts.values()) > 0 and failed == 0
            assert 0 < max_us * answered and sum_us >= answered
        assert calls[0][0] < calls[1][0] <= tally
        assert set(calls[1][2]) <= set().union(*(k[1] for k in kinds))

        stops: list[int] = []

        def stop(*_: Any) -> bool:
            stops.append(1)
            return True

        _, _, _, stopped_after = await _run(run_load, port, 30.0, stop)
        assert stops == [1] and stopped_after < 10.0  # its first second, not its 30

        def fail(*_: Any) -> None:
            raise LookupError("from progress")

        with pytest.raises(LookupError, match="from progress"):
            await _run(run_load, port, 30.0, fail)
    assert 2.0 < elapsed < 20.0


def _argv(url: str, out: Path, *extra: str) -> list[str]:
    argv = [sys.executable, "-m", "mcpfast.load.runner", url, "--engine", "fast"]
    return [*argv, "-u", "4", "--processes", "2", "--out", str(out), *extra]


def _env(python: bool) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    env["MCPFAST_NO_EXTENSIONS"] = "1" if python else ""
    return env


async def _until_progress(stdout: Any, seen: list[str]) -> None:
    """Read ``stdout`` into ``seen`` until a progress line counts requests."""
    buffer = b""
    while not any(" requests " in line and " requests        0 " not in line for line in seen):
        chunk = await stdout.receive_some(4096)
        assert chunk, "".join(seen)
        buffer += chunk
        *lines, rest = buffer.split(b"\n")
        seen += [line.decode() for line in lines]
        buffer = rest


@pytest.mark.parametrize("python", [False, True], ids=["rust", "trio"])
async def test_ctrl_c_stops_a_fast_run_with_its_partial_summary(
    python: bool, tmp_path: Path
) -> None:
    """A 300 s run sent SIGINT after its first progress line with requests: it exits soon
    (bounded well below its run time) with status 0, a summary of the requests made until
    then, the note that it stopped early, and each load process's tally marked stopped."""
    port = free_port()
    seen: list[str] = []
    async with server_process(_demo_argv(port), port) as url:
        argv = _argv(url, tmp_path, "-t", "300s")
        process = await trio.lowlevel.open_process(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=_env(python)
        )
        assert process.stdout is not None
        try:
            with trio.fail_after(150):  # the probe, the processes' start
                await _until_progress(process.stdout, seen)
            process.send_signal(signal.SIGINT)
            with trio.fail_after(90):  # its stop, the summary, the chart
                async for chunk in process.stdout:
                    seen.append(chunk.decode())
                code = await process.wait()
        finally:
            process.kill()
            await process.stdout.aclose()
            with trio.fail_after(10):
                await process.wait()
    output = "".join(seen)
    assert code == 0, output
    assert "stopped early (Ctrl-C)" in output, output
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["engine"]["backend"] == ("python" if python else "rust")
    assert summary["total"]["requests"] > 0 and summary["total"]["failures"] == 0, summary
    assert any("stopped early" in note for note in summary["notes"]), summary["notes"]
    tallies = [json.loads((tmp_path / f"tally-{i}.json").read_text()) for i in range(2)]
    assert len(tallies) == 2 and all(t["stopped"] for t in tallies), tallies
    assert all(t["elapsed"] < 100.0 for t in tallies), tallies


def _history(out: Path) -> list[dict[str, str]]:
    with (out / "load_stats_history.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("python", [False, True], ids=["rust", "trio"])
async def test_the_history_adds_up_to_the_summary(python: bool, tmp_path: Path) -> None:
    """Two load processes for 3 s: a row at the start (all zeros), one a second, and one at the
    end, whose total is the summary's; each row's rate is its growth over its time; a chart
    drawn from it."""
    port = free_port()
    async with server_process(_demo_argv(port), port) as url:
        summary = await _fast(url, tmp_path, "-t", "3s", "--processes", "2", no_extensions=python)
    rows = _history(tmp_path)
    assert [r["Name"] for r in rows] == ["Aggregated"] * len(rows)
    assert 4 <= len(rows) <= 6, rows
    stamps = [float(r["Timestamp"]) for r in rows]
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    assert all(0.5 < gap < 2.0 for gap in gaps[:-1]) and 0 <= gaps[-1] < 2.0, gaps
    totals = [int(r["Total Request Count"]) for r in rows]
    assert totals[0] == 0 and totals == sorted(totals), totals
    assert totals[-1] == summary["total"]["requests"], (totals, summary["total"])
    grown = [b - a for a, b in itertools.pairwise(totals)]
    for gap, row, more in zip(gaps[:-1], rows[1:-1], grown, strict=False):  # whole seconds
        assert float(row["Requests/s"]) == pytest.approx(more / gap, rel=0.02, abs=1.0)
    assert all(r["Total Failure Count"] == "0" for r in rows)
    assert all(float(r["50%"]) > 0 for r in rows[1:] if float(r["Requests/s"]) > 0)
    if importlib.util.find_spec("matplotlib") is not None:
        assert (tmp_path / "chart.png").stat().st_size > 0


async def _status(port: int, request: bytes) -> int:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(request)
        answer = b""
        while b"\r\n" not in answer:
            chunk = await stream.receive_some(4096)
            assert chunk, answer
            answer += chunk
    return int(answer.split(b" ")[1])


async def test_the_sessions_a_run_opened_are_closed_after_it(tmp_path: Path) -> None:
    """The session workload opens a legacy session per connection before the run; after it,
    each is gone: a request with its id is answered 404 (the same request answered during the
    run: none of them failed)."""
    port = free_port()
    async with server_process(_demo_argv(port), port) as url:
        summary = await _fast(url, tmp_path, "--user-class", "session")
        plan = json.loads((tmp_path / "plan.json").read_text())
        requests: Sequence[bytes] = [base64.b64decode(cycle[0]) for cycle in plan["cycles"]]
        with trio.fail_after(30):
            statuses = [await _status(port, request) for request in requests]
    assert summary["total"]["requests"] > 0 and summary["total"]["failures"] == 0, summary
    assert len({r.split(b"mcp-session-id: ")[1][:40] for r in requests}) == 4
    assert statuses == [404] * 4, statuses
    assert not any("not closed" in note for note in summary["notes"]), summary["notes"]
