"""`protocol.session`: a client's legacy session rules, step by step, and the resume point."""

from __future__ import annotations

import pytest

from mcpfast.protocol import sse
from mcpfast.protocol.headers import ACCEPT
from mcpfast.protocol.session import ClientSession, ResumePoint

INFO = {"name": "t", "version": "1"}


def test_before_initialize_only_the_handshake_headers() -> None:
    session = ClientSession("2025-06-18")
    params = session.begin({"roots": {}}, INFO)
    assert params == {
        "protocolVersion": "2025-06-18",
        "capabilities": {"roots": {}},
        "clientInfo": INFO,
    }
    assert session.initialize_headers() == {"accept": ACCEPT, "content-type": "application/json"}
    assert session.headers()["mcp-protocol-version"] == "2025-06-18"
    assert "mcp-session-id" not in session.headers()


def test_the_answer_sets_the_id_and_revision() -> None:
    session = ClientSession("2025-11-25")
    session.begin({}, INFO)
    session.adopt("s1")
    initialized = session.opened({"protocolVersion": "2025-06-18", "capabilities": {}})
    assert initialized.version == session.version == "2025-06-18"
    assert session.headers() == {
        "accept": ACCEPT,
        "content-type": "application/json",
        "mcp-protocol-version": "2025-06-18",
        "mcp-session-id": "s1",
    }


@pytest.mark.parametrize(("header", "kept"), [(None, "s1"), ("", "s1"), ("s2", "s2")])
def test_a_reminted_id_replaces_the_old_one(header: str | None, kept: str) -> None:
    session = ClientSession("2025-11-25")
    session.adopt("s1")
    session.adopt(header)
    assert session.id == kept


@pytest.mark.parametrize(
    ("status", "sent", "expired"),
    [(404, "s1", True), (404, None, False), (400, "s1", False), (200, "s1", False)],
)
def test_expired_is_a_404_to_a_request_with_the_id(
    status: int, sent: str | None, expired: bool
) -> None:
    assert ClientSession("2025-11-25").expired(status, sent) is expired


def test_begin_again_forgets_the_session() -> None:
    session = ClientSession("2025-11-25")
    session.adopt("s1")
    session.opened({"protocolVersion": "2025-03-26"})
    session.begin({}, INFO)
    assert (session.id, session.version, session.initialized) == (None, "2025-11-25", None)


def test_stream_headers_resume_after_the_last_event() -> None:
    session = ClientSession("2025-11-25")
    session.adopt("s1")
    assert session.stream_headers()["accept"] == "text/event-stream"
    assert "last-event-id" not in session.stream_headers()
    assert session.stream_headers("e7")["last-event-id"] == "e7"
    assert session.stream_headers("e7")["mcp-session-id"] == "s1"


def test_resume_point_keeps_what_a_later_stream_does_not_set() -> None:
    point = ResumePoint()
    assert (point.last_event_id, point.delay) == (None, 1.0)
    first = sse.Parser()
    first.feed(b"id: e1\nretry: 250\ndata: {}\n\n")
    point.follow(first)
    assert (point.last_event_id, point.retry_ms) == ("e1", 250)
    second = sse.Parser()
    second.feed(b"data: {}\n\n")
    point.follow(second)
    assert (point.last_event_id, point.delay) == ("e1", 0.25)
