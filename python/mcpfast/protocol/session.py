"""A client's legacy session over Streamable HTTP (2025-*), as state and rules without I/O.

Theory of operation: `ClientSession.begin` starts (or restarts) a session and gives the
``initialize`` params; that request carries only `initialize_headers`. Every answer's
``Mcp-Session-Id`` goes to `adopt` (the first one opens the session, a different one later
replaces it: the server re-minted it); `opened` reads the ``initialize`` result. Every later
request carries `headers`. An HTTP 404 to a request that carried the session id means the
session is gone (`expired`): the caller begins a new one (and sets up again what the old one
had: its log level, subscriptions, GET stream) and retries that request once. A dropped SSE
stream is resumed from its `ResumePoint`: a GET with ``Last-Event-ID``, after the ``retry`` the
server asked for.
"""

from __future__ import annotations

from typing import Any

from .headers import ACCEPT
from .initialize import Initialized, initialize_params, read_result
from .sse import Parser

SESSION_HEADER = "mcp-session-id"
"""The legacy session header, lowercase (as both engines hand header names over)."""
SESSION_HEADER_BYTES = SESSION_HEADER.encode()
"""`SESSION_HEADER` as the engines' response headers spell it."""
DEFAULT_RETRY_MS = 1000
"""How long to wait before resuming a stream that asked for no ``retry``."""


class ClientSession:
    """One client's session with one server.

    Attributes:
        requested: the revision the client asks for in ``initialize``.
        version: the revision in use: the negotiated one once `opened`, before that the
            requested one.
        id: the ``Mcp-Session-Id`` (None: no session, or the server keeps none).
        initialized: what the ``initialize`` result said (None until `opened`).
    """

    def __init__(self, requested: str) -> None:
        self.requested = requested
        self.version = requested
        self.id: str | None = None
        self.initialized: Initialized | None = None

    def begin(self, capabilities: dict[str, Any], client_info: dict[str, Any]) -> dict[str, Any]:
        """Forget the session (`end`) and give the ``initialize`` params of a new one."""
        self.end()
        return initialize_params(self.requested, capabilities, client_info)

    def end(self) -> None:
        """Forget the session: its id, its negotiated revision and its ``initialize`` result."""
        self.id = None
        self.version = self.requested
        self.initialized = None

    def adopt(self, session_id: str | None) -> None:
        """Keep an answer's ``Mcp-Session-Id``; an answer without one changes nothing."""
        if session_id:
            self.id = session_id

    def opened(self, result: Any) -> Initialized:
        """Read the ``initialize`` result: the session now speaks its revision.

        Raises:
            TransportError: the result negotiated a revision the client does not speak
                (`protocol.initialize.read_result`); the session is not opened.
        """
        self.initialized = read_result(result, self.requested)
        self.version = self.initialized.version
        return self.initialized

    def initialize_headers(self) -> dict[str, str]:
        """The headers of ``initialize`` (no revision, no session yet)."""
        return {"accept": ACCEPT, "content-type": "application/json"}

    def headers(self) -> dict[str, str]:
        """The headers of every other request in the session."""
        out = {**self.initialize_headers(), "mcp-protocol-version": self.version}
        if self.id is not None:
            out[SESSION_HEADER] = self.id
        return out

    def stream_headers(self, last_event_id: str | None = None) -> dict[str, str]:
        """The headers of a GET stream of the session (resumed after ``last_event_id``)."""
        out = {**self.headers(), "accept": "text/event-stream"}
        if last_event_id:
            out["last-event-id"] = last_event_id
        return out

    def expired(self, status: int, sent_id: str | None) -> bool:
        """Whether an answer with ``status`` to a request that carried ``sent_id`` says the
        session is gone (404 to a request with a session id): begin a new one, retry once."""
        return status == 404 and sent_id is not None


class ResumePoint:
    """Where a stream can be resumed: the last event id seen (None: it cannot be) and the
    reconnection delay the server asked for."""

    __slots__ = ("last_event_id", "retry_ms")

    def __init__(self) -> None:
        self.last_event_id: str | None = None
        self.retry_ms = DEFAULT_RETRY_MS

    def follow(self, parser: Parser) -> None:
        """Take what a stream's parser has seen (an id or ``retry`` it did not set keeps the
        earlier one)."""
        self.last_event_id = parser.last_event_id or self.last_event_id
        self.retry_ms = parser.retry_ms or self.retry_ms

    @property
    def delay(self) -> float:
        """Seconds to wait before resuming."""
        return self.retry_ms / 1000
