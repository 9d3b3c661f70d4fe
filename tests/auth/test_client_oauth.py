"""The OAuth client (`mcpfast.client.oauth.OAuth`) end to end: the development authorization
server (`mcpfast.auth.dev_authorization_server`) and an mcpfast server protected by
`AuthConfig`, talked to through ``mcpfast.connect(url, http_client=httpx2.AsyncClient(auth=...))``.

Covered: the authorization code flow with PKCE and ``resource`` after a 401 (dynamic
registration, then the token reused), a Client ID Metadata Document client id, pre-registered
credentials (no registration), each token endpoint authentication (basic, post, none,
private_key_jwt), refresh on expiry, step-up on 403 ``insufficient_scope``, the RFC 9207 ``iss``
check, client credentials (secret and JWT), a workload JWT bearer grant, and DPoP with
nonces at the authorization server and the resource server."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any
from urllib.parse import parse_qs

import httpx2
import pytest
from joserfc import jwt
from joserfc.jwk import ECKey

import mcpfast
from mcpfast import Context
from mcpfast.auth import dev_authorization_server
from mcpfast.auth._asgi import lifespan
from mcpfast.client.oauth import (
    AuthorizationError,
    AuthorizationResponse,
    ClientCredentials,
    ClientCredentialsGrant,
    FollowRedirect,
    JwtBearerGrant,
    OAuth,
)

from ..helpers import guarded, serving

REDIRECT = "http://127.0.0.1/callback"


def oauth(**options: Any) -> OAuth:
    """`OAuth` with the redirect followed (the development server approves at once)."""
    options.setdefault("redirect_handler", FollowRedirect())
    options.setdefault("redirect_uri", REDIRECT)
    return OAuth(**options)


def make_server() -> mcpfast.Server:
    server = mcpfast.Server("protected", "1.0")

    @server.tool()
    async def whoami(ctx: Context) -> dict[str, Any]:
        assert ctx.auth is not None
        return {
            "subject": ctx.auth.subject,
            "client_id": ctx.auth.client_id,
            "scopes": sorted(ctx.auth.scopes),
            "jkt": ctx.auth.jkt,
        }

    @server.tool(scopes=["files:write"])
    def save(path: str) -> str:
        return f"saved {path}"

    return server


def protected(issuer: str, **extra: Any) -> AbstractAsyncContextManager[str]:
    """An mcpfast server protected by ``issuer``'s tokens (scope ``mcp``); yields its URL."""
    return guarded(make_server(), issuer, **extra)


class Recorder:
    """An HTTP client for `OAuth`'s own requests that keeps every request it sent."""

    def __init__(self) -> None:
        self.requests: list[httpx2.Request] = []
        self.http = httpx2.AsyncClient(timeout=10, event_hooks={"request": [self._keep]})

    async def _keep(self, request: httpx2.Request) -> None:
        self.requests.append(request)

    def to(self, path: str) -> list[httpx2.Request]:
        return [r for r in self.requests if r.url.path == path]

    @staticmethod
    def form(request: httpx2.Request) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(request.content.decode()).items()}


async def whoami(url: str, auth: OAuth) -> dict[str, Any]:
    async with httpx2.AsyncClient(auth=auth, timeout=10) as http:
        async with mcpfast.connect(url, http_client=http, era="modern") as client:
            result = await client.call_tool("whoami", {})
            assert not result.isError, result
            content: dict[str, Any] = result.structuredContent
            return content


def unverified(token: str) -> dict[str, Any]:
    import base64

    payload = token.split(".")[1]
    loaded: dict[str, Any] = json.loads(
        base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    )
    return loaded


async def test_code_flow_after_a_401_with_registration_pkce_and_resource() -> None:
    recorder = Recorder()
    async with dev_authorization_server(scopes_supported=["mcp", "files:write"]) as dev:
        async with protected(dev.issuer) as url:
            auth = oauth(
                redirect_uri=REDIRECT,
                redirect_handler=FollowRedirect(recorder.http),
                http_client=recorder.http,
            )
            me = await whoami(url, auth)
            assert me["subject"] == "dev-user"
            assert me["scopes"] == ["mcp"]  # the challenge's scope
            [registration] = recorder.to("/register")
            body = json.loads(registration.content)
            assert body["redirect_uris"] == [REDIRECT]
            assert body["application_type"] == "native"
            [authorize] = recorder.to("/authorize")
            query = dict(authorize.url.params)
            assert query["code_challenge_method"] == "S256"
            assert query["resource"] == url
            assert query["scope"] == "mcp"
            [exchange] = recorder.to("/token")
            form = Recorder.form(exchange)
            assert form["resource"] == url and len(form["code_verifier"]) >= 43
            token = await auth.token_for(url)
            assert token is not None and unverified(token.access_token)["aud"] == url
            # The token is kept: a second connection authorizes nothing.
            await whoami(url, auth)
            assert auth.authorizations == 1
            assert len(recorder.to("/authorize")) == 1
    await recorder.http.aclose()


async def test_a_client_id_metadata_document_instead_of_registration() -> None:
    async with dev_authorization_server(scopes_supported=["mcp"], allow_local_fetches=True) as dev:
        async with serve_json({}) as (document_url, documents):
            documents["/client.json"] = {
                "client_id": document_url + "/client.json",
                "client_name": "cimd test",
                "redirect_uris": [REDIRECT],
                "token_endpoint_auth_method": "none",
            }
            async with protected(dev.issuer) as url:
                auth = oauth(
                    redirect_uri=REDIRECT, client_metadata_url=document_url + "/client.json"
                )
                me = await whoami(url, auth)
                assert me["client_id"] == document_url + "/client.json"
                assert dev.clients() == []  # nothing was registered


async def test_pre_registered_credentials_are_used_and_nothing_registers() -> None:
    recorder = Recorder()
    async with dev_authorization_server(scopes_supported=["mcp"]) as dev:
        dev.register_client("app", secret="s3cret", redirect_uris=[REDIRECT])
        async with protected(dev.issuer) as url:
            other = ClientCredentials("elsewhere", client_secret="x", issuer="http://other.test")
            mine = ClientCredentials("app", client_secret="s3cret", issuer=dev.issuer)
            auth = oauth(redirect_uri=REDIRECT, client=[other, mine], http_client=recorder.http)
            assert (await whoami(url, auth))["client_id"] == "app"
            assert recorder.to("/register") == []
            assert [c.client_id for c in dev.clients()] == ["app"]
    await recorder.http.aclose()


@pytest.mark.parametrize(
    "method", ["client_secret_basic", "client_secret_post", "none", "private_key_jwt"]
)
async def test_each_token_endpoint_authentication(method: str) -> None:
    recorder = Recorder()
    key = ECKey.generate_key("P-256", parameters={"kid": "c1"})
    async with dev_authorization_server(scopes_supported=["mcp"]) as dev:
        options: dict[str, Any] = {
            "redirect_uris": [REDIRECT],
            "token_endpoint_auth_method": method,
        }
        credentials = ClientCredentials("app", token_endpoint_auth_method=method, issuer=dev.issuer)
        if method.startswith("client_secret"):
            options["secret"] = credentials.client_secret = "s3cret"
        if method == "private_key_jwt":
            options["jwks"] = {"keys": [key.as_dict(private=False)]}
            credentials.private_key = key.as_dict(private=True)
        dev.register_client("app", **options)
        async with protected(dev.issuer) as url:
            auth = oauth(redirect_uri=REDIRECT, client=credentials, http_client=recorder.http)
            assert (await whoami(url, auth))["client_id"] == "app"
    [exchange] = recorder.to("/token")
    form = Recorder.form(exchange)
    basic = exchange.headers.get("authorization", "")
    assert basic.startswith("Basic ") == (method == "client_secret_basic")
    assert ("client_secret" in form) == (method == "client_secret_post")
    assert ("client_assertion" in form) == (method == "private_key_jwt")
    if method == "private_key_jwt":
        assertion = unverified(form["client_assertion"])
        assert assertion["iss"] == assertion["sub"] == "app"
    await recorder.http.aclose()


async def test_the_auth_method_follows_what_the_server_offers() -> None:
    """No method configured: a secret goes by client_secret_basic where offered."""
    recorder = Recorder()
    async with dev_authorization_server(scopes_supported=["mcp"]) as dev:
        dev.register_client("app", secret="s3cret", redirect_uris=[REDIRECT])
        async with protected(dev.issuer) as url:
            credentials = ClientCredentials("app", client_secret="s3cret", issuer=dev.issuer)
            await whoami(
                url, oauth(redirect_uri=REDIRECT, client=credentials, http_client=recorder.http)
            )
    assert recorder.to("/token")[0].headers["authorization"].startswith("Basic ")
    await recorder.http.aclose()


async def test_an_expired_token_is_refreshed_not_reauthorized() -> None:
    recorder = Recorder()
    now = time.time()
    options: dict[str, Any] = {"access_token_lifetime": 2, "clock": lambda: now}
    async with dev_authorization_server(scopes_supported=["mcp"], **options) as dev:
        async with protected(dev.issuer) as url:
            auth = oauth(redirect_uri=REDIRECT, http_client=recorder.http)
            await whoami(url, auth)
            first = await auth.token_for(url)
            assert first is not None and first.refresh_token
            now += 2.5  # expired at the authorization server too (the client's leeway is 30 s)
            await whoami(url, auth)
            second = await auth.token_for(url)
            assert second is not None and second.access_token != first.access_token
            assert auth.authorizations == 1
            grants = [Recorder.form(r)["grant_type"] for r in recorder.to("/token")]
            assert "refresh_token" in grants and grants.count("authorization_code") == 1
    await recorder.http.aclose()


async def test_step_up_on_insufficient_scope() -> None:
    recorder = Recorder()
    async with dev_authorization_server(scopes_supported=["mcp", "files:write"]) as dev:
        async with protected(dev.issuer) as url:
            auth = oauth(
                redirect_uri=REDIRECT,
                redirect_handler=FollowRedirect(recorder.http),
                http_client=recorder.http,
            )
            async with httpx2.AsyncClient(auth=auth, timeout=10) as http:
                async with mcpfast.connect(url, http_client=http, era="modern") as client:
                    await client.call_tool("whoami", {})
                    result = await client.call_tool("save", {"path": "a.txt"})
                    assert not result.isError
            assert auth.authorizations == 2
            scopes = [dict(r.url.params)["scope"].split() for r in recorder.to("/authorize")]
            assert scopes[0] == ["mcp"]
            assert set(scopes[1]) == {"mcp", "files:write"}  # the union
    await recorder.http.aclose()


class TamperedRedirect(FollowRedirect):
    def __init__(self, iss: str | None) -> None:
        super().__init__()
        self.iss = iss

    async def __call__(self, authorization_url: str) -> AuthorizationResponse:
        response = await super().__call__(authorization_url)
        return response._replace(iss=self.iss)


@pytest.mark.parametrize("iss", [None, "http://evil.test", "normalized/"])
async def test_an_authorization_response_with_a_wrong_or_missing_iss_is_refused(
    iss: str | None,
) -> None:
    recorder = Recorder()
    async with dev_authorization_server(scopes_supported=["mcp"]) as dev:
        async with protected(dev.issuer) as url:
            sent = dev.issuer + "/" if iss == "normalized/" else iss
            auth = oauth(
                redirect_uri=REDIRECT,
                redirect_handler=TamperedRedirect(sent),
                http_client=recorder.http,
            )
            with pytest.RaisesGroup(
                AuthorizationError, allow_unwrapped=True, flatten_subgroups=True
            ):
                await whoami(url, auth)
            assert recorder.to("/token") == []  # the code never reached the token endpoint
    await recorder.http.aclose()


async def test_client_credentials_with_a_secret_and_with_a_jwt() -> None:
    key = ECKey.generate_key("P-256", parameters={"kid": "svc"})
    async with dev_authorization_server(scopes_supported=["mcp"]) as dev:
        dev.register_client("svc", secret="s3cret", grant_types=["client_credentials"])
        dev.register_client(
            "svc-jwt",
            jwks={"keys": [key.as_dict(private=False)]},
            grant_types=["client_credentials"],
        )
        async with protected(dev.issuer) as url:
            secret = oauth(
                client=ClientCredentials("svc", client_secret="s3cret", issuer=dev.issuer),
                grant=ClientCredentialsGrant(),
            )
            assert (await whoami(url, secret))["subject"] == "svc"
            signed = oauth(
                client=ClientCredentials(
                    "svc-jwt", private_key=key.as_pem(private=True).decode(), issuer=dev.issuer
                ),
                grant=ClientCredentialsGrant(),
            )
            assert (await whoami(url, signed))["client_id"] == "svc-jwt"


async def test_a_workload_jwt_bearer_grant() -> None:
    workload = ECKey.generate_key("P-256", parameters={"kid": "wl"})
    async with dev_authorization_server(scopes_supported=["mcp"]) as dev:
        dev.trust_issuer("https://workload.test", {"keys": [workload.as_dict(private=False)]})
        dev.register_client("wif", grant_types=["urn:ietf:params:oauth:grant-type:jwt-bearer"])

        def assertion() -> str:
            now = int(time.time())
            claims = {
                "iss": "https://workload.test",
                "sub": "job-7",
                "aud": dev.issuer,
                "iat": now,
                "exp": now + 60,
                "jti": str(now),
            }
            return jwt.encode({"alg": "ES256", "kid": "wl"}, claims, workload)

        async with protected(dev.issuer) as url:
            auth = oauth(
                client=ClientCredentials("wif"), grant=JwtBearerGrant(assertion, issuer=dev.issuer)
            )
            assert (await whoami(url, auth))["subject"] == "job-7"


async def test_dpop_with_nonces_at_both_servers() -> None:
    recorder = Recorder()
    async with dev_authorization_server(scopes_supported=["mcp"], require_dpop_nonce=True) as dev:
        async with protected(dev.issuer, dpop_nonce=True) as url:
            auth = oauth(redirect_uri=REDIRECT, dpop=True, http_client=recorder.http)
            me = await whoami(url, auth)
            assert auth.dpop is not None and me["jkt"] == auth.dpop.thumbprint
            token = await auth.token_for(url)
            assert token is not None and token.token_type == "DPoP"
            exchanges = [r for r in recorder.to("/token") if "dpop" in r.headers]
            assert len(exchanges) == 2  # use_dpop_nonce, then the proof with the nonce
            assert "nonce" in unverified(exchanges[1].headers["dpop"])
    await recorder.http.aclose()


# ------------------------------------------------------------------- a JSON server


@asynccontextmanager
async def serve_json(
    documents: dict[str, Any],
) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """A loopback HTTP server answering GET ``path`` with ``documents[path]`` as JSON."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        document = documents.get(scope["path"])
        status = 200 if document is not None else 404
        body = json.dumps(document).encode() if document is not None else b"{}"
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async with serving(app) as url:
        yield url, documents
