"""Session churn, side by side: every virtual user opens a legacy session, calls once, ends it.

Each connection (one virtual user, keep-alive) loops: ``initialize`` (2025-11-25),
``notifications/initialized``, one ``tools/call`` of ``echo`` and ``DELETE`` of the session:
the pattern of a published cross-SDK benchmark, which makes a server mint, keep and end sessions
as fast as it answers calls. Rows: mcpfast on its native engine and on Hypercorn; the official
SDK in session mode (JSON answers) on uvicorn and on Hypercorn-trio, with its default logging
(INFO through rich: two lines per session) and, on uvicorn, with its logs at WARNING; FastMCP
with its defaults (SSE answers, on uvicorn) when installed. Ratios are to the SDK's default on
uvicorn.

wrk keeps no state per connection, so the load generator is this file run with ``--drive``:
Trio on non-blocking stdlib sockets, a minimal HTTP/1.1 reader (``Content-Length``, chunked, and
``text/event-stream`` bodies, read to their end so that the connection can be reused). Every
answer is checked: the status (200 for ``initialize`` and the call, 202 for the notification,
200, 202 (rmcp's) or 204 for ``DELETE``), the ``mcp-session-id`` of ``initialize``, and the
iteration's own echo text in the call's result. The servers are pinned to CPU 0 and the load generator to CPU 1
(``taskset``), as in bench_http.py; ``--clients N`` splits the connections over N load-generator
processes (pinned in turn to ``--client-cpus``, default CPU 1), for when one process cannot keep
the server busy (see the ``load gen CPU`` column: near 100% of each generator's core means the
generator, not the server, set the pace; several generators on one core do not add any).

    python benches/bench_churn.py [--seconds 5] [--rounds 3] [--connections 16] [--clients 1]
        [--only "mcpfast native,sdk session (uvicorn)"]

Prints a markdown table; each cell is the best of R interleaved rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

import trio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_http import Target, cpu_seconds, free_port, pinned, start, stop  # noqa: E402

REPO = HERE.parent
PY = sys.executable
PATH = b"/mcp"
VERSION = b"2025-11-25"
REQUEST_TIMEOUT = 10.0
"""Seconds an iteration may take before it counts as an error (and its connection is redone)."""
RETRY_PAUSE = 0.05
"""Seconds before a connection that failed is opened again."""
MAX_REPLY = 1 << 20
"""Bytes a reply may buffer (head and body) before it counts as an error."""
MAX_ERROR_SAMPLES = 5
"""Error messages a generator reports (the first ones)."""
BASELINE = "sdk session (uvicorn)"
"""The row the ratios are to."""


# --- the load generator (``--drive``) ---------------------------------------------------------


class BadAnswer(Exception):
    """An answer that is not what the step expects (the iteration counts as an error)."""


class Unframed(Exception):
    """A reply that cannot be framed as HTTP/1.1 (the connection cannot be reused)."""


class Reply(NamedTuple):
    status: int
    headers: dict[bytes, bytes]
    body: bytes


class Wire:
    """One keep-alive HTTP/1.1 connection on a non-blocking stdlib socket, driven by Trio's
    readiness waits (no stream objects: the generator's own cost per request stays small).
    Raises `OSError` (`ConnectionError` too) when the peer goes away, `Unframed` on a reply it
    cannot frame; after either (or a cancellation mid-exchange) the connection must be closed."""

    __slots__ = ("buffer", "closing", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()
        self.closing = False

    @classmethod
    async def open(cls, host: str, port: int) -> Wire:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            code = sock.connect_ex((host, port))
            if code not in (0, 115):  # EINPROGRESS
                raise OSError(code, os.strerror(code))
            await trio.lowlevel.wait_writable(sock)
            code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                raise OSError(code, os.strerror(code))
        except BaseException:
            sock.close()
            raise
        return cls(sock)

    def close(self) -> None:
        self.sock.close()

    async def exchange(self, request: bytes) -> Reply:
        """Send one whole request, read its whole reply."""
        view = memoryview(request)
        while view:
            try:
                view = view[self.sock.send(view) :]
            except BlockingIOError:
                await trio.lowlevel.wait_writable(self.sock)
        return await self.reply()

    async def more(self) -> None:
        await trio.lowlevel.wait_readable(self.sock)
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("the server closed the connection")
        self.buffer += data
        if len(self.buffer) > MAX_REPLY:
            raise Unframed("reply too large")

    async def find(self, mark: bytes, start: int) -> int:
        while (at := self.buffer.find(mark, start)) == -1:
            await self.more()
        return at

    async def fill(self, size: int) -> None:
        while len(self.buffer) < size:
            await self.more()

    async def reply(self) -> Reply:
        end = await self.find(b"\r\n\r\n", 0)
        lines = bytes(self.buffer[:end]).split(b"\r\n")
        try:
            status = int(lines[0].split(b" ", 2)[1])
        except (IndexError, ValueError):
            raise Unframed(f"bad status line {lines[0]!r}") from None
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
        start = end + 4
        if b"content-length" in headers:
            if not headers[b"content-length"].isdigit():
                raise Unframed(f"bad content-length {headers[b'content-length']!r}")
            size = int(headers[b"content-length"])
            await self.fill(start + size)
            body, consumed = bytes(self.buffer[start : start + size]), start + size
        elif headers.get(b"transfer-encoding", b"").lower() == b"chunked":
            body, consumed = await self.chunked(start)
        elif status in (204, 304) or status < 200:
            body, consumed = b"", start
        else:  # delimited by the end of the connection
            self.closing = True
            try:
                while True:
                    await self.more()
            except ConnectionError:
                pass
            body, consumed = bytes(self.buffer[start:]), len(self.buffer)
        del self.buffer[:consumed]
        if headers.get(b"connection", b"").lower() == b"close":
            self.closing = True
        return Reply(status, headers, body)

    async def chunked(self, start: int) -> tuple[bytes, int]:
        """The decoded body from ``start`` and where it ends (its last chunk and trailers read:
        an SSE answer to a POST is complete once its stream ends)."""
        parts: list[bytes] = []
        at = start
        while True:
            line_end = await self.find(b"\r\n", at)
            try:
                size = int(bytes(self.buffer[at:line_end]).split(b";")[0], 16)
            except ValueError:
                raise Unframed("bad chunk size") from None
            at = line_end + 2
            if size == 0:
                trailer_end = await self.find(b"\r\n", at)
                if trailer_end != at:  # trailers: they end with an empty line
                    trailer_end = await self.find(b"\r\n\r\n", at) + 2
                return b"".join(parts), trailer_end + 2
            await self.fill(at + size + 2)
            parts.append(bytes(self.buffer[at : at + size]))
            at += size + 2


@dataclass
class Tally:
    """What one load-generator process counted."""

    iterations: int = 0
    errors: int = 0
    latencies: list[float] = field(default_factory=list)
    samples: list[str] = field(default_factory=list)

    def error(self, what: str) -> None:
        self.errors += 1
        if len(self.samples) < MAX_ERROR_SAMPLES:
            self.samples.append(what)


def post(host: bytes, body: bytes, session: bytes | None = None) -> bytes:
    head = [
        b"POST " + PATH + b" HTTP/1.1",
        b"host: " + host,
        b"content-type: application/json",
        b"accept: application/json, text/event-stream",
        b"content-length: " + str(len(body)).encode(),
    ]
    if session is not None:
        head += [b"mcp-protocol-version: " + VERSION, b"mcp-session-id: " + session]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


def delete(host: bytes, session: bytes) -> bytes:
    return (
        b"DELETE " + PATH + b" HTTP/1.1\r\nhost: " + host + b"\r\nmcp-protocol-version: "
        + VERSION + b"\r\nmcp-session-id: " + session + b"\r\n\r\n"
    )  # fmt: skip


INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": VERSION.decode(),
            "capabilities": {},
            "clientInfo": {"name": "bench-churn", "version": "1"},
        },
    },
    separators=(",", ":"),
).encode()
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


def call(text: bytes) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
        b'"arguments":{"text":"' + text + b'"}}}'
    )


def expect(reply: Reply, statuses: tuple[int, ...], step: str) -> None:
    if reply.status not in statuses:
        raise BadAnswer(f"{step}: HTTP {reply.status} {reply.body[:120]!r}")


async def iterate(wire: Wire, host: bytes, text: bytes) -> None:
    """One virtual user's iteration on ``wire``. Raises `BadAnswer` on a wrong answer."""
    reply = await wire.exchange(post(host, INITIALIZE))
    expect(reply, (200,), "initialize")
    session = reply.headers.get(b"mcp-session-id")
    if not session:
        raise BadAnswer("initialize: no mcp-session-id")
    if b'"protocolVersion"' not in reply.body:
        raise BadAnswer(f"initialize: {reply.body[:120]!r}")
    expect(await wire.exchange(post(host, INITIALIZED, session)), (202,), "initialized")
    reply = await wire.exchange(post(host, call(text), session))
    expect(reply, (200,), "tools/call")
    if b'"' + text + b'"' not in reply.body or b'"isError":true' in reply.body:
        raise BadAnswer(f"tools/call: {reply.body[:160]!r}")
    expect(await wire.exchange(delete(host, session)), (200, 202, 204), "DELETE")


async def user(number: int, host: str, port: int, until: float, tally: Tally) -> None:
    """Loop iterations until ``until`` (Trio time); an iteration cut off there is not counted.
    A wrong answer counts an error and the user goes on; a refused, broken or slow connection
    (an iteration over `REQUEST_TIMEOUT`) counts one and is opened again after `RETRY_PAUSE`."""
    authority = f"{host}:{port}".encode()
    wire: Wire | None = None
    count = 0
    try:
        with trio.move_on_at(until):
            while True:
                count += 1
                text = b"churn %d.%d" % (number, count)
                try:
                    with trio.fail_after(REQUEST_TIMEOUT):
                        if wire is None or wire.closing:
                            if wire is not None:
                                wire.close()
                            wire = await Wire.open(host, port)
                        begun = time.perf_counter()
                        await iterate(wire, authority, text)
                except BadAnswer as error:
                    tally.error(str(error))
                    continue
                except (OSError, Unframed, trio.TooSlowError) as error:
                    tally.error(f"{type(error).__name__}: {error}")
                    if wire is not None:
                        wire.closing = True
                    await trio.sleep(RETRY_PAUSE)
                    continue
                tally.iterations += 1
                tally.latencies.append(time.perf_counter() - begun)
    finally:
        if wire is not None:
            wire.close()


async def drive(host: str, port: int, connections: int, seconds: float, at: float) -> Tally:
    """Run ``connections`` users from wall-clock time ``at`` for ``seconds``."""
    tally = Tally()
    await trio.sleep(max(0.0, at - time.time()))
    until = trio.current_time() + seconds
    async with trio.open_nursery() as nursery:
        for number in range(connections):
            nursery.start_soon(user, number, host, port, until, tally)
    return tally


def drive_main(args: argparse.Namespace) -> int:
    host, _, port = args.drive.rpartition(":")
    begun, cpu = time.time(), time.process_time()
    tally = trio.run(drive, host, int(port), args.connections, args.seconds, args.at)
    result = {
        "iterations": tally.iterations,
        "errors": tally.errors,
        "samples": tally.samples,
        "seconds": time.time() - max(begun, args.at),
        "cpu": time.process_time() - cpu,
        "latencies": [round(s * 1e6) for s in tally.latencies],
    }
    print(json.dumps(result))
    return 0


# --- the run --------------------------------------------------------------------------------


def targets() -> list[Target]:
    servers = HERE / "servers"
    echo = str(servers / "mcpfast_echo.py")
    out = [
        Target("mcpfast native engine", [PY, echo, "", "native"], ()),
        Target("mcpfast on Hypercorn", [PY, echo, "", "hypercorn"], ()),
    ]
    if installed("mcp"):
        sdk, quiet = str(servers / "sdk_echo.py"), str(servers / "sdk_echo_quiet.py")
        out += [
            Target(BASELINE, [PY, sdk, "", "uvicorn", "session"], ()),
            Target("sdk session (hypercorn-trio)", [PY, sdk, "", "hypercorn", "session"], ()),
            Target(
                "sdk session, logs at WARNING (uvicorn)", [PY, quiet, "", "uvicorn", "session"], ()
            ),
        ]
    if installed("fastmcp"):
        peer = str(REPO / "tests/e2e/peers/fastmcp_echo.py")
        out.append(Target("fastmcp (uvicorn)", [PY, peer], ()))
    return out


def installed(name: str) -> bool:
    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def generator(port: int, connections: int, seconds: float, at: float, cpu: int) -> list[str]:
    """The command line of one load-generator process (this file with ``--drive``)."""
    argv = [PY, __file__, "--drive", f"127.0.0.1:{port}", "--connections", str(connections)]
    return pinned([*argv, "--seconds", str(seconds), "--at", repr(at)], cpu)


def measure(pid: int, port: int, args: argparse.Namespace, seconds: float) -> dict[str, Any]:
    """One round against the server ``pid`` on ``port``: ``args.clients`` generator processes
    sharing ``args.connections``, pinned in turn to ``args.client_cpus``, started together.
    Raises `RuntimeError` if one fails."""
    clients, connections = args.clients, args.connections
    shares = [connections // clients + (i < connections % clients) for i in range(clients)]
    cpus = [int(c) for c in args.client_cpus.split(",")][: len(shares)]
    at = time.time() + 1.0  # every generator started by then
    procs = [
        subprocess.Popen(
            generator(port, share, seconds, at, cpus[i % len(cpus)]),
            stdout=subprocess.PIPE,
            text=True,
        )
        for i, share in enumerate(shares)
        if share
    ]
    before = cpu_seconds(pid)
    outputs = [proc.communicate(timeout=seconds + 60)[0] for proc in procs]
    used = cpu_seconds(pid) - before
    if any(proc.returncode for proc in procs):
        raise RuntimeError(f"a load generator failed: {outputs}")
    parts = [json.loads(output) for output in outputs]
    iterations = sum(p["iterations"] for p in parts)
    elapsed = max(p["seconds"] for p in parts)
    latencies = sorted(us for p in parts for us in p["latencies"])
    return {
        "ips": iterations / elapsed,
        "errors": sum(p["errors"] for p in parts),
        "samples": [s for p in parts for s in p["samples"]],
        "p50": percentile(latencies, 0.50) / 1000,
        "p99": percentile(latencies, 0.99) / 1000,
        "cpu_us": 1e6 * used / max(1, iterations),
        "server_cpu": used / elapsed,
        "client_cpu": sum(p["cpu"] for p in parts) / elapsed,
        "client_cores": len(set(cpus)),
    }


def percentile(ordered: list[int], q: float) -> float:
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))]) if ordered else 0.0


def render(best: dict[str, dict[str, Any]]) -> str:
    base = best.get(BASELINE)
    lines = [
        "| server | iterations/s | requests/s | p50 ms | p99 ms | errors | server CPU µs/iteration "
        "| server CPU | load gen CPU | ratio vs SDK (uvicorn) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in best.items():
        ratio = f"{r['ips'] / base['ips']:.2f}x" if base and base["ips"] else "-"
        lines.append(
            f"| {name} | {r['ips']:.0f} | {4 * r['ips']:.0f} | {r['p50']:.2f} | {r['p99']:.2f} | "
            f"{r['errors_total']} | {r['cpu_us']:.0f} | {100 * r['server_cpu']:.0f}% | "
            f"{100 * r['client_cpu']:.0f}% | {ratio} |"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    wanted = [p.strip() for p in args.only.split(",") if p.strip()]
    chosen = [t for t in targets() if not wanted or any(t.name.startswith(p) for p in wanted)]
    if not chosen:
        print("no server matches --only", file=sys.stderr)
        return 2
    running: list[tuple[Target, int, subprocess.Popen[bytes]]] = []
    best: dict[str, dict[str, Any]] = {}
    try:
        for target in chosen:
            port = free_port()
            running.append((target, port, start(target, port)))
        for _, port, process in running:  # warm-up, and a check that each server answers
            measure(process.pid, port, args, args.warmup)
        # Rounds, each visiting every server once: drift spreads over all rows.
        for round_no in range(args.rounds):
            for target, port, process in running:
                result = measure(process.pid, port, args, args.seconds)
                previous = best.get(target.name, {})
                result["errors_total"] = result["errors"] + previous.get("errors_total", 0)
                cpu_us = min(result["cpu_us"], previous.get("cpu_us", float("inf")))
                if not previous or result["ips"] > previous["ips"]:
                    best[target.name] = result
                else:
                    previous["errors_total"] = result["errors_total"]
                best[target.name]["cpu_us"] = cpu_us
                print(
                    f"round {round_no + 1} {target.name:24} {result['ips']:7.0f} it/s  "
                    f"p50 {result['p50']:6.2f} ms  p99 {result['p99']:6.2f} ms  "
                    f"errors {result['errors']}  server {100 * result['server_cpu']:3.0f}%  "
                    f"load gen {100 * result['client_cpu']:3.0f}%"
                    + (f"  e.g. {result['samples'][0]}" if result["samples"] else ""),
                    flush=True,
                )
    finally:
        for _, _, process in running:
            stop(process)
    print()
    print(
        f"`python benches/bench_churn.py --seconds {args.seconds:g} --rounds {args.rounds} "
        f"--connections {args.connections} --clients {args.clients} "
        f"--client-cpus {args.client_cpus}` on {platform.node()}: "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}. Servers pinned to CPU 0 "
        f"(all running, idle but for the one under load), {args.clients} load-generator "
        f"process(es) (Trio, raw sockets) on CPU {args.client_cpus}. Best of {args.rounds} interleaved rounds of "
        f"{args.seconds:g} s; an iteration is initialize + notifications/initialized + "
        "tools/call + DELETE (4 requests); `errors` is over all rounds; `server CPU µs/iteration` "
        "is the server's user+system CPU time per iteration (lowest round); `server CPU` and "
        "`load gen CPU` are the CPU time each side used over the wall time (100% = one core; best "
        "round)."
    )
    print()
    print(render(best))
    spent = [n for n, r in best.items() if r["client_cpu"] > 0.9 * r["client_cores"]]
    if spent:
        print(
            f"\nnote: the load generator used over 90% of its core for {', '.join(spent)}: "
            "those rows may be bounded by it, not by the server"
        )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3, help="best of N interleaved rounds")
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--connections", type=int, default=16, help="virtual users in all")
    parser.add_argument("--clients", type=int, default=1, help="load-generator processes")
    parser.add_argument(
        "--client-cpus", default="1", help="CPUs the generators are pinned to, in turn (1,2,...)"
    )
    parser.add_argument("--only", default="", help="comma-separated name prefixes")
    parser.add_argument("--drive", help=argparse.SUPPRESS)  # HOST:PORT: be a load generator
    parser.add_argument("--at", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    return drive_main(args) if args.drive else run(args)


if __name__ == "__main__":
    raise SystemExit(main())
