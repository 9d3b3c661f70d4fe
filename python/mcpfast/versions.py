"""Protocol revisions mcpfast speaks, newest first, and what each one changes on the wire."""

from __future__ import annotations

MODERN = "2026-07-28"
LEGACY = ("2025-11-25", "2025-06-18", "2025-03-26")
MODERN_VERSIONS = (MODERN,)
ALL_VERSIONS = (MODERN, *LEGACY)
LATEST_LEGACY = LEGACY[0]
DEFAULT_HEADERLESS = "2025-03-26"
"""The revision a legacy request without `MCP-Protocol-Version` is assumed to speak."""


def negotiate_legacy(requested: object) -> str:
    """The revision an `initialize` answers: the requested one when served, else the newest."""
    return requested if isinstance(requested, str) and requested in LEGACY else LATEST_LEGACY


def supports_batching(version: str) -> bool:
    """Only 2025-03-26 accepts JSON-RPC batches."""
    return version == "2025-03-26"


def is_modern(version: str) -> bool:
    """Stateless revisions (2026-07-28 and later) compare after every legacy one."""
    return version >= MODERN
