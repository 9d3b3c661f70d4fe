"""Private keys for ``private_key_jwt``, JWT assertions and DPoP: PEM or JWK in, a joserfc
key out (the key type named explicitly: joserfc warns on guessing)."""

from __future__ import annotations

import json
from typing import Any

from joserfc.jwk import ECKey, JWKRegistry, OKPKey, RSAKey

__all__ = ["import_private_key"]


def import_private_key(value: Any) -> ECKey | RSAKey | OKPKey:
    """A private key from a PEM string/bytes, a JWK dict (or its JSON), or a joserfc key.

    Raises:
        ValueError: not a private EC, RSA or OKP key.
    """
    if isinstance(value, ECKey | RSAKey | OKPKey):
        return value
    if isinstance(value, str) and value.lstrip().startswith("{"):
        value = json.loads(value)
    if isinstance(value, dict):
        key = JWKRegistry.import_key(value, str(value.get("kty")))
    else:
        data = value.encode() if isinstance(value, str) else bytes(value)
        key = None
        for kind in ("EC", "RSA", "OKP"):
            try:
                key = JWKRegistry.import_key(data, kind)
                break
            except Exception:
                continue
        if key is None:
            raise ValueError("not a PEM EC, RSA or OKP private key")
    if not isinstance(key, ECKey | RSAKey | OKPKey) or not key.is_private:
        raise ValueError("a private EC, RSA or OKP key is needed")
    return key
