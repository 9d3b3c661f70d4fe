"""How an ``mcpfast`` command ends: its exit codes (`Exit`), an ordinary failure (`CliError`),
the `CliError` for what ended a client command (`client_failure`) and the words for a name
the server does not know (`unknown`)."""

from __future__ import annotations

import argparse
import difflib
import enum
import re
import socket
import textwrap
from collections.abc import Iterable, Iterator
from urllib.parse import urlsplit

import httpx2
import trio

from ..client.http import PLAIN_HTTP, SPEAKS_TLS
from ..client.oauth import AuthorizationError, DiscoveryError, RegistrationError, TokenError
from ..errors import MCPError, RateLimited, TransportError
from ..jsonrpc import INVALID_REQUEST, METHOD_NOT_FOUND, MISSING_CLIENT_CAPABILITY


class Exit(enum.IntEnum):
    """The exit codes of ``mcpfast`` (shown by ``mcpfast --help``)."""

    OK = 0
    TOOL_ERROR = 1
    USAGE = 2
    CONNECTION = 3
    TIMEOUT = 4
    INPUT_REQUIRED = 5
    CANNOT_SERVE = 6
    NOT_AUTHORIZED = 7
    RATE_LIMITED = 8
    INTERRUPTED = 130


EXIT_MEANINGS = {
    Exit.OK: "success",
    Exit.TOOL_ERROR: "call: the tool returned an error result (isError)",
    Exit.USAGE: "usage or protocol error: bad arguments or URL, a serve target that cannot be "
    "loaded; or the server refused the request (a JSON-RPC error such as an unknown tool, an "
    "answer that is not MCP, not the --era asked for)",
    Exit.CONNECTION: "cannot reach the server: connection refused, unknown host, https:// to "
    "a plain-HTTP server or http:// to a TLS one, the connection or server process went away",
    Exit.TIMEOUT: "no answer within --timeout",
    Exit.INPUT_REQUIRED: "the server needs input mcpfast cannot give: a question "
    "(elicitation) with no terminal, --answer or --answer-file to answer it; sampling; roots",
    Exit.CANNOT_SERVE: "serve: cannot listen on --host:--port (in use, no such address, not "
    "permitted)",
    Exit.NOT_AUTHORIZED: "not authorized: the server answered 401 or 403 (no credentials, "
    "or a token refused or without the scope), or the authorization server refused "
    "(--client-id / --client-secret-env, the login)",
    Exit.RATE_LIMITED: "refused for now: the server's rate limit, concurrency cap or load "
    "shedding (HTTP 429, a 503 with Retry-After, JSON-RPC -32023); the line says when to retry",
    Exit.INTERRUPTED: "interrupted (Ctrl-C)",
}


def exit_code_table() -> str:
    """The ``--help`` epilog: every `Exit` code and what it means."""
    rows = (
        textwrap.fill(
            EXIT_MEANINGS[code], 78, initial_indent=f"  {code.value:<4} ", subsequent_indent=" " * 7
        )
        for code in Exit
    )
    return "exit codes:\n" + "\n".join(rows)


class CliError(Exception):
    """An ordinary failure: ``mcpfast`` prints ``message`` as one line and exits with ``code``."""

    def __init__(self, code: Exit, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def unknown(kind: str, name: str, known: Iterable[str]) -> str:
    """``Unknown tool: nope (did you mean ...?)``: the closest of the ``known`` names
    (difflib), else the first few of them."""
    names = list(known)
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    if close:
        hint = "did you mean " + " or ".join(close) + "?"
    elif names:
        hint = f"the {kind}s: " + ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
    else:
        hint = f"there is no {kind}"
    return f"Unknown {kind}: {name} ({hint})"


class Doing:
    """What a client command is waiting for, to say so if it times out or fails."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.target = args.url or args.stdio or ""
        self.timeout: float = args.timeout
        self.what = "connecting"
        self.auth_hint = ""
        """What to do about a 401 (set by the client command from its authorization flags)."""


_SERVER_REQUESTS = ("elicitation/create", "sampling/createMessage", "roots/list")


def client_failure(exc: BaseException, doing: Doing) -> CliError | None:
    """The `CliError` for what ended a client command, or None for a bug (a traceback).

    In a group, an interrupt wins; else the first failure that has a name."""
    leaves = [e for e in _leaves(exc) if not isinstance(e, trio.Cancelled)]
    if any(isinstance(e, KeyboardInterrupt) for e in leaves):
        return CliError(Exit.INTERRUPTED, "interrupted")
    for leaf in leaves:
        failure = _named(leaf, doing)
        if failure is not None:
            return failure
    return None


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def _links(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it was raised from or during, groups included."""
    stack, seen = [exc], set()
    while stack:
        link = stack.pop()
        if id(link) not in seen:
            seen.add(id(link))
            yield link
            stack.extend(e for e in (link.__cause__, link.__context__) if e is not None)
            if isinstance(link, BaseExceptionGroup):
                stack.extend(link.exceptions)


_JSONRPC_MESSAGE = re.compile(r'"message":\s*"((?:[^"\\]|\\.)*)"')


def refused_authorization(exc: BaseException) -> int:
    """401 or 403 when ``exc`` is a server's refusal of the request's authorization (an HTTP
    status, or the JSON-RPC -32600 an mcpfast server answers it with: ``Unauthorized: ...`` /
    ``Forbidden: ...`` with ``resourceMetadata`` in ``data``); else 0."""
    if isinstance(exc, TransportError) and exc.status in (401, 403):
        return exc.status
    if (
        isinstance(exc, MCPError)
        and exc.code == INVALID_REQUEST
        and isinstance(exc.data, dict)
        and "resourceMetadata" in exc.data
    ):
        return 403 if exc.message.startswith("Forbidden") else 401
    return 0


def _named(exc: BaseException, doing: Doing) -> CliError | None:
    if isinstance(exc, CliError):
        return exc
    if isinstance(exc, RateLimited):
        return CliError(Exit.RATE_LIMITED, f"{refused_for_now(exc)} ({doing.what})")
    status = refused_authorization(exc)
    if status:
        text = f"HTTP {status}: {exc.message}" if isinstance(exc, MCPError) else str(exc)
        said = _JSONRPC_MESSAGE.search(text)  # a JSON-RPC error body: its message, not the JSON
        if said is not None:
            text = f"HTTP {status}: {said.group(1)}"
        hint = f"; {doing.auth_hint}" if doing.auth_hint and status == 401 else ""
        return CliError(
            Exit.NOT_AUTHORIZED, f"not authorized by {doing.target}: {text} ({doing.what}){hint}"
        )
    if isinstance(exc, trio.TooSlowError | httpx2.TimeoutException) or (
        isinstance(exc, TransportError)
        and any(isinstance(e, httpx2.TimeoutException) for e in _links(exc))
    ):
        return CliError(
            Exit.TIMEOUT, f"no answer within --timeout {doing.timeout:g}s ({doing.what})"
        )
    if isinstance(exc, httpx2.InvalidURL | httpx2.UnsupportedProtocol):
        return CliError(Exit.USAGE, f"bad URL {doing.target!r}: {exc}")
    if isinstance(exc, TokenError | AuthorizationError | DiscoveryError | RegistrationError):
        return CliError(Exit.NOT_AUTHORIZED, f"authorization failed ({doing.what}): {exc}")
    if isinstance(exc, TransportError) and exc.status:
        return CliError(Exit.USAGE, _http_status(exc, doing))
    if isinstance(exc, TransportError | httpx2.TransportError):
        return CliError(Exit.CONNECTION, _unreachable(exc, doing))
    if isinstance(exc, MCPError):
        return _refused(exc, doing)
    return None


def _http_status(exc: TransportError, doing: Doing) -> str:
    """An HTTP status that is no answer, with the URL it came from (a 404 while connecting:
    is the MCP path right?)."""
    text = str(exc)
    status = f"HTTP {exc.status}"
    where = f"{status} at {doing.target}"
    if exc.status == 404 and doing.what in ("connecting", "server/discover"):
        path = urlsplit(doing.target).path
        hint = "is the MCP path /mcp?" if path != "/mcp" else "is this the server's --path?"
        return f"{where}: {hint} ({doing.what})"
    said = text.removeprefix(status).lstrip(": ")
    return f"{where}{': ' + said if said else ''} ({doing.what})"


def refused_for_now(exc: RateLimited) -> str:
    """``rate limited by the server: retry after 2 s (limit 10, 0 left)``, or for a cap or
    shedding ``refused by the server (overloaded): retry after 2 s``."""
    seconds = -(-exc.retry_after_ms // 1000)
    when = f"retry after {seconds} s" if seconds else "retry later"
    if exc.reason != "rate":
        return f"refused by the server ({exc.reason}): {when}"
    limit = f" (limit {exc.limit}, {exc.remaining or 0} left)" if exc.limit is not None else ""
    return f"rate limited by the server: {when}{limit}"


def _unreachable(exc: BaseException, doing: Doing) -> str:
    text = str(exc)
    if PLAIN_HTTP in text or SPEAKS_TLS in text:
        return text
    links = list(_links(exc))
    if any(isinstance(e, ConnectionRefusedError) for e in links):
        return f"cannot reach {doing.target}: connection refused (is the server running?)"
    if any(isinstance(e, socket.gaierror) for e in links):
        host = urlsplit(doing.target).hostname
        return f"cannot reach {doing.target}: unknown host {host!r}"
    if isinstance(exc, TransportError):
        return text
    text = text or type(exc).__name__
    if doing.what == "connecting" or isinstance(exc, httpx2.ConnectError):
        return f"cannot reach {doing.target}: {text}"
    return f"the connection to {doing.target} failed ({doing.what}): {text}"


def _refused(exc: MCPError, doing: Doing) -> CliError:
    """A JSON-RPC error: the server refused, or it asked for what we cannot give."""
    if exc.code == MISSING_CLIENT_CAPABILITY:
        data = exc.data if isinstance(exc.data, dict) else {}
        needed = ", ".join(data.get("requiredCapabilities") or {}) or "a capability"
        return CliError(
            Exit.INPUT_REQUIRED,
            f"the server needs {needed} from the client, which mcpfast cannot give "
            f"({exc.message}; {doing.what})",
        )
    method = exc.message.removeprefix("Method not found: ")
    if exc.code == METHOD_NOT_FOUND and method in _SERVER_REQUESTS:
        return CliError(
            Exit.INPUT_REQUIRED, f"the server asked for {method}, which mcpfast cannot answer"
        )
    return CliError(Exit.USAGE, str(exc))
