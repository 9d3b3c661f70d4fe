"""mcpfast with one tool, ``echo`` (codec backend chosen by MCPFAST_NO_EXTENSIONS; the HTTP
engine by the optional second argument, ``hypercorn`` or ``native``)."""

import sys

import trio

import mcpfast

server = mcpfast.Server("bench", "1.0")


@server.tool(instant=True)  # protocol overhead, not a thread hop (benches/bench_sync.py has that)
def echo(text: str) -> str:
    """Return the text."""
    return text


if __name__ == "__main__":
    engine = sys.argv[2] if len(sys.argv) > 2 else "hypercorn"
    trio.run(mcpfast.serve, server, mcpfast.Config(port=int(sys.argv[1]), engine=engine))  # type: ignore[arg-type]
