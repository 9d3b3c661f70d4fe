"""DPoP proofs (RFC 9449 section 4.3): the checks a resource server makes of the ``DPoP``
header that comes with a DPoP-bound access token. joserfc does the JWS and the JWK thumbprint;
this module checks the header and claims, remembers ``jti`` values for the window (replay) and
makes and checks server nonces (stateless: an HMAC of the time step, so any worker that shares
the server's keys accepts another's nonce)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections import OrderedDict
from collections.abc import Sequence

from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import JWKRegistry

from ...protocol.auth import INVALID_DPOP_PROOF, MAX_TOKEN_BYTES, USE_DPOP_NONCE, same_url

DPOP_ALGORITHMS = ("ES256", "RS256", "PS256", "EdDSA")
_PRIVATE_MEMBERS = ("d", "p", "q", "dp", "dq", "qi", "k")


class DpopError(Exception):
    """A proof refused: ``error`` is ``invalid_dpop_proof`` or ``use_dpop_nonce``; ``nonce``
    the fresh nonce to send back (``DPoP-Nonce``) when one is required."""

    def __init__(self, error: str, description: str, nonce: str | None = None) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.nonce = nonce


def ath(token: str) -> str:
    """The ``ath`` claim for an access token: base64url (no padding) of its SHA-256."""
    return base64.urlsafe_b64encode(hashlib.sha256(token.encode()).digest()).rstrip(b"=").decode()


class DpopVerifier:
    """Checks DPoP proofs.

    Args:
        algorithms: the acceptable proof algorithms (asymmetric; advertised as
            ``dpop_signing_alg_values_supported``).
        window: seconds a proof's ``iat`` may be old (and ``jti`` values are remembered).
        leeway: seconds a proof's ``iat`` may be in the future.
        max_replay_entries: ``jti`` values remembered at most; when full of unexpired ones,
            new proofs are refused (fail closed) until some expire.
        nonce_secret: with a secret, proofs must carry a server nonce (``use_dpop_nonce``
            otherwise); a nonce is valid for its time step of ``nonce_seconds`` and the next.
    """

    def __init__(
        self,
        *,
        algorithms: Sequence[str] = DPOP_ALGORITHMS,
        window: float = 300.0,
        leeway: float = 5.0,
        max_replay_entries: int = 100_000,
        nonce_secret: bytes | None = None,
        nonce_seconds: float = 300.0,
    ) -> None:
        self.algorithms = tuple(algorithms)
        self.window = window
        self.leeway = leeway
        self.max_replay_entries = max_replay_entries
        self.nonce_secret = nonce_secret
        self.nonce_seconds = nonce_seconds
        self._seen: OrderedDict[str, float] = OrderedDict()

    # ----------------------------------------------------------------------------- nonces

    def _nonce_for(self, step: int) -> str:
        assert self.nonce_secret is not None
        mac = hmac.new(self.nonce_secret, b"dpop-nonce:%d" % step, hashlib.sha256).digest()[:16]
        return f"{step:x}." + base64.urlsafe_b64encode(mac).rstrip(b"=").decode()

    def nonce(self) -> str | None:
        """The current server nonce (None when nonces are off)."""
        if self.nonce_secret is None:
            return None
        return self._nonce_for(int(time.time() // self.nonce_seconds))

    def _nonce_ok(self, value: object) -> bool:
        if not isinstance(value, str) or "." not in value:
            return False
        try:
            step = int(value.partition(".")[0], 16)
        except ValueError:
            return False
        now = int(time.time() // self.nonce_seconds)
        return step in (now, now - 1) and hmac.compare_digest(value, self._nonce_for(step))

    # ----------------------------------------------------------------------------- proofs

    def verify(self, proof: str | None, *, method: str, urls: Sequence[str], token: str) -> str:
        """Check ``proof`` for a request of ``method`` to one of ``urls`` (how this server is
        addressed) carrying ``token``; the thumbprint (RFC 7638, SHA-256) of its key, which the
        caller compares with the token's ``cnf.jkt``.

        Raises:
            DpopError: the first check that fails.
        """
        if not proof:
            raise DpopError(INVALID_DPOP_PROOF, "a DPoP proof is required")
        if len(proof) > MAX_TOKEN_BYTES or "," in proof:
            raise DpopError(INVALID_DPOP_PROOF, "malformed DPoP proof")
        try:
            header = jws.extract_compact(proof.encode()).headers()
        except (JoseError, ValueError, TypeError):
            raise DpopError(INVALID_DPOP_PROOF, "malformed DPoP proof") from None
        if header.get("typ") != "dpop+jwt":
            raise DpopError(INVALID_DPOP_PROOF, "the proof's typ is not dpop+jwt")
        alg = header.get("alg")
        if alg not in self.algorithms:
            raise DpopError(INVALID_DPOP_PROOF, "DPoP proof algorithm not accepted")
        jwk = header.get("jwk")
        if not isinstance(jwk, dict) or any(m in jwk for m in _PRIVATE_MEMBERS):
            raise DpopError(INVALID_DPOP_PROOF, "the proof must carry a public jwk")
        try:
            key = JWKRegistry.import_key(jwk)
            signed = jws.deserialize_compact(proof.encode(), key, algorithms=[alg])
            claims = json.loads(signed.payload)
            thumbprint = key.thumbprint()
        except (JoseError, ValueError, TypeError):
            raise DpopError(INVALID_DPOP_PROOF, "the proof's signature does not verify") from None
        if not isinstance(claims, dict):
            raise DpopError(INVALID_DPOP_PROOF, "the proof's claims are not an object")
        jti = claims.get("jti")
        if not isinstance(jti, str) or not 0 < len(jti) <= 256:
            raise DpopError(INVALID_DPOP_PROOF, "the proof has no jti")
        if claims.get("htm") != method:
            raise DpopError(INVALID_DPOP_PROOF, "the proof's htm is not the request's method")
        htu = claims.get("htu")
        if not isinstance(htu, str) or not any(same_url(htu, url) for url in urls):
            raise DpopError(INVALID_DPOP_PROOF, "the proof's htu is not the request's URL")
        iat = claims.get("iat")
        now = time.time()
        if not isinstance(iat, int | float) or isinstance(iat, bool):
            raise DpopError(INVALID_DPOP_PROOF, "the proof has no iat")
        if iat < now - self.window or iat > now + self.leeway:
            raise DpopError(INVALID_DPOP_PROOF, "the proof's iat is outside the window")
        if not isinstance(claims.get("ath"), str) or not hmac.compare_digest(
            claims["ath"], ath(token)
        ):
            raise DpopError(INVALID_DPOP_PROOF, "the proof's ath is not the token's hash")
        if self.nonce_secret is not None and not self._nonce_ok(claims.get("nonce")):
            raise DpopError(USE_DPOP_NONCE, "a fresh DPoP nonce is required", self.nonce())
        self._remember(f"{thumbprint}:{jti}", iat + self.window, now)
        return str(thumbprint)

    def _remember(self, jti: str, until: float, now: float) -> None:
        """Record a ``jti`` (raising when seen within the window) and forget expired ones."""
        seen = self._seen
        while seen:
            oldest, deadline = next(iter(seen.items()))
            if deadline > now:
                break
            del seen[oldest]
        if jti in seen and seen[jti] > now:
            raise DpopError(INVALID_DPOP_PROOF, "the proof was already used (jti replay)")
        if len(seen) >= self.max_replay_entries:
            raise DpopError(INVALID_DPOP_PROOF, "too many DPoP proofs in the window; retry")
        seen[jti] = until
