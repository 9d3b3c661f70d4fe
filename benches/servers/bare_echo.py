"""The stack's ceiling: a bare JSON-RPC echo ASGI app (no MCP) on Hypercorn's Trio worker,
configured as mcpfast configures it.

It parses the body, takes ``params.arguments.text`` and answers a ``tools/call``-shaped result,
so every row of the benchmark does the same JSON work around the same HTTP stack.
"""

import sys

import orjson
import trio
from hypercorn.trio import serve


async def app(scope, receive, send):  # type: ignore[no-untyped-def]
    if scope["type"] != "http":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    request = orjson.loads(body)
    text = request["params"]["arguments"]["text"]
    reply = {
        "jsonrpc": "2.0",
        "id": request["id"],
        "result": {"content": [{"type": "text", "text": text}]},
    }
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": orjson.dumps(reply)})


if __name__ == "__main__":
    # The same Hypercorn settings mcpfast runs with (limits, timeouts), so the rows differ only
    # by what happens inside the application.
    from mcpfast.server.config import Config as McpfastConfig
    from mcpfast.server.serve import hypercorn_config

    trio.run(serve, app, hypercorn_config(McpfastConfig(port=int(sys.argv[1]))))
