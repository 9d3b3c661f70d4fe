"""The reply to one request as it is being written (`Emission`): plain JSON, or an SSE stream once
the handler sends something first, made resumable by `Resumable`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import trio

from ...protocol.http import Headers
from ..seams import Responder
from .refusal import best_effort


class EventStore(Protocol):
    """Where a resumable stream records its events (the `Bus` implements it)."""

    async def open_stream(self, owner: str, max_events: int, epitaph: bytes = b"") -> str: ...

    async def record(self, stream: str, data: bytes, *, final: bool = False) -> str: ...

    async def interrupt(self, stream: str) -> None: ...


class Resumable:
    """How a request's SSE stream is made resumable: the store recording its events, the owner
    (a session id), how many events it keeps, and, where the revision defines SSE polling
    (2025-11-25), the ``retry`` of the priming event that opens the stream, and the epitaph: what
    a client resuming the stream elsewhere gets last if this worker dies first (`Bus.follow`)."""

    __slots__ = ("epitaph", "max_events", "owner", "retry_ms", "store")

    def __init__(
        self,
        store: EventStore,
        owner: str,
        max_events: int,
        retry_ms: int | None,
        epitaph: bytes = b"",
    ) -> None:
        self.store = store
        self.owner = owner
        self.max_events = max_events
        self.retry_ms = retry_ms
        self.epitaph = epitaph


class Emission:
    """The reply to one request: nothing is sent until the first notification (or request) of
    the handler, which turns the response into an SSE stream; `finish` then sends the result as
    JSON or as the last event. With ``prefer_stream`` (the client ranked ``text/event-stream``
    first) the result is an SSE stream even when nothing else was sent.

    With ``resumable`` (what makes the `Resumable`: called once, when the reply first needs it,
    so a reply answered with plain JSON never makes one), every event gets an id and is
    recorded, so a client resumes the stream with GET + ``Last-Event-ID``. When it also has a
    ``retry_ms`` (SSE polling, 2025-11-25) the stream opens with a priming event (an id, empty
    data, ``retry``), and `close_stream` ends the HTTP response while the handler goes on: what
    follows is only recorded, for the client to fetch by resuming.

    Recording is best-effort (`refusal.best_effort`): the stream's HTTP response is under way,
    so an event the bus cannot record (it is away) goes out to the attached client without an
    id, and is lost to resumption (and to a client that would resume a detached stream). After
    one such failure the events that follow are not recorded either (each try would hold the
    stream up to the bus's bound), but the final one is tried again, so that a client following
    the stream elsewhere sees it end. A stream whose record could not be opened goes on
    unrecorded, and stays attached (it cannot be resumed, so `close_stream` keeps it). The
    final message goes out whatever the bus does: never a stream cut off."""

    __slots__ = (
        "_attached",
        "_finished",
        "_lock",
        "_resumable",
        "_resumable_from",
        "_stream_id",
        "_unrecorded",
        "extra_headers",
        "prefer_stream",
        "responder",
        "streaming",
    )

    def __init__(
        self,
        responder: Responder,
        extra_headers: Headers | None = None,
        *,
        resumable: Callable[[], Resumable] | None = None,
        prefer_stream: bool = False,
    ) -> None:
        self.responder = responder
        self.streaming = False
        self.extra_headers = extra_headers
        self._resumable_from = resumable
        self._resumable: Resumable | None = None
        self.prefer_stream = prefer_stream
        self._attached = False
        self._finished = False
        self._stream_id: str | None = None
        self._unrecorded = False
        self._lock: trio.Lock | None = None

    @property
    def lock(self) -> trio.Lock:
        """Serializes writers once more than the final answer may write (made on first use, so
        a request answered with plain JSON never pays for it)."""
        if self._lock is None:
            self._lock = trio.Lock()
        return self._lock

    @property
    def resumable(self) -> Resumable | None:
        """How the stream is made resumable (made on first use); None: it is not."""
        if self._resumable is None and self._resumable_from is not None:
            self._resumable = self._resumable_from()
        return self._resumable

    @property
    def attached(self) -> bool:
        """Whether the reply still writes to its HTTP response (not yet finished, nor let go by
        `close_stream`)."""
        return self._attached or not self.streaming

    @property
    def stream_id(self) -> str | None:
        """The id of the recorded (resumable) stream, once the reply became one."""
        return self._stream_id

    @property
    def pollable(self) -> bool:
        """Whether `close_stream` can end the response early (SSE polling)."""
        resumable = self.resumable
        return resumable is not None and resumable.retry_ms is not None

    async def _open(self) -> None:
        await self.responder.open_stream(self.extra_headers)
        self.streaming = True
        self._attached = True
        resumable = self.resumable
        if resumable is None:
            return
        opening = resumable.store.open_stream(
            resumable.owner, resumable.max_events, resumable.epitaph
        )
        self._stream_id = await best_effort(opening, "a response stream goes unrecorded")
        if resumable.retry_ms is not None and self._stream_id is not None:
            priming = await self._record(b"")
            if priming is not None:
                await self.responder.send(b"", event_id=priming, retry_ms=resumable.retry_ms)

    async def _record(self, message: bytes, *, final: bool = False) -> str | None:
        """The id of ``message`` recorded on the stream; None when the stream is unrecorded or
        the bus is away (the event cannot be resumed)."""
        resumable = self.resumable
        if resumable is None or self._stream_id is None or (self._unrecorded and not final):
            return None
        recording = resumable.store.record(self._stream_id, message, final=final)
        event_id = await best_effort(recording, f"stream {self._stream_id}: events unrecorded")
        self._unrecorded = event_id is None
        return event_id

    async def _put(self, message: bytes, *, final: bool = False) -> None:
        event_id = await self._record(message, final=final)
        if self._attached and message:
            await self.responder.send(message, event_id=event_id)

    async def emit(self, message: bytes) -> None:
        async with self.lock:
            if self._finished:
                return
            if not self.streaming:
                await self._open()
            await self._put(message)

    async def close_stream(self) -> None:
        """End the HTTP response now, leaving the stream to resumption (SSE polling only; a
        no-op otherwise). A client following the stream after resuming is cut off the same way."""
        if not self.pollable:
            return
        async with self.lock:
            if self._finished:
                return
            if not self.streaming:
                await self._open()
            if self._stream_id is None:
                return  # unrecorded: nothing to resume, so it stays attached
            if self._attached:
                self._attached = False
                await self.responder.close()
            elif (resumable := self.resumable) is not None:
                interrupting = resumable.store.interrupt(self._stream_id)
                await best_effort(interrupting, f"stream {self._stream_id}'s followers go on")

    async def finish(self, message: bytes, status: int = 200) -> None:
        if self._lock is None and not self.streaming and not (self.prefer_stream and status == 200):
            if not self._finished:  # nothing else ever wrote: answer at once, no checkpoint
                self._finished = True
                await self.responder.reply(status, message, self.extra_headers)
            return
        async with self.lock:
            if self._finished:
                return
            self._finished = True
            if not self.streaming and self.prefer_stream and status == 200:
                await self._open()
            if self.streaming:
                await self._put(message, final=True)
                if self._attached:
                    self._attached = False
                    await self.responder.close()
            else:
                await self.responder.reply(status, message, self.extra_headers)

    async def abandon(self) -> None:
        """End without a response (the request was cancelled): close the stream, if any, and
        end its record so that resumed followers stop; a request that sent nothing gets an
        empty stream."""
        async with self.lock:
            if self._finished:
                return
            self._finished = True
            if not self.streaming:
                await self.responder.open_stream(self.extra_headers)
                await self.responder.close()
                return
            await self._record(b"", final=True)
            if self._attached:
                self._attached = False
                await self.responder.close()
