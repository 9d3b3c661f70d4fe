"""Signed tokens ``v1.<kid>.<issued_at>.<payload>.<mac>``, HMAC-SHA256 and URL-safe (the mirror
of ``rust/token.rs``)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Mapping

from ..errors import TokenError

MAX_TOKEN = 65536
_CLOCK_SKEW = 300
_KID = re.compile(r"[A-Za-z0-9_-]{1,32}\Z")
_IAT = re.compile(r"[0-9]{1,15}\Z")
_B64URL = re.compile(r"[A-Za-z0-9_-]*\Z")


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64url(text: str) -> bytes | None:
    """Decode unpadded base64url; None unless ``text`` is the canonical encoding."""
    if len(text) % 4 == 1:
        return None
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    return data if _b64url(data) == text else None


def mint_token(key_id: str, key: bytes, payload: bytes, issued_at: int) -> str:
    """Sign ``payload`` with ``key`` as ``v1.<key_id>.<issued_at>.<payload>.<mac>``.

    Raises:
        ValueError: for a key id outside ``[A-Za-z0-9_-]{1,32}`` or an issued-at outside
            0..10**15.
    """
    if not _KID.match(key_id):
        raise ValueError("key id must be 1-32 characters of [A-Za-z0-9_-]")
    if not 0 <= issued_at < 10**15:
        raise ValueError("issued_at out of range")
    body = f"v1.{key_id}.{issued_at}.{_b64url(payload)}"
    mac = hmac.new(key, body.encode("ascii"), hashlib.sha256).digest()
    return f"{body}.{_b64url(mac)}"


def verify_token(
    token: str,
    keys: Mapping[str, bytes],
    now: int,
    max_age: int,
    max_length: int = MAX_TOKEN,
) -> tuple[bytes, int]:
    """Verify a token and return ``(payload, issued_at)``; the MAC compare is constant-time.

    Raises:
        TokenError: ``malformed`` (also for a token longer than ``max_length`` characters),
            ``unknown_key``, ``bad_signature``, ``expired`` (older than ``max_age`` seconds) or
            ``future`` (issued more than 300 s ahead of ``now``).
    """
    if len(token) > max_length:
        raise TokenError("malformed")
    parts = token.split(".")
    if len(parts) != 5 or parts[0] != "v1":
        raise TokenError("malformed")
    _, kid, iat, payload_text, mac_text = parts
    if not (
        _KID.match(kid)
        and _IAT.match(iat)
        and _B64URL.match(payload_text)
        and _B64URL.match(mac_text)
    ):
        raise TokenError("malformed")
    mac = _unb64url(mac_text)
    if mac is None or len(mac) != 32:
        raise TokenError("malformed")
    key = keys.get(kid)
    if key is None:
        raise TokenError("unknown_key")
    signed = token[: len(token) - len(mac_text) - 1].encode("ascii")
    if not hmac.compare_digest(hmac.new(key, signed, hashlib.sha256).digest(), mac):
        raise TokenError("bad_signature")
    payload = _unb64url(payload_text)
    if payload is None:
        raise TokenError("malformed")
    issued_at = int(iat)
    if issued_at > now + _CLOCK_SKEW:
        raise TokenError("future")
    if now - issued_at > max_age:
        raise TokenError("expired")
    return payload, issued_at
