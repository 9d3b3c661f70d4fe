"""Several worker processes behind one socket (Hypercorn's multi-process runner).

Workers share nothing but the signing keys, so any worker serves any legacy session and any
``requestState``. Change notifications and server-to-client answers need a shared bus to
cross workers.
"""

from __future__ import annotations

import os

from hypercorn.run import run

from .config import Config
from .serve import hypercorn_config


def run_workers(target: str | None, config: Config) -> None:
    """Run ``config.workers`` processes serving ``target`` (``module:attribute``; demo if None)."""
    os.environ["MCPFAST_TARGET"] = target or ""
    os.environ["MCPFAST_PATH"] = config.path
    os.environ["MCPFAST_BIND_HOST"] = config.host
    hc = hypercorn_config(config)
    hc.application_path = "mcpfast.server._worker_app:application"
    hc.worker_class = "trio"
    run(hc)
