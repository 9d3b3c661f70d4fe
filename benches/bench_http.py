"""Side-by-side protocol-overhead benchmark: one run, one load generator, every server.

Rows: the baselines, a bare JSON-RPC echo ASGI app (no MCP) on Hypercorn-trio (what the Hypercorn
engine runs on) and on uvicorn with httptools (asyncio's loop, and uvloop), and a bare echo on Trio
with raw sockets (the floor of Trio); then mcpfast on Hypercorn and on its native engine, each with
the Rust codec and with the pure-Python one, and the official SDK (`mcp`) on Hypercorn-trio and on
uvicorn — the same one-tool echo server in each — for a 2026-07-28 stateless ``tools/call`` and a
legacy (2025-11-25) session ``tools/call``, at 16 and 64 connections. Every response body is
checked. The server is pinned to CPU 0 and wrk to CPU 1 when ``taskset`` exists.

    python benches/bench_http.py [--seconds 10] [--connections 16 64] [--only mcpfast-rust,...]

Prints the table and writes it to benches/RESULTS.md (with the machine and versions).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import httpx2

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PY = sys.executable
TEXT = "hello bench"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}


UVLOOP = "bare (uvicorn+httptools+uvloop)"


@dataclass
class Target:
    name: str
    argv: list[str]
    workloads: tuple[str, ...]
    env: dict[str, str] | None = None


def rust_built() -> bool:
    probe = subprocess.run(
        [PY, "-c", "import mcpfast._rust"],
        env={**os.environ, "PYTHONPATH": str(REPO / "python")},
        capture_output=True,
    )
    return probe.returncode == 0


def targets() -> list[Target]:
    servers = HERE / "servers"
    out = [
        Target("bare (hypercorn-trio)", [PY, str(servers / "bare_echo.py")], ("modern", "legacy"))
    ]
    uvicorn = [m for m in ("uvicorn", "httptools", "uvloop") if find_spec(m) is None]
    if uvicorn:
        print(f"the bench extra is not installed ({', '.join(uvicorn)}): no uvicorn rows")
    else:
        for loop, label in (("asyncio", "bare (uvicorn+httptools)"), ("uvloop", UVLOOP)):
            argv = [PY, str(servers / "bare_uvicorn.py"), "", loop]
            out.append(Target(label, argv, ("modern", "legacy")))
    out.append(Target("bare (trio, raw sockets)", [PY, str(servers / "bare_trio.py")], ("modern",)))
    if rust_built():
        out.append(
            Target(
                "mcpfast hypercorn engine",
                [PY, str(servers / "mcpfast_echo.py")],
                ("modern", "legacy"),
            )
        )
        out.append(
            Target(
                "mcpfast native engine",
                [PY, str(servers / "mcpfast_echo.py"), "", "native"],
                ("modern", "legacy"),
            )
        )
    else:
        print("the Rust extension is not built (make setup); its row is left out", file=sys.stderr)
    out += [
        Target(
            "mcpfast hypercorn, python codec",
            [PY, str(servers / "mcpfast_echo.py")],
            ("modern", "legacy"),
            {"MCPFAST_NO_EXTENSIONS": "1"},
        ),
        Target(
            "mcpfast native, python codec",
            [PY, str(servers / "mcpfast_echo.py"), "", "native"],
            ("modern", "legacy"),
            {"MCPFAST_NO_EXTENSIONS": "1"},
        ),
    ]
    try:
        metadata.version("mcp")
    except metadata.PackageNotFoundError:
        return out
    for engine in ("hypercorn", "uvicorn"):
        label = "hypercorn-trio" if engine == "hypercorn" else "uvicorn"
        out.append(
            Target(
                f"sdk stateless ({label})",
                [PY, str(servers / "sdk_echo.py"), "", engine, "stateless"],
                ("modern",),
            )
        )
        out.append(
            Target(
                f"sdk session ({label})",
                [PY, str(servers / "sdk_echo.py"), "", engine, "session"],
                ("legacy",),
            )
        )
    return out


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def pinned(argv: list[str], cpu: int) -> list[str]:
    cores = os.cpu_count() or 1
    return ["taskset", "-c", str(cpu), *argv] if shutil.which("taskset") and cores > 1 else argv


def start(target: Target, port: int) -> subprocess.Popen[bytes]:
    argv = [a if a else str(port) for a in target.argv]
    if "" not in target.argv:
        argv.append(str(port))
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "python"),
        "MCPFAST_STATE_DIR": tempfile.mkdtemp(),
        **(target.env or {}),
    }
    process = subprocess.Popen(
        pinned(argv, 0), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"{target.name} did not start")


def stop(process: subprocess.Popen[bytes]) -> None:
    """Terminate a server; killed if it is still there 5 s later."""
    process.terminate()
    try:
        process.wait(5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


STAND_IN_SESSION = "v1.bare." + "0" * 134
"""The ``Mcp-Session-Id`` a legacy request carries to a server that keeps no sessions (the bare
baselines), as long as the one mcpfast mints for the benchmark's session (142 bytes), so that
every row's HTTP stack parses the same head."""


def request_for(workload: str, url: str) -> tuple[bytes, dict[str, str]]:
    """The body and headers of one ``tools/call`` (a legacy one opens a session first)."""
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    params: dict[str, Any] = {"name": "echo", "arguments": {"text": TEXT}}
    if workload == "modern":
        params["_meta"] = MODERN_META
        headers.update(
            {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "echo"}
        )
    else:
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        }
        response = httpx2.post(url, json=init, headers=headers, timeout=10)
        session = response.headers.get("mcp-session-id")
        headers["mcp-protocol-version"] = "2025-11-25"
        if not session:  # a bare baseline: no session, but the same head to parse
            headers["mcp-session-id"] = STAND_IN_SESSION
        else:
            headers["mcp-session-id"] = session
            httpx2.post(
                url,
                json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                headers=headers,
                timeout=10,
            )
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    ).encode()
    check = httpx2.post(url, content=body, headers=headers, timeout=10)
    if TEXT not in check.text:
        raise RuntimeError(
            f"{workload} request does not work: {check.status_code} {check.text[:200]}"
        )
    return body, headers


LUA = """
wrk.method = "POST"
wrk.body = %(body)s
%(headers)s
local bad = 0
function response(status, headers, body)
  if status ~= 200 or not string.find(body, %(expect)s, 1, true) then bad = bad + 1 end
end
local threads = {}
function setup(thread) table.insert(threads, thread) end
function done(summary, latency, requests)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout + summary.errors.status
  local mismatched = 0
  for _, t in ipairs(threads) do mismatched = mismatched + (t:get("bad") or 0) end
  io.write(string.format('RESULT {"requests": %%d, "seconds": %%f, "p50": %%d, "p99": %%d, "errors": %%d, "mismatched": %%d}\\n',
    summary.requests, summary.duration / 1e6, latency:percentile(50), latency:percentile(99), errors, mismatched))
end
"""


def lua_string(value: str) -> str:
    return "[==[" + value + "]==]"


def run_wrk(
    url: str, body: bytes, headers: dict[str, str], connections: int, seconds: float
) -> dict[str, Any]:
    header_lines = "\n".join(
        f"wrk.headers[ {lua_string(k)} ] = {lua_string(v)}" for k, v in headers.items()
    )
    script = LUA % {
        "body": lua_string(body.decode()),
        "headers": header_lines,
        "expect": lua_string(TEXT),
    }
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(script)
    argv = pinned(
        [
            "wrk",
            "-t1",
            f"-c{connections}",
            f"-d{max(1, round(seconds))}s",
            "--timeout",
            "10s",
            "-s",
            handle.name,
            url,
        ],
        1,
    )
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if not lines:
        raise RuntimeError(f"wrk printed no result: {done.stdout}{done.stderr}")
    line = lines[0]
    result: dict[str, Any] = json.loads(line[7:])
    result["rps"] = result["requests"] / result["seconds"]
    return result


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used (steal and waiting excluded)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def versions() -> str:
    names = ["trio", "hypercorn", "msgspec", "orjson", "mcp", "uvicorn"]
    found = []
    for name in names:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            pass
    wrk = subprocess.run(["wrk", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    return ", ".join(found) + f"; {wrk.strip()}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument(
        "--rounds", type=int, default=3, help="best of N interleaved rounds per cell"
    )
    parser.add_argument("--warmup", type=float, default=2)
    parser.add_argument("--connections", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--only", default="", help="comma-separated name prefixes")
    parser.add_argument("--no-write", action="store_true", help="do not write benches/RESULTS.md")
    args = parser.parse_args()
    if not shutil.which("wrk"):
        print(
            "wrk is not installed (apt-get install wrk); the locust fallback is `mcpfast load`",
            file=sys.stderr,
        )
        return 1
    chosen = [
        t
        for t in targets()
        if not args.only or any(t.name.startswith(p) for p in args.only.split(","))
    ]
    running: list[tuple[Target, str, subprocess.Popen[bytes]]] = []
    try:
        for target in chosen:
            port = free_port()
            running.append((target, f"http://127.0.0.1:{port}/mcp", start(target, port)))
        cells = []
        for target, url, process in running:
            for workload in target.workloads:
                body, headers = request_for(workload, url)
                run_wrk(url, body, headers, 16, args.warmup)
                cells += [
                    (target, workload, c, url, body, headers, process.pid) for c in args.connections
                ]
        # Rounds, each visiting every cell once: the machine's drift spreads over all rows
        # instead of landing on whichever server happened to run during a slow minute. The
        # servers' cells of one workload and connection count run back to back, in the
        # opposite order every other round, so that a ratio compares runs seconds apart.
        cells.sort(key=lambda cell: (cell[1], cell[2]))
        best: dict[tuple[str, str, int], dict[str, Any]] = {}
        p99s: dict[tuple[str, str, int], list[int]] = {}
        by_round: dict[tuple[str, str, int], dict[int, float]] = {}
        for round_no in range(args.rounds):
            for target, workload, connections, url, body, headers, pid in _alternated(
                cells, round_no
            ):
                cpu_before = cpu_seconds(pid)
                result = run_wrk(url, body, headers, connections, args.seconds)
                result["cpu_us"] = (
                    (cpu_seconds(pid) - cpu_before) / max(result["requests"], 1) * 1e6
                )
                key = (target.name, workload, connections)
                p99s.setdefault(key, []).append(result["p99"])
                by_round.setdefault(key, {})[round_no] = result["rps"]
                result["errors_total"] = (
                    result["errors"]
                    + result["mismatched"]
                    + best.get(key, {}).get("errors_total", 0)
                )
                cpu_us = min(result["cpu_us"], best.get(key, {}).get("cpu_us", float("inf")))
                if key not in best or result["rps"] > best[key]["rps"]:
                    best[key] = result
                else:
                    best[key]["errors_total"] = result["errors_total"]
                best[key]["cpu_us"] = cpu_us
                print(
                    f"round {round_no + 1} {target.name:30} {workload:7} c={connections:<3} {result['rps']:8.0f} req/s  "
                    f"p50 {result['p50'] / 1000:6.2f} ms  p99 {result['p99'] / 1000:6.2f} ms",
                    flush=True,
                )
        rows = [
            {
                "server": name,
                "workload": workload,
                "connections": c,
                **result,
                "p99_median": statistics.median(p99s[name, workload, c]),
                "by_round": by_round[name, workload, c],
            }
            for (name, workload, c), result in best.items()
        ]
    finally:
        for _, _, process in running:
            stop(process)
    table = render(rows)
    print()
    print(table)
    if not args.no_write:
        header = (
            "# Benchmark results\n\n"
            f"`python benches/bench_http.py --seconds {args.seconds:g} --rounds {args.rounds}` on "
            f"{platform.node() or 'this machine'}: "
            f"{os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), Python {platform.python_version()}, "
            f"{versions()}. Every server runs at once, pinned to CPU 0 (idle but for the one under load); wrk "
            f"(1 thread) on CPU 1. Each cell is the best of {args.rounds} interleaved rounds of {args.seconds:g} s "
            f"(after a {args.warmup:g} s warm-up); p50/p99 are from that best run, `p99 med` is the "
            "median of the rounds' p99 (the best run by req/s is not the best by p99); every response body is "
            "checked (`errors` counts failures and mismatches over all rounds).\n"
            "The ratios are req/s against the two bare echo apps (no MCP) for the same workload and "
            "connections in the same run: Hypercorn-trio (what the Hypercorn engine runs on) and "
            "uvicorn with httptools (the fastest mainstream Python stack); `vs` compares the best "
            "rounds, `rounds vs` is the median of each round's ratio (the servers' runs of a cell "
            "back to back, their order alternating). `server CPU µs/req` is the server process's user+system CPU time per request "
            "(best round): steal and idle time do not count, so it is the steadiest measure of "
            "per-request cost on a noisy machine.\n\n"
        )
        (HERE / "RESULTS.md").write_text(header + table + "\n")
    return 0


BASELINES = ("bare (hypercorn-trio)", "bare (uvicorn+httptools)")
"""The rows every other is compared with: the stack mcpfast's Hypercorn engine runs on, and the
fastest mainstream Python stack (the native engine's target)."""


def render(rows: list[dict[str, Any]]) -> str:
    base = {
        (name, r["workload"], r["connections"]): r
        for r in rows
        for name in BASELINES
        if r["server"] == name
    }
    lines = [
        "| server | workload | conns | req/s | p50 ms | p99 ms | p99 med ms | errors "
        "| vs bare hypercorn | vs bare uvicorn | rounds vs hypercorn | rounds vs uvicorn "
        "| p99 vs uvicorn | p99 med vs uvicorn | server CPU µs/req |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        cells = []
        for name in BASELINES:
            b = base.get((name, r["workload"], r["connections"]))
            cells.append(f"{r['rps'] / b['rps']:.2f}x" if b else "-")
        for name in BASELINES:
            b = base.get((name, r["workload"], r["connections"]))
            cells.append(_rounds_ratio(r["by_round"], b["by_round"]) if b else "-")
        u = base.get((BASELINES[1], r["workload"], r["connections"]))
        p99 = f"{r['p99'] / u['p99']:.2f}x" if u and u["p99"] else "-"
        p99_median = f"{r['p99_median'] / u['p99_median']:.2f}x" if u and u["p99_median"] else "-"
        lines.append(
            f"| {r['server']} | {r['workload']} | {r['connections']} | {r['rps']:.0f} | "
            f"{r['p50'] / 1000:.2f} | {r['p99'] / 1000:.2f} | {r['p99_median'] / 1000:.2f} | "
            f"{r['errors_total']} | {' | '.join(cells)} | {p99} | {p99_median} | "
            f"{r['cpu_us']:.0f} |"
        )
    return "\n".join(lines)


def _alternated(cells: list[Any], round_no: int) -> list[Any]:
    """The round's cells in order, each group of one workload and connection count (adjacent
    in ``cells``) reversed every other round."""
    if round_no % 2 == 0:
        return cells
    out: list[Any] = []
    for _, group in itertools.groupby(cells, key=lambda cell: (cell[1], cell[2])):
        out += reversed(list(group))
    return out


def _rounds_ratio(ours: dict[int, float], base: dict[int, float]) -> str:
    """The median, over the rounds, of a cell's req/s against the baseline's in that round."""
    ratios = [ours[n] / base[n] for n in ours if base.get(n)]
    return f"{statistics.median(ratios):.2f}x" if ratios else "-"


if __name__ == "__main__":
    raise SystemExit(main())
