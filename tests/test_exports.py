"""The public surface: `mcpfast.__all__` is exactly what users may import, and each name is there."""

from __future__ import annotations

import mcpfast

PUBLIC = {
    "BACKEND",
    "BACKEND_REASON",
    "Client",
    "ClientCapabilityError",
    "CodecError",
    "Config",
    "Context",
    "Header",
    "InputRequest",
    "MCPError",
    "ProtocolError",
    "RateLimited",
    "RetryPolicy",
    "Server",
    "TokenError",
    "ToolResult",
    "TransportError",
    "UrlElicitationRequired",
    "asgi_app",
    "codec",
    "connect",
    "serve",
}


def test_all_is_the_public_surface() -> None:
    assert set(mcpfast.__all__) == PUBLIC
    assert len(mcpfast.__all__) == len(PUBLIC)
    for name in mcpfast.__all__:
        assert getattr(mcpfast, name) is not None, name


def test_errors_are_one_tree() -> None:
    for error in (
        mcpfast.ClientCapabilityError,
        mcpfast.CodecError,
        mcpfast.ProtocolError,
        mcpfast.UrlElicitationRequired,
    ):
        assert issubclass(error, mcpfast.MCPError)
