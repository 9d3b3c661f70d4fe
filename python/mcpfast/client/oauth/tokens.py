"""Tokens, where they are kept, and the token endpoint.

`Token` is what a token endpoint answered (with the absolute expiry). A `TokenStore` keeps
tokens (keyed by resource and issuer) and client credentials (keyed by issuer: credentials
from one authorization server are never shown to another). `MemoryTokenStore` keeps them for
the process, `FileTokenStore` in a JSON file readable by its owner only (0600).

A client's secret or private key is bound to the one authorization server it was issued by
(`ClientCredentials.issuer`, required with either) and is sent to no other (`require_bound`).

`token_request` posts a grant to the token endpoint with the client authentication the
client is registered for (``client_secret_basic``, ``client_secret_post``, ``none`` or
``private_key_jwt``) and, with a DPoP key, a proof (retried once with the server's nonce on
``use_dpop_nonce``).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

import httpx2
import trio
from joserfc import jwt

from ..._remote import DEFAULT_POLICY, FetchError, UrlPolicy, fetch
from .discovery import UntrustedIssuer
from .dpop import DPoPKey
from .keys import import_private_key

__all__ = [
    "ClientCredentials",
    "FileTokenStore",
    "MemoryTokenStore",
    "Token",
    "TokenError",
    "TokenStore",
    "choose_auth_method",
    "client_assertion",
    "require_bound",
    "token_request",
]

JWT_BEARER_ASSERTION = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
MAX_TOKEN_RESPONSE = 256 * 1024
TOKEN_SECONDS = 30.0
"""The longest a token request may take, all told."""


class TokenError(Exception):
    """The token endpoint refused (``error`` is the RFC 6749 section 5.2 code), or its answer
    was refused (``status`` 0, ``error`` ``invalid_response``: see `token_request`)."""

    def __init__(self, status: int, error: str, description: str | None = None) -> None:
        super().__init__(
            "token endpoint: "
            + (f"HTTP {status} " if status else "")
            + error
            + (f": {description}" if description else "")
        )
        self.status = status
        self.error = error
        self.description = description


@dataclass
class ClientCredentials:
    """A client as an authorization server knows it.

    ``client_secret`` for ``client_secret_basic`` / ``client_secret_post``; ``private_key``
    (PEM or JWK) for ``private_key_jwt``; ``token_endpoint_auth_method`` None picks one from
    what the server offers; ``issuer`` the authorization server these are for, exactly as its
    metadata's ``issuer`` (None, for a public client only: any).

    Raises:
        ValueError: a secret or a private key without ``issuer``.
    """

    client_id: str
    client_secret: str | None = None
    private_key: Any = None
    signing_algorithm: str = "ES256"
    token_endpoint_auth_method: str | None = None
    issuer: str | None = None
    expires_at: float | None = None
    """``client_secret_expires_at`` of a registration (None or 0: never)."""

    def __post_init__(self) -> None:
        if self.confidential and not self.issuer:
            raise ValueError(
                f"the client {self.client_id!r} has a secret or a private key: name the "
                "authorization server it is for (ClientCredentials(..., issuer=...))"
            )

    @property
    def confidential(self) -> bool:
        """Whether the client has a secret or a private key (it authenticates)."""
        return bool(self.client_secret) or self.private_key is not None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if data["private_key"] is not None and not isinstance(data["private_key"], str | dict):
            data["private_key"] = None  # a key object is not stored
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClientCredentials:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)

    @property
    def expired(self) -> bool:
        return bool(self.expires_at) and time.time() >= float(self.expires_at or 0)


@dataclass
class Token:
    """An access token and what came with it. ``expires_at`` is absolute (epoch seconds)."""

    access_token: str
    token_type: str = "Bearer"
    expires_at: float | None = None
    refresh_token: str | None = None
    scope: str | None = None
    issuer: str | None = None
    resource: str | None = None
    requested_scopes: list[str] = field(default_factory=list)
    """The scopes asked for (what a step-up adds to)."""

    @property
    def is_dpop(self) -> bool:
        return self.token_type.lower() == "dpop"

    def expired(self, leeway: float = 30.0) -> bool:
        return self.expires_at is not None and time.time() + leeway >= self.expires_at

    @classmethod
    def from_response(
        cls, body: dict[str, Any], *, issuer: str | None, resource: str | None, requested: list[str]
    ) -> Token:
        access = body.get("access_token")
        if not isinstance(access, str) or not access:
            raise TokenError(200, "invalid_response", "no access_token in the token response")
        expires_in = body.get("expires_in")
        expires_at = (
            time.time() + float(expires_in) if isinstance(expires_in, int | float) else None
        )
        refresh = body.get("refresh_token")
        scope = body.get("scope")
        return cls(
            access_token=access,
            token_type=str(body.get("token_type") or "Bearer"),
            expires_at=expires_at,
            refresh_token=refresh if isinstance(refresh, str) else None,
            scope=scope if isinstance(scope, str) else None,
            issuer=issuer,
            resource=resource,
            requested_scopes=list(requested),
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Token:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


# ------------------------------------------------------------------------------ stores


class TokenStore(Protocol):
    """Where `OAuth` keeps tokens and client registrations. Implement these four for a store
    of your own (a keyring, a database); every method may be called from any Trio task."""

    async def get_token(self, key: str) -> Token | None: ...

    async def set_token(self, key: str, token: Token | None) -> None: ...

    async def get_client(self, issuer: str) -> ClientCredentials | None: ...

    async def set_client(self, issuer: str, client: ClientCredentials | None) -> None: ...


class MemoryTokenStore:
    """Tokens and clients in this process's memory."""

    def __init__(self) -> None:
        self.tokens: dict[str, Token] = {}
        self.clients: dict[str, ClientCredentials] = {}

    async def get_token(self, key: str) -> Token | None:
        return self.tokens.get(key)

    async def set_token(self, key: str, token: Token | None) -> None:
        if token is None:
            self.tokens.pop(key, None)
        else:
            self.tokens[key] = token

    async def get_client(self, issuer: str) -> ClientCredentials | None:
        return self.clients.get(issuer)

    async def set_client(self, issuer: str, client: ClientCredentials | None) -> None:
        if client is None:
            self.clients.pop(issuer, None)
        else:
            self.clients[issuer] = client


class FileTokenStore:
    """Tokens and clients in one JSON file (``{"tokens": {...}, "clients": {...}}``), created
    with mode 0600 and rewritten atomically (a temporary file in the same directory, 0600,
    then renamed over it). Refresh tokens and client secrets are in it in clear: keep it in a
    directory only you can read. A leading ``~`` in ``path`` is the user's home."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        self._lock = trio.Lock()

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return {"tokens": {}, "clients": {}}
        if not isinstance(data, dict):
            return {"tokens": {}, "clients": {}}
        data.setdefault("tokens", {})
        data.setdefault("clients", {})
        return data

    def _write(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".mcpfast-tokens-")
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle)
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        os.chmod(self.path, 0o600)

    async def get_token(self, key: str) -> Token | None:
        raw = self._read()["tokens"].get(key)
        return Token.from_json(raw) if isinstance(raw, dict) else None

    async def set_token(self, key: str, token: Token | None) -> None:
        async with self._lock:
            data = self._read()
            if token is None:
                data["tokens"].pop(key, None)
            else:
                data["tokens"][key] = token.to_json()
            self._write(data)

    async def get_client(self, issuer: str) -> ClientCredentials | None:
        raw = self._read()["clients"].get(issuer)
        return ClientCredentials.from_json(raw) if isinstance(raw, dict) else None

    async def set_client(self, issuer: str, client: ClientCredentials | None) -> None:
        async with self._lock:
            data = self._read()
            if client is None:
                data["clients"].pop(issuer, None)
            else:
                data["clients"][issuer] = client.to_json()
            self._write(data)


# ------------------------------------------------------------------ client authentication


def require_bound(bound: str | None, issuer: str, what: str) -> None:
    """The one rule for secrets: ``what``, a secret bound to the authorization server
    ``bound``, goes to ``issuer`` only when it is that one (the same string, as RFC 8414
    compares issuers); bound to none, it goes nowhere.

    Raises:
        UntrustedIssuer: ``issuer`` is another authorization server (or ``bound`` is None).
    """
    if bound != issuer:
        raise UntrustedIssuer(
            f"refused: the server's authorization server is {issuer!r}, but {what} is "
            f"for {bound!r} (not sent)"
        )


def choose_auth_method(client: ClientCredentials, supported: list[str] | None) -> str:
    """The token endpoint authentication for ``client`` given the server's
    ``token_endpoint_auth_methods_supported`` (absent: ``client_secret_basic``, RFC 8414)."""
    if client.token_endpoint_auth_method:
        return client.token_endpoint_auth_method
    offered = supported if supported else ["client_secret_basic"]
    if client.private_key is not None and "private_key_jwt" in offered:
        return "private_key_jwt"
    if client.client_secret:
        for method in ("client_secret_basic", "client_secret_post"):
            if method in offered:
                return method
        return "client_secret_basic"
    if client.private_key is not None:
        return "private_key_jwt"
    return "none"


def client_assertion(client: ClientCredentials, audience: str, lifetime: int = 300) -> str:
    """An RFC 7523 client assertion: ``iss`` = ``sub`` = the client id, ``aud`` the
    authorization server's issuer, a fresh ``jti``, five minutes of life."""
    key = import_private_key(client.private_key)
    now = int(time.time())
    claims = {
        "iss": client.client_id,
        "sub": client.client_id,
        "aud": audience,
        "iat": now,
        "exp": now + lifetime,
        "jti": secrets.token_urlsafe(16),
    }
    return jwt.encode({"alg": client.signing_algorithm, "typ": "JWT"}, claims, key)


def apply_client_auth(
    client: ClientCredentials,
    method: str,
    data: dict[str, str],
    headers: dict[str, str],
    *,
    issuer: str,
) -> None:
    """Add ``client``'s authentication by ``method`` to a token request's form and headers."""
    if method == "client_secret_basic":
        # RFC 6749 section 2.3.1: both parts form-urlencoded before base64.
        pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret or '', safe='')}"
        headers["authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
    elif method == "client_secret_post":
        data["client_id"] = client.client_id
        data["client_secret"] = client.client_secret or ""
    elif method == "private_key_jwt":
        data["client_id"] = client.client_id
        data["client_assertion_type"] = JWT_BEARER_ASSERTION
        data["client_assertion"] = client_assertion(client, issuer)
    else:
        data["client_id"] = client.client_id


async def token_request(
    http: httpx2.AsyncClient,
    endpoint: str,
    data: dict[str, str],
    *,
    client: ClientCredentials | None,
    auth_method: str,
    issuer: str,
    dpop: DPoPKey | None = None,
    resource: str | None = None,
    requested: list[str] | None = None,
    policy: UrlPolicy = DEFAULT_POLICY,
) -> Token:
    """POST ``data`` (a grant) to the token endpoint and return the `Token`. The answer is
    read by `mcpfast._remote.fetch` under ``policy`` (at most `MAX_TOKEN_RESPONSE` bytes,
    `TOKEN_SECONDS` in all, no redirects).

    Raises:
        UntrustedIssuer: ``client`` has a secret or key for another issuer (nothing is sent).
        TokenError: an error response (after one nonce retry with DPoP); status 0 when the
            endpoint or its answer was refused by those rules or unreachable.
    """
    if client is not None and client.confidential:
        require_bound(client.issuer, issuer, f"the secret of the client {client.client_id!r}")
    for attempt in range(2):
        form = dict(data)
        headers = {"accept": "application/json"}
        if client is not None:
            apply_client_auth(client, auth_method, form, headers, issuer=issuer)
        if dpop is not None:
            headers["dpop"] = dpop.proof("POST", endpoint)
        try:
            response = await fetch(
                http,
                "POST",
                endpoint,
                what="token response",
                max_bytes=MAX_TOKEN_RESPONSE,
                deadline=TOKEN_SECONDS,
                policy=policy,
                headers=headers,
                data=form,
            )
        except FetchError as exc:
            raise TokenError(0, "invalid_response", str(exc)) from None
        if dpop is not None:
            dpop.remember_nonce(endpoint, response.headers)
        body = response.json()
        if not isinstance(body, dict):
            body = {}
        if response.status == 200:
            return Token.from_response(
                body, issuer=issuer, resource=resource, requested=requested or []
            )
        error = str(body.get("error") or "invalid_response")
        if (
            error == "use_dpop_nonce"
            and dpop is not None
            and attempt == 0
            and response.headers.get("dpop-nonce")
        ):
            continue
        description = body.get("error_description")
        raise TokenError(
            response.status, error, description if isinstance(description, str) else None
        )
    raise AssertionError("unreachable")  # pragma: no cover
