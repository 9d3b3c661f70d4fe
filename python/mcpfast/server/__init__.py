"""The server framework: `Server` to register features, `serve` to run it."""

from .app import Server as Server
from .config import Config as Config
from .context import Context as Context
from .context import InputRequest as InputRequest
from .functions import Header as Header
from .serve import asgi_app as asgi_app
from .serve import serve as serve

__all__ = ["Config", "Context", "Header", "InputRequest", "Server", "asgi_app", "serve"]
