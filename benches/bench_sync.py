"""What running a plain-``def`` tool on a worker thread (the default) costs per call, in
process (no sockets), against the same tool registered ``instant=True`` (run on the event loop)
and an ``async def`` twin, all in one run.

Drives the ASGI app with a ready-made scope, body and ``send``, as ``bench_dispatch.py`` does;
only the tool named differs between rows. The thread row pays the hop (a limiter slot, a worker
thread from Trio's cache, the result handed back to the loop) and, as an ``async def`` does, the
watch for the client going away; ``thread - instant`` is the whole price of the default, and
``thread - async`` the hop alone.

    python benches/bench_sync.py [--requests 5000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

import mcpfast
from bench_dispatch import legacy_session, scope  # the same ASGI request and session
from mcpfast.server.state.keys import KeyRing

KEYS = KeyRing(keys={"k": b"0123456789abcdef0123456789abcdef"}, signing="k")
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}

server = mcpfast.Server("bench-sync", "1.0")


@server.tool()
def thread(text: str) -> str:
    """A plain ``def``: runs on a worker thread."""
    return text


@server.tool(instant=True)
def instant(text: str) -> str:
    """The same, on the event loop."""
    return text


@server.tool()
async def coroutine(text: str) -> str:
    """An ``async def``: on the event loop, watched for the client going away."""
    return text


TOOLS = ("instant", "coroutine", "thread")


async def drive(app: Any, the_scope: dict[str, Any], body: bytes, n: int) -> tuple[float, float]:
    """Microseconds per request over ``n`` requests: wall time, and the process's CPU time (all
    threads; on a shared machine the steadier measure, as it leaves out waits for the CPU).
    ``receive`` gives the body once, then waits (a client still connected), as a server's
    would."""
    message = {"type": "http.request", "body": body, "more_body": False}
    sent: list[Any] = []
    fresh = [True]

    async def receive() -> dict[str, Any]:
        if fresh[0]:
            fresh[0] = False
            return message
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(event: dict[str, Any]) -> None:
        sent.append(event)

    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        fresh[0] = True
        await app(the_scope, receive, send)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert b"hello" in sent[-1]["body"], sent[-1]
    return elapsed / n * 1e6, cpu / n * 1e6


def case(era: str, tool: str, session: str) -> tuple[dict[str, Any], bytes]:
    call: dict[str, Any] = {"name": tool, "arguments": {"text": "hello"}}
    if era == "modern":
        headers = {
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": tool,
        }
        call["_meta"] = META
    else:
        headers = {"mcp-protocol-version": "2025-11-25", "mcp-session-id": session}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
    return scope(headers), body.encode()


async def main(args: argparse.Namespace) -> None:
    app = mcpfast.asgi_app(server, keys=KEYS)
    session = await legacy_session(app)
    print(f"codec backend: {mcpfast.BACKEND}; best of {args.rounds} interleaved rounds")
    for era in ("modern", "legacy"):
        cases = {tool: case(era, tool, session) for tool in TOOLS}
        for the_scope, body in cases.values():
            await drive(app, the_scope, body, 500)  # warm-up (the thread cache too)
        wall = dict.fromkeys(TOOLS, float("inf"))
        cpu = dict.fromkeys(TOOLS, float("inf"))
        for _ in range(args.rounds):
            for tool, (the_scope, body) in cases.items():
                w, c = await drive(app, the_scope, body, args.requests)
                wall[tool], cpu[tool] = min(wall[tool], w), min(cpu[tool], c)
        for label, best in (("wall", wall), ("cpu", cpu)):
            print(
                f"{era:7} {label:4} us/call: instant {best['instant']:6.1f}"
                f"   async {best['coroutine']:6.1f}   thread {best['thread']:6.1f}"
                f"   thread - instant {best['thread'] - best['instant']:6.1f}"
                f" ({best['thread'] / best['instant']:.2f}x)"
                f"   thread - async {best['thread'] - best['coroutine']:6.1f}"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    trio.run(main, parser.parse_args())
