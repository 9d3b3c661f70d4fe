"""The development authorization server (`mcpfast auth-server`) over real HTTP on loopback:
revocation is the authenticated client's, of its own tokens only (RFC 7009 section 2.1); a
replayed refresh token revokes its whole grant; RFC 7523 assertions need a ``jti`` (kept until
their ``exp``) and an ``exp`` at most 5 minutes ahead; a client's documents are not fetched from
loopback or private addresses unless ``allow_local_fetches``; a ``Host`` that is not a loopback
name is refused."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import orjson
import pytest
import trio
from joserfc.jwk import ECKey

from mcpfast.auth._asgi import Receive, Scope, Send, lifespan, serve_asgi
from mcpfast.auth.assertions import AssertionJtis
from mcpfast.auth.clients import b64url_sha256
from mcpfast.auth.devserver import DevAuthorizationServer, dev_authorization_server

from ..helpers import REPO, client_assertion
from .conftest import RESOURCE, SCOPES, auth_config, protected, subject_server

REDIRECT = "http://127.0.0.1:7777/callback"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


async def logged_in(dev: DevAuthorizationServer, client_id: str) -> dict[str, Any]:
    """The token response of a whole authorization code flow of the public ``client_id``."""
    return await dev.authorization_code_token(client_id, REDIRECT, scope="mcp", resource=RESOURCE)


async def refreshed(
    http: httpx2.AsyncClient, dev: DevAuthorizationServer, client_id: str, token: str
) -> httpx2.Response:
    form = {"grant_type": "refresh_token", "refresh_token": token, "client_id": client_id}
    return await http.post(dev.token_endpoint, data=form)


async def active(http: httpx2.AsyncClient, dev: DevAuthorizationServer, token: str) -> bool:
    """What ``/introspect`` says of ``token``, asked by the resource server's client."""
    answer = await http.post(dev.introspection_endpoint, data={"token": token}, auth=("rs", "rs"))
    assert answer.status_code == 200, answer.text
    return bool(answer.json()["active"])


async def test_a_client_revokes_only_its_own_tokens(
    dev: DevAuthorizationServer, http: httpx2.AsyncClient
) -> None:
    dev.register_client("rs", secret="rs")
    alice = dev.register_client("alice-app", redirect_uris=[REDIRECT])
    dev.register_client("bob-app", redirect_uris=[REDIRECT])
    dev.register_client("bob-service", secret="bob-secret")
    tokens = await logged_in(dev, alice.client_id)
    for token in (tokens["access_token"], tokens["refresh_token"]):
        public = {"token": token, "client_id": "bob-app"}  # a public client: its client_id
        confidential = ("bob-service", "bob-secret")
        for answer in (
            await http.post(dev.revocation_endpoint, data=public),
            await http.post(dev.revocation_endpoint, data={"token": token}, auth=confidential),
        ):
            assert answer.status_code == 200  # RFC 7009 section 2.2: answered, nothing done
        assert await active(http, dev, token)
    wrong = await http.post(
        dev.revocation_endpoint,
        data={"token": tokens["access_token"]},
        auth=("bob-service", "guess"),
    )
    assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_client"
    unknown = await http.post(
        dev.revocation_endpoint, data={"token": tokens["access_token"], "client_id": "nobody"}
    )
    assert unknown.status_code == 401 and unknown.json()["error"] == "invalid_client"
    assert await active(http, dev, tokens["access_token"])
    still = await refreshed(http, dev, alice.client_id, tokens["refresh_token"])
    assert still.status_code == 200, still.text
    mine = await http.post(
        dev.revocation_endpoint,
        data={"token": still.json()["refresh_token"], "client_id": alice.client_id},
    )
    assert mine.status_code == 200  # the owner's revocation takes the whole grant
    assert not await active(http, dev, still.json()["access_token"])
    assert not await active(http, dev, tokens["access_token"])


async def test_a_replayed_refresh_token_revokes_its_whole_grant(
    engine: str, dev: DevAuthorizationServer, http: httpx2.AsyncClient
) -> None:
    dev.register_client("rs", secret="rs")
    app = dev.register_client("app", redirect_uris=[REDIRECT])
    first = await logged_in(dev, app.client_id)
    second = (await refreshed(http, dev, app.client_id, first["refresh_token"])).json()
    newest = (await refreshed(http, dev, app.client_id, second["refresh_token"])).json()
    assert await active(http, dev, newest["access_token"])
    replay = await refreshed(http, dev, app.client_id, first["refresh_token"])
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    dead = await refreshed(http, dev, app.client_id, newest["refresh_token"])
    assert dead.status_code == 400 and dead.json()["error"] == "invalid_grant"
    for answer in (first, second, newest):
        assert not await active(http, dev, answer["access_token"])
    config = auth_config(
        dev,
        introspection_url=dev.introspection_endpoint,
        introspection_client_id="rs",
        introspection_client_secret="rs",
    )
    async with protected(subject_server("owned"), engine, dev, auth=config) as (_, wire):
        reply = await wire.modern(
            "tools/call",
            {"name": "whoami", "arguments": {}},
            headers={"authorization": f"Bearer {newest['access_token']}"},
        )
        assert reply.status == 401
        other = await logged_in(dev, app.client_id)  # a new login is a new grant
        reply = await wire.modern(
            "tools/call",
            {"name": "whoami", "arguments": {}},
            headers={"authorization": f"Bearer {other['access_token']}"},
        )
        assert reply.status == 200 and reply.result["content"][0]["text"] == dev.subject


async def test_a_replayed_authorization_code_revokes_what_it_gave(
    dev: DevAuthorizationServer, http: httpx2.AsyncClient
) -> None:
    dev.register_client("rs", secret="rs")
    app = dev.register_client("app", redirect_uris=[REDIRECT])
    verifier = secrets.token_urlsafe(48)
    challenge = b64url_sha256(verifier)
    query = {
        "response_type": "code",
        "client_id": app.client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "scope": "mcp",
        "resource": RESOURCE,
    }
    location = (await http.get(dev.authorization_endpoint, params=query)).headers["location"]
    [code] = parse_qs(urlsplit(location).query)["code"]
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "code_verifier": verifier,
        "client_id": app.client_id,
    }
    tokens = (await http.post(dev.token_endpoint, data=form)).json()
    assert await active(http, dev, tokens["access_token"])
    replay = await http.post(dev.token_endpoint, data=form)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert not await active(http, dev, tokens["access_token"])
    assert not await active(http, dev, tokens["refresh_token"])


@pytest.mark.parametrize("attack", ["replayed", "without jti", "exp an hour ahead"])
async def test_client_assertions_are_used_once_and_short_lived(
    dev: DevAuthorizationServer, http: httpx2.AsyncClient, attack: str
) -> None:
    key = ECKey.generate_key("P-256", auto_kid=True)
    client = dev.register_client(
        "svc", jwks={"keys": [key.as_dict(private=False)]}, grant_types=["client_credentials"]
    )

    async def token(assertion: str) -> httpx2.Response:
        form = {
            "grant_type": "client_credentials",
            "client_assertion_type": ASSERTION_TYPE,
            "client_assertion": assertion,
            "resource": RESOURCE,
        }
        return await http.post(dev.token_endpoint, data=form)

    soon = int(time.time()) + 290
    fine = client_assertion(key, client.client_id, dev.token_endpoint, exp=soon)
    assert (await token(fine)).status_code == 200
    if attack == "replayed":
        bad = fine
    elif attack == "without jti":
        bad = client_assertion(key, client.client_id, dev.issuer, jti=None)
    else:
        bad = client_assertion(key, client.client_id, dev.issuer, exp=int(time.time()) + 3600)
    refused = await token(bad)
    assert refused.status_code == 401 and refused.json()["error"] == "invalid_client"


def test_the_jti_memory_is_bounded_per_client() -> None:
    jtis = AssertionJtis(per_client=2, clients=2)
    until = time.time() + 60
    assert jtis.remember("a", "1", until, "a") is None
    assert jtis.remember("a", "1", until, "a") is not None  # a replay
    assert jtis.remember("a", "2", until, "a") is None
    assert jtis.remember("a", "3", until, "a") is not None  # a's quota is full ...
    assert jtis.remember("b", "1", until, "b") is None  # ... b's is not
    assert jtis.remember("c", "1", until, "c") is not None  # as many clients as allowed
    assert jtis.remember("a", "4", time.time() - 1, "c") is not None
    gone = AssertionJtis(per_client=1)
    assert gone.remember("a", "1", time.time() - 1, "a") is None
    assert gone.remember("a", "2", until, "a") is None  # the expired one was forgotten


@pytest.mark.parametrize(
    "jwks_uri",
    [
        "http://127.0.0.1:{port}/jwks",
        "https://127.0.0.1:{port}/jwks",
        "https://localhost/jwks",
        "https://[::1]/jwks",
        "https://10.0.0.7/jwks",
        "https://169.254.169.254/latest/meta-data",
        "https://0x7f000001/jwks",
    ],
)
async def test_registration_refuses_local_jwks_uris_unless_allowed(
    dev: DevAuthorizationServer, http: httpx2.AsyncClient, jwks_uri: str
) -> None:
    document = {
        "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "private_key_jwt",
        "jwks_uri": jwks_uri.format(port=dev.port or 9),
    }
    answer = await http.post(dev.registration_endpoint, json=document)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == "invalid_client_metadata"
    async with dev_authorization_server(scopes_supported=SCOPES, allow_local_fetches=True) as local:
        if jwks_uri.startswith("http://") or "127.0.0.1" in jwks_uri or "localhost" in jwks_uri:
            answer = await http.post(local.registration_endpoint, json=document)
            assert answer.status_code == 201, answer.text


async def serve_document(
    document: dict[str, Any], fetched: list[str], task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    """A loopback HTTP server answering every GET with ``document`` (paths in ``fetched``)."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        fetched.append(scope["path"])
        headers = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": orjson.dumps(document)})

    await serve_asgi(app, "127.0.0.1", 0, task_status=task_status)


async def test_client_metadata_documents_on_loopback_are_fetched_only_when_allowed(
    dev: DevAuthorizationServer, http: httpx2.AsyncClient
) -> None:
    fetched: list[str] = []
    document: dict[str, Any] = {"client_name": "local", "redirect_uris": [REDIRECT]}
    async with trio.open_nursery() as nursery:
        [base] = await nursery.start(serve_document, document, fetched)
        document["client_id"] = f"{base}/client.json"
        query = {
            "response_type": "code",
            "client_id": document["client_id"],
            "redirect_uri": REDIRECT,
            "code_challenge": "x" * 43,
            "code_challenge_method": "S256",
        }
        answer = await http.get(dev.authorization_endpoint, params=query)
        assert answer.status_code == 400 and answer.json()["error"] == "invalid_client"
        assert fetched == []
        async with dev_authorization_server(allow_local_fetches=True) as local:
            answer = await http.get(local.authorization_endpoint, params=query)
            assert answer.status_code == 302 and fetched == ["/client.json"]
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("host", ["evil.example", "evil.example:80", "127.0.0.1.evil.example", ""])
async def test_a_foreign_host_is_refused(
    dev: DevAuthorizationServer, http: httpx2.AsyncClient, host: str
) -> None:
    registered = await http.post(
        dev.registration_endpoint,
        json={"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"},
        headers={"host": host},
    )
    assert registered.status_code == 421
    metadata = await http.get(
        f"{dev.issuer}/.well-known/oauth-authorization-server", headers={"host": host}
    )
    assert metadata.status_code == 421
    assert dev.clients() == []
    for own in (dev.issuer.removeprefix("http://"), f"localhost:{dev.issuer.rsplit(':', 1)[1]}"):
        answer = await http.get(
            f"{dev.issuer}/.well-known/oauth-authorization-server", headers={"host": own}
        )
        assert answer.status_code == 200


@contextmanager
def auth_server_process(*flags: str) -> Iterator[str]:
    """``mcpfast auth-server --port 0 *flags`` in a process of its own; yields its issuer."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    command = [sys.executable, "-m", "mcpfast", "auth-server", "--port", "0", *flags]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    assert process.stderr is not None
    try:
        issuer = ""
        for line in process.stderr:  # ends (EOF) if the process exits
            if "serving at " in line:
                issuer = line.rsplit("serving at ", 1)[1].strip()
                break
        assert issuer, "mcpfast auth-server did not start"
        yield issuer
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0


@pytest.mark.parametrize("flags", [(), ("--allow-local-fetches",)])
def test_the_cli_server_refuses_local_jwks_uris_and_foreign_hosts(flags: tuple[str, ...]) -> None:
    document = {
        "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "private_key_jwt",
        "jwks_uri": "http://127.0.0.1:9/jwks",
    }
    with auth_server_process(*flags) as issuer:
        registered = httpx2.post(issuer + "/register", json=document, timeout=10)
        assert registered.status_code == (201 if flags else 400), registered.text
        foreign = httpx2.get(issuer + "/jwks", headers={"host": "rebound.example"}, timeout=10)
        assert foreign.status_code == 421
