"""What ``mcpfast serve`` prints to try the server it serves (`try_it`): a first command that
works against it, its first tool with values for the arguments its schema requires (the load
tester's `arguments_for`: the smallest arguments the schema accepts), or ``inspect`` when it has
no tool; for an open server the same call with curl, for a protected one how the client gets a
token."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

from ..load.arguments import arguments_for
from ..protocol.headers import request_headers
from ..server import Server
from ..server.config import AuthConfig
from ..versions import MODERN


def try_it(server: Server, url: str, auth: AuthConfig | None) -> str:
    """The ``try it:`` lines for ``server`` served at ``url`` (protected by ``auth`` or the
    server's own token verifier, if any)."""
    entry = next(iter(server.tools.values()), None)
    if entry is None:
        return "try it:\n  " + shlex.join([*_program(), "inspect", url])
    name = entry.definition.name
    arguments = arguments_for(entry.definition.inputSchema)
    pairs = [f"{key}={v if isinstance(v, str) else json.dumps(v)}" for key, v in arguments.items()]
    lines = ["try it:", "  " + shlex.join([*_program(), "call", url, name, *pairs])]
    if auth is not None or server.token_verifier is not None:
        lines.append(_login_hint(server, entry.scopes, auth))
    else:
        lines.append("  " + _curl(url, name, arguments, entry.headers))
    return "\n".join(lines)


def _program() -> list[str]:
    """How this ``mcpfast`` was started, to start it again: ``mcpfast`` when that is the one
    on PATH, else its path (``.venv/bin/mcpfast``) or ``python -m mcpfast``."""
    started = sys.argv[0]
    if Path(started).name == "__main__.py":
        return [sys.executable, "-m", "mcpfast"]
    found = shutil.which("mcpfast")
    if found is not None and Path(found).resolve() == Path(started).resolve():
        return ["mcpfast"]
    return [started]


def _login_hint(server: Server, tool_scopes: frozenset[str], auth: AuthConfig | None) -> str:
    scopes = sorted(set(server.scopes) | set(auth.scopes if auth else ()) | tool_scopes)
    issuer = auth.issuer if auth is not None else None
    at = f" at {issuer}" if issuer else ""
    needs = f" (scopes: {' '.join(scopes)})" if scopes else ""
    secret = f" --auth-issuer {issuer}" if issuer else " --auth-issuer ISSUER"
    return (
        f"  a protected server: on a 401 the client logs in{at} in the browser{needs} and "
        "keeps the tokens; without a browser, add --bearer-env VAR (an access token in $VAR) "
        f"or --client-id ID --client-secret-env VAR{secret}"
    )


def _curl(url: str, name: str, arguments: dict[str, Any], headers: Any) -> str:
    """The call as one curl command line (2026-07-28, with the headers the tool declares)."""
    params = {"name": name, "arguments": arguments}
    sent = request_headers(MODERN, "tools/call", params, {name: headers})
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**params, "_meta": meta}}
    words = ["curl", "-s", url]
    for header, value in sent.items():
        words += ["-H", f"{header}: {value}"]
    return shlex.join([*words, "-d", json.dumps(body, separators=(",", ":"))])
