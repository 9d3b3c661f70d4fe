"""MCP servers side by side, in both eras, driven by ``mcpfast load --engine fast`` (issue 28).

Servers: mcpfast on its native engine and on Hypercorn (``servers/mcpfast_echo.py``), the
official Python SDK on uvicorn (``servers/sdk_echo.py``: stateless for 2026-07-28, session mode
for the legacy era), FastMCP with its defaults (``tests/e2e/peers/fastmcp_echo.py``) and rmcp,
the official Rust SDK (``rmcp_echo``: ``cargo build --release`` there). Each server is pinned to
``--server-core``, every generator to ``--load-core`` (``taskset``). Per server and era:

- **throughput**: closed loop, ``--connections`` keep-alive connections, for ``--seconds``:
  req/s (the server holds one core), the share of that core it used and req/s per CPU-second
  it used (``per_cpu_s``: per core, whatever the other tenants of a shared machine took);
- **latency at fixed rates**: open loop ``--rate R`` for each of ``--rates`` below 0.8x that
  server's throughput in the same round (others are marked ``sat``): p50/p99 in ms from
  each request's due time (coordinated omission corrected);
- **memory**: resident memory (VmRSS) before and after ``--count`` idle legacy sessions
  (``initialize``, 2025-11-25), ``--count`` 2026-07-28 ``subscriptions/listen`` streams and
  ``--count`` legacy GET streams (one session each), in KB per session/stream (a fresh server);
- **session churn**: ``initialize`` + ``notifications/initialized`` + ``tools/call`` +
  ``DELETE`` per second (``bench_churn.py``'s generator, every answer checked).

Modern = stateless ``tools/call`` (the fast engine's ``tools``), legacy = ``tools/call`` on
sessions opened beforehand (its ``session``). A server that does not speak an era, or hold a
kind of stream, is marked ``n/a``, not measured. Rounds interleave the servers (the order turns
each round); every ratio is a server's figure over the baseline's (``--baseline``) in the same
round, the median over rounds.

    python benches/bench_servers.py [--rounds 3] [--seconds 4] [--connections 32]
        [--rates 250,1000,4000,16000] [--count 500] [--only rmcp,mcpfast-native]
        [--json results.json] [--chart benches/servers.png]

Linux only (``taskset``, ``/proc``). Exit 0, or 1 when a run failed.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

import trio

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import bench_churn  # noqa: E402
from bench_http import cpu_seconds, free_port, stop  # noqa: E402
from bench_streams import initialize, raise_fd_limit, rss_kb  # noqa: E402
from bench_streams import measure as hold_streams  # noqa: E402

PY = sys.executable
RMCP = HERE / "rmcp_echo" / "target" / "release" / "rmcp-echo"
MCPFAST = str(HERE / "servers" / "mcpfast_echo.py")
SDK = str(HERE / "servers" / "sdk_echo.py")
FASTMCP = str(REPO / "tests" / "e2e" / "peers" / "fastmcp_echo.py")
ERAS = ("modern", "legacy")
STREAMS = {"modern": "listen", "legacy": "get"}
"""The idle stream of each era (`bench_streams.hold`'s kinds)."""


class Server(NamedTuple):
    """A server: its command per era it speaks (``{port}`` to fill in) and whether it holds
    that era's stream."""

    name: str
    commands: dict[str, list[str]]
    streams: tuple[str, ...]


def servers() -> list[Server]:
    """The rows (rmcp only when built)."""
    rows = [
        Server(f"mcpfast {e}", {era: [PY, MCPFAST, "{port}", e] for era in ERAS}, ERAS)
        for e in ("native", "hypercorn")
    ]
    sdk = {
        era: [PY, SDK, "{port}", "uvicorn", m]
        for era, m in zip(ERAS, ("stateless", "session"), strict=True)
    }
    rows.append(Server("sdk (uvicorn)", sdk, ERAS))
    rows.append(Server("fastmcp", {era: [PY, FASTMCP, "{port}"] for era in ERAS}, ("legacy",)))
    if RMCP.exists():
        rows.append(Server("rmcp", {era: [str(RMCP), "{port}"] for era in ERAS}, ERAS))
    else:
        print(f"(no rmcp: cargo build --release in {RMCP.parents[2]})", file=sys.stderr)
    return rows


def start(argv: list[str], args: argparse.Namespace) -> tuple[subprocess.Popen[bytes], int]:
    """The server on a free port, pinned to the server core, once it accepts connections."""
    port = free_port()
    command = ["taskset", "-c", args.server_core, *(a.format(port=port) for a in argv)]
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "python"),
        "MCPFAST_STATE_DIR": tempfile.mkdtemp(),
    }
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=raise_fd_limit,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{argv} exited ({process.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            time.sleep(0.5)  # past its first connection (an interpreter warming up)
            return process, port
        except OSError:
            time.sleep(0.1)
    stop(process)
    raise RuntimeError(f"{argv} did not listen")


def load(port: int, era: str, args: argparse.Namespace, *extra: str) -> dict[str, Any]:
    """``mcpfast load --engine fast`` on the load core: its ``summary.json`` (no failures)."""
    workload = ["--user-class", "tools"] if era == "modern" else ["--user-class", "session"]
    with tempfile.TemporaryDirectory() as out:
        command = ["taskset", "-c", args.load_core, PY, "-m", "mcpfast.load.runner"]
        command += [f"http://127.0.0.1:{port}/mcp", "--engine", "fast", "--era", era, *workload]
        command += ["-u", str(args.connections), "-t", f"{args.seconds}s", "-q", "--out", out]
        env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
        done = subprocess.run(
            [*command, *extra], env=env, capture_output=True, text=True, timeout=300
        )
        path = Path(out) / "summary.json"
        summary: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    if done.returncode != 0 or not summary or summary["total"]["failures"]:
        raise RuntimeError(f"mcpfast load ({era}): {done.stdout[-2000:]}{done.stderr[-2000:]}")
    return summary


def throughput(pid: int, port: int, era: str, args: argparse.Namespace) -> dict[str, float]:
    """Closed loop: req/s, the server core's busy share, and req/s per CPU-second the server
    used (the figure per core that a shared machine's steal leaves comparable)."""
    before = cpu_seconds(pid)
    summary = load(port, era, args)
    used = cpu_seconds(pid) - before
    rps = float(summary["total"]["rps"])
    return {"rps": rps, "core": used / args.seconds, "per_cpu_s": rps * args.seconds / used}


def latency(port: int, era: str, rate: int, args: argparse.Namespace) -> dict[str, float]:
    """Open loop at ``rate``: p50/p99/p99.9 (ms, from due times) and the late sends."""
    summary = load(port, era, args, "--rate", str(rate))
    total = summary["latency"]["total"]
    late = summary.get("schedule", {}).get("late", 0)
    return {"p50": total["p50"], "p99": total["p99"], "p99.9": total["p99.9"], "late": late}


async def _sessions(port: int, count: int) -> int:
    """``count`` legacy sessions opened (``initialize`` only, then idle): how many opened."""
    opened = trio.Semaphore(32)
    done: list[str] = []

    async def one(index: int) -> None:
        async with opened:
            try:
                done.append(await initialize(port, f"127.0.0.{1 + index % 8}"))
            except (OSError, RuntimeError, trio.BrokenResourceError):
                pass

    async with trio.open_nursery() as nursery:
        for index in range(count):
            nursery.start_soon(one, index)
    return len(done)


def session_memory(pid: int, port: int, count: int) -> float:
    """KB of resident memory per idle legacy session."""
    before = rss_kb(pid)
    opened = trio.run(_sessions, port, count)
    time.sleep(1)
    return (rss_kb(pid) - before) / opened if opened else float("nan")


def stream_memory(pid: int, port: int, kind: str, count: int) -> float:
    """KB of resident memory per idle stream (``listen`` or ``get``)."""
    held = trio.run(hold_streams, kind, port, pid, count, 8)
    if held["failures"]:
        raise RuntimeError(f"{kind} streams: {held['failures']} failed: {held['first_failure']}")
    return float(held["kb_per_stream"])


def churn(pid: int, port: int, args: argparse.Namespace) -> float:
    """Sessions opened, used once and ended per second (no error)."""
    settings = argparse.Namespace(clients=1, connections=16, client_cpus=args.load_core)
    measured = bench_churn.measure(pid, port, settings, args.seconds)
    if measured["errors"]:
        raise RuntimeError(f"churn: {measured['errors']} errors")
    return float(measured["ips"])


def run_server(server: Server, args: argparse.Namespace) -> dict[str, Any]:
    """One round of one server: its figures per era (absent: ``n/a``)."""
    out: dict[str, Any] = {}
    for era, argv in server.commands.items():
        figures: dict[str, Any] = {}
        process, port = start(argv, args)
        try:
            figures["throughput"] = throughput(process.pid, port, era, args)
            ceiling = 0.8 * figures["throughput"]["rps"]
            figures["latency"] = {
                str(r): latency(port, era, r, args) if r <= ceiling else "sat" for r in args.rates
            }
            if era == "legacy":
                figures["churn"] = churn(process.pid, port, args)
        finally:
            stop(process)
        process, port = start(argv, args)  # memory on a fresh process
        try:
            if era == "legacy":
                figures["kb_per_session"] = session_memory(process.pid, port, args.count)
            if era in server.streams:
                figures["kb_per_stream"] = stream_memory(
                    process.pid, port, STREAMS[era], args.count
                )
        finally:
            stop(process)
        out[era] = figures
        print(f"  {server.name} {era}: {json.dumps(figures)}", flush=True)
    return out


def value(figures: dict[str, Any], era: str, key: str) -> float | None:
    """One figure of a round (``throughput`` is its req/s; ``latency R pX``), or None."""
    at = figures.get(era, {})
    if key in ("throughput", "core", "per_cpu_s"):
        return float(at["throughput"]["rps" if key == "throughput" else key]) if at else None
    if key.startswith("latency "):
        _, rate, p = key.split()
        found = at.get("latency", {}).get(rate)
        return float(found[p]) if isinstance(found, dict) else None
    found = at.get(key)
    return float(found) if found is not None else None


LABELS = {
    "throughput": "req/s",
    "churn": "churn, sessions/s",
    "kb_per_session": "KB per idle session",
    "kb_per_stream": "KB per {stream} stream",
}


def label(key: str, era: str) -> str:
    """A figure's name in the table (``latency 1000 p99`` reads ``1,000/s p99``)."""
    if key.startswith("latency "):
        _, rate, p = key.split()
        return f"{int(rate):,}/s {p}"
    stream = "listen" if era == "modern" else "GET"
    return LABELS.get(key, key).format(stream=stream)


def table(rounds: list[dict[str, Any]], names: list[str], args: argparse.Namespace) -> str:
    """Markdown: each figure's median over rounds, and its same-round ratio to the baseline's."""
    keys = ["throughput", "per_cpu_s", "core", "churn", "kb_per_session", "kb_per_stream"]
    keys += [f"latency {r} {p}" for r in args.rates for p in ("p50", "p99")]
    lines = ["| era | figure | " + " | ".join(names) + " |", "|---|---|" + "---:|" * len(names)]
    for era in ERAS:
        for key in keys:
            cells = []
            for name in names:
                mine = [value(r[name], era, key) for r in rounds]
                base = [value(r[args.baseline], era, key) for r in rounds]
                if any(m is None for m in mine):  # a rate past its saturation, or not served
                    cells.append("sat" if key.startswith("latency") else "n/a")
                    continue
                median = statistics.median(m for m in mine if m is not None)
                ratios = [m / b for m, b in zip(mine, base, strict=True) if m is not None and b]
                ratio = f" ({statistics.median(ratios):.2f}x)" if len(ratios) == len(mine) else ""
                cells.append(f"{median:,.1f}{ratio}" if median < 100 else f"{median:,.0f}{ratio}")
            if any(c not in ("n/a", "sat") for c in cells):
                lines.append(f"| {era} | {label(key, era)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def chart(rounds: list[dict[str, Any]], names: list[str], rates: list[int], path: Path) -> None:
    """A PNG: median req/s per server CPU-second and era (closed loop), and the
    modern era's p99 at each fixed rate (open loop) the server stayed under."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def median(name: str, era: str, key: str) -> float | None:
        found = [value(r[name], era, key) for r in rounds]
        return None if None in found else statistics.median(f for f in found if f is not None)

    fig, (bars, lines) = plt.subplots(1, 2, figsize=(12, 4.5))
    width = 0.38
    for offset, era in enumerate(ERAS):
        heights = [median(name, era, "per_cpu_s") or 0.0 for name in names]
        xs = [i + (offset - 0.5) * width for i in range(len(names))]
        label = "2026-07-28 stateless" if era == "modern" else "legacy session"
        bars.bar(xs, heights, width, label=label)
    bars.set_xticks(range(len(names)), names, rotation=15)
    bars.set_ylabel("tools/call per CPU-second of the server")
    bars.set_title("Throughput per core, closed loop")
    bars.legend()
    for name in names:
        points = [(r, median(name, "modern", f"latency {r} p99")) for r in rates]
        kept = [(r, p) for r, p in points if p is not None]
        if kept:
            lines.plot([r for r, _ in kept], [p for _, p in kept], marker="o", label=name)
    lines.set_xscale("log")
    lines.set_yscale("log")
    lines.set_xticks(rates, [str(r) for r in rates])
    lines.minorticks_off()
    lines.set_xlabel("offered rate, req/s (open loop)")
    lines.set_ylabel("p99 latency, ms (from due time)")
    lines.set_title("2026-07-28 tools/call p99 at fixed rates")
    lines.legend()
    fig.suptitle("MCP echo servers driven by mcpfast load --engine fast (2 shared cores)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--rates", default="250,1000,4000,16000")
    parser.add_argument("--count", type=int, default=500, help="idle sessions / streams")
    parser.add_argument("--only", default="", help="comma-separated server names")
    parser.add_argument("--baseline", default="rmcp")
    parser.add_argument("--server-core", default="0")
    parser.add_argument("--load-core", default="1")
    parser.add_argument("--json", default="", metavar="PATH")
    parser.add_argument("--chart", default="", metavar="PNG")
    args = parser.parse_args()
    args.rates = [int(r) for r in args.rates.split(",")]
    raise_fd_limit()
    rows = [s for s in servers() if not args.only or s.name in args.only.split(",")]
    names = [s.name for s in rows]
    if args.baseline not in names:
        args.baseline = names[0]
    rounds: list[dict[str, Any]] = []
    try:
        for index in range(args.rounds):
            turned = rows[index % len(rows) :] + rows[: index % len(rows)]
            print(f"round {index + 1}: {', '.join(s.name for s in turned)}", flush=True)
            rounds.append({s.name: run_server(s, args) for s in turned})
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"\nbaseline: {args.baseline}; median of {args.rounds} rounds (ratio to the baseline)\n")
    print(table(rounds, names, args))
    if args.json:
        Path(args.json).write_text(json.dumps(rounds, indent=2) + "\n")
    if args.chart:
        chart(rounds, names, args.rates, Path(args.chart))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
