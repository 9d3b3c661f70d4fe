"""The official Python SDK (mcp on PyPI) with one tool, ``echo``.

python sdk_echo.py PORT hypercorn|uvicorn stateless|session
"""

import sys

from mcp.server import MCPServer

mcp = MCPServer("bench", version="1.0")


@mcp.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


if __name__ == "__main__":
    port, engine, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    app = mcp.streamable_http_app(stateless_http=mode == "stateless", json_response=True)
    if engine == "uvicorn":
        import uvicorn

        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    else:
        import trio
        from hypercorn.config import Config
        from hypercorn.trio import serve

        config = Config()
        config.bind = [f"127.0.0.1:{port}"]
        config.accesslog = None
        trio.run(serve, app, config)
