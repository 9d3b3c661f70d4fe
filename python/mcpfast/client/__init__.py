"""The client: `connect` to any MCP server, either era, over HTTP or stdio."""

from ..protocol.discovery import ERA_CACHE as ERA_CACHE
from ..protocol.discovery import EraCache as EraCache
from .client import Client as Client
from .connect import connect as connect

__all__ = ["ERA_CACHE", "Client", "EraCache", "connect"]
