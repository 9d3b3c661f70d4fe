"""DPoP proofs (RFC 9449 section 4.3): the one verifier of the ``DPoP`` header, used by a
resource server (with the access token's ``ath``, several acceptable URLs, stateless nonces)
and by the development authorization server's token endpoint (no token, its own rotating
nonces). joserfc does the JWS and the RFC 7638 thumbprint; the header and claim rules are
`mcpfast.protocol.dpop`'s (`dpop_header_problem`, `dpop_claims_problem`); this module adds
what needs state: the signature check, the key's binding to the token, ``jti`` replay within
the window (claimed once, after every other check, through `Claims`: the server's bus, so that
no worker sharing it accepts a replay, or `OnceClaims` in memory) and server nonces
(`StatelessNonces`: an HMAC of the time step, so any worker that shares the server's keys
accepts another's nonce; `RotatingNonces`: random, the current and the previous one)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
import warnings
from collections.abc import Sequence
from typing import NamedTuple, Protocol

from joserfc import jws
from joserfc.errors import JoseError, SecurityWarning
from joserfc.jwk import ECKey, JWKRegistry, OKPKey, RSAKey

from ...protocol.auth import INVALID_DPOP_PROOF, INVALID_TOKEN, MAX_TOKEN_BYTES, USE_DPOP_NONCE
from ...protocol.dpop import ath, dpop_claims_problem, dpop_header_problem
from ..state.once import OnceClaims

__all__ = [
    "DPOP_ALGORITHMS",
    "Claims",
    "DpopError",
    "DpopVerifier",
    "NoncePolicy",
    "Proof",
    "RotatingNonces",
    "StatelessNonces",
    "ath",
]

DPOP_ALGORITHMS = ("ES256", "RS256", "PS256", "EdDSA")
MAX_HEADER_BYTES = 4096
"""The longest JOSE header of a proof: it carries the key (an RSA one is ~1 KB)."""


class DpopError(Exception):
    """A proof refused: ``error`` is ``invalid_dpop_proof`` or ``use_dpop_nonce``; ``nonce``
    the fresh nonce to send back (``DPoP-Nonce``) when one is required."""

    def __init__(self, error: str, description: str, nonce: str | None = None) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.nonce = nonce


class NoncePolicy(Protocol):
    """Which server nonces a proof may carry, and the one to hand out now."""

    def current(self) -> str:
        """The nonce to send in ``DPoP-Nonce`` now."""
        ...

    def accepts(self, value: object) -> bool:
        """Whether a proof's ``nonce`` claim is one this server issued and still takes."""
        ...


class StatelessNonces:
    """Nonces derived from ``secret``: one per time step of ``seconds``, valid in its step and
    the next (no state: every worker sharing the secret agrees)."""

    def __init__(self, secret: bytes, seconds: float = 300.0) -> None:
        self.secret = secret
        self.seconds = seconds

    def _for(self, step: int) -> str:
        mac = hmac.new(self.secret, b"dpop-nonce:%d" % step, hashlib.sha256).digest()[:16]
        return f"{step:x}." + base64.urlsafe_b64encode(mac).rstrip(b"=").decode()

    def current(self) -> str:
        return self._for(int(time.time() // self.seconds))

    def accepts(self, value: object) -> bool:
        if not isinstance(value, str) or "." not in value or not value.isascii():
            return False
        try:
            step = int(value.partition(".")[0], 16)
        except ValueError:
            return False
        now = int(time.time() // self.seconds)
        return step in (now, now - 1) and hmac.compare_digest(value, self._for(step))


class RotatingNonces:
    """Random nonces changed by `rotate`: the current one and the one before are accepted."""

    def __init__(self) -> None:
        self._nonces = [secrets.token_urlsafe(16)]

    def current(self) -> str:
        return self._nonces[-1]

    def rotate(self) -> str:
        """Issue a new nonce; the previous one stays valid until the next rotation."""
        self._nonces = [self._nonces[-1], secrets.token_urlsafe(16)]
        return self.current()

    def accepts(self, value: object) -> bool:
        return isinstance(value, str) and value in self._nonces


class Claims(Protocol):
    """Where proofs are recorded (a `Bus`, `OnceClaims`)."""

    async def claim_once(self, owner: str, key: str, seconds: float) -> bool:
        """`Bus.claim_once`: False when ``key`` of ``owner`` was claimed within ``seconds``
        (or the owner holds all the claims it may).

        Raises:
            BusUnavailable: a shared store is away.
        """
        ...


class Proof(NamedTuple):
    """A verified proof: the RFC 7638 thumbprint of its key, and the server nonce it carried."""

    thumbprint: str
    nonce: str | None


class DpopVerifier:
    """Checks DPoP proofs.

    Args:
        algorithms: the acceptable proof algorithms (asymmetric; a resource server advertises
            them as ``dpop_signing_alg_values_supported``).
        window: seconds a proof's ``iat`` may be old.
        leeway: seconds a proof's ``iat`` may be in the future (a ``jti`` is remembered for
            ``window + leeway``, under its key's thumbprint).
        claims: where each accepted proof's ``jti`` is claimed once (the server's bus; by
            default `OnceClaims` of ``max_proofs_per_key``: past that many proofs in the window
            a key's next ones are refused, other keys' are not).
        nonce_secret: with a secret (and no ``nonces``), proofs must carry a `StatelessNonces`
            nonce (``use_dpop_nonce`` otherwise), valid for its step of ``nonce_seconds`` and
            the next.
        nonces: another nonce policy (`RotatingNonces`, ...); proofs must carry one of its
            nonces.
    """

    def __init__(
        self,
        *,
        algorithms: Sequence[str] = DPOP_ALGORITHMS,
        window: float = 300.0,
        leeway: float = 5.0,
        claims: Claims | None = None,
        max_proofs_per_key: int = 100_000,
        nonce_secret: bytes | None = None,
        nonce_seconds: float = 300.0,
        nonces: NoncePolicy | None = None,
    ) -> None:
        self.algorithms = tuple(algorithms)
        self.window = window
        self.leeway = leeway
        self.claims: Claims = claims if claims is not None else OnceClaims(max_proofs_per_key)
        if nonces is None and nonce_secret is not None:
            nonces = StatelessNonces(nonce_secret, nonce_seconds)
        self.nonces = nonces

    # ----------------------------------------------------------------------------- nonces

    @property
    def require_nonce(self) -> bool:
        """Whether proofs must carry a server nonce."""
        return self.nonces is not None

    @property
    def nonce(self) -> str | None:
        """The current server nonce (None when nonces are off)."""
        return self.nonces.current() if self.nonces is not None else None

    def rotate_nonce(self) -> str:
        """Issue a new nonce (the previous one stays valid until the next rotation).

        Raises:
            TypeError: the nonces are not `RotatingNonces`.
        """
        if not isinstance(self.nonces, RotatingNonces):
            raise TypeError("only RotatingNonces rotate on demand")
        return self.nonces.rotate()

    # ----------------------------------------------------------------------------- proofs

    async def verify(
        self, proof: str | None, *, method: str, urls: Sequence[str], token: str | None = None
    ) -> str:
        """`check`'s thumbprint.

        Raises:
            DpopError: the first check that fails.
            BusUnavailable: the claims' shared store is away.
        """
        return (await self.check(proof, method=method, urls=urls, token=token)).thumbprint

    async def check(
        self,
        proof: str | None,
        *,
        method: str,
        urls: Sequence[str],
        token: str | None = None,
        jkt: str | None = None,
    ) -> Proof:
        """Check ``proof`` for a request of ``method`` to one of ``urls`` (how this server is
        addressed), carrying the access ``token`` when there is one (its hash is then the
        proof's ``ath``) bound to the key of thumbprint ``jkt`` (its ``cnf.jkt``) when the
        token is bound: the thumbprint (RFC 7638, SHA-256) of its key (to bind a new token to)
        and its nonce. Only a proof that passed every check is recorded (its ``jti`` claimed
        under its key): a proof of another key than the token's records nothing.

        Raises:
            DpopError: the first check that fails.
            BusUnavailable: the claims' shared store is away (nothing is accepted then).
        """
        if not proof:
            raise DpopError(INVALID_DPOP_PROOF, "a DPoP proof is required")
        if len(proof) > MAX_TOKEN_BYTES or "," in proof or not proof.isascii():
            raise DpopError(INVALID_DPOP_PROOF, "malformed DPoP proof")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SecurityWarning)  # EdDSA: RFC 9864 renamed it
            key, claims = self._signed(proof)
        thumbprint = str(key.thumbprint())
        if not isinstance(claims, dict):
            raise DpopError(INVALID_DPOP_PROOF, "the proof's claims are not an object")
        now = time.time()
        problem = dpop_claims_problem(
            claims,
            method=method,
            urls=urls,
            now=now,
            window=self.window,
            leeway=self.leeway,
            token=token,
        )
        if problem is not None:
            raise DpopError(INVALID_DPOP_PROOF, problem)
        nonce = claims.get("nonce")
        if self.nonces is not None and not self.nonces.accepts(nonce):
            raise DpopError(USE_DPOP_NONCE, "a fresh DPoP nonce is required", self.nonce)
        if jkt is not None and thumbprint != jkt:
            raise DpopError(INVALID_TOKEN, "the DPoP key is not the token's")
        jti = hashlib.sha256(str(claims["jti"]).encode()).hexdigest()[:32]
        if not await self.claims.claim_once("dpop:" + thumbprint, jti, self.window + self.leeway):
            raise DpopError(
                INVALID_DPOP_PROOF,
                "the proof was already used (jti replay), or its key made more proofs in the "
                "window than this server keeps",
            )
        return Proof(thumbprint, nonce if isinstance(nonce, str) else None)

    def _signed(self, proof: str) -> tuple[ECKey | RSAKey | OKPKey, object]:
        """The key in the proof's header (checked by `dpop_header_problem`) and the claims it
        signed."""
        registry = jws.JWSRegistry(algorithms=list(self.algorithms))
        registry.max_header_length = MAX_HEADER_BYTES
        try:
            header = jws.extract_compact(proof.encode(), registry=registry).headers()
        except (JoseError, ValueError, TypeError):
            raise DpopError(INVALID_DPOP_PROOF, "malformed DPoP proof") from None
        problem = dpop_header_problem(header, self.algorithms)
        if problem is not None:
            raise DpopError(INVALID_DPOP_PROOF, problem)
        try:
            key = JWKRegistry.import_key(header["jwk"])
        except (JoseError, ValueError, TypeError, KeyError):
            raise DpopError(INVALID_DPOP_PROOF, "the DPoP proof's jwk is not a key") from None
        if not isinstance(key, ECKey | RSAKey | OKPKey):
            raise DpopError(INVALID_DPOP_PROOF, "the DPoP proof key must be asymmetric")
        try:
            signed = jws.deserialize_compact(
                proof.encode(), key, algorithms=[header["alg"]], registry=registry
            )
            return key, json.loads(signed.payload)
        except (JoseError, ValueError, TypeError, KeyError):
            raise DpopError(INVALID_DPOP_PROOF, "the proof's signature does not verify") from None
