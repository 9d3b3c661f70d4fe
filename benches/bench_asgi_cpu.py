"""Where a Hypercorn worker's CPU goes, per request: the ASGI app's own share (the thread's CPU
time inside the app, less its time inside ``receive`` and ``send``), measured inside a running
worker under wrk (`servers/timed_asgi.py`), for mcpfast's app and the bare echo app on the same
Hypercorn; beside it the server's whole CPU per request, and Trio task steps per request.

    python benches/bench_asgi_cpu.py [--seconds 3] [--rounds 3] [--workloads modern,legacy]

Rounds interleave the two servers; each cell is the median of its rounds. The same code costs
more inside the worker than in a loop of its own (`bench_dispatch.py --cold`): Hypercorn's,
h11's and Trio's work between two requests of a connection has been through the CPU's caches.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import bench_http


def start(which: str, port: int, out: Path) -> subprocess.Popen[bytes]:
    target = bench_http.Target(
        which,
        [bench_http.PY, str(bench_http.HERE / "servers" / "timed_asgi.py"), "", which, str(out)],
        ("modern", "legacy"),
    )
    return bench_http.start(target, port)


def figures(process: subprocess.Popen[bytes], out: Path) -> dict[str, int]:
    """What the server counted since the last call (it writes ``out`` on SIGUSR1)."""
    out.unlink(missing_ok=True)
    process.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + 10
    while not out.exists():  # the server writes it whole, by a rename
        if time.monotonic() > deadline:
            raise RuntimeError("the timed server wrote no figures")
        time.sleep(0.05)
    said: dict[str, int] = json.loads(out.read_text())
    return said


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workloads", default="modern,legacy")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp())
    servers = []
    try:
        for which in ("bare", "mcpfast"):
            port, out = bench_http.free_port(), workdir / f"{which}.json"
            servers.append((which, f"http://127.0.0.1:{port}/mcp", start(which, port, out), out))
        cells = []
        for which, url, process, out in servers:
            for workload in args.workloads.split(","):
                body, headers = bench_http.request_for(workload, url)
                bench_http.run_wrk(url, body, headers, 16, 1)
                cells.append((which, workload, url, body, headers, process, out))
        rows: dict[tuple[str, str], list[dict[str, float]]] = {}
        for _ in range(args.rounds):
            for which, workload, url, body, headers, process, out in cells:
                figures(process, out)
                cpu = bench_http.cpu_seconds(process.pid)
                result = bench_http.run_wrk(url, body, headers, 16, args.seconds)
                cpu = bench_http.cpu_seconds(process.pid) - cpu
                said = figures(process, out)
                n = max(said["requests"], 1)
                rows.setdefault((which, workload), []).append(
                    {
                        "rps": result["rps"],
                        "server_us": cpu / max(result["requests"], 1) * 1e6,
                        "app_us": said["app_ns"] / n / 1000,
                        "steps": said["steps"] / n,
                        "app_steps": said["app_steps"] / n,
                    }
                )
    finally:
        for _, _, process, _ in servers:
            bench_http.stop(process)
    print(
        "| app | workload | req/s | server CPU µs/req | app's own CPU µs/req | task steps/req "
        "| app task steps/req |\n|---|---|---:|---:|---:|---:|---:|"
    )
    for (which, workload), cells_of in rows.items():
        med = {k: statistics.median(c[k] for c in cells_of) for k in cells_of[0]}
        print(
            f"| {which} | {workload} | {med['rps']:,.0f} | {med['server_us']:,.0f} "
            f"| {med['app_us']:.1f} | {med['steps']:.1f} | {med['app_steps']:.1f} |"
        )


if __name__ == "__main__":
    main()
