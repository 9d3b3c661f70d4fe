"""MCP Apps (SEP-1865, the ``io.modelcontextprotocol/ui`` extension), both sides: a tool links a
``ui://`` resource served as ``text/html;profile=mcp-app`` through ``_meta.ui.resourceUri``,
with its ``visibility``; the resource's contents carry the rest of ``_meta.ui`` (``csp``,
``permissions``, ``domain``, ``prefersBorder``). A client renders apps when it declared the
extension with that MIME type in its ``mimeTypes``; for any other client the server lists its
tools without the link (and without the tools only an app may call), and tool results keep
their text content (graceful degradation)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .extensions import declared

UI_EXTENSION = "io.modelcontextprotocol/ui"
APP_MIME_TYPE = "text/html;profile=mcp-app"
UI_SCHEME = "ui://"
CLIENT_SETTINGS: dict[str, Any] = {"mimeTypes": [APP_MIME_TYPE]}
"""What a client that renders MCP Apps declares for `UI_EXTENSION`."""

VISIBILITIES = frozenset({"model", "app"})
"""Who may see and call a linked tool: the model (the host lists it), the app (from its view)."""

CSP_KEYS = {
    "connect_domains": "connectDomains",
    "resource_domains": "resourceDomains",
    "frame_domains": "frameDomains",
    "base_uri_domains": "baseUriDomains",
}
"""The ``_meta.ui.csp`` members of a UI resource, by their Python keyword."""

PERMISSIONS = frozenset({"camera", "microphone", "geolocation", "clipboardWrite"})
"""The ``_meta.ui.permissions`` a UI resource may ask of the host's sandbox."""


def renders_apps(capabilities: Mapping[str, Any] | None) -> bool:
    """Whether a client with ``capabilities`` renders MCP Apps: it declared `UI_EXTENSION`
    with `APP_MIME_TYPE` among its ``mimeTypes``."""
    settings = declared(capabilities, UI_EXTENSION)
    mime_types = settings.get("mimeTypes") if settings is not None else None
    return isinstance(mime_types, list) and APP_MIME_TYPE in mime_types


def tool_link(uri: str, visibility: Sequence[str]) -> dict[str, Any]:
    """A tool's ``_meta.ui``: the UI resource it links and who sees the tool.

    Raises:
        ValueError: ``uri`` is not ``ui://...``, or ``visibility`` is empty or names anything
            but ``model`` and ``app``.
    """
    if not uri.startswith(UI_SCHEME) or len(uri) == len(UI_SCHEME):
        raise ValueError(f"an MCP App resource URI must use the ui:// scheme, not {uri!r}")
    seen = list(dict.fromkeys(visibility))
    if not seen or not set(seen) <= VISIBILITIES:
        raise ValueError(f"visibility must list 'model' and/or 'app', not {list(visibility)!r}")
    return {"resourceUri": uri, "visibility": seen}


def resource_meta(
    csp: Mapping[str, Sequence[str]] | None,
    permissions: Sequence[str],
    domain: str | None,
    prefers_border: bool | None,
) -> dict[str, Any]:
    """A UI resource's ``_meta.ui``: its CSP (``csp`` by `CSP_KEYS` keyword), the sandbox
    permissions it asks for, its dedicated origin and whether it wants a border.

    Raises:
        ValueError: an unknown CSP key or permission.
    """
    ui: dict[str, Any] = {}
    if csp is not None:
        unknown = set(csp) - set(CSP_KEYS)
        if unknown:
            raise ValueError(f"unknown CSP keys {sorted(unknown)}: use {sorted(CSP_KEYS)}")
        ui["csp"] = {CSP_KEYS[key]: list(domains) for key, domains in csp.items()}
    if permissions:
        unknown = set(permissions) - PERMISSIONS
        if unknown:
            raise ValueError(f"unknown permissions {sorted(unknown)}: use {sorted(PERMISSIONS)}")
        ui["permissions"] = {name: {} for name in permissions}
    if domain is not None:
        ui["domain"] = domain
    if prefers_border is not None:
        ui["prefersBorder"] = prefers_border
    return ui


def linked_uri(tool_meta: Any) -> str | None:
    """The UI resource a tool's ``_meta`` links (``ui.resourceUri``); None if none."""
    ui = tool_meta.get("ui") if isinstance(tool_meta, dict) else None
    uri = ui.get("resourceUri") if isinstance(ui, dict) else None
    return uri if isinstance(uri, str) else None


def model_visible(tool_meta: Any) -> bool:
    """Whether a tool's ``_meta.ui.visibility`` includes the model (the default: no list)."""
    ui = tool_meta.get("ui") if isinstance(tool_meta, dict) else None
    visibility = ui.get("visibility") if isinstance(ui, dict) else None
    return not isinstance(visibility, list) or "model" in visibility
