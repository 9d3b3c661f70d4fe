"""Scale-out on Redis, measured: what several workers and the Redis bus cost, in one run.

Rows (the native engine; wrk drives the HTTP rows, rounds interleaved so drift hits all alike):

* stateless 2026-07-28 ``tools/call``: one worker (in-process bus) against two workers with
  ``--bus redis://`` (``SO_REUSEPORT``). On this 2-core machine the one worker is pinned to CPU 0
  and wrk to CPU 1; the two workers are not pinned and share both cores with wrk and Redis, so
  the ratio says what a second worker buys when cores are scarce, not per-core scaling.
* a legacy (2025-11-25) session ``tools/call``, one worker pinned to CPU 0: the Redis bus against
  the in-process one (the goal: no difference: a plain session request makes no Redis round
  trip).
* a notification round trip: a ``subscriptions/listen`` stream on server B, a ``tools/call`` of
  ``touch`` (which publishes an update of the resource the stream listens to) sent to server A;
  the time from sending the call to the notification arriving. With the Redis bus A and B are two
  processes; the baseline is one process with the in-process bus (A = B). The difference of the
  two is what the trip through Redis adds (p50 and p99 of each).

    python benches/bench_scale_out.py [--seconds 5] [--rounds 3] [--connections 16] [--trips 300]

Needs ``redis-server`` and ``wrk`` on PATH. Prints a table (server CPU µs per request too).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_http import (  # noqa: E402
    MODERN_META,
    cpu_seconds,
    free_port,
    pinned,
    request_for,
    run_wrk,
)

REPO = HERE.parent
PY = sys.executable
TARGET = f"{HERE / 'servers' / 'mcpfast_notify.py'}:server"


@contextmanager
def redis() -> Iterator[str]:
    """A redis-server of this run, on a free port (CPU 1, with wrk); yields its URL."""
    port = free_port()
    process = subprocess.Popen(
        pinned(["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"], 1),
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_port(port)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.kill()
        process.wait()


def wait_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def wait_listeners(port: int, count: int, timeout: float = 30.0) -> None:
    """Wait until ``count`` sockets listen on ``port`` (one per native worker: each binds it
    with ``SO_REUSEPORT``, and a worker still starting would get none of wrk's connections,
    which are all opened at once). Raises `RuntimeError` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    suffix = f":{port:04X}"
    while time.monotonic() < deadline:
        with open("/proc/net/tcp") as table:
            rows = [line.split() for line in table.readlines()[1:]]
        if sum(1 for row in rows if row[1].endswith(suffix) and row[3] == "0A") >= count:
            return
        time.sleep(0.05)
    raise RuntimeError(f"fewer than {count} listeners on {port}")


@contextmanager
def server(
    port: int, *, workers: int = 1, bus: str | None = None, cpu: int | None = 0
) -> Iterator[list[int]]:
    """``mcpfast serve`` of the bench target on ``port``; yields the pids serving it."""
    argv = [PY, "-m", "mcpfast", "serve", TARGET, "--engine", "native", "--port", str(port)]
    argv += ["--workers", str(workers)] + (["--bus", bus] if bus else [])
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "python"),
        "MCPFAST_STATE_DIR": tempfile.mkdtemp(),
    }
    env.pop("MCPFAST_BUS", None)
    process = subprocess.Popen(
        pinned(argv, cpu) if cpu is not None else argv,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_listeners(port, workers)
        yield [process.pid, *children(process.pid)]
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()


def children(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in found.split()]


def cpu_of(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            total += cpu_seconds(pid)
        except OSError:
            pass
    return total


def http_row(
    label: str, port: int, workload: str, connections: int, seconds: float, pids: list[int]
) -> dict[str, Any]:
    url = f"http://127.0.0.1:{port}/mcp"
    body, headers = request_for(workload, url)
    before = cpu_of(pids)
    result = run_wrk(url, body, headers, connections, seconds)
    used = cpu_of(pids) - before
    result["label"] = label
    result["cpu_us"] = 1e6 * used / max(1, result["requests"])
    if result["errors"] or result["mismatched"]:
        raise RuntimeError(f"{label}: {result['errors']} errors, {result['mismatched']} wrong")
    return result


LISTEN = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "subscriptions/listen",
    "params": {"notifications": {"resourceSubscriptions": ["bench://r"]}, "_meta": MODERN_META},
}
TOUCH = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "touch", "arguments": {}, "_meta": MODERN_META},
}


def headers_for(method: str, name: str | None = None) -> dict[str, str]:
    out = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
    }
    if name:
        out["mcp-name"] = name
    return out


def round_trips(call_port: int, listen_port: int, trips: int) -> list[float]:
    """Milliseconds from sending ``touch`` to ``call_port`` to its notification arriving on a
    listen stream of ``listen_port``, ``trips`` times."""
    out: list[float] = []
    listen_url = f"http://127.0.0.1:{listen_port}/mcp"
    call_url = f"http://127.0.0.1:{call_port}/mcp"
    with httpx2.Client(timeout=10) as listener, httpx2.Client(timeout=10) as caller:
        with listener.stream(
            "POST", listen_url, json=LISTEN, headers=headers_for("subscriptions/listen")
        ) as stream:
            lines = stream.iter_lines()
            for line in lines:  # the listen's acknowledgement comes first
                if line.startswith("data:") and "notifications/subscriptions/acknowledged" in line:
                    break
            for _ in range(trips + 10):
                start = time.perf_counter()
                reply = caller.post(
                    call_url, json=TOUCH, headers=headers_for("tools/call", "touch")
                )
                if "touched" not in reply.text:
                    raise RuntimeError(f"touch failed: {reply.status_code} {reply.text[:200]}")
                for line in lines:
                    if line.startswith("data:") and "notifications/resources/updated" in line:
                        break
                out.append(1000 * (time.perf_counter() - start))
    return out[10:]  # the first ones warm up


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--trips", type=int, default=300)
    args = parser.parse_args()
    for tool in ("redis-server", "wrk"):
        if shutil.which(tool) is None:
            print(f"{tool} is not installed", file=sys.stderr)
            return 2
    rows: dict[str, list[dict[str, Any]]] = {}
    with redis() as bus:
        for _ in range(args.rounds):
            for label, workers, use_bus, cpu, workload in (
                ("stateless, 1 worker, in-process bus", 1, None, 0, "modern"),
                ("stateless, 2 workers, Redis bus", 2, bus, None, "modern"),
                ("legacy session, 1 worker, in-process bus", 1, None, 0, "legacy"),
                ("legacy session, 1 worker, Redis bus", 1, bus, 0, "legacy"),
            ):
                port = free_port()
                with server(port, workers=workers, bus=use_bus, cpu=cpu) as pids:
                    row = http_row(label, port, workload, args.connections, args.seconds, pids)
                rows.setdefault(label, []).append(row)
        port = free_port()
        with server(port) as _:
            local = round_trips(port, port, args.trips)
        a, b = free_port(), free_port()
        with server(a, bus=bus, cpu=0), server(b, bus=bus, cpu=0):
            shared = round_trips(a, b, args.trips)
    print(
        f"\nc={args.connections}, {args.seconds:g} s x {args.rounds} rounds (median of rounds). "
        "One worker: pinned to CPU 0, wrk and Redis on CPU 1. Two workers: not pinned, sharing "
        "both cores with wrk (pinned to CPU 1) and Redis (CPU 1)."
    )
    print(f"{'row':45} {'req/s':>9} {'ratio':>6} {'p50 ms':>7} {'p99 ms':>7} {'CPU µs/req':>10}")
    baselines = {"stateless": None, "legacy": None}
    for label, runs in rows.items():
        rps = statistics.median(r["rps"] for r in runs)
        kind = label.split(",")[0].split()[0]
        base = baselines.get(kind) or rps
        baselines[kind] = base
        print(
            f"{label:45} {rps:9.0f} {rps / base:6.2f} "
            f"{statistics.median(r['p50'] for r in runs) / 1000:7.2f} "
            f"{statistics.median(r['p99'] for r in runs) / 1000:7.2f} "
            f"{statistics.median(r['cpu_us'] for r in runs):10.1f}"
        )
    print(f"\nnotification round trip, {args.trips} trips (ms from sending the call):")
    for label, values in (("one process, in-process bus", local), ("two processes, Redis", shared)):
        print(
            f"  {label:30} p50 {percentile(values, 0.5):6.2f}  p99 {percentile(values, 0.99):6.2f}"
        )
    added50 = percentile(shared, 0.5) - percentile(local, 0.5)
    added99 = percentile(shared, 0.99) - percentile(local, 0.99)
    print(f"  added by Redis: p50 {added50:+.2f} ms, p99 {added99:+.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
