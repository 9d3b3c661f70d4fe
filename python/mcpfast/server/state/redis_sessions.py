"""What a `RedisBus` knows of legacy sessions without asking Redis: the mirror of the records
it has seen (`Mirror`), kept current by the broadcast (`SessionNote`) of every save, and the
copies it still holds when Redis may have lost them (`Mirror.copies`, `restorable`)."""

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
    """What this bus knows of a session: ended until, and its live record until (monotonic);
    for a session Redis held no record of, when it was read (Unix seconds; 0: not read)."""

    __slots__ = ("ended_until", "read", "record", "until")

    def __init__(
        self, ended_until: float, record: SessionRecord | None, until: float, read: float = 0.0
    ) -> None:
        self.ended_until = ended_until
        self.record = record
        self.until = until
        self.read = read

    def answer(self, now: float) -> SessionRecord | None:
        if self.ended_until > now:
            return SessionRecord(seen=time.time(), ended=True)
        if self.record is not None and self.until > now:
            return self.record
        return None


class Mirror:
    """The session records this bus has seen (at most ``size``, least recently used out),
    kept current by the broadcasts of every save. A read of Redis is mirrored only if no
    broadcast of the session landed while it ran (else it may be older than that one). When
    the broadcasts stop (`lose`) what it knew is no longer answered from but kept as copies,
    for Redis to take back what it lost (`copies`)."""

    def __init__(self, size: int) -> None:
        self._size = max(1, size)
        self._known: OrderedDict[str, Known] = OrderedDict()
        self._reading: dict[str, object] = {}
        self._survivors: OrderedDict[str, Known] = OrderedDict()
        self.ttl = 0.0
        """The longest expiry a saved record was given (seconds), learned from the broadcasts."""

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
        if not note.record.ended:
            self.ttl = max(self.ttl, note.ttl_ms / 1000)
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

    def lose(self) -> None:
        """The broadcasts stopped: answer nothing more, keep what was known as copies."""
        self._survivors.update(self._known)
        while len(self._survivors) > self._size:
            self._survivors.popitem(last=False)
        self._known.clear()
        self._reading.clear()

    def copies(self) -> list[tuple[str, Known]]:
        """Every session known now or before the broadcasts last stopped (the newer copy of
        each), until `restored`."""
        return list({**self._survivors, **self._known}.items())

    def restored(self) -> None:
        """Redis took back the copies: forget those of before the broadcasts stopped."""
        self._survivors.clear()


def restorable(known: Known, now: float, absent: float) -> tuple[SessionRecord, float] | None:
    """What a copy lets Redis take back, and for how many seconds more: an ending, a live
    record, or with ``absent`` > 0 that a session with no record was in use when read (a
    record of that use, kept ``absent`` seconds: its expiry is judged by its ``seen``); None
    for a copy that holds none of these any more."""
    if known.ended_until > now:
        return SessionRecord(seen=time.time(), ended=True), known.ended_until - now
    if known.record is not None and known.until > now:
        return known.record, known.until - now
    if known.record is None and known.read and absent > 0:
        return SessionRecord(seen=known.read), absent
    return None
