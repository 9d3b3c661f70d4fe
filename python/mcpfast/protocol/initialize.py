"""The legacy ``initialize`` handshake (2025-*), both sides: the params a client sends, the
result a server answers, and what a client reads from it.

A client asks for one revision; the server answers with that revision when it serves it, else
with its newest (`mcpfast.versions.negotiate_legacy`); the client then speaks the revision
the server answered when it speaks it too, and refuses the server otherwise (`read_result`).
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..errors import TransportError
from ..types import Implementation
from ..versions import LEGACY
from .capabilities import server_capabilities


def initialize_params(
    version: str, capabilities: dict[str, Any], client_info: dict[str, Any]
) -> dict[str, Any]:
    """The params of a client's ``initialize``: the revision it asks for, its capabilities (in
    that revision's terms, `protocol.capabilities.client_capabilities`) and its info."""
    return {"protocolVersion": version, "capabilities": capabilities, "clientInfo": client_info}


class Initialized(msgspec.Struct, frozen=True, kw_only=True):
    """What a client learnt from an ``initialize`` result.

    Attributes:
        version: the revision the session speaks.
        capabilities: what the server advertised; None when the result held none (unknown:
            nothing may be refused for lack of a capability).
        server_info: the server's ``name``/``version`` (empty when it sent none).
        instructions: the server's instructions, if it gave a string.
    """

    version: str
    capabilities: dict[str, Any] | None = None
    server_info: dict[str, Any] = msgspec.field(default_factory=dict)
    instructions: str | None = None


def read_result(result: Any, requested: str) -> Initialized:
    """An ``initialize`` result as a client reads it; a member of the wrong type counts as
    absent (``protocolVersion`` absent: the ``requested`` revision).

    Raises:
        TransportError: the negotiated revision is not one the client speaks (a legacy
            revision of `mcpfast.versions.LEGACY`): the lifecycle says to disconnect.
    """
    fields = result if isinstance(result, dict) else {}
    version = fields.get("protocolVersion")
    capabilities = fields.get("capabilities")
    info = fields.get("serverInfo")
    instructions = fields.get("instructions")
    negotiated = version if isinstance(version, str) else requested
    if negotiated not in LEGACY:
        raise TransportError(
            f"the server negotiated protocol version {negotiated!r} in initialize, which this "
            f"client does not speak (it speaks {', '.join(LEGACY)})"
        )
    return Initialized(
        version=negotiated,
        capabilities=capabilities if isinstance(capabilities, dict) else None,
        server_info=info if isinstance(info, dict) else {},
        instructions=instructions if isinstance(instructions, str) else None,
    )


def initialize_result(
    version: str, info: Implementation, instructions: str | None
) -> dict[str, Any]:
    """The server's result of ``initialize`` once ``version`` is negotiated (HTTP and stdio)."""
    result: dict[str, Any] = {
        "protocolVersion": version,
        "capabilities": server_capabilities(version),
        "serverInfo": info,
    }
    if instructions:
        result["instructions"] = instructions
    return result
