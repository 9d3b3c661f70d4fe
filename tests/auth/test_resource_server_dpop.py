"""DPoP-bound tokens (RFC 9449) on a protected server, both engines: a good proof passes; a
replayed ``jti``, a wrong ``htu``, ``htm`` or ``ath``, an old ``iat``, another key, a missing
proof, a bound token sent as Bearer, and a missing server nonce are refused with 401."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from joserfc import jws

from mcpfast.server.auth.dpop import ath

from ..helpers import Reply
from .conftest import AuthServer, dpop_key, dpop_proof
from .test_resource_server import MODERN_HEADERS, call_body, challenge_params, protected


async def post(wire: Any, token: str, proof: str | None, scheme: str = "DPoP") -> Reply:
    headers = {**MODERN_HEADERS, "authorization": f"{scheme} {token}"}
    if proof is not None:
        headers["dpop"] = proof
    reply: Reply = await wire.post(call_body("whoami", {}), headers)
    return reply


def dpop_challenge(reply: Reply) -> dict[str, str]:
    values = reply.response.headers.get_list("www-authenticate")
    schemes = dict(challenge_params(v) for v in values)
    assert "DPoP" in schemes and "Bearer" in schemes, values
    assert schemes["DPoP"]["algs"] == "ES256 RS256 PS256 EdDSA"
    dpop_error = schemes["DPoP"].get("error")
    if dpop_error in ("invalid_dpop_proof", "use_dpop_nonce"):
        assert "error" not in schemes["Bearer"]  # RFC 6750 has no such code
    else:
        assert schemes["Bearer"].get("error") == dpop_error
    return schemes["DPoP"]


async def test_a_good_proof_passes_and_a_replay_is_refused(
    auth_server: AuthServer, engine: str
) -> None:
    key = dpop_key()
    token = auth_server.token(cnf={"jkt": key.thumbprint()})
    async with protected(auth_server, engine) as (url, wire):
        proof = dpop_proof(key, "POST", url, token)
        reply = await post(wire, token, proof)
        assert reply.status == 200, reply.response.text
        assert reply.result["structuredContent"]["subject"] == "user-1"
        again = await post(wire, token, proof)
        assert again.status == 401
        assert dpop_challenge(again)["error"] == "invalid_dpop_proof"
        # the configured resource URL is an acceptable htu too
        reply = await post(wire, token, dpop_proof(key, "POST", "http://MCP.test/mcp", token))
        assert reply.status == 200, reply.response.text


@pytest.mark.parametrize(
    "kind",
    [
        "wrong_htu",
        "wrong_htm",
        "wrong_ath",
        "old_iat",
        "no_jti",
        "other_key",
        "no_proof",
        "bearer_scheme",
        "typ",
        "private_jwk",
    ],
)
async def test_bad_proofs_are_refused(auth_server: AuthServer, engine: str, kind: str) -> None:
    key = dpop_key()
    token = auth_server.token(cnf={"jkt": key.thumbprint()})
    async with protected(auth_server, engine) as (url, wire):
        scheme = "DPoP"
        if kind == "wrong_htu":
            proof = dpop_proof(key, "POST", url.replace("/mcp", "/other"), token)
        elif kind == "wrong_htm":
            proof = dpop_proof(key, "GET", url, token)
        elif kind == "wrong_ath":
            proof = dpop_proof(key, "POST", url, token + "x")
        elif kind == "old_iat":
            proof = dpop_proof(key, "POST", url, token, iat=int(time.time()) - 3600)
        elif kind == "no_jti":
            proof = dpop_proof(key, "POST", url, token, jti=None)
        elif kind == "other_key":
            proof = dpop_proof(dpop_key(), "POST", url, token)
        elif kind == "no_proof":
            proof = None
        elif kind == "bearer_scheme":
            proof, scheme = dpop_proof(key, "POST", url, token), "Bearer"
        elif kind == "typ":
            header = {"typ": "JWT", "alg": "ES256", "jwk": key.as_dict(private=False)}
            claims = {"jti": "j", "htm": "POST", "htu": url, "iat": int(time.time())}
            proof = jws.serialize_compact(header, json.dumps(claims).encode(), key)
        else:  # a proof whose header carries the private key
            header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": key.as_dict(private=True)}
            claims = {
                "jti": "j",
                "htm": "POST",
                "htu": url,
                "iat": int(time.time()),
                "ath": ath(token),
            }
            proof = jws.serialize_compact(header, json.dumps(claims).encode(), key)
        reply = await post(wire, token, proof, scheme)
        assert reply.status == 401, reply.response.text
        error = dpop_challenge(reply)["error"]
        expected = (
            "invalid_token" if kind in ("other_key", "bearer_scheme") else "invalid_dpop_proof"
        )
        assert error == expected, (kind, error)


async def test_dpop_scheme_with_an_unbound_token_is_refused(
    auth_server: AuthServer, engine: str
) -> None:
    key = dpop_key()
    token = auth_server.token()
    async with protected(auth_server, engine) as (url, wire):
        reply = await post(wire, token, dpop_proof(key, "POST", url, token))
        assert reply.status == 401 and dpop_challenge(reply)["error"] == "invalid_token"


async def test_required_dpop_refuses_bearer_tokens(auth_server: AuthServer, engine: str) -> None:
    async with protected(auth_server, engine, dpop="required") as (url, wire):
        reply = await post(wire, auth_server.token(), None, "Bearer")
        assert reply.status == 401
        values = reply.response.headers.get_list("www-authenticate")
        assert [challenge_params(v)[0] for v in values] == ["DPoP"]
        base = url.removesuffix("/mcp")
        document = (await wire.client.get(base + "/.well-known/oauth-protected-resource")).json()
        assert document["dpop_bound_access_tokens_required"] is True


async def test_a_server_nonce_is_required_then_accepted(
    auth_server: AuthServer, engine: str
) -> None:
    key = dpop_key()
    token = auth_server.token(cnf={"jkt": key.thumbprint()})
    async with protected(auth_server, engine, dpop_nonce=True) as (url, wire):
        reply = await post(wire, token, dpop_proof(key, "POST", url, token))
        assert reply.status == 401
        assert dpop_challenge(reply)["error"] == "use_dpop_nonce"
        nonce = reply.headers["dpop-nonce"]
        wrong = await post(wire, token, dpop_proof(key, "POST", url, token, nonce="0.bogus"))
        assert wrong.status == 401 and wrong.headers["dpop-nonce"] == nonce
        reply = await post(wire, token, dpop_proof(key, "POST", url, token, nonce=nonce))
        assert reply.status == 200, reply.response.text


async def test_dpop_off_refuses_bound_tokens(auth_server: AuthServer, engine: str) -> None:
    key = dpop_key()
    token = auth_server.token(cnf={"jkt": key.thumbprint()})
    async with protected(auth_server, engine, dpop="off") as (url, wire):
        reply = await post(wire, token, dpop_proof(key, "POST", url, token))
        assert reply.status == 401
        values = reply.response.headers.get_list("www-authenticate")
        assert [challenge_params(v)[0] for v in values] == ["Bearer"]
