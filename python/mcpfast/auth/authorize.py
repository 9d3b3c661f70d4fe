"""The development authorization server's authorization endpoint (``/authorize``): it
auto-approves a valid request of a known client (nobody logs in) and redirects back with a
single-use code bound to the PKCE S256 challenge, the scopes, the RFC 8707 resources and any
``dpop_jkt``; errors go back to a verified redirect URI (with RFC 9207 ``iss``), and before
that are shown."""

from __future__ import annotations

import re
import secrets

from ._asgi import Request, Response
from .clientauth import ClientRegistry
from .clients import (
    AUTHORIZATION_CODE,
    OAuthError,
    Params,
    RegisteredClient,
    redirect_matches,
    with_params,
)
from .issuer import Grant

_CHALLENGE = re.compile(r"[A-Za-z0-9\-_]{43}")


class AuthorizeEndpoint(ClientRegistry):
    """``/authorize`` (on top of `ClientRegistry`)."""

    async def _authorize(self, request: Request) -> Response:
        """The authorization endpoint: auto-approve a valid request of a known client."""
        if request.method == "POST":
            params = self._form(request)
        else:
            try:
                params = Params.parse(request.query.decode("ascii"))
            except UnicodeDecodeError:
                raise OAuthError("invalid_request", "malformed query") from None
        # Until the client and its redirect URI are known, errors are shown, not redirected.
        client_id = params.need("client_id")
        client = await self._client(client_id)
        if client is None:
            raise OAuthError("invalid_client", "unknown client_id")
        redirect_uri = params.one("redirect_uri")
        given = redirect_uri is not None
        if redirect_uri is None:
            if len(client.redirect_uris) != 1:
                raise OAuthError("invalid_request", "redirect_uri is required")
            redirect_uri = client.redirect_uris[0]
        if not any(redirect_matches(r, redirect_uri) for r in client.redirect_uris):
            raise OAuthError("invalid_request", "redirect_uri is not registered for this client")
        state = params.one("state")
        back: dict[str, str] = {"state": state} if state is not None else {}
        try:
            code = self._authorization_code(params, client, redirect_uri, given)
        except OAuthError as exc:
            back = {"error": exc.error, "error_description": exc.description, **back}
        else:
            back = {"code": code, **back}
        back["iss"] = self.issuer
        return Response(302, b"", [("location", with_params(redirect_uri, back))])

    def _authorization_code(
        self, params: Params, client: RegisteredClient, redirect_uri: str, given: bool
    ) -> str:
        if params.one("response_type") != "code":
            raise OAuthError("unsupported_response_type", "response_type must be code")
        if AUTHORIZATION_CODE not in client.grant_types:
            raise OAuthError("unauthorized_client", "this client may not use authorization codes")
        challenge = params.one("code_challenge")
        if challenge is None:
            raise OAuthError("invalid_request", "PKCE is required: send code_challenge (S256)")
        if params.one("code_challenge_method") != "S256":
            raise OAuthError("invalid_request", "code_challenge_method must be S256")
        if not _CHALLENGE.fullmatch(challenge):
            raise OAuthError("invalid_request", "malformed code_challenge")
        scope = self._scopes(params.one("scope") or client.scope)
        resources = self._resources(params.all("resource"))
        jkt = params.one("dpop_jkt")
        sub = params.one("login_hint") or self.subject
        code = secrets.token_urlsafe(32)
        now = self.clock()
        self._codes = {c: g for c, g in self._codes.items() if g.expires > now}
        self._codes[code] = Grant(
            client_id=client.client_id,
            sub=sub[:200],
            scope=scope,
            resources=resources,
            expires=now + self.code_lifetime,
            jkt=jkt,
            redirect_uri=redirect_uri,
            redirect_uri_given=given,
            challenge=challenge,
            family=secrets.token_urlsafe(12),
        )
        return code
