"""The fastest mainstream Python baseline: the same bare JSON-RPC echo ASGI app as
``bare_echo.py`` (no MCP), on uvicorn with httptools (its C HTTP/1.1 parser) and no access log.

python bare_uvicorn.py PORT [asyncio|uvloop]   (default asyncio: uvicorn's own loop choice
without the uvloop package; uvloop is what ``uvicorn[standard]`` adds)
"""

import sys

import uvicorn
from bare_echo import app

if __name__ == "__main__":
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=int(sys.argv[1]),
        http="httptools",
        loop=sys.argv[2] if len(sys.argv) > 2 else "asyncio",
        lifespan="off",
        log_level="warning",
        access_log=False,
    )
