"""An mcpfast server on Hypercorn that closes every connection after one answer
(``keep_alive_max_requests=1``): each answer says ``Connection: close`` and the close follows
at once, so a client often reads the answer and the connection's end together (the fast load
engine's test: tests/e2e/test_load_fast.py).

python closing_server.py PORT
"""

import sys

import trio
from hypercorn.trio import serve

import mcpfast
from mcpfast.server.serve import hypercorn_config

server = mcpfast.Server("closing", "1.0")


@server.tool(instant=True)
def echo(text: str) -> str:
    """Return the text."""
    return text


async def main(port: int) -> None:
    config = mcpfast.Config(port=port)
    settings = hypercorn_config(config)
    settings.keep_alive_max_requests = 1
    await serve(mcpfast.asgi_app(server, config), settings)  # type: ignore[arg-type]


if __name__ == "__main__":
    trio.run(main, int(sys.argv[1]))
