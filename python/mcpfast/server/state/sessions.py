"""Legacy sessions as signed tokens: the ``Mcp-Session-Id`` *is* the session.

The token carries the session id, the negotiated revision, the client capabilities, when the
session began, and the state it had when the token was minted (log level, subscribed resource
URIs), signed with the server keys. Any worker verifies it and no session table exists.

Clients differ in what they send back. Some adopt the id the server re-mints in a response (an
old token, or one whose state changed); others, the official SDK's and every client built on it,
send the id of the ``initialize`` response for the whole session. Both work:

* a session lasts while it is used: ``session_seconds`` after its last request, and never past
  ``session_lifetime_seconds`` from its start. A token newer than ``session_seconds`` proves use
  by itself; an older one is honoured while the bus holds a recent `SessionRecord` of the
  session, which a request whose token is older than ``session_refresh_seconds`` writes (at most
  every `touch_interval`). A client that adopts re-minted ids never needs the record.
* state a client may not carry (the log level, subscriptions) is kept in the same record, and a
  record's state overrides the token's.
* ``DELETE`` marks the record ended for as long as any token of the session could be valid (a
  bus that must forget an ending sooner refuses every session started before it instead).
* what a token carries is bounded where it changes (`bounded`, `subscribed`): -32602, before
  anything is kept, for an id that would not fit in a request head.
* while a shared bus is away (`BusUnavailable`), an id younger than ``session_seconds`` is
  served without its record (so without a DELETE, log level or subscription made meanwhile);
  an older one, which only a record keeps alive, is refused with 503.
* when the bus lost its records (Redis restarted empty) the workers give back the copies they
  hold; a session of before the loss whose record none gave back may have held state the
  server no longer knows: it is answered 404 (``data.reason``: ``lost``), for the client to
  start a new session, never served as if nothing happened (`SessionBus.lost`).
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Mapping
from typing import Any, Protocol

import msgspec

from ... import codec, jsonrpc
from ...errors import BusUnavailable, ProtocolError, TokenError
from ...protocol.session import SESSION_HEADER
from ...versions import LEGACY
from ..access import current_access
from .keys import KeyRing

MAX_SUBSCRIPTIONS = 64
"""Resources one legacy session may subscribe to."""
MAX_URI_BYTES = 2048
"""The longest resource URI (UTF-8) a session may subscribe to."""
MAX_SUBSCRIPTION_BYTES = 16 * 1024
"""The URIs one session subscribes to, together (UTF-8)."""
MAX_ID_BYTES = 32 * 1024
"""The longest ``Mcp-Session-Id``, and at most half of ``max_header_bytes``: a client sends it
back in every request head, next to its other headers. It bounds all a session carries (the
client's capabilities, its subscriptions)."""
_ID_OVERHEAD = 128
"""What a token adds to its base64 payload, at most: version, key id, issue time, MAC."""

log = logging.getLogger("mcpfast.sessions")


class Session(msgspec.Struct, array_like=True, kw_only=True):
    """What a legacy session remembers, all of it inside the token."""

    id: str
    version: str
    capabilities: dict[str, Any]
    log_level: str | None = None
    subscriptions: list[str] = msgspec.field(default_factory=list)
    started: int = 0
    """When the session began (Unix seconds); 0 in tokens minted before this field existed,
    which then count from their own issue time."""
    owner: str | None = None
    """On a protected server, whose session it is (the access token's issuer and subject):
    only that user's tokens may use its id."""


class SessionRecord(msgspec.Struct, kw_only=True):
    """What the bus keeps of a session: when it was last used, the state a client may not carry
    in its id, and whether it ended."""

    seen: float
    log_level: str | None = None
    subscriptions: list[str] | None = None
    ended: bool = False
    started: int = 0
    """Of an ending: when the session began, for a bus that forgets an ending before it
    expires (`SessionBus.ended_before`)."""


class SessionBus(Protocol):
    """The part of the `Bus` that keeps `SessionRecord` values, each with an expiry."""

    async def load_session(self, session_id: str, fresh: bool = False) -> SessionRecord | None: ...

    async def save_session(
        self, session_id: str, record: SessionRecord, ttl_seconds: float
    ) -> None: ...

    def ended_before(self) -> int:
        """Every session started at or before this time (Unix seconds) has ended: a bus that
        had to forget endings before they expired folds them into this watermark; 0 for none."""
        ...

    async def lost(self, started: int) -> bool:
        """Whether a session started at ``started`` with no record may have lost state."""
        ...


class Lifetimes(Protocol):
    """The settings (`Config`) that bound a session."""

    session_seconds: int
    session_lifetime_seconds: int
    session_refresh_seconds: int


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Session)


def new_session(version: str, capabilities: dict[str, Any], max_header_bytes: int) -> Session:
    """A fresh session with an unguessable id, bound to the user whose access token opened it
    (on a protected server).

    Raises:
        ProtocolError: -32602 for capabilities too large to carry (`bounded`).
    """
    session = Session(
        id=secrets.token_urlsafe(12),
        version=version,
        capabilities=capabilities,
        started=int(time.time()),
        owner=principal(),
    )
    return bounded(session, max_header_bytes)


def bounded(session: Session, max_header_bytes: int) -> Session:
    """``session``, if its id stays within `MAX_ID_BYTES` and half of ``max_header_bytes``:
    every state a session takes passes here before it is kept or minted.

    Raises:
        ProtocolError: -32602 naming the limit (``data.limit``, ``data.size``: bytes of id).
    """
    limit = min(MAX_ID_BYTES, max_header_bytes // 2)
    size = _ID_OVERHEAD + (4 * len(_encoder.encode(session)) + 2) // 3
    if size > limit:
        message = f"Session state too large: its Mcp-Session-Id would pass {limit} bytes"
        raise _too_large(message, limit, size)
    return session


def subscribed(session: Session, uri: str) -> Session:
    """``session`` subscribed to ``uri`` too: at most `MAX_SUBSCRIPTIONS` URIs of at most
    `MAX_URI_BYTES`, `MAX_SUBSCRIPTION_BYTES` together (the caller then applies `bounded`).

    Raises:
        ProtocolError: -32602 naming the limit passed (``data.limit``, ``data.size``).
    """
    size = len(uri.encode())
    if size > MAX_URI_BYTES:
        raise _too_large(f"Resource URI too long (over {MAX_URI_BYTES} bytes)", MAX_URI_BYTES, size)
    uris = [u for u in session.subscriptions if u != uri]
    if len(uris) >= MAX_SUBSCRIPTIONS:
        raise _too_large(
            f"Too many subscriptions in one session (at most {MAX_SUBSCRIPTIONS})",
            MAX_SUBSCRIPTIONS,
            len(uris) + 1,
        )
    total = size + sum(len(u.encode()) for u in uris)
    if total > MAX_SUBSCRIPTION_BYTES:
        raise _too_large(
            f"Subscribed URIs too long together (over {MAX_SUBSCRIPTION_BYTES} bytes)",
            MAX_SUBSCRIPTION_BYTES,
            total,
        )
    return msgspec.structs.replace(session, subscriptions=[*uris, uri])


def _too_large(message: str, limit: int, size: int) -> ProtocolError:
    return ProtocolError(jsonrpc.INVALID_PARAMS, message, {"limit": limit, "size": size})


def principal() -> str | None:
    """The user of the request being served: its access token's issuer and subject (the
    client, for a token without one); None on an unprotected server or over stdio. What
    outlives a request (a session, a task, its notifications, a ``requestState``) belongs to
    it."""
    access = current_access.get()
    if access is None:
        return None
    return f"{access.issuer or ''} {access.subject or access.client_id or ''}"


def mint(keys: KeyRing, session: Session) -> str:
    """The ``Mcp-Session-Id`` for a session (visible ASCII only)."""
    return codec.mint_token(
        keys.signing, keys.signing_key, _encoder.encode(session), int(time.time())
    )


_VERIFIED: dict[str, tuple[KeyRing, bytes, int]] = {}
"""Tokens verified lately (a session sends the same id with each request), with the keys that
verified them, their payload and issue time: only their age is judged again. Past
`_VERIFIED_KEPT` it starts over; refused tokens, and tokens longer than `_VERIFIED_LENGTH`
(verified each time), are never kept: it holds a few MiB at most."""
_VERIFIED_KEPT = 4096
_VERIFIED_LENGTH = 2048


def open_session(keys: KeyRing, token: str, max_age: int) -> tuple[Session, int]:
    """The session a token carries and when the token was issued: `codec.verify_token` of an
    id of at most `MAX_ID_BYTES`, remembered (`_VERIFIED`).

    Raises:
        TokenError: a tampered, truncated, expired or unknown-key token (the caller answers
            404); ``expired`` for a remembered token now too old.
    """
    now = int(time.time())
    known = _VERIFIED.get(token)
    if known is not None and known[0] is keys:
        payload, issued_at = known[1], known[2]
        if now - issued_at > max_age:
            raise TokenError("expired")
    else:
        payload, issued_at = codec.verify_token(token, keys.keys, now, max_age, MAX_ID_BYTES)
        if len(token) <= _VERIFIED_LENGTH:
            if len(_VERIFIED) >= _VERIFIED_KEPT:
                _VERIFIED.clear()
            _VERIFIED[token] = (keys, payload, issued_at)
    try:
        session = _decoder.decode(payload)
    except msgspec.DecodeError:
        raise TokenError("malformed") from None
    if not session.started:
        session.started = issued_at
    return session, issued_at


def touch_interval(limits: Lifetimes) -> float:
    """How stale a session's record may get before a request writes it again."""
    return max(0.5, min(60.0, limits.session_refresh_seconds / 4))


async def from_headers(
    bus: SessionBus, keys: KeyRing, headers: Mapping[str, str], limits: Lifetimes
) -> tuple[Session, bool]:
    """The session a request's ``Mcp-Session-Id`` names (its state: the record's over the
    token's), and whether the token is old enough to re-mint; notes the session's use on the bus
    when it is. Its ``MCP-Protocol-Version``, if any, must name a legacy revision; the session's
    negotiated one governs (the spec asks the client to send that one, and refuses only an
    invalid or unsupported version, as the official SDKs do).

    Raises:
        ProtocolError: 400 for no ``Mcp-Session-Id`` (-32600), or -32022 (``data.supported``:
            the legacy revisions, ``data.requested``) for a version header of no legacy
            revision, unknown or ``2026-07-28`` alike; 404 (-32001, ``data.reason``) for a
            token that is tampered with, unknown, ended by DELETE (``terminated``), or
            ``expired`` (unused for ``session_seconds``, or past ``session_lifetime_seconds``),
            or whose record the bus ``lost``.
    """
    token = headers.get(SESSION_HEADER)
    if token is None:
        raise ProtocolError(
            jsonrpc.INVALID_REQUEST, "Bad Request: Mcp-Session-Id header required", http_status=400
        )
    try:
        session, issued_at = open_session(keys, token.strip(), limits.session_lifetime_seconds)
        now = time.time()
        if now - session.started > limits.session_lifetime_seconds:
            raise TokenError("expired")
        if session.owner != principal():  # another user's session id: as if it did not exist
            raise TokenError("unknown")
        if session.started <= bus.ended_before():
            raise TokenError("terminated")
        age = now - issued_at
        record = await _record(bus, session, age, limits)
        stale = _judge(session, age, record, now, limits)
    except TokenError as exc:
        raise ProtocolError(
            jsonrpc.SESSION_NOT_FOUND, "Session not found", {"reason": exc.reason}, http_status=404
        ) from None
    version_header = headers.get("mcp-protocol-version")
    if version_header is not None and version_header.strip() not in LEGACY:
        requested = version_header.strip()
        raise ProtocolError(
            jsonrpc.UNSUPPORTED_VERSION,
            f"Bad Request: unsupported MCP-Protocol-Version {requested} for a session",
            {"supported": list(LEGACY), "requested": requested},
            http_status=400,
        )
    if stale:
        await _note_use(bus, session.id, record, now, age, limits)
    return session, stale


async def _note_use(
    bus: SessionBus,
    session_id: str,
    record: SessionRecord | None,
    now: float,
    age: float,
    limits: Lifetimes,
) -> None:
    """Note a request of a session whose id, ``age`` seconds old, is stale: its record is
    written again once it is older than `touch_interval`, keeping the state the bus's store
    holds now (``record`` may be this worker's copy, which may not have heard yet of a change
    made on another worker), or ``record``'s when the store holds none.

    Raises:
        BusUnavailable: the bus is away and only a record could keep this old id alive.
    """
    touch = touch_interval(limits)
    if record is not None and now - record.seen <= touch:
        return
    fresh = SessionRecord(seen=now)
    try:
        base = await bus.load_session(session_id, fresh=True) or record
        if base is not None:
            fresh.log_level, fresh.subscriptions = base.log_level, base.subscriptions
        await bus.save_session(session_id, fresh, limits.session_seconds + touch)
    except BusUnavailable:
        if age > limits.session_seconds:
            raise  # only a record keeps this id alive, and it cannot be written
        log.debug("session %s: its use is not noted (the bus is away)", session_id[:8])


async def _record(
    bus: SessionBus, session: Session, age: float, limits: Lifetimes
) -> SessionRecord | None:
    """The session's record; None when there is none, or when the bus is away and the id,
    ``age`` seconds old, proves the session by itself (`_without_record`). When there is none
    and the bus may have lost it (`SessionBus.lost`; while the bus is away, it may not), it is
    read once more, from the store (not a mirror, which kept the absence and may not have heard
    of the copies given back yet): the workers have given them back by then.

    Raises:
        BusUnavailable: the bus is away and only a record could keep this old id alive.
        TokenError: ``lost``: still none, of a session the bus may have lost.
    """
    try:
        record = await bus.load_session(session.id)
    except BusUnavailable as away:
        _without_record(away, session.id, age, limits)
        record = None
    if record is not None:
        return record
    try:
        if not await bus.lost(session.started):
            return None
    except BusUnavailable:
        return None
    try:
        record = await bus.load_session(session.id, fresh=True)  # the mirror kept the absence
    except BusUnavailable as away:
        _without_record(away, session.id, age, limits)
        record = None
    if record is None:
        raise TokenError("lost")
    return record


def _without_record(away: BusUnavailable, session_id: str, age: float, limits: Lifetimes) -> None:
    """Go on without the session's record while the bus is ``away``, when the id, ``age``
    seconds old, proves the session by itself: the request goes on without the record's state
    (the log level, subscriptions, an ending by DELETE reach it once the bus is back).

    Raises:
        BusUnavailable: ``away``, when only a record could keep this old id alive.
    """
    if age > limits.session_seconds:
        raise away
    log.debug("session %s: served without its record (the bus is away)", session_id[:8])


def _judge(
    session: Session, age: float, record: SessionRecord | None, now: float, limits: Lifetimes
) -> bool:
    """Apply the bus record to ``session``; whether its token, ``age`` seconds old, is stale.

    Raises:
        TokenError: ``terminated`` or ``expired``.
    """
    if record is not None:
        if record.ended:
            raise TokenError("terminated")
        _apply(session, record)
    if age <= limits.session_refresh_seconds and age <= limits.session_seconds:
        return False
    idle = limits.session_seconds + touch_interval(limits)
    if age > limits.session_seconds and (record is None or now - record.seen > idle):
        raise TokenError("expired")
    return True


def _apply(session: Session, record: SessionRecord) -> None:
    """Give ``session`` the state ``record`` holds (the record's over the token's)."""
    if record.log_level is not None:
        session.log_level = record.log_level
    if record.subscriptions is not None:
        session.subscriptions = record.subscriptions


async def current(bus: SessionBus, session: Session) -> Session:
    """``session`` with the state its record holds now, read from the bus's store past this
    worker's copy: the base of a change of state. A change based on the copy could undo one
    that another worker made a moment earlier (a client's ``logging/setLevel`` there, then its
    ``resources/subscribe`` here), when the news of it has not reached this worker yet.

    Raises:
        BusUnavailable: the bus is away; nothing changed.
    """
    record = await bus.load_session(session.id, fresh=True)
    if record is None or record.ended:
        return session
    based = msgspec.structs.replace(session)
    _apply(based, record)
    return based


async def save_state(bus: SessionBus, session: Session, limits: Lifetimes) -> None:
    """Keep a session's changed state (log level, subscriptions) where every request of the
    session finds it, whichever id the client sends."""
    record = SessionRecord(
        seen=time.time(), log_level=session.log_level, subscriptions=session.subscriptions
    )
    await bus.save_session(session.id, record, limits.session_seconds + touch_interval(limits))


async def end(bus: SessionBus, session: Session, limits: Lifetimes) -> None:
    """End a session: every id of it answers 404 for as long as one could be valid. No id is
    minted after this, and an id older than ``session_seconds`` is honoured only with a live
    record of the session, which this one replaces: so the ending is kept for
    ``session_seconds`` (and a touch interval), never past the session's lifetime, and carries
    the session's start for a bus that must forget it sooner (`SessionBus.ended_before`)."""
    remaining = session.started + limits.session_lifetime_seconds - time.time()
    horizon = limits.session_seconds + touch_interval(limits)
    ending = SessionRecord(seen=time.time(), ended=True, started=session.started)
    await bus.save_session(session.id, ending, max(1.0, min(remaining, horizon)))
