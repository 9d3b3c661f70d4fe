"""Server-Sent Events: encoding events and parsing a byte stream into events, incrementally."""

from __future__ import annotations

import msgspec

KEEPALIVE = b": keep-alive\n\n"


def encode_event(data: bytes, event_id: str | None = None, retry_ms: int | None = None) -> bytes:
    """One `message` event carrying ``data`` (a JSON text, so it holds no newline)."""
    head = b""
    if event_id is not None:
        head += b"id: " + event_id.encode() + b"\n"
    if retry_ms is not None:
        head += b"retry: " + str(retry_ms).encode() + b"\n"
    return head + b"data: " + data + b"\n\n"


class Event(msgspec.Struct, frozen=True, kw_only=True):
    """A parsed event: its data, id (None when the event set none) and event name."""

    data: str
    id: str | None = None
    event: str = "message"
    retry: int | None = None


class Parser:
    """Incremental SSE parser: feed bytes, collect the complete events."""

    def __init__(self, max_event: int = 16 * 1024 * 1024) -> None:
        self._buffer = b""
        self._data: list[str] = []
        self._id: str | None = None
        self._event = "message"
        self._retry: int | None = None
        self._max = max_event
        self.retry_ms: int | None = None
        """The latest ``retry`` the stream asked for (the reconnection delay)."""

    def feed(self, chunk: bytes) -> list[Event]:
        """Add bytes; return the events they complete.

        Raises:
            ValueError: when one event grows past the size limit.
        """
        self._buffer += chunk
        events: list[Event] = []
        while True:
            cut = _line_end(self._buffer)
            if cut is None:
                if len(self._buffer) > self._max:
                    raise ValueError("SSE event too large")
                return events
            line, skip = cut
            raw = self._buffer[:line]
            self._buffer = self._buffer[line + skip :]
            event = self._line(raw.decode("utf-8", "replace"))
            if event is not None:
                events.append(event)

    def _line(self, line: str) -> Event | None:
        if not line:
            if not self._data:
                self._event = "message"
                return None
            event = Event(
                data="\n".join(self._data), id=self._id, event=self._event, retry=self._retry
            )
            self._data, self._event, self._retry = [], "message", None
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name == "event":
            self._event = value
        elif name == "retry" and value.isdigit():
            self._retry = self.retry_ms = int(value)
        return None

    @property
    def last_event_id(self) -> str | None:
        """The id to resume from (`Last-Event-ID`)."""
        return self._id


def _line_end(buffer: bytes) -> tuple[int, int] | None:
    """Where the first line ends and how long its terminator is (CRLF, LF or CR)."""
    lf = buffer.find(b"\n")
    cr = buffer.find(b"\r")
    if cr == -1 or (lf != -1 and lf < cr):
        return None if lf == -1 else (lf, 1)
    if cr + 1 == len(buffer):
        return None
    return cr, 2 if buffer[cr + 1] == 10 else 1
