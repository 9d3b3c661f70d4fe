"""The server the deployment test runs on every host: a tool whose every execution is one line in
a ledger file shared by the hosts (so a request run twice, or acknowledged and not run, shows), a
resource to subscribe to and a tool that changes it."""

import os
from pathlib import Path

import mcpfast

server = mcpfast.Server("deploy")
LEDGER = Path(os.environ["DEPLOY_LEDGER"])
STATUS = "deploy://status"


@server.tool(instant=True)
def record(key: str) -> str:
    """Append ``key`` to the ledger (one write of one line: lines of several processes never mix)."""
    fd = os.open(LEDGER, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (key + "\n").encode())
    finally:
        os.close(fd)
    return key


@server.resource(STATUS)
def status() -> str:
    return "ok"


@server.tool()
async def touch() -> str:
    """Tell the subscribers of `STATUS` that it changed."""
    await server.resource_updated(STATUS)
    return "touched"


@server.tool()
async def say(ctx: mcpfast.Context) -> str:
    """Log at ``info`` (sent only to a session whose level lets it through)."""
    await ctx.info("said")
    return "said"


@server.tool()
async def ask(ctx: mcpfast.Context) -> str:
    """Elicit a name (the answer may reach another worker or host than the one waiting)."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    answer = await ctx.elicit("Name?", schema, key="name")
    return f"hello {answer['content']['name']}"
