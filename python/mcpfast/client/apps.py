"""The MCP Apps calls of a `Client` (SEP-1865): the ``ui://`` resource a tool links, read as the
HTML page a host renders in a sandboxed iframe. The server shows the link only to a client that
declared the extension (``connect(extensions={UI_EXTENSION: APPS})``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from ..errors import TransportError
from ..protocol.apps import APP_MIME_TYPE, CLIENT_SETTINGS, UI_EXTENSION, linked_uri
from ..types import ReadResourceResult, Tool

APPS: dict[str, Any] = CLIENT_SETTINGS
"""The settings of `UI_EXTENSION` for a client that renders MCP Apps."""

__all__ = ["APPS", "UI_EXTENSION", "App", "AppCalls"]


class App(msgspec.Struct, frozen=True, kw_only=True):
    """A tool's MCP App: its ``ui://`` URI, its HTML, the resource's ``_meta.ui`` (``csp``,
    ``permissions``, ``domain``, ``prefersBorder``) and the tool's ``visibility``."""

    uri: str
    html: str
    ui: dict[str, Any]
    visibility: list[str]


class AppCalls:
    """The MCP Apps methods `Client` has (it provides what they call)."""

    if TYPE_CHECKING:

        async def list_tools(self) -> list[Tool]: ...

        async def read_resource(self, uri: str) -> ReadResourceResult: ...

    async def tool_app(self, name: str) -> App | None:
        """The MCP App of the tool called ``name``: its linked ``ui://`` resource, read. None
        when the tool links none (or the server hides links from this client, which did not
        declare the extension), or there is no such tool.

        Raises:
            MCPError: listing the tools or reading the resource failed.
            TransportError: the resource is not ``text/html;profile=mcp-app`` text.
        """
        tool = next((t for t in await self.list_tools() if t.name == name), None)
        uri = linked_uri(tool.meta) if tool is not None else None
        if tool is None or uri is None:
            return None
        contents = (await self.read_resource(uri)).contents
        page = next((c for c in contents if c.uri == uri), contents[0] if contents else None)
        if page is None or page.mimeType != APP_MIME_TYPE or not isinstance(page.text, str):
            raise TransportError(f"the MCP App {uri} is not {APP_MIME_TYPE} text")
        ui = (page.meta or {}).get("ui")
        visibility = (
            tool.meta.get("ui", {}).get("visibility") if isinstance(tool.meta, dict) else None
        )
        return App(
            uri=uri,
            html=page.text,
            ui=ui if isinstance(ui, dict) else {},
            visibility=visibility if isinstance(visibility, list) else ["model", "app"],
        )
