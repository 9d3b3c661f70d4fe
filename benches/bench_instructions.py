"""User-space instructions per request of one server under wrk, counted by callgrind: a measure
that does not move with the noise of a shared machine (wall time and CPU time do, by 20%).

The server runs under ``valgrind --tool=callgrind``; after a warm-up with wrk its counters are
zeroed (``callgrind_control -z``), wrk runs for ``--seconds``, the counters are dumped; then
the same for an idle spell of as long (the server's timers), whose total is taken off, and what
is left is divided by wrk's request count. The servers and requests are `bench_http`'s.

    python benches/bench_instructions.py [--servers native,uvicorn,hypercorn] [--workloads modern,legacy]
        [--connections 16,64] [--seconds 8] [--pythonpath DIR] [--caches] [--ll BYTES] [--syscalls]

``--pythonpath`` runs mcpfast from another tree (a ``git worktree`` of an earlier commit, say)
for a before/after comparison.

``--caches`` adds callgrind's cache and branch simulation: L1 misses (instructions, data read,
data write), last-level misses, mispredicted branches, and KCachegrind's cycle estimate (Ir + 10
mispredicted branches + 10 L1 misses + 100 last-level misses), each per request. ``--ll BYTES``
sets the simulated last level's size (callgrind takes the host's L3): the size of the L2 makes
its misses the ones that go to an L3 shared with the machine's other tenants. ``--syscalls``
adds the server's system calls per request, and its sends among them, counted by ``strace -c``
in a run of its own without valgrind.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_http

SERVERS = {
    "native": ["mcpfast_echo.py", "{port}", "native"],
    "hypercorn": ["mcpfast_echo.py", "{port}", "hypercorn"],
    "uvicorn": ["bare_uvicorn.py", "{port}", "asyncio"],
    "bare-hypercorn": ["bare_echo.py", "{port}"],
}


def _start(server: str, pythonpath: str, tool: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    """``server`` on a free port under ``tool`` (valgrind's command line; none: as it is) and
    its URL, once it accepts connections.

    Raises:
        RuntimeError: it did not within 10 minutes (valgrind on a busy machine starts slowly).
    """
    port = bench_http.free_port()
    script, *args = SERVERS[server]
    argv = [bench_http.PY, str(bench_http.HERE / "servers" / script)]
    argv += [a.format(port=port) for a in args]
    env = {**os.environ, "PYTHONPATH": pythonpath, "MCPFAST_STATE_DIR": tempfile.mkdtemp()}
    process = subprocess.Popen(
        bench_http.pinned([*tool, *argv], 0),
        env=env,
        cwd=bench_http.HERE / "servers",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 600
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return process, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            if time.monotonic() > deadline:
                bench_http.stop(process)
                raise RuntimeError(f"{server} did not start") from None
            time.sleep(0.2)


def measure(
    server: str,
    workload: str,
    seconds: int,
    pythonpath: str,
    connections: int = 16,
    caches: list[str] | None = None,
) -> tuple[int, dict[str, float]]:
    """wrk's request count and the server's events per request at ``connections``: ``Ir``
    (instructions), and with ``caches`` (callgrind's simulation options) its cache and branch
    events (L1 and last-level misses: ``I1mr``, ``D1mr``, ``D1mw``, ``ILmr``, ``DLmr``,
    ``DLmw``; mispredicted branches: ``Bcm``, ``Bim``) and ``cycles`` (`estimated_cycles`)."""
    out = Path(tempfile.mkdtemp()) / "callgrind.out"
    valgrind = ["valgrind", "--tool=callgrind", *(caches or ()), f"--callgrind-out-file={out}"]
    process, url = _start(server, pythonpath, valgrind)
    try:
        body, headers = bench_http.request_for(workload, url)
        bench_http.run_wrk(url, body, headers, connections, 3)
        _control("-z", process.pid)
        result = bench_http.run_wrk(url, body, headers, connections, seconds)
        busy = _control("-d", process.pid, out)
        started = time.monotonic()
        _control("-z", process.pid)
        time.sleep(seconds)
        idle = _control("-d", process.pid, out)
        idle_seconds = time.monotonic() - started
    finally:
        bench_http.stop(process)
    # The server's timers (sweeps, keep-alive checks) run whether requests come or not: the
    # events of an idle spell as long as the run are taken off, so that a slow run (a busy
    # machine: fewer requests in the same seconds) does not read as dearer requests.
    requests = max(result["requests"], 1)
    scale = result["seconds"] / max(idle_seconds, 1e-9)
    per = {name: (busy[name] - idle.get(name, 0) * scale) / requests for name in busy}
    if caches:
        per["cycles"] = estimated_cycles(per)
    return result["requests"], per


def estimated_cycles(per: dict[str, float]) -> float:
    """KCachegrind's cycle estimate: Ir + 10 Bm + 10 L1m + 100 LLm."""
    l1 = per["I1mr"] + per["D1mr"] + per["D1mw"]
    ll = per["ILmr"] + per["DLmr"] + per["DLmw"]
    return per["Ir"] + 10 * (per["Bcm"] + per["Bim"]) + 10 * l1 + 100 * ll


def _control(flag: str, pid: int, out: Path | None = None) -> dict[str, int]:
    """``callgrind_control FLAG PID``; after a dump (``-d``), the dump's totals by event."""
    before = set(glob.glob(f"{out}.*")) if out is not None else set()
    subprocess.run(["callgrind_control", flag, str(pid)], check=True, capture_output=True)
    if out is None:
        return {}
    deadline = time.monotonic() + 60
    while not (dumps := set(glob.glob(f"{out}.*")) - before):
        if time.monotonic() > deadline:
            raise RuntimeError("callgrind wrote no dump")
        time.sleep(0.1)
    names: list[str] = []
    totals: list[int] = []
    for line in Path(dumps.pop()).read_text().splitlines():
        if line.startswith("events:"):
            names = line.split()[1:]
        elif line.startswith(("summary:", "totals:")):
            totals = [int(value) for value in line.split()[1:]]
    return dict(zip(names, totals, strict=False))


def syscalls(
    server: str, workload: str, seconds: int, pythonpath: str, connections: int
) -> tuple[float, float]:
    """The server's system calls per request under wrk, and its ``sendto`` calls among them,
    counted by ``strace -c`` (attached after a warm-up)."""
    process, url = _start(server, pythonpath, [])
    summary = Path(tempfile.mkdtemp()) / "strace.txt"
    try:
        body, headers = bench_http.request_for(workload, url)
        bench_http.run_wrk(url, body, headers, connections, 2)
        tracer = subprocess.Popen(
            ["strace", "-c", "-f", "-p", str(process.pid), "-o", str(summary)],
            stderr=subprocess.DEVNULL,
        )
        try:
            time.sleep(1)  # attached
            result = bench_http.run_wrk(url, body, headers, connections, seconds)
        finally:
            bench_http.stop(tracer)  # it writes its summary as it detaches
    finally:
        bench_http.stop(process)
    calls = {
        row.group(2): int(row.group(1))
        for row in re.finditer(
            r"(?m)^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)$", summary.read_text()
        )
    }
    requests = max(result["requests"], 1)
    return calls.get("total", 0) / requests, calls.get("sendto", 0) / requests


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--servers", default="native,uvicorn")
    parser.add_argument("--workloads", default="modern,legacy")
    parser.add_argument("--connections", default="16", help="wrk's connections, comma-separated")
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--pythonpath", default=str(bench_http.REPO / "python"))
    parser.add_argument("--caches", action="store_true", help="simulate caches and branches")
    parser.add_argument("--ll", type=int, default=0, help="the simulated last level, bytes")
    parser.add_argument("--syscalls", action="store_true", help="count system calls (strace)")
    args = parser.parse_args()
    tools = ["valgrind", "callgrind_control", "wrk", *(["strace"] if args.syscalls else [])]
    missing = [tool for tool in tools if not shutil.which(tool)]
    if missing:
        print(f"needs {', '.join(missing)} (apt-get install valgrind wrk strace)", file=sys.stderr)
        return 1
    caches = ["--cache-sim=yes", "--branch-sim=yes"] if args.caches or args.ll else []
    if args.ll:
        caches.append(f"--LL={args.ll},16,64")
    columns = ["server", "workload", "conns", "requests", "Ir per request"]
    if caches:
        columns += ["L1 misses (I / D read / D write)", "LL misses", "mispredicted", "cycles est."]
    if args.syscalls:
        columns += ["system calls (sendto)"]
    print("| " + " | ".join(columns) + " |\n|---|---|" + "---:|" * (len(columns) - 2))
    for server in args.servers.split(","):
        for workload in args.workloads.split(","):
            for conns in (int(c) for c in args.connections.split(",")):
                count, per = measure(server, workload, args.seconds, args.pythonpath, conns, caches)
                cells = [server, workload, str(conns), str(count), f"{per['Ir']:,.0f}"]
                if caches:
                    cells += [
                        f"{per['I1mr']:,.0f} / {per['D1mr']:,.0f} / {per['D1mw']:,.0f}",
                        f"{per['ILmr'] + per['DLmr'] + per['DLmw']:,.0f}",
                        f"{per['Bcm'] + per['Bim']:,.0f}",
                        f"{per['cycles']:,.0f}",
                    ]
                if args.syscalls:
                    total, sends = syscalls(server, workload, args.seconds, args.pythonpath, conns)
                    cells.append(f"{total:.1f} ({sends:.1f})")
                print("| " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
