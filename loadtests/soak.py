"""A bounded soak: many mixed requests through one server process, its resident memory and open
file descriptors sampled as it goes; after warm-up both must stay flat.

The load, all at once against the demo server with small store bounds (`soak_server.py`, one
worker, so that every bounded store is full after warm-up):

* wrk, stateless 2026-07-28 ``tools/call`` (``echo``), and wrk on a legacy 2025-11-25 session
  (``tools/call`` with its ``Mcp-Session-Id``): the bulk of the requests;
* mcpfast clients doing what keeps state: legacy sessions opened and deleted, ``greet`` with its
  elicitation answered (a legacy server-to-client request, and the modern ``input_required``
  round trip), a task started and read (both eras), ``subscriptions/listen`` and GET streams
  opened and dropped.

Memory is the server's RSS (``/proc/<pid>/status`` VmRSS), file descriptors ``/proc/<pid>/fd``,
sampled every ``--sample`` seconds. The verdict compares the last quarter of the run with the
first sample after warm-up (``--warmup``, a fraction of the run): RSS growth under ``--max-growth``
(5% by default) and open descriptors back within a few of the warm-up count.

    python loadtests/soak.py [--requests 1000000] [--engine native] [--json report.json]

Exit 0 when both stay flat, 1 otherwise; the report says why. Needs ``wrk``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "benches"))
sys.path.insert(0, str(REPO / "python"))

import mcpfast  # noqa: E402
from bench_http import request_for, run_wrk  # noqa: E402


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def start_server(engine: str, port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "python"),
        "MCPFAST_STATE_DIR": tempfile.mkdtemp(),
    }
    target = f"{HERE / 'soak_server.py'}:server"
    argv = [
        sys.executable,
        "-m",
        "mcpfast",
        "serve",
        target,
        "--engine",
        engine,
        "--port",
        str(port),
    ]
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the server did not start")


# --------------------------------------------------------------------------- stateful flows


class Counts:
    def __init__(self) -> None:
        self.done: dict[str, int] = {}
        self.failed: dict[str, int] = {}

    def ok(self, flow: str) -> None:
        self.done[flow] = self.done.get(flow, 0) + 1

    def fail(self, flow: str, error: BaseException) -> None:
        key = f"{flow}: {type(error).__name__}"
        self.failed[key] = self.failed.get(key, 0) + 1


async def _answer(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "soak"}}


async def legacy_flow(url: str, counts: Counts) -> None:
    """A session: initialize, greet (elicitation answered), a task, a GET stream dropped, then
    DELETE (leaving the block)."""
    async with mcpfast.connect(url, era="legacy", on_elicit=_answer) as client:
        result = await client.call_tool("greet", {})
        assert "soak" in str(result), result
        task = await client.start_task("slow", {"steps": 1, "delay": 0})
        await client.task_result(task["task"]["taskId"])
    counts.ok("legacy session")


async def modern_flow(url: str, counts: Counts) -> None:
    """greet with its input_required round trip, a task read, a listen stream dropped."""
    async with mcpfast.connect(url, era="modern", on_elicit=_answer) as client:
        result = await client.call_tool("greet", {})
        assert "soak" in str(result), result
        started = await client.start_task("slow", {"steps": 1, "delay": 0})
        if "taskId" in started:
            await client.get_task(started["taskId"])
        with trio.move_on_after(0.05):
            async with client.listen(tools=True) as events:
                async for _ in events:
                    pass
    counts.ok("modern")


async def flows(url: str, until: float, counts: Counts, concurrency: int) -> None:
    async def worker(flow: Any) -> None:
        while trio.current_time() < until:
            try:
                with trio.fail_after(30):
                    await flow(url, counts)
            except Exception as error:  # a failure is counted, the soak goes on
                counts.fail(flow.__name__, error)

    async with trio.open_nursery() as nursery:
        for i in range(concurrency):
            nursery.start_soon(worker, legacy_flow if i % 2 else modern_flow)


# ------------------------------------------------------------------------------------- run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1_000_000, help="wrk requests, about")
    parser.add_argument("--engine", choices=("native", "hypercorn"), default="native")
    parser.add_argument("--rate", type=float, default=0.0, help="assumed req/s (0: measure)")
    parser.add_argument("--sample", type=float, default=2.0)
    parser.add_argument("--warmup", type=float, default=0.25)
    parser.add_argument("--max-growth", type=float, default=0.05)
    parser.add_argument("--flows", type=int, default=4, help="concurrent stateful clients")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("wrk is not installed", file=sys.stderr)
        return 2
    port = free_port()
    server = start_server(args.engine, port)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        modern_body, modern_headers = request_for("modern", url)
        legacy_body, legacy_headers = request_for("legacy", url)
        rate = args.rate or 2 * run_wrk(url, modern_body, modern_headers, 8, 2)["rps"] / 3
        seconds = max(10.0, args.requests / rate)
        report = soak(
            args, server.pid, url, seconds, modern_body, modern_headers, legacy_body, legacy_headers
        )
    finally:
        server.terminate()
        server.wait(15)
    print(json.dumps({k: v for k, v in report.items() if k != "samples"}, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0 if report["flat"] else 1


def soak(
    args: argparse.Namespace,
    pid: int,
    url: str,
    seconds: float,
    modern_body: bytes,
    modern_headers: dict[str, str],
    legacy_body: bytes,
    legacy_headers: dict[str, str],
) -> dict[str, Any]:
    """Run the load for ``seconds`` while sampling; the report and its verdict."""
    start = time.monotonic()
    wrk = [
        subprocess.Popen(
            [sys.executable, "-c", WRK, url, body.decode(), json.dumps(headers), str(seconds)],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": f"{REPO / 'benches'}:{REPO / 'python'}"},
        )
        for body, headers in ((modern_body, modern_headers), (legacy_body, legacy_headers))
    ]
    counts = Counts()
    samples: list[tuple[float, int, int]] = []

    async def sample() -> None:
        while time.monotonic() - start < seconds:
            samples.append((time.monotonic() - start, rss_kib(pid), fds(pid)))
            await trio.sleep(args.sample)

    async def run() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sample)
            await flows(url, trio.current_time() + seconds, counts, args.flows)

    trio.run(run)
    results = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in wrk]
    warm_fds = next((s[2] for s in samples if s[0] >= args.warmup * seconds), samples[0][2])
    settle = time.monotonic() + SETTLE_SECONDS  # dropped streams and idle connections close
    while fds(pid) > warm_fds + 4 and time.monotonic() < settle:
        time.sleep(0.5)
    samples.append((time.monotonic() - start, rss_kib(pid), fds(pid)))
    return verdict(args, samples, results, counts, seconds)


SETTLE_SECONDS = 20.0
"""After the load, how long the server may take to close what its clients dropped (a dropped
stream is noticed at its next keep-alive comment, every 15 s)."""


WRK = """
import json, sys
from bench_http import run_wrk
url, body, headers, seconds = sys.argv[1], sys.argv[2].encode(), json.loads(sys.argv[3]), float(sys.argv[4])
print(json.dumps(run_wrk(url, body, headers, 8, seconds)))
"""


def verdict(
    args: argparse.Namespace,
    samples: list[tuple[float, int, int]],
    wrk: list[dict[str, Any]],
    counts: Counts,
    seconds: float,
) -> dict[str, Any]:
    warm = next((s for s in samples if s[0] >= args.warmup * seconds), samples[0])
    tail = [s for s in samples if s[0] >= 0.75 * seconds] or samples[-1:]
    rss_tail = statistics.median(s[1] for s in tail)
    growth = (rss_tail - warm[1]) / warm[1]
    fd_end = samples[-1][2]
    errors = sum(r["errors"] + r["mismatched"] for r in wrk) + sum(counts.failed.values())
    flat = growth < args.max_growth and fd_end <= warm[2] + 4 and errors == 0
    return {
        "engine": args.engine,
        "seconds": round(seconds, 1),
        "requests": sum(r["requests"] for r in wrk) + sum(counts.done.values()),
        "wrk": [{"requests": r["requests"], "rps": round(r["rps"])} for r in wrk],
        "flows": counts.done,
        "failures": counts.failed,
        "errors": errors,
        "rss_kib": {"warm": warm[1], "tail_median": rss_tail, "max": max(s[1] for s in samples)},
        "rss_growth": round(growth, 4),
        "fds": {"warm": warm[2], "end": fd_end, "max": max(s[2] for s in samples)},
        "flat": flat,
        "samples": samples,
    }


if __name__ == "__main__":
    raise SystemExit(main())
