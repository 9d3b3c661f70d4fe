"""`ResourceGuard`: what a protected endpoint does before any MCP processing (authenticate the
request: 401) and after framing (the scopes a message needs: 403), with the challenges and the
JSON-RPC bodies of both. Built from `AuthConfig` by `guard_for`."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ... import jsonrpc
from ...errors import BusUnavailable
from ...protocol.auth import (
    INSUFFICIENT_SCOPE,
    INVALID_TOKEN,
    WELL_KNOWN,
    Refusal,
    challenges,
    credentials,
    lacking,
    metadata_path,
    metadata_url,
    missing_scopes,
    resource_metadata,
)
from ..access import AccessToken
from ..config import AuthConfig
from ..seams import Responder, error_reply
from .bound import TokenBound
from .dpop import Claims, DpopError, DpopVerifier
from .introspection import IntrospectionVerifier
from .jwt import JwtVerifier
from .verifier import InvalidToken, RequestInfo, TokenVerifier, VerifierUnavailable

log = logging.getLogger("mcpfast.auth")

SECRET_VARIABLE = "MCPFAST_AUTH_INTROSPECTION_CLIENT_SECRET"


def verifier_for(config: AuthConfig, audiences: list[str]) -> TokenVerifier:
    """The verifier an `AuthConfig` describes: introspection when it has a URL, else JWTs."""
    if config.introspection_url is not None:
        secret = config.introspection_client_secret or os.environ.get(SECRET_VARIABLE)
        if not config.introspection_client_id or not secret:
            raise ValueError(
                f"introspection needs a client id and secret (the secret may be ${SECRET_VARIABLE})"
            )
        return IntrospectionVerifier(
            config.introspection_url,
            config.introspection_client_id,
            secret,
            audience=audiences,
            issuer=config.issuer,
            leeway=config.leeway_seconds,
            cache_size=config.token_cache_size,
            cache_seconds=config.token_cache_seconds,
        )
    if config.issuer is None:
        raise ValueError("JWT verification needs the issuer (AuthConfig.issuer)")
    return JwtVerifier(
        config.issuer,
        audiences,
        config.jwks_url,
        algorithms=tuple(config.algorithms),
        leeway=config.leeway_seconds,
        refetch_interval=config.jwks_refetch_seconds,
        cache_size=config.token_cache_size,
        cache_seconds=config.token_cache_seconds,
        require_typ=config.require_jwt_typ,
        public_only=config.jwks_public_only,
    )


class ResourceGuard:
    """Authentication and scope checks of one endpoint (per worker: its caches are its own;
    DPoP proofs are recorded in ``claims``, the server's bus, shared by the workers)."""

    def __init__(
        self,
        config: AuthConfig,
        path: str,
        verifier: TokenVerifier,
        *,
        scopes: Iterable[str] = (),
        declared_scopes: Iterable[str] = (),
        nonce_secret: bytes | None = None,
        claims: Claims | None = None,
    ) -> None:
        self.config = config
        self.path = path
        self.verifier = verifier
        peek = getattr(verifier, "peek", None)
        self._peek: Callable[[str], AccessToken | None] | None = peek if callable(peek) else None
        """A verifier's synchronous cache look-up (`JwtVerifier.peek`), when it has one."""
        self.scopes = frozenset([*config.scopes, *scopes])
        """What every request needs."""
        self.implies = config.scope_implies
        self.leeway = config.leeway_seconds
        """Seconds past ``exp`` a token is still accepted (the verifiers' leeway): a stream
        ends then, not before, or a client reconnecting with the same token would loop."""
        self.dpop = (
            DpopVerifier(
                algorithms=config.dpop_algorithms,
                window=config.dpop_window_seconds,
                nonce_secret=nonce_secret if config.dpop_nonce else None,
                claims=claims,
            )
            if config.dpop != "off"
            else None
        )
        self.dpop_algs = tuple(config.dpop_algorithms) if self.dpop is not None else ()
        self.dpop_only = config.dpop == "required"
        supported = config.scopes_supported
        self.scopes_supported = (
            sorted(supported) if supported is not None else sorted({*self.scopes, *declared_scopes})
        )
        resource_path = "/" + path.strip("/") if path.strip("/") else ""
        if config.resource is not None:
            from urllib.parse import urlsplit

            resource_path = urlsplit(config.resource).path.rstrip("/")
        self.metadata_paths = frozenset({metadata_path(resource_path), WELL_KNOWN})

    # ---------------------------------------------------------------------------- addressing

    def resource(self, headers: Mapping[str, str]) -> str:
        """This server's resource URL: configured, or ``http://<Host><path>``."""
        if self.config.resource is not None:
            return self.config.resource
        return f"http://{headers.get('host') or 'localhost'}{self.path}"

    def _urls(self, headers: Mapping[str, str]) -> list[str]:
        """The URLs a DPoP proof's ``htu`` may name: the resource, and the request's own."""
        host = headers.get("host") or "localhost"
        urls = [f"http://{host}{self.path}", f"https://{host}{self.path}"]
        if self.config.resource is not None:
            urls.insert(0, self.config.resource)
        return urls

    # ------------------------------------------------------------------------------ refusals

    async def refuse(
        self,
        refusal: Refusal,
        headers: Mapping[str, str],
        responder: Responder,
        id_: int | str | None = None,
        nonce: str | None = None,
    ) -> None:
        """Answer 401/403 with the challenges and a JSON-RPC error (``-32600``, the
        description, and in ``data`` the OAuth error code and the scopes needed)."""
        where = metadata_url(self.resource(headers))
        out = [
            (b"www-authenticate", value.encode("latin-1"))
            for value in challenges(
                refusal, where, dpop_algs=self.dpop_algs, dpop_only=self.dpop_only
            )
        ]
        out.append((b"cache-control", b"no-store"))
        if nonce is not None:
            out.append((b"dpop-nonce", nonce.encode()))
        data: dict[str, Any] = {"error": refusal.error or "unauthorized", "resourceMetadata": where}
        if refusal.scopes:
            data["requiredScopes"] = sorted(refusal.scopes)
        title = "Unauthorized" if refusal.status == 401 else "Forbidden"
        message = f"{title}: {refusal.description}"
        await responder.reply(
            refusal.status, jsonrpc.error(id_, jsonrpc.INVALID_REQUEST, message, data), out
        )

    async def unavailable(self, retry_after: int, responder: Responder) -> None:
        """Answer 503 with ``Retry-After`` and a JSON-RPC error (``-32603``): the token could
        not be checked (the authorization server is unreachable), so the client keeps it."""
        out = [
            (b"retry-after", str(max(1, int(retry_after))).encode()),
            (b"cache-control", b"no-store"),
        ]
        body = jsonrpc.error(None, jsonrpc.INTERNAL_ERROR, "authorization server unavailable")
        await responder.reply(503, body, out)

    # ---------------------------------------------------------------------------- the checks

    def warm(
        self, headers: Mapping[str, str], responder: Responder
    ) -> tuple[AccessToken, TokenBound] | None:
        """`authenticate`'s common case, without an await: a plain ``Bearer`` token its
        verifier has cached (`JwtVerifier.peek`: one dictionary look-up, the entry's deadline,
        at most the token's ``exp``, read against the clock) that has the scopes every request
        needs. None: not that case (`authenticate` decides, answering if it refuses)."""
        header = headers.get("authorization")
        peek = self._peek
        if peek is None or header is None or not header.startswith("Bearer "):
            return None
        access = peek(header[7:])
        if access is None or access.jkt is not None or self.dpop_only:
            return None
        if not self.scopes <= access.scopes:
            return None
        exp = access.expires_at
        return access, TokenBound(responder, None if exp is None else exp + self.leeway, None)

    async def authenticate(
        self, method: str, headers: Mapping[str, str], responder: Responder
    ) -> tuple[AccessToken, TokenBound] | None:
        """The request's verified token, and the responder to answer it through (`TokenBound`:
        a stream ends with the token, a changed DPoP nonce goes out); None after answering 401
        (or 403: a valid token without the scopes every request needs; or 503: it cannot be
        checked now)."""
        return self.warm(headers, responder) or await self._authenticate(
            method, headers.get("authorization"), headers, responder
        )

    def _ends(self, access: AccessToken) -> float | None:
        """When ``access`` stops being accepted (epoch seconds), or None."""
        return None if access.expires_at is None else access.expires_at + self.leeway

    async def _authenticate(
        self, method: str, header: str | None, headers: Mapping[str, str], responder: Responder
    ) -> tuple[AccessToken, TokenBound] | None:
        """`authenticate`, every case."""
        try:
            given = credentials(header)
        except ValueError as exc:  # a Bearer/DPoP header that holds no usable token
            await self.refuse(
                Refusal(401, INVALID_TOKEN, str(exc), self.scopes), headers, responder
            )
            return None
        if given is None:
            await self.refuse(
                Refusal(401, None, "an access token is required", self.scopes), headers, responder
            )
            return None
        access = self._peek(given.token) if self._peek is not None else None
        if access is None:
            info = RequestInfo(method=method, url=self.resource(headers), scheme=given.scheme)
            try:
                access = await self.verifier.verify(given.token, info)
            except VerifierUnavailable as exc:
                log.warning("cannot check an access token: %s", exc.description)
                await self.unavailable(exc.retry_after, responder)
                return None
            except InvalidToken as exc:
                log.info("refused an access token: %s", exc.description)
                await self.refuse(
                    Refusal(401, INVALID_TOKEN, exc.description, self.scopes), headers, responder
                )
                return None
        if access.jkt is None and given.scheme == "Bearer" and not self.dpop_only:
            problem = None  # a plain bearer token where one is welcome
        else:
            problem = self._binding_problem(given.scheme, access)
        if problem is not None:
            await self.refuse(Refusal(401, INVALID_TOKEN, problem, self.scopes), headers, responder)
            return None
        nonce = None
        if self.dpop is not None and access.jkt is not None:
            try:
                proof = await self.dpop.check(
                    headers.get("dpop"),
                    method=method,
                    urls=self._urls(headers),
                    token=given.token,
                    jkt=access.jkt,
                )
            except BusUnavailable as exc:  # a replay could not be ruled out: fail closed
                log.warning("cannot record a DPoP proof: %s", exc.message)
                await responder.reply(*error_reply(None, exc), BusUnavailable.headers)
                return None
            except DpopError as exc:
                log.info("refused a DPoP proof: %s", exc.description)
                await self.refuse(
                    Refusal(401, exc.error, exc.description, self.scopes),
                    headers,
                    responder,
                    nonce=exc.nonce,
                )
                return None
            current = self.dpop.nonce
            if current is not None and current != proof.nonce:
                nonce = (b"dpop-nonce", current.encode())  # rotated since: the newest one
        missing = missing_scopes(access.scopes, self.scopes, self.implies)
        if missing:
            await self.refuse(
                Refusal(403, INSUFFICIENT_SCOPE, lacking(missing), self.scopes),
                headers,
                responder,
            )
            return None
        return access, TokenBound(responder, self._ends(access), nonce)

    def _binding_problem(self, scheme: str, access: AccessToken) -> str | None:
        """Why the token's DPoP binding does not fit how it was presented, or None."""
        if self.dpop is None:
            return "DPoP is not supported here" if access.jkt or scheme == "DPoP" else None
        if access.jkt is None:
            if scheme == "DPoP":
                return "the token is not DPoP-bound"
            if self.dpop_only:
                return "this server takes DPoP-bound tokens only"
            return None
        if scheme != "DPoP":
            return "a DPoP-bound token must use the DPoP scheme"
        return None

    async def authorize(
        self,
        access: AccessToken,
        required: Iterable[str],
        headers: Mapping[str, str],
        responder: Responder,
        id_: int | str | None,
    ) -> bool:
        """Whether ``access`` has ``required`` (what the message's method, tool, resource or
        prompt declares); else answer 403 ``insufficient_scope`` naming every scope the
        operation needs (the spec: all of them in one challenge) and return False."""
        needed = frozenset([*self.scopes, *required])
        missing = missing_scopes(access.scopes, needed, self.implies)
        if not missing:
            return True
        await self.refuse(
            Refusal(403, INSUFFICIENT_SCOPE, lacking(missing), needed),
            headers,
            responder,
            id_,
        )
        return False

    # ------------------------------------------------------------------------------ metadata

    def metadata(self, headers: Mapping[str, str]) -> dict[str, Any]:
        """The protected resource metadata document (RFC 9728)."""
        config = self.config
        servers = config.authorization_servers or ([config.issuer] if config.issuer else [])
        return resource_metadata(
            self.resource(headers),
            servers,
            scopes_supported=self.scopes_supported,
            dpop_algs=self.dpop_algs,
            dpop_bound_required=self.dpop_only,
            resource_name=config.resource_name,
        )
