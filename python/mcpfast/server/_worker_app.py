"""The ASGI application a worker process imports (see `workers`)."""

from __future__ import annotations

import gc
import os

from .config import Config
from .serve import asgi_app
from .target import load_target

application = asgi_app(
    load_target(os.environ.get("MCPFAST_TARGET") or None),
    Config(
        path=os.environ.get("MCPFAST_PATH", "/mcp"),
        host=os.environ.get("MCPFAST_BIND_HOST", "127.0.0.1"),
    ),
)

gc.freeze()
