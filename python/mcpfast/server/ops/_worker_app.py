"""The ASGI application a worker process imports (see `workers`)."""

from __future__ import annotations

import gc
import os

import msgspec

from ..config import Config
from ..serve import asgi_app
from .target import load_target
from .workers import CONFIG_VARIABLE

application = asgi_app(
    load_target(os.environ.get("MCPFAST_TARGET") or None),
    msgspec.json.decode(os.environ[CONFIG_VARIABLE], type=Config),
)

gc.freeze()
