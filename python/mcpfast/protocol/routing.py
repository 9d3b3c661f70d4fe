"""Which era a message belongs to (`shared/spec/DIGEST.md` §3.12), on either transport.

An ``initialize`` always opens a legacy session, whatever its ``MCP-Protocol-Version`` header or
its params' ``_meta`` say (seed 000: the header describes the one request's transport, not the
session it asks to start; 2026-07-28 has no ``initialize``). Otherwise, over HTTP a POST is
legacy when it cannot be 2026-07-28: it has no ``_meta`` protocol version and it is a response,
part of a session (``Mcp-Session-Id``), names a legacy ``MCP-Protocol-Version``, or (with no
version header at all) is a request. Batches are always legacy (2025-03-26). Over stdio a line
is 2026-07-28 exactly when its ``_meta`` names a version and it is not an ``initialize``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from .. import codec
from ..versions import LEGACY
from .session import SESSION_HEADER

Era = Literal["modern", "legacy"]


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
