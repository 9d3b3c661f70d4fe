"""A server protected by OAuth 2.1, with a tool that needs a scope of its own. Start the
development authorization server first (it approves everything: for development only):

    mcpfast auth-server --port 9000 --client svc:s3cret --scope mcp --scope files:write
    python examples/protected/server.py 8000 http://127.0.0.1:9000
    SVC_SECRET=s3cret python examples/protected/client.py http://127.0.0.1:8000/mcp http://127.0.0.1:9000
"""

import sys

import trio

import mcpfast
from mcpfast.server.auth import AuthConfig

server = mcpfast.Server("files", "1.0")


@server.tool(scopes=["files:write"])  # its tools/call needs this scope too: 403 otherwise
def save(path: str, ctx: mcpfast.Context) -> str:
    assert ctx.auth is not None  # the verified token's facts (never the token itself)
    return f"{ctx.auth.subject} saved {path}"


if __name__ == "__main__":  # python server.py PORT ISSUER [hypercorn|native]
    port, issuer, engine = int(sys.argv[1]), sys.argv[2], (sys.argv[3:] or ["hypercorn"])[0]
    auth = AuthConfig(issuer=issuer, resource=f"http://127.0.0.1:{port}/mcp", scopes=["mcp"])
    trio.run(mcpfast.serve, server, mcpfast.Config(port=port, auth=auth, engine=engine))
