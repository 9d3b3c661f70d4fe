"""The checks of a decoded DPoP proof (no I/O): its JOSE header and its claims (RFC 9449
section 4.3: `dpop_header_problem`, `dpop_claims_problem`, the ``ath`` hash of a token: `ath`;
``htu`` matched by `mcpfast.protocol.auth.same_url`).

What verifies a proof (keys, signatures, nonces, ``jti`` replay) is `mcpfast.server.auth.dpop`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from .auth import same_url

__all__ = ["DPOP_TYP", "PRIVATE_JWK_MEMBERS", "ath", "dpop_claims_problem", "dpop_header_problem"]

DPOP_TYP = "dpop+jwt"
"""RFC 9449 section 4.2: the ``typ`` of a DPoP proof's JOSE header."""

PRIVATE_JWK_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})
"""JWK members that only a private (or symmetric) key has: a proof's ``jwk`` has none."""


def ath(token: str) -> str:
    """The ``ath`` claim for an access token: base64url (no padding) of its SHA-256."""
    return base64.urlsafe_b64encode(hashlib.sha256(token.encode()).digest()).rstrip(b"=").decode()


def dpop_header_problem(header: Mapping[str, Any], algorithms: Collection[str]) -> str | None:
    """Why a DPoP proof's (unverified) JOSE header is refused, or None: ``typ`` must be
    ``dpop+jwt``, ``alg`` one of ``algorithms`` and ``jwk`` a public key (no private member)."""
    if header.get("typ") != DPOP_TYP:
        return "the DPoP proof's typ is not dpop+jwt"
    alg = header.get("alg")
    if not isinstance(alg, str) or alg not in algorithms:
        return "DPoP proof algorithm not accepted"
    jwk = header.get("jwk")
    if not isinstance(jwk, dict) or PRIVATE_JWK_MEMBERS & jwk.keys():
        return "the DPoP proof must carry a public jwk"
    return None


def dpop_claims_problem(
    claims: Mapping[str, Any],
    *,
    method: str,
    urls: Iterable[str],
    now: float,
    window: float,
    leeway: float,
    token: str | None = None,
) -> str | None:
    """Why a DPoP proof's (signature-checked) claims are refused, or None: a ``jti``, ``htm``
    the request's ``method``, ``htu`` one of ``urls`` (`same_url`: query and fragment
    ignored), ``iat`` at most ``window`` seconds old and ``leeway`` ahead of ``now``, and, when
    an access ``token`` accompanies the proof, ``ath`` its hash. (The nonce and ``jti`` replay
    are the verifier's: they need state.)"""
    jti = claims.get("jti")
    if not isinstance(jti, str) or not 0 < len(jti) <= 256:
        return "the DPoP proof has no jti"
    if claims.get("htm") != method:
        return "the DPoP proof's htm is not the request's method"
    htu = claims.get("htu")
    if not isinstance(htu, str) or not any(same_url(htu, url) for url in urls):
        return "the DPoP proof's htu is not the request's URL"
    iat = claims.get("iat")
    if isinstance(iat, bool) or not isinstance(iat, int | float):
        return "the DPoP proof has no numeric iat"
    if iat < now - window or iat > now + leeway:
        return "the DPoP proof's iat is outside the window"
    if token is not None:
        given = claims.get("ath")
        if not isinstance(given, str) or not hmac.compare_digest(
            given.encode(), ath(token).encode()
        ):
            return "the DPoP proof's ath is not the token's hash"
    return None
