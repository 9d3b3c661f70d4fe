"""In-process protocol overhead: the ASGI app alone, no sockets, against the bare echo app.

Drives each app with a ready-made ASGI scope, body and ``send`` (the same for every row), so the
difference between rows is the MCP work per request: framing, checks, dispatch, encoding.

    python benches/bench_dispatch.py [--requests 20000] [--profile modern|legacy]
    python benches/bench_dispatch.py --instructions [--pythonpath DIR] [--by-function K]
    python benches/bench_dispatch.py --cold 16

``--instructions`` counts user-space instructions per request with callgrind instead (a measure
the noise of a shared machine does not move): each app and workload runs under valgrind twice,
300 and 1,300 requests, and the difference is divided by 1,000 (start-up and imports cancel
out). ``--pythonpath`` runs mcpfast from another tree (a ``git worktree`` of an earlier commit)
for a before/after comparison. ``--by-function K`` adds, per workload, the K C functions whose
instructions per request grow most from the bare app to mcpfast (callgrind's self cost: every
Python function's bytecode counts in ``_PyEval_EvalFrameDefault``), which says whether the
overhead is interpretation, allocation, dict lookups or the codecs.

``--cold N`` times each app's own CPU per request (the thread's CPU time around the call) in a
tight loop and again with N HTTP/1.1 request-and-response cycles of h11 between requests, as a
Hypercorn worker with N busy connections runs between two requests of one: the same Python
code costs more when the worker's own work has gone through the CPU's caches in between.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import json
import os
import pstats
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import h11
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent / "servers"))
# after PYTHONPATH, where --pythonpath puts another tree
sys.path.append(str(Path(__file__).resolve().parent.parent / "python"))

from bare_echo import app as bare_app
from mcpfast_echo import server

import mcpfast
from mcpfast.server.state.keys import KeyRing

HERE = Path(__file__).resolve()
KEYS = KeyRing(keys={"k": b"0123456789abcdef0123456789abcdef"}, signing="k")
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}


def scope(headers: dict[str, str]) -> dict[str, Any]:
    base = {
        "host": "127.0.0.1:8000",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
    }
    base.update(headers)
    return {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(k.encode(), v.encode()) for k, v in base.items()],
    }


async def drive(app: Any, the_scope: dict[str, Any], body: bytes, n: int) -> float:
    """``n`` requests, each handed to the app as Hypercorn's trio worker does: ``receive`` is a
    memory channel's, holding the body, then nothing (a client still connected)."""
    message = {"type": "http.request", "body": body, "more_body": False}
    sent: list[Any] = []

    async def send(event: dict[str, Any]) -> None:
        sent.append(event)

    start = time.perf_counter()
    for _ in range(n):
        feed, receive = trio.open_memory_channel[dict[str, Any]](1)
        feed.send_nowait(message)
        await app(the_scope, receive.receive, send)
    elapsed = time.perf_counter() - start
    assert b"hello" in sent[-1]["body"], sent[-1]
    return elapsed / n * 1e6


async def legacy_session(app: Any) -> str:
    init = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "b", "version": "1"},
            },
        }
    ).encode()
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": init, "more_body": False}

    async def send(event: dict[str, Any]) -> None:
        sent.append(event)

    await app(scope({}), receive, send)
    return dict(sent[0]["headers"])[b"mcp-session-id"].decode()


def cases(app: Any, session: str) -> dict[str, tuple[dict[str, Any], bytes]]:
    call = {"name": "echo", "arguments": {"text": "hello"}}
    modern = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**call, "_meta": META}}
    ).encode()
    legacy = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
    ).encode()
    return {
        "modern": (
            scope(
                {
                    "mcp-protocol-version": "2026-07-28",
                    "mcp-method": "tools/call",
                    "mcp-name": "echo",
                }
            ),
            modern,
        ),
        "legacy": (
            scope({"mcp-protocol-version": "2025-11-25", "mcp-session-id": session}),
            legacy,
        ),
    }


async def main(args: argparse.Namespace) -> None:
    app = mcpfast.asgi_app(server, keys=KEYS)
    session = await legacy_session(app)
    print(f"codec backend: {mcpfast.BACKEND}")
    for name, (the_scope, body) in cases(app, session).items():
        await drive(app, the_scope, body, 500)
        await drive(bare_app, the_scope, body, 500)
        if args.profile == name:
            profiler = cProfile.Profile()
            profiler.enable()
            await drive(app, the_scope, body, args.requests)
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
            continue
        bare = min([await drive(bare_app, the_scope, body, args.requests) for _ in range(3)])
        ours = min([await drive(app, the_scope, body, args.requests) for _ in range(3)])
        print(
            f"{name:7} bare {bare:6.1f} us/request   mcpfast {ours:6.1f} us/request   "
            f"overhead {ours - bare:6.1f} us ({ours / bare:.2f}x)"
        )


async def one(app_name: str, workload: str, n: int) -> None:
    """``n`` requests of one app and workload, after 200 to warm up (`instructions`' runs)."""
    app = mcpfast.asgi_app(server, keys=KEYS)
    the_scope, body = cases(app, await legacy_session(app))[workload]
    target = app if app_name == "mcpfast" else bare_app
    await drive(target, the_scope, body, 200)
    await drive(target, the_scope, body, n)


_HEAD = b"POST /mcp HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"


def h11_cycles(n: int) -> None:
    """``n`` requests parsed and answered by h11, as Hypercorn does for other connections."""
    for _ in range(n):
        connection = h11.Connection(h11.SERVER)
        connection.receive_data(_HEAD)
        while not isinstance(connection.next_event(), h11.EndOfMessage):
            pass
        headers = [("content-type", "application/json"), ("content-length", "2")]
        connection.send(h11.Response(status_code=200, headers=headers))
        connection.send(h11.Data(data=b"{}"))
        connection.send(h11.EndOfMessage())


async def app_cpu(app: Any, the_scope: dict[str, Any], body: bytes, n: int, cycles: int) -> float:
    """The app's own CPU per request, in µs, the median of ``n`` requests after 200 to warm up,
    with ``cycles`` of `h11_cycles` before each."""
    message = {"type": "http.request", "body": body, "more_body": False}
    sent: list[Any] = []

    async def send(event: dict[str, Any]) -> None:
        sent.append(event)

    times = []
    for i in range(200 + n):
        h11_cycles(cycles)
        feed, receive = trio.open_memory_channel[dict[str, Any]](1)
        feed.send_nowait(message)
        start = time.thread_time_ns()
        await app(the_scope, receive.receive, send)
        if i >= 200:
            times.append(time.thread_time_ns() - start)
    assert b"hello" in sent[-1]["body"], sent[-1]
    return statistics.median(times) / 1000


async def cold(cycles: int) -> None:
    app = mcpfast.asgi_app(server, keys=KEYS)
    for workload, (the_scope, body) in cases(app, await legacy_session(app)).items():
        for between in (0, cycles):
            bare = min([await app_cpu(bare_app, the_scope, body, 2000, between) for _ in range(3)])
            ours = min([await app_cpu(app, the_scope, body, 2000, between) for _ in range(3)])
            print(
                f"{workload:7} {between:3} h11 cycles between: bare {bare:6.1f} us   "
                f"mcpfast {ours:6.1f} us   overhead {ours - bare:6.1f} us",
                flush=True,
            )


def instructions(
    app_name: str, workload: str, pythonpath: str | None, keep: Path | None = None
) -> int:
    """User-space instructions per request of one app and workload, by callgrind (its profiles
    kept in ``keep``, when given, for `by_function`)."""
    env = {**os.environ, "PYTHONPATH": pythonpath} if pythonpath else None
    counts = []
    for n in (300, 1300):
        out = keep / f"{app_name}-{workload}-{n}.out" if keep is not None else "/dev/null"
        argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable]
        argv += [str(HERE), "--one", app_name, workload, str(n)]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
        counts.append(int(re.findall(r"Collected : (\d+)", done.stderr)[-1]))
    return (counts[1] - counts[0]) // 1000


_ANNOTATED = re.compile(r"\s*([\d,]+) \([^)]*\)\s+(\S+)")


def by_function(keep: Path, app_name: str, workload: str) -> collections.Counter[str]:
    """Instructions per request by C function (its own, not its callees'), from the profiles
    `instructions` kept: 1,300 requests less 300, divided by 1,000."""
    per_request: collections.Counter[str] = collections.Counter()
    for n, sign in ((1300, 1), (300, -1)):
        argv = [
            "callgrind_annotate",
            "--threshold=100",
            str(keep / f"{app_name}-{workload}-{n}.out"),
        ]
        listing = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        for line in listing.splitlines():
            found = _ANNOTATED.match(line)
            if found is not None and "PROGRAM TOTALS" not in line:
                name = found[2].rsplit("/", 1)[-1]
                per_request[name] += sign * int(found[1].replace(",", "")) / 1000
    return per_request


def count_all(pythonpath: str | None, functions: int = 0) -> None:
    print(f"mcpfast from {mcpfast.__file__ if pythonpath is None else pythonpath}")
    with tempfile.TemporaryDirectory() as kept:
        keep = Path(kept) if functions else None
        for workload in ("modern", "legacy"):
            bare = instructions("bare", workload, pythonpath, keep)
            ours = instructions("mcpfast", workload, pythonpath, keep)
            print(
                f"{workload:7} bare {bare:8,} Ir/request   mcpfast {ours:8,} Ir/request   "
                f"overhead {ours - bare:7,} ({ours / bare:.2f}x)",
                flush=True,
            )
            if keep is not None:
                base, mine = (
                    by_function(keep, "bare", workload),
                    by_function(keep, "mcpfast", workload),
                )
                grown = sorted(mine.keys() | base.keys(), key=lambda f: base[f] - mine[f])
                print(f"  {'more':>7} {'mcpfast':>8} {'bare':>8}  C function (its own Ir/request)")
                for name in grown[:functions]:
                    print(
                        f"  {mine[name] - base[name]:7,.0f} {mine[name]:8,.0f} {base[name]:8,.0f}  {name}"
                    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--profile", choices=("modern", "legacy"))
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--pythonpath")
    parser.add_argument("--by-function", type=int, default=0, metavar="K")
    parser.add_argument("--cold", type=int, metavar="N")
    parser.add_argument("--one", nargs=3, metavar=("APP", "WORKLOAD", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        trio.run(one, args.one[0], args.one[1], int(args.one[2]))
    elif args.instructions:
        count_all(args.pythonpath, args.by_function)
    elif args.cold is not None:
        trio.run(cold, args.cold)
    else:
        trio.run(main, args)
