"""``requestState`` of multi-round-trip requests: the answers gathered so far, signed with the
server keys, bound to the request (method, name, arguments digest) and to its principal
(`sessions.principal`: another user's state is refused as one of another request), and
expiring."""

from __future__ import annotations

import hashlib
import time
from typing import Any

import msgspec

from ... import codec, jsonrpc
from ...errors import ProtocolError, TokenError
from ..config import Config
from .keys import KeyRing
from .sessions import principal

_canonical = msgspec.json.Encoder(order="sorted")


class _State(msgspec.Struct, array_like=True):
    binding: str
    answers: dict[str, Any]


_decoder = msgspec.json.Decoder(_State)


def binding(method: str, name: str | None, arguments: Any) -> str:
    """A digest of what the state belongs to: the request, and the request's principal."""
    digest = hashlib.sha256(_canonical.encode([method, name, arguments, principal()])).hexdigest()
    return digest[:32]


def _too_large(limit: int, size: int) -> ProtocolError:
    return ProtocolError(
        jsonrpc.INVALID_PARAMS,
        f"requestState of {size} bytes passes request_state_max_bytes ({limit})",
        {"reason": "too large", "limit": limit, "size": size},
    )


def mint(keys: KeyRing, bound_to: str, answers: dict[str, Any], max_bytes: int) -> str:
    """A signed ``requestState`` carrying ``answers``.

    Raises:
        ProtocolError: -32602 when it would pass ``max_bytes`` (the answers are too large to
            carry to another round).
    """
    payload = msgspec.json.encode(_State(binding=bound_to, answers=answers))
    token = codec.mint_token(keys.signing, keys.signing_key, payload, int(time.time()))
    if len(token) > max_bytes:
        raise _too_large(max_bytes, len(token))
    return token


def open_state(keys: KeyRing, token: str, bound_to: str, config: Config) -> dict[str, Any]:
    """The answers a ``requestState`` carries (at most ``config.request_state_max_bytes``,
    at most ``config.request_state_seconds`` old).

    Raises:
        ProtocolError: -32602 when the state is too large, forged, expired, or belongs to
            another request.
    """
    limit = config.request_state_max_bytes
    if len(token) > limit:
        raise _too_large(limit, len(token))
    now, max_age = int(time.time()), int(config.request_state_seconds)
    try:
        payload, _ = codec.verify_token(token, keys.keys, now, max_age, limit)
        state = _decoder.decode(payload)
    except (TokenError, msgspec.DecodeError) as exc:
        reason = exc.reason if isinstance(exc, TokenError) else "malformed"
        raise ProtocolError(
            jsonrpc.INVALID_PARAMS, "Invalid requestState", {"reason": reason}
        ) from None
    if state.binding != bound_to:
        raise ProtocolError(
            jsonrpc.INVALID_PARAMS, "Invalid requestState", {"reason": "bound to another request"}
        )
    return state.answers
