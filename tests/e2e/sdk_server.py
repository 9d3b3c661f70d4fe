"""The official Python SDK's server (mcp on PyPI) with the same small tool set, for interop.

python sdk_server.py PORT stateless|session
"""

import sys

from mcp.server import MCPServer

mcp = MCPServer("sdk-server", version="0.0.1")


@mcp.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


if __name__ == "__main__":
    port = int(sys.argv[1])
    mcp.run(
        transport="streamable-http",
        host="127.0.0.1",
        port=port,
        streamable_http_path="/mcp",
        stateless_http=sys.argv[2] == "stateless",
        json_response=sys.argv[2] == "stateless",
    )
