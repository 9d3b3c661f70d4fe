"""A stand-in authorization server for the resource-server tests: a real HTTP server on
loopback (Hypercorn on Trio) that serves its metadata, a JWKS and an RFC 7662 introspection
endpoint, and mints tokens with joserfc. Also DPoP proofs, and the two engines as a fixture."""

from __future__ import annotations

import base64
import json
import socket
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from joserfc import jws, jwt
from joserfc.jwk import ECKey, Key, KeySet, RSAKey

from mcpfast.auth._asgi import lifespan
from mcpfast.server.auth.dpop import ath

from ..helpers import read_body, serving

RESOURCE = "http://mcp.test/mcp"
"""The resource the tests' tokens are for (the servers under test are configured with it)."""
INTROSPECTION_CLIENT = ("mcp-server", "s3cret")


class AuthServer:
    """Keys, tokens and the HTTP endpoints of a test authorization server."""

    def __init__(self) -> None:
        self.url = ""
        self.keys: dict[str, RSAKey] = {"k1": RSAKey.generate_key(2048, parameters={"kid": "k1"})}
        self.published = ["k1"]
        self.jwks_override: bytes | None = None
        self.jwks_fetches = 0
        self.introspections: list[str] = []
        self.active: dict[str, dict[str, Any]] = {}
        """Introspection answers by token (absent: inactive)."""
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        """Every request this server saw: method, path, headers."""

    @property
    def issuer(self) -> str:
        return self.url

    @property
    def jwks_url(self) -> str:
        return self.url + "/jwks"

    def rotate(self, kid: str) -> None:
        """A new signing key, published beside the old ones."""
        self.keys[kid] = RSAKey.generate_key(2048, parameters={"kid": kid})
        self.published.append(kid)

    def claims(self, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "sub": "user-1",
            "aud": RESOURCE,
            "client_id": "client-1",
            "scope": "mcp",
            "iat": now,
            "exp": now + 300,
            "jti": uuid.uuid4().hex,
        }
        claims.update(overrides)
        return {k: v for k, v in claims.items() if v is not None}

    def token(
        self,
        *,
        kid: str = "k1",
        alg: str = "RS256",
        key: Key | None = None,
        header: dict[str, Any] | None = None,
        **claims: Any,
    ) -> str:
        """A signed access token (claims default to valid ones for `RESOURCE`)."""
        head = {"alg": alg, "kid": kid, "typ": "at+jwt", **(header or {})}
        signer = key if key is not None else self.keys[kid]
        return jwt.encode(head, self.claims(**claims), signer, algorithms=[alg])

    def jwks(self) -> bytes:
        if self.jwks_override is not None:
            return self.jwks_override
        public = KeySet([self.keys[kid] for kid in self.published]).as_dict(private=False)
        return json.dumps(public).encode()

    async def app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        body = await read_body(receive)
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        self.requests.append((scope["method"], scope["path"], headers))
        status, payload = self.route(scope["path"], headers, body)
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": payload})

    def route(self, path: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        if path == "/.well-known/oauth-authorization-server":
            document = {
                "issuer": self.issuer,
                "jwks_uri": self.jwks_url,
                "introspection_endpoint": self.url + "/introspect",
                "code_challenge_methods_supported": ["S256"],
            }
            return 200, json.dumps(document).encode()
        if path == "/jwks":
            self.jwks_fetches += 1
            return 200, self.jwks()
        if path == "/introspect":
            expected = base64.b64encode(":".join(INTROSPECTION_CLIENT).encode()).decode()
            if headers.get("authorization") != f"Basic {expected}":
                return 401, b'{"error": "invalid_client"}'
            form = dict(pair.split("=", 1) for pair in body.decode().split("&"))
            token = form.get("token", "")
            self.introspections.append(token)
            answer = self.active.get(token)
            return 200, json.dumps(answer if answer is not None else {"active": False}).encode()
        return 404, b"{}"


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port nothing listens on, for one test: bound and held (never listening, so
    connections are refused, and no other test or worker can take the port meanwhile), closed
    after the test."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        yield port


@pytest.fixture
async def auth_server() -> AsyncIterator[AuthServer]:
    """The test authorization server, listening on loopback."""
    server = AuthServer()
    async with serving(server.app) as server.url:
        yield server


@pytest.fixture(params=["hypercorn", "native"])
def engine(request: pytest.FixtureRequest) -> str:
    """Each HTTP engine in turn."""
    value: str = request.param
    return value


def dpop_key() -> ECKey:
    return ECKey.generate_key("P-256")


def dpop_proof(key: ECKey, method: str, url: str, token: str, **overrides: Any) -> str:
    """A DPoP proof for a request of ``method`` to ``url`` carrying ``token``."""
    claims: dict[str, Any] = {
        "jti": uuid.uuid4().hex,
        "htm": method,
        "htu": url,
        "iat": int(time.time()),
        "ath": ath(token),
    }
    claims.update(overrides)
    claims = {k: v for k, v in claims.items() if v is not None}
    header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": key.as_dict(private=False)}
    return jws.serialize_compact(header, json.dumps(claims).encode(), key, algorithms=["ES256"])
