"""What a `RedisBus` knows of legacy sessions without asking Redis: the mirror of the records
it has seen (`Mirror`), kept current by the broadcast (`SessionNote`) of every save."""

from __future__ import annotations

import time
from collections import OrderedDict

import msgspec

from .sessions import SessionRecord


class SessionNote(msgspec.Struct, array_like=True):
    """The broadcast of a saved session record."""

    id: str
    ttl_ms: int
    record: SessionRecord


_note_decoder = msgspec.json.Decoder(SessionNote)
record_decoder = msgspec.json.Decoder(SessionRecord)


class Known:
    """What this bus knows of a session: ended until, and its live record until (monotonic)."""

    __slots__ = ("ended_until", "record", "until")

    def __init__(self, ended_until: float, record: SessionRecord | None, until: float) -> None:
        self.ended_until = ended_until
        self.record = record
        self.until = until

    def answer(self, now: float) -> SessionRecord | None:
        if self.ended_until > now:
            return SessionRecord(seen=time.time(), ended=True)
        if self.record is not None and self.until > now:
            return self.record
        return None


class Mirror:
    """The session records this bus has seen (at most ``size``, least recently used out),
    kept current by the broadcasts of every save. A read of Redis is mirrored only if no
    broadcast of the session landed while it ran (else it may be older than that one)."""

    def __init__(self, size: int) -> None:
        self._size = max(1, size)
        self._known: OrderedDict[str, Known] = OrderedDict()
        self._reading: dict[str, object] = {}

    def get(self, session_id: str) -> Known | None:
        known = self._known.get(session_id)
        if known is not None:
            self._known.move_to_end(session_id)
        return known

    def put(self, session_id: str, known: Known) -> None:
        self._known[session_id] = known
        self._known.move_to_end(session_id)
        while len(self._known) > self._size:
            self._known.popitem(last=False)

    def heard(self, payload: bytes) -> None:
        """A save broadcast: an ending is known in full; a live record only updates a session
        already known (its ending, if any, may have been forgotten here)."""
        note = _note_decoder.decode(payload)
        self._reading.pop(note.id, None)
        until = time.monotonic() + note.ttl_ms / 1000
        if note.record.ended:
            self.put(note.id, Known(until, None, 0.0))
            return
        known = self._known.get(note.id)
        if known is not None:
            known.record, known.until = note.record, until

    def forget(self, session_id: str) -> None:
        self._known.pop(session_id, None)
        self._reading.pop(session_id, None)

    def begin(self, session_id: str) -> object:
        token = self._reading[session_id] = object()
        return token

    def settle(self, session_id: str, token: object, known: Known | None) -> None:
        """End a read of ``session_id``; mirror ``known`` unless a broadcast overtook it."""
        if self._reading.get(session_id) is token:
            del self._reading[session_id]
            if known is not None:
                self.put(session_id, known)

    def clear(self) -> None:
        self._known.clear()
        self._reading.clear()
