"""Server-Sent Events: encoding events, parsing a byte stream into events incrementally
(`Parser`), and the one reader of an event stream's JSON-RPC messages (`Decoder`, `messages`)
that the client, the load tester and the tests use. No I/O: the load tester drives it under
gevent, the client under trio."""

from __future__ import annotations

import json
from typing import Any

import msgspec

KEEPALIVE = b": keep-alive\n\n"
MAX_EVENT = 16 * 1024 * 1024
"""The default bound of one event (16 MiB)."""


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


class TooLarge(ValueError):
    """An event grew past the bound of its parser or decoder."""


class Parser:
    """Incremental SSE parser: feed bytes, collect the complete events.

    Linear in what it is fed: each `feed` looks for the last line end among the bytes not
    searched before, splits the complete lines in one pass and drops them from the buffer; an
    unended line's bytes are not searched again when more come. ``scanned`` counts the bytes
    those searches and splits passed over (a cost meter for tests).
    """

    def __init__(self, max_event: int = MAX_EVENT) -> None:
        self._buffer = bytearray()
        self._seen = 0
        """The buffer's first bytes known to hold no line end."""
        self._data: list[str] = []
        self._id: str | None = None
        self._event = "message"
        self._retry: int | None = None
        self._max = max_event
        self.retry_ms: int | None = None
        """The latest ``retry`` the stream asked for (the reconnection delay)."""
        self.scanned = 0

    def feed(self, chunk: bytes) -> list[Event]:
        """Add bytes; return the events they complete.

        Raises:
            TooLarge: one line grew past the size limit.
        """
        buffer = self._buffer
        buffer += chunk
        end = self._complete()
        events: list[Event] = []
        if end:
            for line in buffer[:end].splitlines():  # CRLF, LF or CR: SSE's line ends exactly
                event = self._line(line.decode("utf-8", "replace"))
                if event is not None:
                    events.append(event)
            self.scanned += end
            del buffer[:end]
        if len(buffer) > self._max:
            raise TooLarge("SSE event too large")
        return events

    def _complete(self) -> int:
        """How many bytes the complete lines of the buffer take (up to and with the last line
        end; a CR at the very end is not one yet: an LF may follow)."""
        buffer = self._buffer
        stop = len(buffer) - 1 if buffer.endswith(b"\r") else len(buffer)
        lf = buffer.rfind(b"\n", self._seen, stop)
        end = max(lf, buffer.rfind(b"\r", max(self._seen, lf), stop)) + 1
        self.scanned += 2 * (stop - self._seen)
        self._seen = stop - end
        return end

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


def messages_of(event: Event) -> list[dict[str, Any]]:
    """The JSON-RPC messages an event carries: none (no data: a priming event), its message,
    or the members of a batch; a JSON value that is not an object is dropped.

    Raises:
        ValueError: the data is not JSON.
    """
    if not event.data:
        return []
    loaded = json.loads(event.data)
    if isinstance(loaded, dict):
        return [loaded]
    return [item for item in loaded if isinstance(item, dict)] if isinstance(loaded, list) else []


class Decoder:
    """An event stream's bytes in, checked events or JSON-RPC messages out, incrementally.

    ``limit`` bounds one event three ways: no line over it (the `Parser`'s bound), no event's
    data over it (in characters), and no more than ``limit`` bytes fed since the last feed that
    completed an event. `parser` is exposed for what a stream says besides events (the last
    event id and ``retry``: `mcpfast.protocol.session.ResumePoint.follow`).
    """

    def __init__(self, limit: int = MAX_EVENT) -> None:
        self.limit = limit
        self.parser = Parser(limit)
        self._pending = 0

    def events(self, chunk: bytes) -> list[Event]:
        """The events ``chunk`` completes.

        Raises:
            TooLarge: an event grew past ``limit``.
        """
        self._pending += len(chunk)
        events = self.parser.feed(chunk)
        if events:
            if max(len(event.data) for event in events) > self.limit:
                raise TooLarge("SSE event too large")
            self._pending = 0
        elif self._pending > self.limit:
            raise TooLarge("SSE event too large")
        return events

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        """The JSON-RPC messages of the events ``chunk`` completes (`messages_of`).

        Raises:
            TooLarge: an event grew past ``limit``.
            ValueError: an event's data is not JSON.
        """
        found: list[dict[str, Any]] = []
        for event in self.events(chunk):
            if event.data:
                found += messages_of(event)
        return found


def messages(body: bytes, limit: int = MAX_EVENT) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a whole event-stream body (`Decoder.feed`).

    Raises:
        TooLarge: an event is over ``limit``.
        ValueError: an event's data is not JSON.
    """
    return Decoder(limit).feed(body)
