"""Which era a message belongs to (`shared/spec/DIGEST.md` §3.12), on either transport.

An ``initialize`` always opens a legacy session, whatever its ``MCP-Protocol-Version`` header or
its params' ``_meta`` say (seed 000: the header describes the one request's transport, not the
session it asks to start; 2026-07-28 has no ``initialize``). Otherwise, over HTTP a POST is
legacy when it cannot be 2026-07-28: it has no ``_meta`` protocol version and it is a response,
part of a session (``Mcp-Session-Id``), names a legacy ``MCP-Protocol-Version``, or (with no
version header at all) is a request. Batches are always legacy (2025-03-26). Over stdio a line
is 2026-07-28 exactly when its ``_meta`` names a version and it is not an ``initialize``.

Which route serves an HTTP request's path, for both engines (`route_table`, `route`): the MCP
path, else the protected resource metadata (RFC 9728), a health probe, a Server Card or its AI
Catalog, in that order where two claim one path; any other path is 404. A side path is answered
only when no request body is left unread on the connection: an engine that would have to read
one first (the native engine) answers 404 and closes instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from .. import codec
from ..versions import LEGACY
from .session import SESSION_HEADER

Era = Literal["modern", "legacy"]
Route = Literal["mcp", "metadata", "probe", "card"]


def post_era(kind: int, method: str | None, version: str | None, headers: Mapping[str, str]) -> Era:
    """The era of one (non-batch, valid) message POSTed with ``headers`` (lower-case names);
    ``version`` is its ``_meta`` protocol version, if any."""
    if method == "initialize":
        return "legacy"
    if version is not None:
        return "modern"
    if kind in (codec.KIND_RESULT, codec.KIND_ERROR):
        return "legacy"
    if SESSION_HEADER in headers:
        return "legacy"
    header = headers.get("mcp-protocol-version")
    if header is None:
        return "legacy" if kind == codec.KIND_REQUEST else "modern"
    return "legacy" if header.strip() in LEGACY else "modern"


def line_era(version: str | None, method: str | None = None) -> Era:
    """The era of a message read over stdio, by its ``_meta`` protocol version (an
    ``initialize`` is always legacy)."""
    if method == "initialize":
        return "legacy"
    return "modern" if version is not None else "legacy"


def route_table(
    mcp_path: str, metadata: Iterable[str], probes: Iterable[str], cards: Iterable[str]
) -> dict[str, Route]:
    """The route of each path served: ``mcp_path``, the ``metadata`` paths, the ``probes``
    and the ``cards`` (a card and its catalog); a path claimed twice goes to the first of that
    order."""
    table: dict[str, Route] = dict.fromkeys(cards, "card")
    table.update(dict.fromkeys(probes, "probe"))
    table.update(dict.fromkeys(metadata, "metadata"))
    table[mcp_path] = "mcp"
    return table


def route(table: Mapping[str, Route], path: str, unread_body: bool) -> Route | None:
    """The route serving ``path`` (`route_table`); None: 404. ``unread_body``: the request
    has a body the engine has not read, so only the MCP path (which reads it) is served."""
    found = table.get(path)
    if found is None or (unread_body and found != "mcp"):
        return None
    return found
