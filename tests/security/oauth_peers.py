"""The parties an OAuth client meets, for the client-side attack tests (beside a real protected
server, `tests.helpers.guarded`, and the ``mcpfast`` command, `tests.e2e.processes.cli`): a
malicious MCP server that is its own authorization server (`Hostile`, a Hypercorn app on
loopback that records every request) and a ``$BROWSER`` that only records what it was asked
to open and answers the loopback redirect (`recording_browser`)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpfast.auth._asgi import lifespan

from ..helpers import read_body, serving


@dataclass
class Seen:
    """One request the hostile server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def carries(self, secret: str) -> bool:
        """Whether ``secret`` is anywhere in it (as is, or in a Basic header)."""
        import base64

        text = " ".join([self.path, *self.headers.values(), self.body.decode("latin-1")])
        for value in self.headers.values():
            if value.lower().startswith("basic "):
                text += " " + base64.b64decode(value[6:]).decode("latin-1")
        return secret in text


@dataclass
class Hostile:
    """An MCP server that answers 401 and is its own authorization server. ``prm``: it
    publishes protected resource metadata naming its origin (else none: the client falls back
    to the origin); ``metadata``: overrides of its authorization server metadata (None: it
    publishes none). The token endpoint refuses (400 ``invalid_grant``)."""

    prm: bool = True
    metadata: dict[str, Any] | None = field(default_factory=dict)
    url: str = ""
    seen: list[Seen] = field(default_factory=list)

    @property
    def origin(self) -> str:
        return self.url.removesuffix("/mcp")

    def to(self, path: str) -> list[Seen]:
        return [s for s in self.seen if s.path == path]

    def route(
        self, method: str, path: str
    ) -> tuple[int, dict[str, Any], list[tuple[bytes, bytes]]]:
        origin = self.origin
        if path == "/mcp":
            challenge = (
                f'Bearer resource_metadata="{origin}/.well-known/oauth-protected-resource/mcp"'
                if self.prm
                else "Bearer"
            )
            return 401, {"error": "unauthorized"}, [(b"www-authenticate", challenge.encode())]
        if self.prm and path == "/.well-known/oauth-protected-resource/mcp":
            return 200, {"resource": self.url, "authorization_servers": [origin]}, []
        if self.metadata is not None and path == "/.well-known/oauth-authorization-server":
            document = {
                "issuer": origin,
                "authorization_endpoint": origin + "/authorize",
                "token_endpoint": origin + "/token",
                "registration_endpoint": origin + "/register",
                "code_challenge_methods_supported": ["S256"],
                "grant_types_supported": [
                    "authorization_code",
                    "client_credentials",
                    "urn:ietf:params:oauth:grant-type:jwt-bearer",
                ],
                "token_endpoint_auth_methods_supported": [
                    "client_secret_basic",
                    "private_key_jwt",
                    "none",
                ],
                **self.metadata,
            }
            return 200, document, []
        if method == "POST" and path == "/register":
            return 201, {"client_id": "hostile-client", "token_endpoint_auth_method": "none"}, []
        if method == "POST" and path == "/token":
            return 400, {"error": "invalid_grant"}, []
        return 404, {"error": "not_found"}, []

    async def app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        body = await read_body(receive)
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        self.seen.append(Seen(scope["method"], scope["path"], headers, body))
        status, document, extra = self.route(scope["method"], scope["path"])
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json"), *extra],
            }
        )
        await send({"type": "http.response.body", "body": json.dumps(document).encode()})


@asynccontextmanager
async def hostile(**options: Any) -> AsyncIterator[Hostile]:
    """A `Hostile` server (``options``: its fields) listening on loopback."""
    server = Hostile(**options)
    async with serving(server.app) as url:
        server.url = url + "/mcp"
        yield server


BROWSER = """#!/bin/sh
echo "opened $1" >> {log}
{python} {answer} "$1" >> {log} 2>&1 &
"""
ANSWER = """
import sys, urllib.error, urllib.parse, urllib.request
query = urllib.parse.parse_qs(urllib.parse.urlsplit(sys.argv[1]).query)
callback, state = query["redirect_uri"][0], query["state"][0]
for sent in ("not-" + state, state):  # a stale redirect first: refused, the wait goes on
    try:
        with urllib.request.urlopen(callback + "?code=c1&state=" + sent, timeout=10) as r:
            print("callback", r.status)
    except urllib.error.HTTPError as error:
        print("callback", error.code)
"""


def recording_browser(tmp_path: Path) -> tuple[Path, Path]:
    """A ``$BROWSER`` that records the URL it is given (``opened URL`` in its log) and, in the
    background as a person who approved would, answers the loopback redirect: once with a
    wrong ``state``, then with the right one (each status logged); it fetches nothing else.
    Its script and log (absent while it never ran)."""
    log = tmp_path / "browser.log"
    answer = tmp_path / "answer.py"
    answer.write_text(ANSWER)
    script = tmp_path / "browser.sh"
    script.write_text(BROWSER.format(log=log, python=sys.executable, answer=answer))
    script.chmod(0o755)
    return script, log
