"""DPoP proofs (RFC 9449) as the development authorization server checks them at its token
endpoint: every JOSE operation is joserfc's."""

from __future__ import annotations

import secrets
import time
import warnings
from dataclasses import dataclass
from typing import Any

from joserfc import jws, jwt
from joserfc.errors import JoseError, SecurityWarning
from joserfc.jwk import ECKey, OKPKey, RSAKey, import_key

DPOP_ALGORITHMS = ("ES256", "RS256", "EdDSA")
"""The proof algorithms advertised in ``dpop_signing_alg_values_supported``."""

_ACCEPTED = {*DPOP_ALGORITHMS, "Ed25519", "ES384", "PS256"}
_PRIVATE_MEMBERS = {"d", "p", "q", "dp", "dq", "qi", "oth", "k"}
MAX_PROOF_BYTES = 8 * 1024


class DPoPError(Exception):
    """A proof refused: ``error`` is ``invalid_dpop_proof`` or ``use_dpop_nonce``."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


@dataclass(frozen=True)
class Proof:
    """A verified proof: the RFC 7638 thumbprint of its key (``cnf.jkt``) and its claims."""

    jkt: str
    claims: dict[str, Any]


def _strip(url: str) -> str:
    """``url`` without query and fragment (RFC 9449 §4.3: htu is compared without them)."""
    return url.split("#", 1)[0].split("?", 1)[0]


class DPoPVerifier:
    """Checks proofs: ``typ``, ``alg``, a public ``jwk`` in the header, the signature, ``htm``,
    ``htu``, ``iat`` within ``window`` seconds, each ``jti`` once, and (when ``require_nonce``)
    a ``nonce`` this verifier issued (the current one or the one before)."""

    def __init__(self, *, window: float = 60.0, require_nonce: bool = False) -> None:
        self.window = window
        self.require_nonce = require_nonce
        self._seen: dict[str, float] = {}
        self._nonces = [secrets.token_urlsafe(16)]

    @property
    def nonce(self) -> str:
        """The nonce to hand out in ``DPoP-Nonce`` now."""
        return self._nonces[-1]

    def rotate_nonce(self) -> str:
        """Issue a new nonce; the previous one stays valid until the next rotation."""
        self._nonces = [self._nonces[-1], secrets.token_urlsafe(16)]
        return self.nonce

    def verify(self, proof: str, method: str, url: str) -> Proof:
        """The verified ``proof`` for a ``method`` request to ``url``.

        Raises:
            DPoPError: the proof is malformed, wrongly signed, for another request, stale,
                replayed, or lacks the current nonce (``use_dpop_nonce``).
        """
        if len(proof) > MAX_PROOF_BYTES:
            raise DPoPError("invalid_dpop_proof", "the DPoP proof is too large")
        registry = jws.JWSRegistry(algorithms=sorted(_ACCEPTED))
        registry.max_header_length = 4096  # the header carries the key: an RSA one is ~1 KB
        try:
            header = jws.extract_compact(proof.encode("ascii"), registry=registry).headers()
        except (JoseError, ValueError, UnicodeError, TypeError):
            raise DPoPError("invalid_dpop_proof", "the DPoP proof is not a JWS") from None
        if header.get("typ") != "dpop+jwt":
            raise DPoPError("invalid_dpop_proof", "the DPoP proof's typ is not dpop+jwt")
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in _ACCEPTED:
            raise DPoPError("invalid_dpop_proof", "unsupported DPoP proof alg")
        jwk = header.get("jwk")
        if not isinstance(jwk, dict) or _PRIVATE_MEMBERS & jwk.keys():
            raise DPoPError("invalid_dpop_proof", "the DPoP proof needs a public jwk header")
        try:
            key = import_key(jwk)
            if not isinstance(key, ECKey | RSAKey | OKPKey):
                raise DPoPError("invalid_dpop_proof", "the DPoP proof key must be asymmetric")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SecurityWarning)  # EdDSA: RFC 9864 renamed it
                registry.allowed = [alg]
                claims = dict(jwt.decode(proof, key, registry=registry).claims)
        except DPoPError:
            raise
        except (JoseError, ValueError, TypeError, KeyError):
            raise DPoPError("invalid_dpop_proof", "the DPoP proof signature is invalid") from None
        jti, htm, htu, iat = (claims.get(n) for n in ("jti", "htm", "htu", "iat"))
        if not isinstance(jti, str) or not jti or len(jti) > 256:
            raise DPoPError("invalid_dpop_proof", "the DPoP proof needs a jti")
        if htm != method:
            raise DPoPError("invalid_dpop_proof", "the DPoP proof's htm is not this method")
        if not isinstance(htu, str) or _strip(htu) != _strip(url):
            raise DPoPError("invalid_dpop_proof", "the DPoP proof's htu is not this URL")
        now = time.time()
        if isinstance(iat, bool) or not isinstance(iat, int | float):
            raise DPoPError("invalid_dpop_proof", "the DPoP proof needs a numeric iat")
        if abs(now - iat) > self.window:
            raise DPoPError("invalid_dpop_proof", "the DPoP proof's iat is outside the window")
        if self.require_nonce and claims.get("nonce") not in self._nonces:
            raise DPoPError("use_dpop_nonce", "a DPoP nonce from this server is required")
        self._forget(now)
        if jti in self._seen:
            raise DPoPError("invalid_dpop_proof", "the DPoP proof's jti was already used")
        self._seen[jti] = now + 2 * self.window
        return Proof(key.thumbprint(), claims)

    def _forget(self, now: float) -> None:
        if len(self._seen) > 1024:
            self._seen = {j: until for j, until in self._seen.items() if until > now}
