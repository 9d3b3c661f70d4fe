"""mcpfast with ``echo`` and ``touch`` (publishes an update of the resource ``bench://r``): the
server of benches/bench_scale_out.py, served with ``mcpfast serve`` (``--bus`` chooses the bus)."""

import mcpfast

server = mcpfast.Server("bench-notify", "1.0")


@server.tool(instant=True)
def echo(text: str) -> str:
    """Return the text."""
    return text


@server.resource("bench://r")
def resource() -> str:
    """A resource whose updates `touch` announces."""
    return "r"


@server.tool()
async def touch() -> str:
    """Announce an update of ``bench://r`` to its subscribers (in every worker on the bus)."""
    await server.resource_updated("bench://r")
    return "touched"
