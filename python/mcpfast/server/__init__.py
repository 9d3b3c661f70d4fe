"""The server framework: `Server` to register features, `serve` to run it."""

from ..protocol.capabilities import InputRequest as InputRequest
from .app import Server as Server
from .config import Config as Config
from .context import Context as Context
from .functions import Header as Header
from .serve import asgi_app as asgi_app
from .serve import serve as serve

__all__ = ["Config", "Context", "Header", "InputRequest", "Server", "asgi_app", "serve"]
