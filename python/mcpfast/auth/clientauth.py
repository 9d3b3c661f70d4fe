"""Clients of the development authorization server: pre-registration
(`ClientRegistry.register_client`), RFC 7591 dynamic registration (``/register``), Client ID
Metadata Documents (fetched and cached), trusted issuers of RFC 7523 assertions, and client
authentication at the token, introspection and revocation endpoints (client_secret_basic,
client_secret_post, none, private_key_jwt), and the rules of every RFC 7523 assertion
(`AssertionJtis`). The pure rules are `clients`'.

A client's documents (its ``jwks_uri``, its metadata document) are fetched on the client's
word: only from public addresses unless ``allow_local_fetches`` (`mcpfast._remote.check_url`),
so that a registration cannot make the server reach the developer's machine or network."""

from __future__ import annotations

import base64
import secrets
import time
from collections.abc import Callable, Sequence
from typing import Any, Final
from urllib.parse import unquote_plus, urlsplit

import orjson
import trio
from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from .._remote import DEFAULT_POLICY, FetchError, UrlPolicy, check_url
from ._asgi import Request, Response
from .assertions import ASSERTION_LEEWAY, MAX_ASSERTION_SECONDS
from .clients import (
    AUTHORIZATION_CODE,
    CLIENT_CREDENTIALS,
    MAX_PARAM,
    REFRESH_TOKEN,
    OAuthError,
    Params,
    RegisteredClient,
    client_from_metadata,
    fetch_json,
    is_loopback_http,
    new_client_id,
    public_jwks,
)
from .issuer import CachedClient, Issuer

CLIENT_ASSERTION_TYPE: Final = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
_MAX_CLIENTS = 10_000
_CHECK_SECONDS = 5.0


class ClientRegistry(Issuer):
    """Knowing and authenticating clients (on top of `Issuer`)."""

    def trust_issuer(self, issuer: str, jwks: dict[str, Any]) -> None:
        """Accept RFC 7523 JWT bearer grant assertions whose ``iss`` is ``issuer``, signed by a
        key of ``jwks`` (an identity provider's or a workload identity's)."""
        self._trusted[issuer] = public_jwks(jwks)

    def register_client(
        self,
        client_id: str | None = None,
        *,
        secret: str | None = None,
        redirect_uris: Sequence[str] = ("http://127.0.0.1/callback",),
        grant_types: Sequence[str] = (AUTHORIZATION_CODE, REFRESH_TOKEN, CLIENT_CREDENTIALS),
        token_endpoint_auth_method: str | None = None,
        jwks: dict[str, Any] | None = None,
        scope: str | None = None,
    ) -> RegisteredClient:
        """Register a client directly (what pre-registration is). Without ``secret`` and
        ``jwks`` it is a public client (auth method ``none``); with ``secret``,
        ``client_secret_basic`` (``client_secret_post`` works too); with ``jwks``,
        ``private_key_jwt``. A loopback redirect URI matches any port."""
        if token_endpoint_auth_method is None:
            token_endpoint_auth_method = (
                "private_key_jwt" if jwks else "client_secret_basic" if secret else "none"
            )
        client = RegisteredClient(
            client_id=client_id or new_client_id(),
            client_secret=secret,
            redirect_uris=list(redirect_uris),
            grant_types=list(grant_types),
            token_endpoint_auth_method=token_endpoint_auth_method,
            scope=scope,
            jwks=public_jwks(jwks) if jwks is not None else None,
        )
        client.metadata = {
            "client_id": client.client_id,
            "redirect_uris": client.redirect_uris,
            "grant_types": client.grant_types,
            "token_endpoint_auth_method": token_endpoint_auth_method,
        }
        self._clients[client.client_id] = client
        return client

    def clients(self) -> list[RegisteredClient]:
        """The registered clients (not those known from metadata documents)."""
        return list(self._clients.values())

    def _cimd_url(self, client_id: str) -> bool:
        """Whether ``client_id`` is a Client ID Metadata Document URL (https with a path, or
        http on loopback when ``allow_local_fetches``)."""
        try:
            parts = urlsplit(client_id)
        except ValueError:
            return False
        if parts.scheme == "https" or (self.allow_local_fetches and is_loopback_http(client_id)):
            return bool(parts.netloc) and parts.path not in ("", "/")
        return False

    async def _client(self, client_id: str) -> RegisteredClient | None:
        """The client ``client_id`` names: registered, or fetched from its metadata document.

        Raises:
            OAuthError: (``invalid_client``) a metadata document that cannot be fetched or is
                not valid.
        """
        if client_id in self._clients:
            return self._clients[client_id]
        if not self._cimd_url(client_id):
            return None
        cached = self._cimd.get(client_id)
        if cached is not None and cached.until > time.monotonic():
            return cached.client
        doc, max_age = await self._fetch_document(client_id, "client metadata document")
        if not isinstance(doc, dict) or doc.get("client_id") != client_id:
            raise OAuthError(
                "invalid_client", "the client metadata document's client_id is not its URL"
            )
        if not isinstance(doc.get("client_name"), str) or not doc.get("redirect_uris"):
            raise OAuthError(
                "invalid_client", "the client metadata document needs client_name and redirect_uris"
            )
        if "client_secret" in doc:
            raise OAuthError("invalid_client", "a client metadata document has no client_secret")
        try:
            client = client_from_metadata(doc, cimd_url=client_id, scopes=self._scopes)
        except OAuthError as exc:
            raise OAuthError("invalid_client", exc.description) from None
        if max_age > 0:
            if len(self._cimd) >= 1000:
                self._cimd.clear()
            self._cimd[client_id] = CachedClient(client, time.monotonic() + max_age)
        return client

    async def _authenticate(
        self, request: Request, form: Params, *, allow_public: bool
    ) -> RegisteredClient:
        """The client a token, introspection or revocation request comes from.

        Raises:
            OAuthError: ``invalid_client`` (401), or ``invalid_request`` for several methods.
        """
        authorization = request.header("authorization") or ""
        basic = authorization[:6].lower() == "basic "
        secret = form.one("client_secret")
        assertion = form.one("client_assertion")
        assertion_type = form.one("client_assertion_type")
        claimed = form.one("client_id")
        if sum((basic, secret is not None, assertion is not None)) > 1:
            raise OAuthError("invalid_request", "use one client authentication method")
        challenge = [("www-authenticate", 'Basic realm="mcpfast-dev"')] if basic else []

        def refuse(description: str) -> OAuthError:
            return OAuthError("invalid_client", description, 401, challenge)

        if basic:
            try:
                decoded = base64.b64decode(authorization[6:].strip(), validate=True).decode()
                raw_id, raw_secret = decoded.split(":", 1)
            except (ValueError, UnicodeError):
                raise refuse("malformed Basic credentials") from None
            # RFC 6749 §2.3.1 form-encodes both halves; many clients do not: accept either.
            client_id = raw_id if raw_id in self._clients else unquote_plus(raw_id)
            offered = {raw_secret, unquote_plus(raw_secret)}
            if claimed is not None and claimed != client_id:
                raise refuse("client_id does not match the Basic credentials")
        elif assertion is not None:
            if assertion_type != CLIENT_ASSERTION_TYPE:
                raise refuse("unsupported client_assertion_type")
            return await self._assertion_client(assertion, claimed)
        else:
            if claimed is None:
                raise refuse("no client authentication")
            client_id = claimed
            offered = {secret} if secret is not None else set()
        client = await self._client_or_refuse(client_id, refuse)
        if not offered:
            if not allow_public or client.token_endpoint_auth_method != "none":
                raise refuse("this client must authenticate")
            return client
        expected = client.client_secret
        if expected is None or not any(
            secrets.compare_digest(expected.encode(), given.encode()) for given in offered
        ):
            raise refuse("wrong client credentials")
        return client

    async def _client_or_refuse(
        self, client_id: str, refuse: Callable[[str], OAuthError]
    ) -> RegisteredClient:
        try:
            client = await self._client(client_id)
        except OAuthError as exc:
            raise refuse(exc.description) from None
        if client is None:
            raise refuse("unknown client")
        return client

    async def _assertion_client(self, assertion: str, claimed: str | None) -> RegisteredClient:
        """private_key_jwt (RFC 7523 §3): iss = sub = the client, aud = this issuer or its
        token endpoint, unexpired, jti once, signed by a key of the client's JWKS."""

        def refuse(description: str) -> OAuthError:
            return OAuthError("invalid_client", description, 401)

        unverified = self._unverified_claims(assertion)
        if unverified is None:
            raise refuse("malformed client_assertion")
        client_id = unverified.get("sub")
        if not isinstance(client_id, str) or (claimed is not None and claimed != client_id):
            raise refuse("the client_assertion's sub is not the client")
        client = await self._client_or_refuse(client_id, refuse)
        keys = client.jwks
        if keys is None and client.jwks_uri is not None:
            try:
                doc, _ = await self._fetch_document(client.jwks_uri, "client JWKS")
                keys = public_jwks(doc)
            except (OAuthError, ValueError, JoseError, TypeError, KeyError):
                raise refuse("cannot load the client's JWKS") from None
        if keys is None:
            raise refuse("this client has no keys for private_key_jwt")
        claims = self._verify_assertion(assertion, keys, refuse, client_id)
        if claims.get("iss") != client_id:
            raise refuse("the client_assertion's iss is not the client")
        return client

    async def _check_fetchable(self, url: str, what: str) -> None:
        """That the server may fetch a client's document at ``url``: https (http on loopback),
        and with ``allow_local_fetches`` off only from public addresses.

        Raises:
            OAuthError: (``invalid_client``) refused, or not resolved in 5 seconds.
        """
        with trio.move_on_after(_CHECK_SECONDS):
            try:
                await check_url(url, self._fetch_policy, what)
            except FetchError as exc:
                raise OAuthError("invalid_client", str(exc)) from None
            return
        raise OAuthError("invalid_client", f"the {what} host does not resolve in time")

    @property
    def _fetch_policy(self) -> UrlPolicy:
        """Where a client's documents may be: anywhere https (http on loopback) with
        ``allow_local_fetches``, else public addresses only."""
        return DEFAULT_POLICY if self.allow_local_fetches else UrlPolicy(public_only=True)

    async def _fetch_document(self, url: str, what: str) -> tuple[Any, float]:
        """`fetch_json` of a client's document under `_fetch_policy` (checked by the fetch
        itself, within its deadline)."""
        return await fetch_json(url, what, self._fetch_policy)

    @staticmethod
    def _unverified_claims(assertion: str) -> dict[str, Any] | None:
        if len(assertion) > MAX_PARAM:
            return None
        try:
            payload = orjson.loads(jws.extract_compact(assertion.encode("ascii")).payload)
        except (JoseError, ValueError, UnicodeError, TypeError):
            return None
        return payload if isinstance(payload, dict) else None

    def _verify_assertion(
        self, assertion: str, keys: KeySet, refuse: Callable[[str], OAuthError], client: str
    ) -> dict[str, Any]:
        """The claims of an RFC 7523 assertion signed by ``keys``, for this server, in date
        (``exp`` at most `MAX_ASSERTION_SECONDS` ahead), with a ``jti`` not seen before (kept
        in `AssertionJtis`, on the quota of ``client``, the client presenting it)."""
        try:
            claims = dict(
                jwt.decode(assertion, keys, algorithms=["ES256", "RS256", "PS256"]).claims
            )
        except (JoseError, ValueError, TypeError, KeyError):
            raise refuse("the assertion's signature does not verify") from None
        audience = claims.get("aud")
        audiences = [audience] if isinstance(audience, str) else audience
        if not isinstance(audiences, list) or not (
            {self.issuer, self.token_endpoint} & {a for a in audiences if isinstance(a, str)}
        ):
            raise refuse("the assertion's aud is not this server")
        now = self.clock()
        exp = claims.get("exp")
        if isinstance(exp, bool) or not isinstance(exp, int | float):
            raise refuse("the assertion has no exp")
        if exp + ASSERTION_LEEWAY < now:
            raise refuse("the assertion has expired")
        if exp > now + MAX_ASSERTION_SECONDS + ASSERTION_LEEWAY:
            raise refuse(f"the assertion's exp is over {MAX_ASSERTION_SECONDS} s ahead")
        jti = claims.get("jti")
        if not isinstance(jti, str) or not 0 < len(jti) <= 256:
            raise refuse("the assertion has no jti")
        until = float(exp) + ASSERTION_LEEWAY
        problem = self._assertion_jtis.remember(str(claims.get("iss")), jti, until, client)
        if problem is not None:
            raise refuse(problem)
        return claims

    async def _register(self, request: Request) -> Response:
        content_type = (request.header("content-type") or "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise OAuthError("invalid_client_metadata", "expected application/json")
        try:
            doc = orjson.loads(request.body)
        except orjson.JSONDecodeError:
            raise OAuthError("invalid_client_metadata", "the body is not valid JSON") from None
        client = client_from_metadata(doc, cimd_url=None, scopes=self._scopes)
        if client.jwks_uri is not None:
            try:
                await self._check_fetchable(client.jwks_uri, "jwks_uri")
            except OAuthError as exc:
                raise OAuthError("invalid_client_metadata", exc.description) from None
        if len(self._clients) >= _MAX_CLIENTS:
            raise OAuthError("invalid_client_metadata", "too many registered clients", 400)
        self._clients[client.client_id] = client
        answer = dict(client.metadata)
        answer["client_id_issued_at"] = int(self.clock())
        if client.client_secret is not None:
            answer["client_secret"] = client.client_secret
            answer["client_secret_expires_at"] = 0
        return Response.json(201, answer)
