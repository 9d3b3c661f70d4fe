"""How many idle streams one worker holds, and the memory each costs.

Opens N concurrent idle streams against one server process and reads the server's resident
memory (``VmRSS``) before and after: 2026-07-28 ``subscriptions/listen`` streams and legacy GET
streams (one session each), for mcpfast and for the official SDK (`mcp`).

    python benches/bench_streams.py [--counts 1000 10000] [--only mcpfast] [--engine native]

Prints KB per stream; with --write appends the table to benches/RESULTS.md. Both processes
raise their file-descriptor limit to the hard limit (printed: it bounds the streams one process
can hold), and the client spreads its connections over ``--sources`` loopback addresses
(127.0.0.1, 127.0.0.2, ...), each with its own ephemeral ports, so that counts past the ~28,000
ephemeral ports of one address work.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}


def raise_fd_limit() -> int:
    """Raise this process's file-descriptor limit to the hard limit; returns it."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start(argv: list[str], port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "python"),
        "MCPFAST_STATE_DIR": tempfile.mkdtemp(),
    }
    process = subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=raise_fd_limit,
    )
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return process
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("server did not start")


def http_request(method: str, port: int, headers: dict[str, str], body: bytes = b"") -> bytes:
    lines = [f"{method} /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if body:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def initialize(port: int, source: str) -> str:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "b", "version": "1"},
            },
        }
    ).encode()
    stream = await trio.open_tcp_stream("127.0.0.1", port, local_address=source)
    async with stream:
        await stream.send_all(
            http_request(
                "POST",
                port,
                {
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream",
                    "Connection": "close",
                },
                body,
            )
        )
        data = b""
        while b"\r\n\r\n" not in data:
            data += await stream.receive_some()
    for line in data.split(b"\r\n\r\n")[0].split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"mcp-session-id":
            return value.strip().decode()
    raise RuntimeError("no session id")


async def hold(
    kind: str,
    port: int,
    opened: trio.Semaphore,
    ready: list[int],
    stop: trio.Event,
    source: str = "127.0.0.1",
) -> None:
    """Open one stream from the address ``source``, wait for its response head, then hold it
    until ``stop``."""
    async with opened:
        if kind == "listen":
            body = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "subscriptions/listen",
                    "params": {"_meta": META, "notifications": {"toolsListChanged": True}},
                }
            ).encode()
            request = http_request(
                "POST",
                port,
                {
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream",
                    "MCP-Protocol-Version": "2026-07-28",
                    "Mcp-Method": "subscriptions/listen",
                },
                body,
            )
        else:
            session = await initialize(port, source)
            request = http_request(
                "GET",
                port,
                {
                    "Accept": "text/event-stream",
                    "Mcp-Session-Id": session,
                    "MCP-Protocol-Version": "2025-11-25",
                },
            )
        stream = await trio.open_tcp_stream("127.0.0.1", port, local_address=source)
        await stream.send_all(request)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = await stream.receive_some()
            if not chunk:
                raise RuntimeError("closed before the stream opened")
            data += chunk
        if not data.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(data[:200].decode(errors="replace"))
    ready.append(1)
    async with stream:
        await stop.wait()


async def measure(kind: str, port: int, pid: int, count: int, sources: int) -> dict[str, Any]:
    before = rss_kb(pid)
    ready: list[int] = []
    stop = trio.Event()
    opened = trio.Semaphore(64)
    failures: list[str] = []

    async def guarded(source: str) -> None:
        try:
            await hold(kind, port, opened, ready, stop, source)
        except Exception as exc:
            failures.append(str(exc)[:120])

    start_time = time.monotonic()
    async with trio.open_nursery() as nursery:
        for i in range(count):
            nursery.start_soon(guarded, f"127.0.0.{1 + i % sources}")
        with trio.move_on_after(600):
            while len(ready) + len(failures) < count:
                await trio.sleep(0.2)
        await trio.sleep(2)
        after = rss_kb(pid)
        stop.set()
    held = len(ready)
    return {
        "kind": kind,
        "count": count,
        "held": held,
        "failures": len(failures),
        "first_failure": failures[0] if failures else "",
        "rss_before_mb": before / 1024,
        "rss_after_mb": after / 1024,
        "kb_per_stream": (after - before) / held if held else 0.0,
        "seconds": time.monotonic() - start_time,
    }


_ENGINE_ROWS = {"hypercorn": "mcpfast", "native": "mcpfast native engine"}
"""The row of each engine (`--engine`)."""


_MCPFAST = (
    "import sys, trio, mcpfast; sys.path.insert(0, sys.argv[4]); from mcpfast_echo import server; "
    "trio.run(mcpfast.serve, server, mcpfast.Config("
    "port=int(sys.argv[1]), engine=sys.argv[2], max_connections=int(sys.argv[3])))"
)
"""`servers/mcpfast_echo.py`'s server, with ``max_connections`` past the streams to hold."""


def servers(most: int) -> list[tuple[str, list[str], tuple[str, ...]]]:
    """The rows: a name, the server's command (``""``: its port) and the kinds of stream."""
    py = sys.executable
    here = str(HERE / "servers")
    room = str(most + 100)
    out: list[tuple[str, list[str], tuple[str, ...]]] = [
        ("mcpfast", [py, "-c", _MCPFAST, "", "hypercorn", room, here], ("listen", "get")),
        (
            "mcpfast native engine",
            [py, "-c", _MCPFAST, "", "native", room, here],
            ("listen", "get"),
        ),
    ]
    try:
        import mcp  # noqa: F401

        out.append(
            (
                "sdk (uvicorn, session)",
                [py, str(HERE / "servers" / "sdk_echo.py"), "", "uvicorn", "session"],
                ("get",),
            )
        )
        out.append(
            (
                "sdk (uvicorn, stateless)",
                [py, str(HERE / "servers" / "sdk_echo.py"), "", "uvicorn", "stateless"],
                ("listen",),
            )
        )
    except ImportError:
        pass
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--counts", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--only", default="")
    parser.add_argument(
        "--engine", choices=["hypercorn", "native"], help="only mcpfast, on this engine"
    )
    parser.add_argument(
        "--sources", type=int, default=8, help="loopback source addresses (127.0.0.1-N)"
    )
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    limit = raise_fd_limit()
    print(f"file-descriptor limit (hard, per process): {limit}", flush=True)
    if max(args.counts) > limit - 100:
        print(f"  counts past ~{limit - 100} cannot all be held here", flush=True)
    rows = []
    for name, argv, kinds in servers(max(args.counts)):
        if args.only and not name.startswith(args.only):
            continue
        if args.engine and name != _ENGINE_ROWS[args.engine]:
            continue
        for kind in kinds:
            for count in args.counts:
                port = free_port()
                full = [a if a else str(port) for a in argv] + ([] if "" in argv else [str(port)])
                process = start(full, port)
                try:
                    time.sleep(1)
                    measured = trio.run(measure, kind, port, process.pid, count, args.sources)
                    row = {"server": name, **measured}
                finally:
                    process.kill()
                    process.wait()
                rows.append(row)
                print(
                    f"{name:26} {kind:6} {count:6}: held {row['held']:6} failures {row['failures']:5} "
                    f"rss {row['rss_before_mb']:.0f} -> {row['rss_after_mb']:.0f} MB, "
                    f"{row['kb_per_stream']:.1f} KB/stream ({row['seconds']:.0f} s) {row['first_failure']}",
                    flush=True,
                )
    table = [
        "| server | stream | opened | held | failures | RSS before MB | RSS after MB | KB per stream |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        table.append(
            f"| {r['server']} | {r['kind']} | {r['count']} | {r['held']} | {r['failures']} | "
            f"{r['rss_before_mb']:.0f} | {r['rss_after_mb']:.0f} | {r['kb_per_stream']:.1f} |"
        )
    print("\n".join(table))
    if args.write:
        with (HERE / "RESULTS.md").open("a") as out:
            out.write(
                "\n## Idle streams per worker\n\n`python benches/bench_streams.py --counts "
                + " ".join(map(str, args.counts))
                + "`: concurrent idle streams held by one server process "
                "and its resident memory before/after (listen = 2026-07-28 `subscriptions/listen`, "
                "get = legacy GET stream, one session each).\n\n" + "\n".join(table) + "\n"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
