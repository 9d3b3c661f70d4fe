"""Legacy sessions as signed tokens: the ``Mcp-Session-Id`` *is* the session.

The token carries the session id, the negotiated revision, the client capabilities, the log level
and the subscribed resource URIs, signed with the server keys. Any worker verifies it; nothing is
stored, so a restart loses nothing. A changed session (log level, subscriptions) or an old token
is re-minted and sent back in ``Mcp-Session-Id``. DELETE revokes the id on the bus until the
token would have expired anyway.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import msgspec

from .. import codec
from ..errors import TokenError
from .keys import KeyRing

MAX_SUBSCRIPTIONS = 64


class Session(msgspec.Struct, array_like=True, kw_only=True):
    """What a legacy session remembers, all of it inside the token."""

    id: str
    version: str
    capabilities: dict[str, Any]
    log_level: str | None = None
    subscriptions: list[str] = msgspec.field(default_factory=list)


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Session)


def new_session(version: str, capabilities: dict[str, Any]) -> Session:
    """A fresh session with an unguessable id."""
    return Session(id=secrets.token_urlsafe(12), version=version, capabilities=capabilities)


def mint(keys: KeyRing, session: Session) -> str:
    """The ``Mcp-Session-Id`` for a session (visible ASCII only)."""
    return codec.mint_token(
        keys.signing, keys.signing_key, _encoder.encode(session), int(time.time())
    )


def open_session(keys: KeyRing, token: str, max_age: int) -> tuple[Session, int]:
    """The session a token carries and when it was issued.

    Raises:
        TokenError: a tampered, truncated, expired or unknown-key token (the caller answers 404).
    """
    payload, issued_at = codec.verify_token(token, keys.keys, int(time.time()), max_age)
    try:
        return _decoder.decode(payload), issued_at
    except msgspec.DecodeError:
        raise TokenError("malformed") from None
