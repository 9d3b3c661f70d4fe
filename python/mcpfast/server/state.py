"""``requestState`` of multi-round-trip requests: the answers gathered so far, signed with the
server keys, bound to the request (method, name, arguments digest) and expiring."""

from __future__ import annotations

import hashlib
import time
from typing import Any

import msgspec

from .. import codec, jsonrpc
from ..errors import ProtocolError, TokenError
from .keys import KeyRing

_canonical = msgspec.json.Encoder(order="sorted")


class _State(msgspec.Struct, array_like=True):
    binding: str
    answers: dict[str, Any]


_decoder = msgspec.json.Decoder(_State)


def binding(method: str, name: str | None, arguments: Any) -> str:
    """A digest of what the state belongs to."""
    digest = hashlib.sha256(_canonical.encode([method, name, arguments])).hexdigest()
    return digest[:32]


def mint(keys: KeyRing, bound_to: str, answers: dict[str, Any]) -> str:
    """A signed ``requestState`` carrying ``answers``."""
    payload = msgspec.json.encode(_State(binding=bound_to, answers=answers))
    return codec.mint_token(keys.signing, keys.signing_key, payload, int(time.time()))


def open_state(keys: KeyRing, token: str, bound_to: str, max_age: int) -> dict[str, Any]:
    """The answers a ``requestState`` carries.

    Raises:
        ProtocolError: -32602 when the state is forged, expired, or belongs to another request.
    """
    try:
        payload, _ = codec.verify_token(token, keys.keys, int(time.time()), int(max_age))
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
