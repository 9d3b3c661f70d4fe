"""Which era a message belongs to, and which route serves an HTTP path
(`mcpfast.protocol.routing`), as tables."""

from __future__ import annotations

import pytest

from mcpfast import codec
from mcpfast.protocol.routing import Route, line_era, post_era, route, route_table

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


METADATA = ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource")
PROBES = ("/healthz", "/readyz")
CARDS = ("/mcp/server-card", "/.well-known/ai-catalog.json")
TABLE = route_table("/mcp", METADATA, PROBES, CARDS)


@pytest.mark.parametrize(
    ("path", "unread_body", "found"),
    [
        ("/mcp", False, "mcp"),
        ("/mcp", True, "mcp"),  # the MCP path reads the body
        ("/.well-known/oauth-protected-resource/mcp", False, "metadata"),
        ("/.well-known/oauth-protected-resource", False, "metadata"),
        ("/healthz", False, "probe"),
        ("/readyz", False, "probe"),
        ("/mcp/server-card", False, "card"),
        ("/.well-known/ai-catalog.json", False, "card"),
        # a body left unread: only the MCP path is served (the engine closes after a 404)
        ("/.well-known/oauth-protected-resource", True, None),
        ("/healthz", True, None),
        ("/mcp/server-card", True, None),
        ("/nothing", False, None),
        ("/nothing", True, None),
        ("/mcp/", False, None),  # paths match exactly
        ("/MCP", False, None),
    ],
)
def test_route(path: str, unread_body: bool, found: Route | None) -> None:
    assert route(TABLE, path, unread_body) == found


def test_a_path_claimed_twice_goes_to_the_first_route() -> None:
    """The MCP path, then the metadata, the probes, the cards: the order both engines always
    routed in."""
    table = route_table("/a", ["/a", "/b"], ["/b", "/c"], ["/a", "/c", "/d"])
    assert table == {"/a": "mcp", "/b": "metadata", "/c": "probe", "/d": "card"}


def test_nothing_but_the_mcp_path_when_no_side_path_is_served() -> None:
    assert route_table("/mcp", (), (), ()) == {"/mcp": "mcp"}
