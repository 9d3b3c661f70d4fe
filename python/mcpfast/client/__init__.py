"""The client: `connect` to any MCP server, either era, over HTTP or stdio."""

from ..protocol.discovery import ERA_CACHE as ERA_CACHE
from ..protocol.discovery import EraCache as EraCache
from .apps import APPS as APPS
from .apps import App as App
from .card import read_server_card as read_server_card
from .client import Client as Client
from .connect import connect as connect

__all__ = ["APPS", "ERA_CACHE", "App", "Client", "EraCache", "connect", "read_server_card"]
