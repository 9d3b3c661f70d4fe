"""The authorization of ``mcpfast inspect`` and ``mcpfast call`` (HTTP only), from their flags
(`Authorization`).

``--bearer-env VAR`` sends ``Authorization: Bearer $VAR``; ``--client-id ID`` with a secret
(from ``--client-secret-env VAR``, else ``$MCPFAST_CLIENT_SECRET``) and ``--auth-issuer URL``
(the authorization server the secret is for: a server that names another is refused) runs the
client credentials grant on the first 401; otherwise the tokens a login kept are used (an
expired one refreshed), and, unless ``--no-login`` or no browser can be opened
(``webbrowser``, which honours ``$BROWSER``), a 401 starts a login: the
authorization code flow in the browser, redirected to a loopback port (``--client-id`` without
a secret names a pre-registered public client; else the client registers itself), its tokens
kept in ``$MCPFAST_STATE_DIR/tokens.json`` (default ``~/.cache/mcpfast/tokens.json``, mode
0600) for the next command; it opens only an https: URL (or http: to a loopback host) and
prints its host. The login runs outside ``--timeout`` (it waits up to 5 minutes for the
browser), then the command connects again. ``--scope`` (repeatable, each value
space-separated) asks for those scopes instead of what the challenge and the metadata suggest
(a kept token is reused only when it was asked for them all); ``--dpop`` binds the tokens to a
DPoP key made for the command (RFC 9449: tokens bound to it are kept in memory only, the
registration still in the file). Both go with a grant, not with ``--bearer-env``.
"""

from __future__ import annotations

import argparse
import os
import sys
import webbrowser
from pathlib import Path
from urllib.parse import urlsplit

import httpx2
import trio

from .. import jsonrpc
from ..client.oauth import (
    ClientCredentials,
    ClientCredentialsGrant,
    FileTokenStore,
    LoopbackRedirect,
    OAuth,
    Token,
    TokenStore,
)
from ..errors import TransportError
from ..protocol.auth import secure_url
from ..versions import MODERN
from .exits import CliError, Doing, Exit, _links

__all__ = ["Authorization", "add_token_arguments", "login_needed", "token_file"]


SECRET_VARIABLE = "MCPFAST_CLIENT_SECRET"
LOGIN_TIMEOUT = 300.0
"""Seconds a login waits for the browser's redirect."""


def token_file() -> Path:
    """Where a login keeps its tokens: ``$MCPFAST_STATE_DIR/tokens.json``, default
    ``~/.cache/mcpfast/tokens.json`` (the directory made 0700 if new, the file 0600)."""
    directory = Path(os.environ.get("MCPFAST_STATE_DIR") or Path.home() / ".cache" / "mcpfast")
    return directory / "tokens.json"


def _browser_available() -> bool:
    try:
        webbrowser.get()
    except webbrowser.Error:
        return False
    return True


def _open_browser(url: str) -> None:
    """Open ``url`` in the browser, saying its host (`LoopbackRedirect` opens only a
    `secure_url`)."""
    print(
        f"mcpfast: the server needs a login: opening a browser at {urlsplit(url).hostname} "
        f"(if none opens, visit {url})",
        file=sys.stderr,
        flush=True,
    )
    webbrowser.open(url)


def add_token_arguments(group: argparse._ArgumentGroup) -> None:
    """``--scope`` and ``--dpop`` of ``inspect`` / ``call`` (their authorization group)."""
    group.add_argument(
        "--scope",
        action="append",
        metavar="SCOPE",
        help="ask for these scopes instead of what the server suggests (repeatable, or "
        "several space-separated in one)",
    )
    group.add_argument(
        "--dpop",
        action="store_true",
        help="bind the tokens to a DPoP key made for this command (RFC 9449)",
    )


def _scopes(values: list[str] | None) -> list[str] | None:
    """The scopes of ``--scope`` (each value split on spaces, duplicates dropped)."""
    if not values:
        return None
    return list(dict.fromkeys(s for value in values for s in value.split()))


class _KeptTokens:
    """The token file as the flags allow: with ``dpop`` no token is read or written (the key
    dies with the command; `OAuth` holds its tokens in memory), with ``scopes`` a kept token
    asked for fewer is not used; client registrations are the file's either way."""

    def __init__(self, store: TokenStore, scopes: list[str] | None, dpop: bool) -> None:
        self.store = store
        self.scopes = scopes
        self.dpop = dpop

    async def get_token(self, key: str) -> Token | None:
        if self.dpop:
            return None
        token = await self.store.get_token(key)
        if (
            token is not None
            and self.scopes
            and not set(self.scopes) <= set(token.requested_scopes)
        ):
            return None
        return token

    async def set_token(self, key: str, token: Token | None) -> None:
        if not self.dpop:
            await self.store.set_token(key, token)

    async def get_client(self, issuer: str) -> ClientCredentials | None:
        return await self.store.get_client(issuer)

    async def set_client(self, issuer: str, client: ClientCredentials | None) -> None:
        await self.store.set_client(issuer, client)


def _issuer(issuer: str | None) -> str:
    """The ``--auth-issuer`` a client secret needs.

    Raises:
        CliError: (`Exit.USAGE`) none given, or not an https: URL (http: on loopback).
    """
    if not issuer:
        raise CliError(
            Exit.USAGE,
            "a client secret needs --auth-issuer URL: the authorization server it is for "
            "(the secret is sent to no other)",
        )
    if not secure_url(issuer):
        raise CliError(
            Exit.USAGE, f"--auth-issuer {issuer!r}: not an https: URL (nor http: on loopback)"
        )
    return issuer


class _LoginNeeded(Exception):
    """Raised by the redirect handler of the first connection: the login runs after it, outside
    ``--timeout``."""


def _defer_login(authorization_url: str) -> None:
    raise _LoginNeeded(authorization_url)


class Authorization:
    """What the authorization flags ask for: ``headers`` (``--bearer-env``), ``oauth`` (client
    credentials, or a login), ``browser`` (a login is possible: its loopback redirect).

    Raises:
        CliError: (`Exit.USAGE`) flags that do not go together, a variable that is not set.
    """

    def __init__(self, args: argparse.Namespace, doing: Doing) -> None:
        self.headers: dict[str, str] | None = None
        self.oauth: OAuth | None = None
        self.browser: LoopbackRedirect | None = None
        self.kept_only = False
        """No login: only tokens a login kept (refreshed if need be) are used (`keep_or_drop`)."""
        bearer, client_id, secret_env = args.bearer_env, args.client_id, args.client_secret_env
        scopes, dpop = _scopes(getattr(args, "scope", None)), bool(getattr(args, "dpop", False))
        issuer = getattr(args, "auth_issuer", None)
        if args.stdio:
            if bearer or client_id or secret_env or issuer or scopes or dpop:
                raise CliError(
                    Exit.USAGE,
                    "--bearer-env, --client-id, --client-secret-env, --auth-issuer, --scope and "
                    "--dpop are for a URL (a stdio server takes its credentials from its "
                    "environment)",
                )
            return
        if bearer and (client_id or secret_env):
            raise CliError(Exit.USAGE, "give --bearer-env or --client-id, not both")
        if bearer and (scopes or dpop):
            raise CliError(
                Exit.USAGE, "--scope and --dpop are for tokens mcpfast gets, not --bearer-env"
            )
        if secret_env and not client_id:
            raise CliError(Exit.USAGE, "--client-secret-env needs --client-id")
        if bearer:
            token = os.environ.get(bearer, "").strip()
            if not token:
                raise CliError(Exit.USAGE, f"--bearer-env {bearer}: ${bearer} is not set")
            self.headers = {"authorization": f"Bearer {token}"}
            doing.auth_hint = f"the token in ${bearer} was refused"
            return
        secret = os.environ.get(secret_env or SECRET_VARIABLE, "")
        if secret_env and not secret:
            raise CliError(
                Exit.USAGE, f"--client-secret-env {secret_env}: ${secret_env} is not set"
            )
        if issuer and not (client_id and secret):
            raise CliError(
                Exit.USAGE,
                "--auth-issuer names the authorization server of a client secret: give it "
                f"with --client-id ID and --client-secret-env VAR (or ${SECRET_VARIABLE})",
            )
        if client_id and secret:
            self.oauth = OAuth(
                client=ClientCredentials(client_id, client_secret=secret, issuer=_issuer(issuer)),
                grant=ClientCredentialsGrant(),
                scopes=scopes,
                dpop=dpop,
                timeout=args.timeout,
                public_only=args.auth_public_only,
            )
            return
        login = not args.no_login and _browser_available()
        if not login:
            if client_id:
                raise CliError(
                    Exit.USAGE,
                    f"--client-id {client_id} has no secret (--client-secret-env VAR or "
                    f"${SECRET_VARIABLE}); without one it logs in with a browser, which "
                    + ("--no-login refuses" if args.no_login else "cannot be opened here"),
                )
            why = "--no-login" if args.no_login else "no browser to log in with (see $BROWSER)"
            doing.auth_hint = (
                f"{why}: give --client-id ID --client-secret-env VAR, or --bearer-env VAR"
            )
        else:
            self.browser = LoopbackRedirect(timeout=LOGIN_TIMEOUT, open_browser=_open_browser)
        path = token_file()
        if login and not path.parent.exists():
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.kept_only = not login
        self.oauth = OAuth(
            redirect_handler=_defer_login,
            redirect_uri=None if self.browser is None else self.browser.redirect_uri,
            client=ClientCredentials(client_id) if client_id else None,
            store=_KeptTokens(FileTokenStore(path), scopes, dpop),
            scopes=scopes,
            dpop=dpop,
            timeout=args.timeout,
            public_only=args.auth_public_only,
        )

    async def keep_or_drop(self, url: str) -> None:
        """Without a login, the kept tokens only: no token kept for ``url`` (or one asked for
        fewer scopes), no `OAuth` (a 401 is a refusal: nothing registers, nothing opens)."""
        if self.kept_only and self.oauth is not None and await self.oauth.token_for(url) is None:
            self.oauth = None

    def connected(self) -> None:
        """Once connected, a login (a step-up to more scopes) opens the browser at once."""
        if self.oauth is not None and self.browser is not None:
            self.oauth.redirect_handler = self.browser

    def close(self) -> None:
        if self.browser is not None:
            self.browser.close()

    async def log_in(self, url: str, timeout: float) -> None:
        """Log in with the browser (outside ``--timeout``): one request to ``url`` that the
        server answers 401, then the authorization code flow; the token is kept.

        Raises:
            CliError: (`Exit.NOT_AUTHORIZED`) no redirect came back in time.
        """
        assert self.oauth is not None and self.browser is not None
        self.oauth.redirect_handler = self.browser
        body = jsonrpc.request(0, "server/discover", {})
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": MODERN,
            "mcp-method": "server/discover",
        }
        try:
            async with httpx2.AsyncClient(auth=self.oauth, timeout=timeout) as http:
                async with http.stream("POST", url, content=body, headers=headers):
                    pass
        except trio.TooSlowError:
            raise CliError(
                Exit.NOT_AUTHORIZED, f"no login within {LOGIN_TIMEOUT:g}s (the browser's redirect)"
            ) from None
        except httpx2.TransportError as exc:
            raise TransportError(f"cannot reach {url}: {exc or type(exc).__name__}") from exc


def login_needed(exc: BaseException) -> bool:
    """Whether ``exc`` ended the first connection for a login (and for nothing else)."""
    links = list(_links(exc))
    return any(isinstance(link, _LoginNeeded) for link in links) and not any(
        isinstance(link, KeyboardInterrupt) for link in links
    )
