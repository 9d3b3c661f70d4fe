"""DPoP (RFC 9449) at the development authorization server's token endpoint: bound tokens
(``cnf.jkt``, ``token_type: DPoP``), refused proofs (replayed jti, wrong htu/htm, stale iat,
private or missing jwk, bad signature), server nonces, ``dpop_jkt`` and bound refresh tokens."""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from joserfc import jwt
from joserfc.jwk import ECKey, KeySet, OKPKey, RSAKey

from mcpfast.auth import DevAuthorizationServer, dev_authorization_server

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::joserfc.errors.SecurityWarning"),  # EdDSA
]

REDIRECT = "http://127.0.0.1:7777/callback"
Key = ECKey | RSAKey | OKPKey


def make_proof(
    key: Key,
    method: str,
    url: str,
    *,
    alg: str = "ES256",
    nonce: str | None = None,
    jti: str | None = None,
    iat: float | None = None,
    header: dict[str, Any] | None = None,
) -> str:
    claims: dict[str, Any] = {
        "jti": jti or secrets.token_urlsafe(12),
        "htm": method,
        "htu": url,
        "iat": int(time.time() if iat is None else iat),
    }
    if nonce is not None:
        claims["nonce"] = nonce
    protected = {"typ": "dpop+jwt", "alg": alg, "jwk": key.as_dict(private=False), **(header or {})}
    return jwt.encode(protected, claims, key, algorithms=[alg])


def prover(key: Key, alg: str = "ES256") -> Callable[[str, str], str]:
    return lambda method, url: make_proof(key, method, url, alg=alg)


@pytest.fixture
async def server() -> AsyncIterator[DevAuthorizationServer]:
    async with dev_authorization_server() as running:
        running.register_client("svc", secret="s")
        yield running


def claims_of(server: DevAuthorizationServer, token: str) -> dict[str, Any]:
    keys = KeySet.import_key_set(server.jwks())  # type: ignore[arg-type]
    return dict(jwt.decode(token, keys, algorithms=["ES256"]).claims)


async def token_request(
    server: DevAuthorizationServer, http: httpx2.AsyncClient, proof: str | list[str] | None
) -> httpx2.Response:
    headers: list[tuple[str, str]] = []
    for value in [proof] if isinstance(proof, str) else proof or []:
        headers.append(("DPoP", value))
    return await http.post(
        server.token_endpoint,
        data={"grant_type": "client_credentials"},
        auth=("svc", "s"),
        headers=headers,
    )


@pytest.mark.parametrize(
    ("make_key", "alg"),
    [
        (lambda: ECKey.generate_key("P-256"), "ES256"),
        (lambda: RSAKey.generate_key(2048), "RS256"),
        (lambda: OKPKey.generate_key("Ed25519"), "EdDSA"),
    ],
)
async def test_dpop_bound_token(
    server: DevAuthorizationServer,
    http: httpx2.AsyncClient,
    make_key: Callable[[], Key],
    alg: str,
) -> None:
    key = make_key()
    answer = await token_request(
        server, http, make_proof(key, "POST", server.token_endpoint, alg=alg)
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["token_type"] == "DPoP"
    assert claims_of(server, body["access_token"])["cnf"] == {"jkt": key.thumbprint()}
    assert server.introspect(body["access_token"])["token_type"] == "DPoP"


async def test_helper_takes_a_prover(server: DevAuthorizationServer) -> None:
    key = ECKey.generate_key("P-256")
    token = await server.client_credentials_token("svc", "s", dpop=prover(key))
    assert token["token_type"] == "DPoP"
    assert claims_of(server, token["access_token"])["cnf"]["jkt"] == key.thumbprint()


async def test_refused_proofs(server: DevAuthorizationServer, http: httpx2.AsyncClient) -> None:
    key = ECKey.generate_key("P-256")
    url = server.token_endpoint
    replayed = make_proof(key, "POST", url)
    assert (await token_request(server, http, replayed)).status_code == 200
    private_jwk = jwt.encode(
        {"typ": "dpop+jwt", "alg": "ES256", "jwk": key.as_dict(private=True)},
        {"jti": "j", "htm": "POST", "htu": url, "iat": int(time.time())},
        key,
        algorithms=["ES256"],
    )
    signed_by_other = make_proof(
        key, "POST", url, header={"jwk": ECKey.generate_key().as_dict(private=False)}
    )
    for bad in (
        replayed,  # the same jti again
        make_proof(key, "POST", "http://127.0.0.1:1/token"),  # wrong htu
        make_proof(key, "GET", url),  # wrong htm
        make_proof(key, "POST", url, iat=time.time() - 3600),  # stale
        make_proof(key, "POST", url, iat=time.time() + 3600),  # from the future
        make_proof(key, "POST", url, header={"typ": "JWT"}),  # not dpop+jwt
        private_jwk,
        signed_by_other,
        "not-a-jwt",
        "a.b.c",
        "x" * 20000,
        [make_proof(key, "POST", url), make_proof(key, "POST", url)],  # two headers
    ):
        answer = await token_request(server, http, bad)
        assert answer.status_code == 400, bad
        assert answer.json()["error"] == "invalid_dpop_proof", bad
    # htu is compared without query and fragment.
    ok = await token_request(server, http, make_proof(key, "POST", url + "?x=1"))
    assert ok.status_code == 200


async def test_dpop_nonce_flow(http: httpx2.AsyncClient) -> None:
    async with dev_authorization_server(require_dpop_nonce=True) as server:
        server.register_client("svc", secret="s")
        key = ECKey.generate_key("P-256")
        first = await token_request(server, http, make_proof(key, "POST", server.token_endpoint))
        assert first.status_code == 400
        assert first.json()["error"] == "use_dpop_nonce"
        nonce = first.headers["dpop-nonce"]
        assert nonce == server.dpop.nonce
        wrong = await token_request(
            server, http, make_proof(key, "POST", server.token_endpoint, nonce="stale")
        )
        assert wrong.json()["error"] == "use_dpop_nonce"
        second = await token_request(
            server, http, make_proof(key, "POST", server.token_endpoint, nonce=nonce)
        )
        assert second.status_code == 200, second.text
        assert second.json()["token_type"] == "DPoP" and second.headers["dpop-nonce"]
        # After a rotation the previous nonce is still accepted once more, then not.
        server.dpop.rotate_nonce()
        kept = await token_request(
            server, http, make_proof(key, "POST", server.token_endpoint, nonce=nonce)
        )
        assert kept.status_code == 200
        server.dpop.rotate_nonce()
        gone = await token_request(
            server, http, make_proof(key, "POST", server.token_endpoint, nonce=nonce)
        )
        assert gone.json()["error"] == "use_dpop_nonce"


def challenge_of(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


async def test_dpop_jkt_and_bound_refresh_token(
    server: DevAuthorizationServer, http: httpx2.AsyncClient
) -> None:
    client = server.register_client(redirect_uris=[REDIRECT])  # public
    key, other = ECKey.generate_key("P-256"), ECKey.generate_key("P-256")
    verifier = secrets.token_urlsafe(48)
    answer = await http.get(
        server.authorization_endpoint,
        params={
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": REDIRECT,
            "code_challenge": challenge_of(verifier),
            "code_challenge_method": "S256",
            "dpop_jkt": key.thumbprint(),
        },
    )
    code = parse_qs(urlsplit(answer.headers["location"]).query)["code"][0]
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "code_verifier": verifier,
        "client_id": client.client_id,
    }
    proof = make_proof(key, "POST", server.token_endpoint)
    tokens = await http.post(server.token_endpoint, data=form, headers={"DPoP": proof})
    assert tokens.status_code == 200, tokens.text
    refresh = tokens.json()["refresh_token"]
    base = {"grant_type": "refresh_token", "client_id": client.client_id}
    for bad in (None, make_proof(other, "POST", server.token_endpoint)):
        headers = {"DPoP": bad} if bad else {}
        refused = await http.post(
            server.token_endpoint, data={**base, "refresh_token": refresh}, headers=headers
        )
        assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"
    rotated = await http.post(
        server.token_endpoint,
        data={**base, "refresh_token": refresh},
        headers={"DPoP": make_proof(key, "POST", server.token_endpoint)},
    )
    assert rotated.status_code == 200 and rotated.json()["token_type"] == "DPoP"
    # The rotated refresh token stays bound to the key.
    again = await http.post(
        server.token_endpoint,
        data={**base, "refresh_token": rotated.json()["refresh_token"]},
        headers={"DPoP": make_proof(other, "POST", server.token_endpoint)},
    )
    assert again.json()["error"] == "invalid_grant"


async def test_authorization_code_helper_with_dpop(server: DevAuthorizationServer) -> None:
    client = server.register_client(redirect_uris=[REDIRECT])
    key = ECKey.generate_key("P-256")
    token = await server.authorization_code_token(client.client_id, REDIRECT, dpop=prover(key))
    assert token["token_type"] == "DPoP"
    assert claims_of(server, token["access_token"])["cnf"]["jkt"] == key.thumbprint()


async def test_no_proof_means_bearer(
    server: DevAuthorizationServer, http: httpx2.AsyncClient
) -> None:
    answer = await token_request(server, http, None)
    assert answer.json()["token_type"] == "Bearer"
    assert "cnf" not in claims_of(server, answer.json()["access_token"])
