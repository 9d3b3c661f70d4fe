"""The fast engine's load processes (``python -m mcpfast.load.engine PLAN SHARE OUT``, one per
share): started in a session of their own, their progress read live (a thread per process, one
queue) into `mcpfast.load.fastlive.Live`, Ctrl-C and SIGTERM passed on as SIGINT, and every
wait bounded.

Ctrl-C (or SIGTERM) during a run stops it early: each process that has taken over SIGINT (its
first progress line says so; one that has not yet is sent it then) stops at its next second and
still writes its tally; a process not done `STOP_GRACE` seconds later is killed, as is one still
running `END_GRACE` seconds after the run's end.
"""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .fastlive import Live
from .processes import Progress, child_env

__all__ = ["END_GRACE", "STOP_GRACE", "Ran", "run_processes"]

STOP_GRACE = 15.0
"""Seconds the load processes have, once stopped, to write their tallies."""
END_GRACE = 60.0
"""Seconds past the run's end (its last requests' timeouts, a busy machine) before a load
process still running is killed."""

_Event = tuple[int, str | None]
"""A process's index and its next output line (None: its output ended); index -1: a signal."""


@dataclass
class Ran:
    """What the load processes did: the first failed one's exit status (0: all ran), the signal
    that stopped the run early (None: it ran its course), and what went wrong."""

    code: int
    stopped: str | None = None
    notes: list[str] = field(default_factory=list)


def run_processes(
    plan: Path,
    shares: list[dict[str, Any]],
    out: Path,
    log: IO[str],
    progress: Progress,
    connections: int,
) -> Ran:
    """Run one load process per share (tallies into ``out/tally-N.json``), their live progress
    on ``progress`` and into ``out/load_stats_history.csv``."""
    events: queue.SimpleQueue[_Event] = queue.SimpleQueue()
    with _signals(events), (out / "load_stats_history.csv").open("w", newline="") as history:
        started = [
            _start(plan, share, out / f"tally-{i}.json", log) for i, share in enumerate(shares)
        ]
        for index, process in enumerate(started):
            threading.Thread(target=_read, args=(index, process, events), daemon=True).start()
        live = Live(len(started), connections, time.time(), progress, history)
        seconds = max(float(s["duration"]) for s in shares)
        ran = _follow(started, events, live, log, time.monotonic() + seconds + END_GRACE)
        grace = time.monotonic() + STOP_GRACE
        codes = [_ended(p, grace) for p in started]
    progress.end()
    if ran.code == 0:
        ran.code = next((c for c in codes if c != 0), 0)
    return ran


def _follow(
    started: list[subprocess.Popen[str]],
    events: queue.SimpleQueue[_Event],
    live: Live,
    log: IO[str],
    deadline: float,
) -> Ran:
    """Read the processes' lines until every output has ended; a signal stops them."""
    ran = Ran(0)
    left = len(started)
    while left:
        try:
            index, raw = events.get(timeout=max(deadline - time.monotonic(), 0.0))
        except queue.Empty:
            ran.code, ran.notes = 2, [f"{left} load processes did not end in time: killed"]
            for process in started:
                process.kill()
            return ran
        if index < 0:
            ran.stopped = ran.stopped or raw
            deadline = min(deadline, time.monotonic() + STOP_GRACE)
            for i, process in enumerate(started):
                if live.said(i):
                    _stop(process)
        elif raw is None:
            left -= 1
            live.ended(index)
        else:
            try:
                line = json.loads(raw)
            except ValueError:
                log.write(raw)
                continue
            if ran.stopped and not live.said(index):
                _stop(started[index])
            live.add(index, line)
    return ran


def _start(plan: Path, share: dict[str, Any], tally: Path, log: IO[str]) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "mcpfast.load.engine", str(plan), json.dumps(share), str(tally)]
    return subprocess.Popen(
        argv,
        env=child_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        bufsize=1,
        start_new_session=True,  # Ctrl-C reaches this process only, which passes it on once
    )


def _read(index: int, process: subprocess.Popen[str], events: queue.SimpleQueue[_Event]) -> None:
    assert process.stdout is not None
    with process.stdout:
        for raw in process.stdout:
            events.put((index, raw))
    events.put((index, None))


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)


def _ended(process: subprocess.Popen[str], deadline: float) -> int:
    """``process``'s exit status, killed when it has not ended by ``deadline``."""
    try:
        return process.wait(timeout=max(deadline - time.monotonic(), 0.0))
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


@contextmanager
def _signals(events: queue.SimpleQueue[_Event]) -> Iterator[None]:
    """Ctrl-C and SIGTERM said on ``events`` (index -1, the signal's name) meanwhile; nothing
    outside the main thread, where no signal arrives."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def said(number: int, _: object) -> None:
        events.put((-1, "Ctrl-C" if number == signal.SIGINT else signal.Signals(number).name))

    previous = {s: signal.signal(s, said) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
