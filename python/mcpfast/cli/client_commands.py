"""``mcpfast inspect`` and ``mcpfast call``: connect to a server (a URL, or a command spawned
for ``--stdio``) with the client; what ends them is worded by `client_failure`.
Authorization (HTTP only) comes from the flags: `mcpfast.cli.authorization`.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import msgspec
import trio

from ..client import Client, connect
from ..errors import MCPError, TransportError
from .answers import Answers, Terminal, given_answers, show_progress
from .authorization import Authorization, login_needed
from .exits import CliError, Doing, Exit, client_failure, refused_authorization
from .values import parse_pairs, parse_value


def _target(args: argparse.Namespace) -> str | list[str]:
    """The URL, or the argv of ``--stdio``.

    Raises:
        CliError: (`Exit.USAGE`) neither given, a URL that is not http(s), a bad command line.
    """
    if args.stdio:
        try:
            return shlex.split(args.stdio)
        except ValueError as exc:
            raise CliError(Exit.USAGE, f"--stdio {args.stdio!r}: {exc}") from None
    if not args.url:
        raise CliError(Exit.USAGE, "give a URL or --stdio COMMAND")
    url = str(args.url)
    try:
        parts = urlsplit(url)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 -- raises ValueError for a port that is not a number in range
    except ValueError:
        valid = False
    if not valid:
        raise CliError(
            Exit.USAGE, f"not an http:// or https:// URL: {url!r} (or give --stdio COMMAND)"
        )
    return url


@asynccontextmanager
async def _connected(
    args: argparse.Namespace, doing: Doing, **options: Any
) -> AsyncIterator[Client]:
    """`connect` for the command, with the authorization its flags ask for (`Authorization`;
    a login needed runs, then it connects again); with ``--era modern``, a server that refuses
    the ``server/discover`` the connection begins with is named (`_not_modern`)."""
    target = _target(args)
    authorization = Authorization(args, doing)
    try:
        entered = False
        try:
            async with _connected_once(args, target, authorization, doing, **options) as client:
                entered = True
                authorization.connected()
                yield client
            return
        except BaseException as exc:
            if entered or authorization.browser is None or not login_needed(exc):
                raise
        assert isinstance(target, str)
        doing.what = "logging in"
        await authorization.log_in(target, args.timeout)
        doing.what = "connecting"
        async with _connected_once(args, target, authorization, doing, **options) as client:
            yield client
    finally:
        authorization.close()


@asynccontextmanager
async def _connected_once(
    args: argparse.Namespace,
    target: str | list[str],
    authorization: Authorization,
    doing: Doing,
    **options: Any,
) -> AsyncIterator[Client]:
    entered = False
    try:
        async with connect(
            target,
            args.era,
            timeout=args.timeout,
            headers=authorization.headers,
            auth=authorization.oauth,
            **options,
        ) as client:
            entered = True
            yield client
    except (MCPError, TransportError) as exc:
        if entered or args.era != "modern" or refused_authorization(exc):
            raise
        raise _not_modern(exc, doing) from None


def _not_modern(exc: MCPError | TransportError, doing: Doing) -> Exception:
    """What a refused ``server/discover`` means: the server does not speak 2026-07-28
    (`Exit.USAGE`); a server that could not be reached stays so (``exc`` itself)."""
    if isinstance(exc, TransportError) and exc.status == 0:
        return exc
    return CliError(
        Exit.USAGE,
        f"{doing.target} does not speak 2026-07-28 (server/discover: {exc}); "
        "try --era legacy or --era auto",
    )


async def inspect_command(args: argparse.Namespace, doing: Doing) -> int:
    """``mcpfast inspect``: print the server's era, version, info, capabilities and tools as
    JSON on stdout."""
    async with _connected(args, doing) as client:
        if client.era == "modern" and client.discover_result is None:
            doing.what = "server/discover"
            await _discover(client, doing)
        doing.what = "listing tools"
        tools = await client.list_tools() if "tools" in client.server_capabilities else []
        report: dict[str, Any] = {
            "era": client.era,
            "protocolVersion": client.protocol_version,
            "serverInfo": client.server_info,
            "capabilities": client.server_capabilities,
            "instructions": client.instructions,
            "tools": [msgspec.to_builtins(t) for t in tools],
        }
        if client.dropped_tools:
            report["droppedTools"] = client.dropped_tools
    print(json.dumps(report, indent=2, ensure_ascii=False))
    return Exit.OK


async def _discover(client: Any, doing: Doing) -> None:
    """``server/discover`` (``--era modern`` skips the probe that would have called it).

    Raises:
        CliError: (`Exit.USAGE`) the server refused it: it does not speak 2026-07-28.
    """
    try:
        await client.discover()
    except (MCPError, TransportError) as exc:
        if refused_authorization(exc):
            raise
        raise _not_modern(exc, doing) from None


async def call_command(args: argparse.Namespace, doing: Doing) -> int:
    """``mcpfast call``: call the tool and print its content (and ``structuredContent`` with
    ``--json``) on stdout; `Exit.TOOL_ERROR` when the result is an error.

    Raises:
        CliError: bad arguments, or an elicitation that could not be answered (it cancels
            the call).
    """
    arguments = {k: parse_value(v) for k, v in parse_pairs(args.arguments, "arguments").items()}
    answers = Answers(given_answers(args), Terminal() if _interactive() else None)
    async with _connected(args, doing, on_elicit=answers.elicit, elicitation_url=True) as client:
        doing.what = "listing tools"
        await client.list_tools()
        doing.what = f"calling {args.tool}"
        with trio.CancelScope() as scope:
            answers.scope = scope
            result = await client.call_tool(args.tool, arguments, progress=show_progress)
    if answers.failure is not None:  # it cancelled the call
        raise answers.failure
    for block in result.content:
        text = getattr(block, "text", None)
        print(text if isinstance(text, str) else json.dumps(msgspec.to_builtins(block)))
    if result.structuredContent is not msgspec.UNSET and args.json:
        print(json.dumps(result.structuredContent))
    return Exit.TOOL_ERROR if result.isError else Exit.OK


def _interactive() -> bool:
    return sys.stdin is not None and sys.stdin.isatty()


def client_command(
    args: argparse.Namespace, run: Callable[[argparse.Namespace, Doing], Awaitable[int]]
) -> int:
    """Run a client command (`inspect_command`, `call_command`) in Trio; its exit code.

    Raises:
        CliError: what ended it, in words (`client_failure`); anything else, a bug, as is.
    """
    doing = Doing(args)
    try:
        return int(trio.run(run, args, doing))
    except BaseException as exc:
        failure = client_failure(exc, doing)
        if failure is None:
            raise
        raise failure from None
