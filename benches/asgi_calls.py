"""A 2026-07-28 ``tools/call`` of ``echo`` driven through an ASGI app in process (no sockets): the
microseconds per request, wall and CPU, that `bench_limits` and `bench_governor` compare."""

from __future__ import annotations

import json
import time
from typing import Any

import trio

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}
HEADERS = {
    "host": "127.0.0.1:8000",
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "echo",
}


def echo_calls(app: Any, requests: int) -> dict[str, float]:
    """Microseconds per ``echo`` call of ``app`` (an `mcpfast.asgi_app`), after 500 to warm up:
    ``{"us": wall, "cpu_us": cpu}``. Raises AssertionError when an answer is not the echo."""
    params = {"name": "echo", "arguments": {"text": "hello"}, "_meta": META}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "client": ("127.0.0.1", 40000),
        "headers": [(k.encode(), v.encode()) for k, v in HEADERS.items()],
    }
    message = {"type": "http.request", "body": body.encode(), "more_body": False}

    async def drive(n: int) -> tuple[float, float]:
        sent: list[Any] = []

        async def send(event: dict[str, Any]) -> None:
            sent.append(event)

        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(n):
            feed, receive = trio.open_memory_channel[dict[str, Any]](1)
            feed.send_nowait(message)
            await app(scope, receive.receive, send)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        assert sent[0]["status"] == 200 and b'"text":"hello"' in sent[-1]["body"], sent[:2]
        return wall / n * 1e6, cpu / n * 1e6

    async def main() -> dict[str, float]:
        async with app.endpoint.running():
            await drive(500)
            wall, cpu = await drive(requests)
        return {"us": wall, "cpu_us": cpu}

    return trio.run(main)
