"""User-space instructions per request of one server under wrk, counted by callgrind: a measure
that does not move with the noise of a shared machine (wall time and CPU time do, by 20%).

The server runs under ``valgrind --tool=callgrind``; after a warm-up with wrk its counters are
zeroed (``callgrind_control -z``), wrk runs for ``--seconds``, the counters are dumped; then
the same for an idle spell of as long (the server's timers), whose total is taken off, and what
is left is divided by wrk's request count. The servers and requests are `bench_http`'s.

    python benches/bench_instructions.py [--servers native,uvicorn,hypercorn] [--workloads modern,legacy]
        [--connections 16,64] [--seconds 8] [--pythonpath DIR]

``--pythonpath`` runs mcpfast from another tree (a ``git worktree`` of an earlier commit, say)
for a before/after comparison.
"""

from __future__ import annotations

import argparse
import glob
import os
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


def measure(
    server: str, workload: str, seconds: int, pythonpath: str, connections: int = 16
) -> tuple[int, float]:
    """wrk's request count and the server's instructions per request, at ``connections``."""
    port = bench_http.free_port()
    out = Path(tempfile.mkdtemp()) / "callgrind.out"
    script, *args = SERVERS[server]
    argv = [bench_http.PY, str(bench_http.HERE / "servers" / script)]
    argv += [a.format(port=port) for a in args]
    env = {**os.environ, "PYTHONPATH": pythonpath, "MCPFAST_STATE_DIR": tempfile.mkdtemp()}
    valgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
    process = subprocess.Popen(
        bench_http.pinned([*valgrind, *argv], 0),
        env=env,
        cwd=bench_http.HERE / "servers",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 600  # valgrind on a busy machine starts slowly
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{server} did not start under valgrind") from None
                time.sleep(0.2)
        url = f"http://127.0.0.1:{port}/mcp"
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
    # instructions of an idle spell as long as the run are taken off, so that a slow run (a
    # busy machine: fewer requests in the same seconds) does not read as dearer requests.
    work = busy - idle * result["seconds"] / max(idle_seconds, 1e-9)
    return result["requests"], work / max(result["requests"], 1)


def _control(flag: str, pid: int, out: Path | None = None) -> int:
    """``callgrind_control FLAG PID``; after a dump (``-d``), the dump's total instructions."""
    before = set(glob.glob(f"{out}.*")) if out is not None else set()
    subprocess.run(["callgrind_control", flag, str(pid)], check=True, capture_output=True)
    if out is None:
        return 0
    deadline = time.monotonic() + 60
    while not (dumps := set(glob.glob(f"{out}.*")) - before):
        if time.monotonic() > deadline:
            raise RuntimeError("callgrind wrote no dump")
        time.sleep(0.1)
    text = Path(dumps.pop()).read_text()
    return next(
        int(line.split()[1])
        for line in text.splitlines()
        if line.startswith(("summary:", "totals:"))
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--servers", default="native,uvicorn")
    parser.add_argument("--workloads", default="modern,legacy")
    parser.add_argument("--connections", default="16", help="wrk's connections, comma-separated")
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--pythonpath", default=str(bench_http.REPO / "python"))
    args = parser.parse_args()
    missing = [tool for tool in ("valgrind", "callgrind_control", "wrk") if not shutil.which(tool)]
    if missing:
        print(f"needs {', '.join(missing)} (apt-get install valgrind wrk)", file=sys.stderr)
        return 1
    print("| server | workload | conns | requests | Ir per request |\n|---|---|---:|---:|---:|")
    for server in args.servers.split(","):
        for workload in args.workloads.split(","):
            for conns in (int(c) for c in args.connections.split(",")):
                count, per_request = measure(server, workload, args.seconds, args.pythonpath, conns)
                print(
                    f"| {server} | {workload} | {conns} | {count} | {per_request:,.0f} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
