"""How fast ``mcpfast load --engine fast`` drives a server, against wrk and the locust engine, in
one run: each server pinned to one core (``taskset``), each generator on another, the same
connections and time, stateless ``tools/call echo`` (wrk: the same body, unjudged).

Servers: the plain axum echo (``benches/axum_echo``, built with ``cargo build --release`` there;
a fixed JSON-RPC answer, no MCP: the ceiling of one core) and mcpfast's native engine
(``benches/servers/mcpfast_echo.py``). Rounds interleave the generators, so drift of the
machine hits them alike; the table gives each generator's median req/s per server and its ratio
to wrk's in the same run (``fast/wrk``: 1.0 means the engine drives the server as hard as wrk).

    python loadtests/bench_fast.py [--seconds 5] [--connections 32] [--rounds 3]
        [--server-core 0] [--load-core 1] [--json results.json]

Linux only (``taskset``); needs wrk. Exit 0, or 1 when a run failed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench_processes import free_port, wait_listening

REPO = Path(__file__).resolve().parents[1]
AXUM = REPO / "benches" / "axum_echo" / "target" / "release" / "axum-echo"


def wrk_script() -> str:
    """wrk's Lua: the fast engine's own request (`mcpfast.load.wire.modern_request`)."""
    sys.path.insert(0, str(REPO / "python"))
    from mcpfast.load.wire import modern_request, modern_transport

    params = {"name": "echo", "arguments": {"text": "hi"}}
    body, headers = modern_request(modern_transport(), 1, "tools/call", params)
    lines = ['wrk.method = "POST"', f"wrk.body = {json.dumps(body.decode())}"]
    lines += [f"wrk.headers[{json.dumps(k)}] = {json.dumps(v)}" for k, v in headers.items()]
    return "\n".join(lines) + "\n"


GENERATORS = ("fast", "wrk", "locust")


def servers() -> dict[str, list[str]]:
    """The servers' command lines (``{port}`` to fill in)."""
    found = {
        "mcpfast native": [sys.executable, "benches/servers/mcpfast_echo.py", "{port}", "native"]
    }
    if AXUM.exists():
        found = {"axum echo": [str(AXUM), "{port}"], **found}
    else:
        print(f"(no axum echo: cargo build --release in {AXUM.parents[2]})", file=sys.stderr)
    return found


def run_wrk(url: str, args: argparse.Namespace, script: Path) -> float:
    """wrk's req/s (one thread, ``--connections``)."""
    command = ["taskset", "-c", args.load_core, "wrk", "-t1", f"-c{args.connections}"]
    command += [f"-d{args.seconds}s", "-s", str(script), url]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    found = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if found is None or "Non-2xx" in out:
        raise RuntimeError(f"wrk: {out}")
    return float(found.group(1))


def run_mcpfast(url: str, engine: str, args: argparse.Namespace, out: Path) -> float:
    """``mcpfast load``'s req/s with ``engine`` (``--users`` = the connections)."""
    command = ["taskset", "-c", args.load_core, sys.executable, "-m", "mcpfast.load.runner"]
    command += [url, "--user-class", "tools", "-u", str(args.connections)]
    command += ["-t", f"{args.seconds}s", "-q", "--out", str(out), "--engine", engine]
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    if done.returncode != 0 or summary["total"]["failures"]:
        raise RuntimeError(f"mcpfast load --engine {engine}: {done.stdout}{done.stderr}")
    return float(summary["total"]["rps"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--server-core", default="0")
    parser.add_argument("--load-core", default="1")
    parser.add_argument("--json", default="", metavar="PATH")
    args = parser.parse_args()
    if shutil.which("wrk") is None or shutil.which("taskset") is None:
        print("needs wrk and taskset", file=sys.stderr)
        return 1
    results: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        script = Path(scratch) / "post.lua"
        script.write_text(wrk_script())
        for name, argv in servers().items():
            port = free_port()
            command = ["taskset", "-c", args.server_core, *(a.format(port=port) for a in argv)]
            env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
            server = subprocess.Popen(
                command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            url = f"http://127.0.0.1:{port}/mcp"
            rates = results.setdefault(name, {g: [] for g in GENERATORS})
            try:
                wait_listening(port, server)
                for round_index in range(args.rounds):
                    order = GENERATORS if round_index % 2 == 0 else GENERATORS[::-1]
                    for generator in order:
                        out = Path(scratch) / f"{name}-{generator}-{round_index}".replace(" ", "_")
                        rate = (
                            run_wrk(url, args, script)
                            if generator == "wrk"
                            else run_mcpfast(url, generator, args, out)
                        )
                        rates[generator].append(rate)
                        print(
                            f"{name} round {round_index + 1} {generator}: {rate:.0f} req/s",
                            flush=True,
                        )
            except RuntimeError as exc:
                print(exc, file=sys.stderr)
                return 1
            finally:
                server.terminate()
                server.wait(10)
    print("\nserver            fast req/s   wrk req/s   locust req/s   fast/wrk   fast/locust")
    for name, rates in results.items():
        m = {g: statistics.median(v) for g, v in rates.items()}
        print(
            f"{name:<16}  {m['fast']:>10.0f}  {m['wrk']:>10.0f}  {m['locust']:>13.0f}  "
            f"{m['fast'] / m['wrk']:>9.2f}  {m['fast'] / m['locust']:>12.2f}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
