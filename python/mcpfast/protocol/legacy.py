"""Legacy-era (2025-*) rules of the server side: the ``initialize`` result."""

from __future__ import annotations

from typing import Any

from ..types import Implementation
from .capabilities import server_capabilities


def initialize_result(
    version: str, info: Implementation, instructions: str | None
) -> dict[str, Any]:
    """The result of ``initialize`` once ``version`` is negotiated (over HTTP and stdio)."""
    result: dict[str, Any] = {
        "protocolVersion": version,
        "capabilities": server_capabilities(version),
        "serverInfo": info,
    }
    if instructions:
        result["instructions"] = instructions
    return result
