"""The server framework: `Server` to register features, `serve` (HTTP) or `serve_stdio` to run
it."""

from ..protocol.capabilities import InputRequest as InputRequest
from .config import Config as Config
from .framework.app import Server as Server
from .framework.context import Context as Context
from .framework.functions import Header as Header
from .serve import asgi_app as asgi_app
from .serve import serve as serve
from .serve import serve_stdio as serve_stdio

__all__ = [
    "Config",
    "Context",
    "Header",
    "InputRequest",
    "Server",
    "asgi_app",
    "serve",
    "serve_stdio",
]
