"""HTTP helpers of the development authorization server for tests: run a token request
(`TokenRequests.token_request`), a client credentials grant or the whole authorization code
flow with PKCE against the running server, as a client would."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx2

from .clients import AUTHORIZATION_CODE, CLIENT_CREDENTIALS, b64url_sha256
from .issuer import Issuer


class TokenRequestError(Exception):
    """A helper's token request was refused: the status and the error body."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(f"HTTP {status}: {body}")
        self.status = status
        self.body = body
        self.error = str(body.get("error", ""))


class TokenRequests(Issuer):
    """Token requests over HTTP to this server (on top of `Issuer`)."""

    async def token_request(
        self,
        form: dict[str, str],
        *,
        auth: tuple[str | bytes, str | bytes] | None = None,
        dpop: Callable[[str, str], str] | None = None,
    ) -> dict[str, Any]:
        """POST ``form`` to the token endpoint (``auth``: Basic credentials; ``dpop(method,
        url)``: a proof for the ``DPoP`` header) and return the token response.

        Raises:
            TokenRequestError: the server refused.
        """
        headers = {"dpop": dpop("POST", self.token_endpoint)} if dpop else {}
        async with httpx2.AsyncClient(timeout=10.0) as http:
            if auth is None:
                answer = await http.post(self.token_endpoint, data=form, headers=headers)
            else:
                answer = await http.post(self.token_endpoint, data=form, auth=auth, headers=headers)
        body = answer.json()
        if answer.status_code != 200:
            raise TokenRequestError(answer.status_code, body)
        return dict(body)

    async def client_credentials_token(
        self,
        client_id: str,
        secret: str,
        *,
        scope: str | None = None,
        resource: str | None = None,
        method: str = "client_secret_basic",
        dpop: Callable[[str, str], str] | None = None,
    ) -> dict[str, Any]:
        """Ask the token endpoint (over HTTP) for a client_credentials token; the token
        response (``access_token``, ``token_type``, ...). ``method``: ``client_secret_basic``
        or ``client_secret_post``; ``dpop(method, url)`` makes a proof for a DPoP-bound token.

        Raises:
            TokenRequestError: the server refused.
        """
        form = {"grant_type": CLIENT_CREDENTIALS}
        if scope:
            form["scope"] = scope
        if resource:
            form["resource"] = resource
        if method == "client_secret_post":
            form.update(client_id=client_id, client_secret=secret)
            return await self.token_request(form, dpop=dpop)
        return await self.token_request(form, auth=(client_id, secret), dpop=dpop)

    async def authorization_code_token(
        self,
        client_id: str,
        redirect_uri: str,
        *,
        secret: str | None = None,
        scope: str | None = None,
        resource: str | None = None,
        state: str = "dev-state",
        login_hint: str | None = None,
        dpop: Callable[[str, str], str] | None = None,
    ) -> dict[str, Any]:
        """Run the whole authorization code flow with PKCE over HTTP (as a client would,
        without a browser: the server auto-approves) and return the token response.

        Raises:
            TokenRequestError: the authorization or the token request was refused.
        """
        verifier = secrets.token_urlsafe(48)
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "code_challenge": b64url_sha256(verifier),
            "code_challenge_method": "S256",
            "state": state,
        }
        for name, value in (("scope", scope), ("resource", resource), ("login_hint", login_hint)):
            if value:
                query[name] = value
        async with httpx2.AsyncClient(timeout=10.0, follow_redirects=False) as http:
            answer = await http.get(self.authorization_endpoint, params=query)
        if answer.status_code != 302:
            raise TokenRequestError(answer.status_code, answer.json())
        back = dict(parse_qsl(urlsplit(answer.headers["location"]).query))
        if "code" not in back:
            raise TokenRequestError(302, back)
        form = {
            "grant_type": AUTHORIZATION_CODE,
            "code": back["code"],
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
        }
        if resource:
            form["resource"] = resource
        if secret is None:
            form["client_id"] = client_id
            return await self.token_request(form, dpop=dpop)
        return await self.token_request(form, auth=(client_id, secret), dpop=dpop)
