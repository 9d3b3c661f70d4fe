"""mcpfast: a fast dual-era Model Context Protocol server framework and client on Trio.

``__version__`` is the installed distribution's, whose one source is ``Cargo.toml`` (pyproject's
version is dynamic: maturin and the pure-Python build backend both read it there)."""

from importlib.metadata import version as _version

from . import codec as codec
from .client import Client as Client
from .client import connect as connect
from .errors import ClientCapabilityError as ClientCapabilityError
from .errors import CodecError as CodecError
from .errors import MCPError as MCPError
from .errors import ProtocolError as ProtocolError
from .errors import RateLimited as RateLimited
from .errors import TokenError as TokenError
from .errors import TransportError as TransportError
from .errors import UrlElicitationRequired as UrlElicitationRequired
from .protocol.retries import RetryPolicy as RetryPolicy
from .server import Config as Config
from .server import Context as Context
from .server import Header as Header
from .server import InputRequest as InputRequest
from .server import Server as Server
from .server import asgi_app as asgi_app
from .server import serve as serve
from .types import ToolResult as ToolResult

__version__ = _version("mcpfast")
BACKEND = codec.BACKEND
BACKEND_REASON = codec.BACKEND_REASON

__all__ = [
    "BACKEND",
    "BACKEND_REASON",
    "Client",
    "ClientCapabilityError",
    "CodecError",
    "Config",
    "Context",
    "Header",
    "InputRequest",
    "MCPError",
    "ProtocolError",
    "RateLimited",
    "RetryPolicy",
    "Server",
    "TokenError",
    "ToolResult",
    "TransportError",
    "UrlElicitationRequired",
    "asgi_app",
    "codec",
    "connect",
    "serve",
]
