"""DPoP proofs (RFC 9449) for the client side: one key per `OAuth` instance, a fresh proof for
every token request and every protected request (``ath`` when a token is presented), and the
server-supplied nonces remembered per origin (the authorization server's and the resource
server's are separate)."""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from joserfc import jwt
from joserfc.jwk import ECKey, OKPKey, RSAKey

from .keys import import_private_key

__all__ = ["DPoPKey", "access_token_hash", "htu_of"]


def access_token_hash(token: str) -> str:
    """The ``ath`` claim: base64url(SHA-256(token)) without padding (RFC 9449 section 4.2)."""
    digest = hashlib.sha256(token.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def htu_of(url: str) -> str:
    """``url`` without query and fragment (the ``htu`` claim, RFC 9449 section 4.2)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


class DPoPKey:
    """A DPoP key pair and the nonces servers handed out.

    ``key``: a private key (PEM or JWK dict, or a joserfc key); by default a new P-256 key
    (``ES256``) is generated, which lives as long as this object (tokens bound to it are
    useless without it)."""

    def __init__(self, key: Any = None, *, algorithm: str = "ES256") -> None:
        if key is None:
            key = ECKey.generate_key("P-256")
        elif not isinstance(key, ECKey | RSAKey | OKPKey):
            key = import_private_key(key)
        self.key: ECKey | RSAKey | OKPKey = key
        self.algorithm = algorithm
        self.public_jwk: dict[str, Any] = dict(key.as_dict(private=False))
        for member in ("kid", "use", "key_ops", "alg"):
            self.public_jwk.pop(member, None)
        self._nonces: dict[str, str] = {}

    @property
    def thumbprint(self) -> str:
        """The RFC 7638 SHA-256 thumbprint (what a bound token's ``cnf.jkt`` holds)."""
        return str(self.key.thumbprint())

    def nonce_for(self, url: str) -> str | None:
        return self._nonces.get(_origin(url))

    def remember_nonce(self, url: str, headers: Any) -> bool:
        """Keep the ``DPoP-Nonce`` a response from ``url`` carried; True when it is new."""
        nonce = headers.get("dpop-nonce") if headers is not None else None
        if not isinstance(nonce, str) or not nonce:
            return False
        origin = _origin(url)
        changed = self._nonces.get(origin) != nonce
        self._nonces[origin] = nonce
        return changed

    def proof(self, method: str, url: str, *, access_token: str | None = None) -> str:
        """A fresh proof for ``method url`` (with ``ath`` for ``access_token`` and the nonce
        the origin of ``url`` gave last, if any)."""
        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(16),
            "htm": method.upper(),
            "htu": htu_of(url),
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = access_token_hash(access_token)
        nonce = self.nonce_for(url)
        if nonce is not None:
            claims["nonce"] = nonce
        header = {"typ": "dpop+jwt", "alg": self.algorithm, "jwk": self.public_jwk}
        return jwt.encode(header, claims, self.key)
