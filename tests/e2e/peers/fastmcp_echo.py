"""A FastMCP (the ``fastmcp`` package, 4.x) server with two small tools, for load tests.

python fastmcp_echo.py PORT [stateless]

Serves streamable HTTP on http://127.0.0.1:PORT/mcp with FastMCP's defaults (both eras, legacy
sessions, no banner). It lists no resources, and in the 2026-07-28 era it offers no
``subscriptions/listen`` (its ``server/discover`` says so: no ``listChanged``, no
``resources.subscribe``): what a load test must skip. ``stateless`` serves the legacy era
without sessions, and so without a GET stream (a GET is answered 405).

http://127.0.0.1:PORT/overclaiming/mcp is the same server, except that its ``server/discover``
claims ``tools.listChanged``, which it does not serve: a ``subscriptions/listen`` there is
answered -32601, as by a server whose capabilities are wrong.
"""

import json
import sys
from typing import Any

from fastmcp import FastMCP
from starlette.middleware import Middleware

OVERCLAIMING = "/overclaiming/mcp"

mcp = FastMCP("fastmcp-echo")


@mcp.tool(annotations={"readOnlyHint": True})
def echo(text: str) -> str:
    """Return the text."""
    return text


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class Overclaiming:
    """ASGI middleware: requests to `OVERCLAIMING` go to /mcp, and a ``server/discover`` answer
    (JSON) gains ``tools.listChanged: true``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != OVERCLAIMING:
            await self.app(scope, receive, send)
            return
        scope = {**scope, "path": "/mcp", "raw_path": b"/mcp"}
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        try:
            method = json.loads(body).get("method")
        except (ValueError, AttributeError):
            method = None
        if method != "server/discover":
            await self.app(scope, replay, send)
            return
        await self.app(scope, replay, _claiming(send))


def _claiming(send: Any) -> Any:
    """A ``send`` that holds the answer back, adds the claim, then sends it whole."""
    start: dict[str, Any] = {}
    chunks: list[bytes] = []

    async def claiming_send(message: Any) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
            return
        if message["type"] != "http.response.body":
            await send(message)
            return
        chunks.append(message.get("body", b""))
        if message.get("more_body", False):
            return
        answer = json.loads(b"".join(chunks))
        answer["result"]["capabilities"].setdefault("tools", {})["listChanged"] = True
        data = json.dumps(answer).encode()
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(data)).encode()))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": data, "more_body": False})

    return claiming_send


if __name__ == "__main__":
    mcp.run(
        transport="http",
        host="127.0.0.1",
        port=int(sys.argv[1]),
        path="/mcp",
        show_banner=False,
        log_level="warning",
        middleware=[Middleware(Overclaiming)],
        stateless_http=sys.argv[2:] == ["stateless"],
    )
