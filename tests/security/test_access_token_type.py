"""A resource server takes only access tokens (RFC 9068 section 4: ``typ: at+jwt``), not an ID
token or another JWT its issuer signed with this server as ``aud``; ``require_jwt_typ=False``
(issuers that do not type their access tokens) still refuses ID tokens and other types."""

from __future__ import annotations

import time
from typing import Any

import pytest
from joserfc import jwt

from mcpfast.auth.devserver import DevAuthorizationServer

from ..helpers import Reply, Wire
from .conftest import RESOURCE, auth_config, protected, subject_server


def signed(dev: DevAuthorizationServer, typ: str | None, **claims: Any) -> str:
    """A JWT the dev authorization server's signing key signed, for `RESOURCE`, with header
    ``typ`` (None: no ``typ``) and ``claims`` added: what the issuer signs for other uses."""
    key = dev._keys[-1]  # the issuer's own key: the attack is a genuine token of another kind
    header: dict[str, Any] = {"alg": dev.signing_alg, "kid": key.kid}
    if typ is not None:
        header["typ"] = typ
    now = int(time.time())
    body = {"iss": dev.issuer, "sub": "mallory", "aud": RESOURCE, "iat": now, "exp": now + 300}
    body.update(scope="mcp", jti=f"j{now}{typ}", **claims)
    return jwt.encode(header, body, key, algorithms=[dev.signing_alg])


async def whoami(wire: Wire, token: str) -> Reply:
    return await wire.modern(
        "tools/call",
        {"name": "whoami", "arguments": {}},
        headers={"authorization": f"Bearer {token}"},
    )


def refused(reply: Reply) -> bool:
    challenge = reply.headers.get("www-authenticate", "")
    return reply.status == 401 and 'error="invalid_token"' in challenge


def accepted(reply: Reply, subject: str) -> bool:
    return reply.status == 200 and reply.result["content"][0]["text"] == subject


async def test_an_id_token_of_the_issuer_is_not_an_access_token(
    engine: str, dev: DevAuthorizationServer
) -> None:
    id_token = dev.id_token("mallory", audience=RESOURCE, claims={"scope": "mcp"})
    async with protected(subject_server("typed"), engine, dev) as (_, wire):
        assert refused(await whoami(wire, id_token))
        assert accepted(
            await whoami(wire, dev.mint("alice", scope="mcp", audience=RESOURCE)), "alice"
        )


@pytest.mark.parametrize(
    "typ", [None, "JWT", "jwt", "dpop+jwt", "oauth-id-jag+jwt", "secevent+jwt", "at+jwt2"]
)
async def test_jwts_of_other_types_are_refused(
    engine: str, dev: DevAuthorizationServer, typ: str | None
) -> None:
    async with protected(subject_server("typed"), engine, dev) as (_, wire):
        assert refused(await whoami(wire, signed(dev, typ)))


@pytest.mark.parametrize("typ", ["at+jwt", "AT+JWT", "application/at+jwt", "Application/At+JWT"])
async def test_typed_access_tokens_are_accepted(
    engine: str, dev: DevAuthorizationServer, typ: str
) -> None:
    async with protected(subject_server("typed"), engine, dev) as (_, wire):
        assert accepted(await whoami(wire, signed(dev, typ)), "mallory")


async def test_the_opt_out_takes_untyped_tokens_but_never_id_tokens_or_other_types(
    engine: str, dev: DevAuthorizationServer
) -> None:
    config = auth_config(dev, require_jwt_typ=False)
    async with protected(subject_server("typed"), engine, dev, auth=config) as (_, wire):
        assert accepted(await whoami(wire, signed(dev, "JWT", client_id="app")), "mallory")
        assert accepted(await whoami(wire, signed(dev, None, azp="app", auth_time=1)), "mallory")
        assert accepted(await whoami(wire, signed(dev, "at+jwt")), "mallory")
        for marker in ("nonce", "at_hash", "c_hash", "s_hash"):
            assert refused(await whoami(wire, signed(dev, "JWT", **{marker: "x"})))
        login = dev.id_token("mallory", audience=RESOURCE, claims={"nonce": "n", "scope": "mcp"})
        assert refused(await whoami(wire, login))
        for typ in ("dpop+jwt", "oauth-id-jag+jwt", "logout+jwt"):
            assert refused(await whoami(wire, signed(dev, typ)))
