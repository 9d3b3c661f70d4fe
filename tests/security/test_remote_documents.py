"""Documents fetched on a remote party's word (`mcpfast._remote.fetch`): a malicious MCP server
and authorization server on loopback answer the client's OAuth discovery, token and
registration requests, the resource server's JWKS and introspection requests and a server
card request with endless bodies, gzip bombs, slow drips and redirects, or name URLs off
limits. Each is refused with a clear error, having read about the cap, within the deadline."""

from __future__ import annotations

import os
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2
import orjson
import pytest
import trio

import mcpfast
from mcpfast.auth._asgi import lifespan
from mcpfast.auth.devserver import DevAuthorizationServer, dev_authorization_server
from mcpfast.cli.exits import Exit
from mcpfast.client import read_server_card
from mcpfast.client.oauth import (
    ClientCredentials,
    ClientCredentialsGrant,
    DiscoveryError,
    OAuth,
    RegistrationError,
    TokenError,
    discovery,
)
from mcpfast.errors import TransportError
from mcpfast.protocol.card import CARD_MEDIA_TYPE
from mcpfast.server.config import AuthConfig

from ..e2e.processes import mcpfast_command
from ..helpers import REPO, serving
from .conftest import RESOURCE, protected, tenant

MiB = 1 << 20
CHUNK = b" " * (64 * 1024)
SAFETY = 256 * MiB
"""An endless body stops here (what the client would have read without a cap)."""
SENT_BOUND = 32 * MiB
"""What a capped reader lets through: its cap plus what the sockets buffer on the way."""

Handler = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


@dataclass
class Hostile:
    """A malicious HTTP server on loopback: ``routes`` by path; ``sent`` the body bytes each
    path managed to send; ``hits`` every path asked for."""

    url: str = ""
    routes: dict[str, Handler] = field(default_factory=dict)
    sent: dict[str, int] = field(default_factory=dict)
    hits: list[str] = field(default_factory=list)

    async def app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        path = scope["path"]
        self.hits.append(path)
        handler = self.routes.get(path)
        if handler is None:
            await _answer(send, 404, b"{}")
            return
        await handler(scope, receive, send)

    # ------------------------------------------------------------------- answers

    def document(self, path: str, body: Any, status: int = 200, **headers: str) -> None:
        async def handler(scope: dict[str, Any], receive: Any, send: Any) -> None:
            await _answer(send, status, orjson.dumps(body), headers)

        self.routes[path] = handler

    def challenge(self, path: str, resource_metadata: str) -> None:
        """``path`` answers 401 naming ``resource_metadata``."""
        header = f'Bearer resource_metadata="{resource_metadata}"'
        self.document(path, {}, 401, **{"www-authenticate": header})

    def endless(self, path: str) -> None:
        """``path`` streams a JSON-looking body without end (until the client leaves)."""

        async def handler(scope: dict[str, Any], receive: Any, send: Any) -> None:
            await self._stream(path, receive, send, CHUNK, 0.0)

        self.routes[path] = handler

    def drip(self, path: str) -> None:
        """``path`` sends one byte every 50 ms, without end."""

        async def handler(scope: dict[str, Any], receive: Any, send: Any) -> None:
            await self._stream(path, receive, send, b" ", 0.05)

        self.routes[path] = handler

    def bomb(self, path: str, size: int = SAFETY) -> None:
        """``path`` sends a gzip body of ``size`` decoded bytes (about 1/1000 on the wire)."""
        packer = zlib.compressobj(9, zlib.DEFLATED, 31)
        zeros = bytes(MiB)
        body = b"".join(packer.compress(zeros) for _ in range(size // MiB)) + packer.flush()

        async def handler(scope: dict[str, Any], receive: Any, send: Any) -> None:
            self.sent[path] = len(body)
            await _answer(send, 200, body, {"content-encoding": "gzip"})

        self.routes[path] = handler

    def redirect(self, path: str, location: str) -> None:
        self.document(path, {}, 302, location=location)

    async def _stream(self, path: str, receive: Any, send: Any, piece: bytes, pause: float) -> None:
        self.sent[path] = 0
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        async with trio.open_nursery() as nursery:

            async def gone() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                nursery.cancel_scope.cancel()

            nursery.start_soon(gone)
            await send({"type": "http.response.body", "body": b"{", "more_body": True})
            while self.sent[path] < SAFETY:
                await send({"type": "http.response.body", "body": piece, "more_body": True})
                self.sent[path] += len(piece)
                await trio.sleep(pause)
            await send({"type": "http.response.body", "body": b"}"})
            nursery.cancel_scope.cancel()


async def _answer(
    send: Any, status: int, body: bytes, headers: dict[str, str] | None = None
) -> None:
    listed = [(b"content-type", b"application/json")]
    listed += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": listed})
    await send({"type": "http.response.body", "body": body})


@asynccontextmanager
async def hostile_server() -> AsyncIterator[Hostile]:
    server = Hostile()
    async with serving(server.app) as server.url:
        yield server


@pytest.fixture
async def evil() -> AsyncIterator[Hostile]:
    """The malicious MCP server and authorization server (one origin)."""
    async with hostile_server() as server:
        yield server


@pytest.fixture
async def admin() -> AsyncIterator[Hostile]:
    """Another loopback service (an "admin port"), which no one should reach."""
    async with hostile_server() as server:
        server.document("/admin", {"secret": True})
        yield server


def metadata(evil: Hostile, **endpoints: str) -> dict[str, Any]:
    """The authorization server metadata of ``evil`` (``endpoints``: paths on it)."""
    document: dict[str, Any] = {
        "issuer": evil.url,
        "authorization_endpoint": evil.url + "/authorize",
        "token_endpoint": evil.url + "/token",
        "code_challenge_methods_supported": ["S256"],
        "grant_types_supported": ["client_credentials"],
    }
    document.update({name: evil.url + path for name, path in endpoints.items()})
    return document


def protected_resource(evil: Hostile, *servers: str) -> None:
    """``evil`` serves a 401 at /mcp naming its metadata, which names ``servers`` (default:
    itself) as authorization servers."""
    evil.challenge("/mcp", evil.url + "/.well-known/oauth-protected-resource/mcp")
    evil.document(
        "/.well-known/oauth-protected-resource/mcp",
        {"resource": evil.url + "/mcp", "authorization_servers": list(servers) or [evil.url]},
    )


async def authorize(url: str, *, seconds: float = 20, **options: Any) -> BaseException:
    """What a request to ``url`` through `OAuth` (a client credentials grant, ``options``)
    raises, within ``seconds``."""
    oauth = OAuth(grant=ClientCredentialsGrant(), **options)
    async with httpx2.AsyncClient(auth=oauth, timeout=30) as http:
        with trio.fail_after(seconds):
            with pytest.raises(Exception) as caught:
                await http.post(url, json={})
    return caught.value


async def authorize_measured(url: str) -> tuple[BaseException, int]:
    """`authorize`, and the peak of memory traced meanwhile."""
    tracemalloc.start()
    try:
        error = await authorize(url)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return error, peak


# -------------------------------------------------------------------- the OAuth client


async def test_endless_protected_resource_metadata_stops_at_the_cap(evil: Hostile) -> None:
    evil.challenge("/mcp", evil.url + "/prm")
    evil.endless("/prm")
    error = await authorize(evil.url + "/mcp")
    assert isinstance(error, DiscoveryError)
    assert "over 262,144 bytes" in str(error)
    assert evil.sent["/prm"] < SENT_BOUND


async def test_gzip_bomb_metadata_stops_at_the_cap(evil: Hostile) -> None:
    protected_resource(evil)
    evil.bomb("/.well-known/oauth-authorization-server")
    error, peak = await authorize_measured(evil.url + "/mcp")
    assert isinstance(error, DiscoveryError) and "over 262,144 bytes" in str(error)
    assert peak < 16 * MiB  # the bomb decodes to 256 MiB


async def test_slow_drip_metadata_hits_the_deadline(
    evil: Hostile, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(discovery, "METADATA_SECONDS", 1.0)
    evil.challenge("/mcp", evil.url + "/prm")
    evil.drip("/prm")
    started = trio.current_time()
    error = await authorize(evil.url + "/mcp", seconds=10)
    assert isinstance(error, DiscoveryError) and "took over 1 s" in str(error)
    assert trio.current_time() - started < 5


async def test_endless_token_response_stops_at_the_cap(evil: Hostile) -> None:
    protected_resource(evil)
    evil.document("/.well-known/oauth-authorization-server", metadata(evil, token_endpoint="/t"))
    evil.endless("/t")
    error = await authorize(evil.url + "/mcp", client=ClientCredentials("public-client"))
    assert isinstance(error, TokenError) and "over 262,144 bytes" in str(error)
    assert evil.sent["/t"] < SENT_BOUND


async def test_gzip_bomb_registration_response_stops_at_the_cap(evil: Hostile) -> None:
    protected_resource(evil)
    evil.document(
        "/.well-known/oauth-authorization-server", metadata(evil, registration_endpoint="/r")
    )
    evil.bomb("/r")
    error, peak = await authorize_measured(evil.url + "/mcp")
    assert isinstance(error, RegistrationError) and "over 262,144 bytes" in str(error)
    assert peak < 16 * MiB


async def test_metadata_redirect_to_an_admin_port_is_not_followed(
    evil: Hostile, admin: Hostile
) -> None:
    evil.challenge("/mcp", evil.url + "/prm")
    evil.redirect("/prm", admin.url + "/admin")
    follows = httpx2.AsyncClient(follow_redirects=True, timeout=10)
    async with follows:
        error = await authorize(evil.url + "/mcp", http_client=follows)
    assert isinstance(error, DiscoveryError) and "redirects are not followed" in str(error)
    assert admin.hits == []


async def test_metadata_named_on_another_origin_over_http_is_refused(
    evil: Hostile, admin: Hostile
) -> None:
    """The 401's resource_metadata must be on the MCP server's origin or https."""
    evil.challenge("/mcp", admin.url.replace("127.0.0.1", "localhost") + "/admin")
    error = await authorize(evil.url + "/mcp")
    assert isinstance(error, DiscoveryError) and "neither on its origin nor https" in str(error)
    assert admin.hits == []


async def test_plain_http_authorization_server_off_loopback_is_refused(evil: Hostile) -> None:
    protected_resource(evil, "http://192.0.2.7")  # TEST-NET-1: never reachable
    error = await authorize(evil.url + "/mcp", seconds=5)
    assert isinstance(error, DiscoveryError) and "192.0.2.7" in str(error)
    assert "https" in str(error)


@pytest.mark.parametrize(
    "issuer",
    ["https://10.1.2.3", "https://169.254.169.254", "https://[fd00::1]", "https://100.64.0.9"],
)
async def test_public_only_refuses_private_authorization_servers(
    evil: Hostile, issuer: str
) -> None:
    protected_resource(evil, issuer)
    error = await authorize(evil.url + "/mcp", seconds=5, public_only=True)
    assert isinstance(error, DiscoveryError) and "non-public address" in str(error)


async def test_public_only_refuses_loopback_off_the_servers_origin(
    evil: Hostile, admin: Hostile
) -> None:
    """The MCP server's own origin is the user's word; another loopback port is not."""
    other = admin.url.replace("http://", "https://")
    protected_resource(evil, other)
    error = await authorize(evil.url + "/mcp", seconds=5, public_only=True)
    assert isinstance(error, DiscoveryError) and "non-public address (127.0.0.1)" in str(error)
    assert admin.hits == []


async def test_cli_auth_public_only_refuses_a_loopback_authorization_server(
    evil: Hostile, admin: Hostile
) -> None:
    """The real CLI: ``--auth-public-only`` refuses the authorization server the malicious
    server names on another loopback port (exit 7, one clear line); the secret goes nowhere."""
    issuer = admin.url.replace("http://", "https://")
    protected_resource(evil, issuer)
    env = {k: v for k, v in os.environ.items() if k not in ("BROWSER", "DISPLAY")}
    env.update(PYTHONPATH=str(REPO / "python"), SVC_SECRET="s3cret")
    command = mcpfast_command(
        "call", evil.url + "/mcp", "ping", "--client-id", "svc", "--client-secret-env",
        "SVC_SECRET", "--auth-issuer", issuer, "--auth-public-only", "--timeout", "20",
    )  # fmt: skip
    result = await trio.run_process(
        command, env=env, capture_stdout=True, capture_stderr=True, check=False
    )
    stderr = result.stderr.decode()
    assert result.returncode == Exit.NOT_AUTHORIZED, stderr
    assert "non-public address (127.0.0.1)" in stderr and "Traceback" not in stderr
    assert admin.hits == []


# ------------------------------------------------- the development authorization server


async def test_dev_as_client_metadata_document_slow_drip_hits_the_deadline(
    evil: Hostile,
) -> None:
    """A client whose Client ID Metadata Document drips holds the dev server 5 s, not forever."""
    evil.drip("/client.json")
    query = {
        "client_id": evil.url + "/client.json",
        "response_type": "code",
        "redirect_uri": "http://127.0.0.1/callback",
        "code_challenge": "x" * 43,
        "code_challenge_method": "S256",
    }
    async with dev_authorization_server(allow_local_fetches=True) as dev:
        async with httpx2.AsyncClient(timeout=60) as http:
            started = trio.current_time()
            with trio.fail_after(20):
                answer = await http.get(dev.authorization_endpoint, params=query)
    assert answer.status_code == 400
    assert "took over 5 s" in answer.text
    assert trio.current_time() - started < 10


# ---------------------------------------------------------------- the server card


async def test_catalog_card_redirect_is_not_followed(evil: Hostile, admin: Hostile) -> None:
    entry = {"identifier": "x", "type": CARD_MEDIA_TYPE, "url": evil.url + "/card"}
    evil.document("/.well-known/ai-catalog.json", {"specVersion": "1", "entries": [entry]})
    evil.redirect("/card", admin.url + "/admin")
    follows = httpx2.AsyncClient(follow_redirects=True, timeout=10)
    async with follows:
        with trio.fail_after(20), pytest.raises(TransportError, match="not followed"):
            await read_server_card(evil.url + "/.well-known/ai-catalog.json", http_client=follows)
    assert admin.hits == []


# ---------------------------------------------------------------- the resource server


def whoami() -> mcpfast.Server:
    server = mcpfast.Server("rs", "1.0")

    @server.tool()
    def ping() -> str:
        return "pong"

    return server


async def call(url: str, token: str, seconds: float = 20) -> int:
    """The status of a tools/list with ``token``."""
    async with httpx2.AsyncClient(timeout=30) as http:
        with trio.fail_after(seconds):
            reply = await http.post(
                url,
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
                headers={
                    "authorization": f"Bearer {token}",
                    "accept": "application/json, text/event-stream",
                    "mcp-protocol-version": "2025-11-25",
                },
            )
    return reply.status_code


async def test_rs_slow_drip_jwks_hits_the_deadline(
    engine: str, dev: DevAuthorizationServer, evil: Hostile
) -> None:
    evil.drip("/jwks")
    auth = AuthConfig(issuer=dev.issuer, resource=RESOURCE, jwks_url=evil.url + "/jwks")
    async with protected(whoami(), engine, dev, auth=auth) as (url, _):
        started = trio.current_time()
        status = await call(url, tenant(dev, "alice").token, seconds=15)
    assert status == 503  # the issuer's keys cannot be had now
    assert trio.current_time() - started < 10  # one total deadline (5 s), not one per read


async def test_rs_endless_introspection_reply_stops_at_the_cap(
    engine: str, dev: DevAuthorizationServer, evil: Hostile
) -> None:
    evil.endless("/introspect")
    auth = AuthConfig(
        issuer=dev.issuer,
        resource=RESOURCE,
        introspection_url=evil.url + "/introspect",
        introspection_client_id="rs",
        introspection_client_secret="rs-secret",
    )
    async with protected(whoami(), engine, dev, auth=auth) as (url, _):
        status = await call(url, "opaque-token-1")
    assert status == 401
    assert evil.sent["/introspect"] < SENT_BOUND


async def test_rs_jwks_public_only_refuses_a_loopback_jwks_uri(
    engine: str, dev: DevAuthorizationServer, evil: Hostile, admin: Hostile
) -> None:
    """The issuer's origin is the operator's word; a jwks_uri it names elsewhere is not."""
    evil.document(
        "/.well-known/oauth-authorization-server",
        {"issuer": evil.url, "jwks_uri": admin.url.replace("http://", "https://") + "/admin"},
    )
    auth = AuthConfig(issuer=evil.url, resource=RESOURCE, jwks_public_only=True)
    async with protected(whoami(), engine, dev, auth=auth) as (url, _):
        status = await call(url, dev.mint("alice", scope="mcp", audience=RESOURCE))
    assert status == 401
    assert evil.hits == ["/.well-known/oauth-authorization-server"]
    assert admin.hits == []
