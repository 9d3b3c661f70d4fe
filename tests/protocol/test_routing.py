"""Which era a message belongs to (`mcpfast.protocol.routing`), as a table."""

from __future__ import annotations

import pytest

from mcpfast import codec
from mcpfast.protocol.routing import line_era, post_era

REQUEST, NOTE, RESULT, ERROR = (
    codec.KIND_REQUEST,
    codec.KIND_NOTIFICATION,
    codec.KIND_RESULT,
    codec.KIND_ERROR,
)
SESSION = {"mcp-session-id": "token"}


@pytest.mark.parametrize(
    ("kind", "method", "version", "headers", "era"),
    [
        (REQUEST, "tools/call", "2026-07-28", {}, "modern"),
        (REQUEST, "tools/call", "2026-07-28", SESSION, "modern"),  # _meta wins over a session
        (REQUEST, "initialize", "2026-07-28", {}, "legacy"),  # initialize: always a session
        (REQUEST, "initialize", "2026-07-28", {"mcp-protocol-version": "2026-07-28"}, "legacy"),
        (REQUEST, "initialize", None, {}, "legacy"),
        (RESULT, None, None, {}, "legacy"),
        (ERROR, None, None, {}, "legacy"),
        (REQUEST, "tools/call", None, SESSION, "legacy"),
        (NOTE, "notifications/initialized", None, SESSION, "legacy"),
        (REQUEST, "tools/call", None, {"mcp-protocol-version": "2025-06-18"}, "legacy"),
        (REQUEST, "tools/call", None, {"mcp-protocol-version": " 2025-03-26 "}, "legacy"),
        (REQUEST, "tools/call", None, {"mcp-protocol-version": "2026-07-28"}, "modern"),
        (REQUEST, "tools/call", None, {"mcp-protocol-version": "1999-01-01"}, "modern"),
        (REQUEST, "tools/call", None, {}, "legacy"),  # no clue at all: 2025-03-26
        (NOTE, "notifications/cancelled", None, {}, "modern"),
    ],
)
def test_post_era(
    kind: int, method: str | None, version: str | None, headers: dict[str, str], era: str
) -> None:
    assert post_era(kind, method, version, headers) == era


@pytest.mark.parametrize(
    ("version", "method", "era"),
    [
        ("2026-07-28", "tools/call", "modern"),
        (None, "tools/call", "legacy"),
        ("2026-07-28", "initialize", "legacy"),
    ],
)
def test_line_era(version: str | None, method: str, era: str) -> None:
    assert line_era(version, method) == era
