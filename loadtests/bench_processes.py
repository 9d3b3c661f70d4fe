"""How ``mcpfast load`` scales with load processes: the demo server on the native engine
(``mcpfast serve --engine native``, one process) loaded by ``ToolCallUser`` alone (stateless
``tools/call echo``) with 1, then 2, ... load processes (``--processes N``), the same users and
time each.

Per run it prints the req/s in total and per load process (each process's requests, from the
master's ``summary.json``, over the run's time), p50/p99, and the server's CPU time per request:
``utime + stime`` of the server process (and its children) from ``/proc/PID/stat``, read before
and after the run, over the requests of the run (the probe's few requests are in the CPU time,
not in the count). When the server's CPU per request stays put while req/s grows with the
processes, one load process was the bottleneck; when req/s stops growing, the server (or the
cores) is.

    python loadtests/bench_processes.py [--processes 1,2] [--seconds 20] [--users 50]
        [--json results.json]

Run it on a quiet machine: the load processes and the server share its cores. Linux only
(``/proc``). Exit 0, or 1 when a run failed.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of ``pid`` and its live descendants, in seconds."""
    children: dict[int, list[int]] = {}
    times: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        child = int(entry.name)
        children.setdefault(int(fields[1]), []).append(child)
        times[child] = (int(fields[11]) + int(fields[12])) / TICKS
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        total += times.get(current, 0.0)
        todo += children.get(current, [])
    return total


def wait_listening(port: int, process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited ({process.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("the server did not listen in time")


def load(url: str, processes: int, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """One ``mcpfast load`` run; its ``summary.json``."""
    command = [
        sys.executable, "-m", "mcpfast", "load", url, "--user-class", "tools",
        "-u", str(args.users), "-t", f"{args.seconds}s", "-q", "--out", str(out),
    ]  # fmt: skip
    if processes > 1:
        command += ["--processes", str(processes)]
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=args.seconds + 120
    )
    if done.returncode not in (0, 1):
        raise RuntimeError(f"mcpfast load exited {done.returncode}:\n{done.stdout}{done.stderr}")
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return summary


def measure(
    url: str, pid: int, processes: int, args: argparse.Namespace, out: Path
) -> dict[str, Any]:
    before = cpu_seconds(pid)
    summary = load(url, processes, args, out)
    cpu = cpu_seconds(pid) - before
    total = summary["total"]
    seconds = total["requests"] / total["rps"] if total["rps"] else 0.0
    workers = summary["workers"] or [{"index": 0, "requests": total["requests"]}]
    return {
        "processes": processes,
        "requests": total["requests"],
        "failures": total["failures"],
        "rps": total["rps"],
        "rps_per_process": [w["requests"] / seconds if seconds else 0.0 for w in workers],
        "p50": total["p50"],
        "p99": total["p99"],
        "server_cpu_us_per_request": 1e6 * cpu / total["requests"] if total["requests"] else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", default="1,2", help="load process counts (default 1,2)")
    parser.add_argument("--seconds", type=int, default=20, help="each run's time (default 20)")
    parser.add_argument("--users", type=int, default=50, help="users of each run (default 50)")
    parser.add_argument("--json", default="", metavar="PATH", help="write the results here too")
    args = parser.parse_args()
    counts = [int(n) for n in args.processes.split(",")]
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    serve = [sys.executable, "-m", "mcpfast", "serve", "--engine", "native", "--port", str(port)]
    server = subprocess.Popen(serve, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = []
    try:
        wait_listening(port, server)
        url = f"http://127.0.0.1:{port}/mcp"
        with tempfile.TemporaryDirectory() as scratch:
            for count in counts:
                result = measure(url, server.pid, count, args, Path(scratch) / f"p{count}")
                results.append(result)
                per = ", ".join(f"{r:.0f}" for r in result["rps_per_process"])
                cpu = result["server_cpu_us_per_request"]
                print(
                    f"{count} load process{'es' if count > 1 else ''}: {result['rps']:.0f} req/s "
                    f"(per process: {per}), p50 {result['p50']:.0f} ms, "
                    f"p99 {result['p99']:.0f} ms, server CPU "
                    + (f"{cpu:.0f} µs/request" if cpu is not None else "-")
                    + f", {result['failures']} failures",
                    flush=True,
                )
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 1 if any(r["failures"] for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
