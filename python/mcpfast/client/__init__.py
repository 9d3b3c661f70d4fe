"""The client: `connect` to any MCP server, either era, over HTTP or stdio."""

from .client import Client as Client
from .client import connect as connect
from .eras import ERA_CACHE as ERA_CACHE
from .eras import EraCache as EraCache

__all__ = ["ERA_CACHE", "Client", "EraCache", "connect"]
