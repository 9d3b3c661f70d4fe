"""``mcpfast call`` and what every client command shares: connecting to a server (a URL, or
a command spawned for ``--stdio``) with the client (`connected`) and running the command in Trio
(`client_command`); what ends one is worded by `client_failure`. ``inspect`` is in
`mcpfast.cli.inspecting`, ``read`` and ``prompt`` in `mcpfast.cli.reading`.
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
from .exits import CliError, Doing, Exit, client_failure, refused_authorization, unknown
from .values import parse_pairs, tool_arguments


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
async def connected(
    args: argparse.Namespace, doing: Doing, **options: Any
) -> AsyncIterator[Client]:
    """`connect` for the command, with the authorization its flags ask for (`Authorization`;
    a login needed runs, then it connects again); with ``--era modern``, a server that refuses
    the ``server/discover`` the connection begins with is named (`_not_modern`)."""
    target = _target(args)
    authorization = Authorization(args, doing)
    try:
        if isinstance(target, str):
            await authorization.keep_or_drop(target)
        entered = False
        try:
            async with _connected_once(args, target, authorization, doing, **options) as client:
                entered = True
                authorization.connected()
                yield client
            return
        except BaseException as exc:
            if not login_needed(exc):
                raise
            if authorization.browser is None:  # the kept token (or its scopes) no longer does
                raise CliError(
                    Exit.NOT_AUTHORIZED,
                    f"not authorized by {doing.target}: the kept token is not enough and a "
                    f"login is needed ({doing.what}); {doing.auth_hint}",
                ) from None
            if entered:
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
    (`Exit.USAGE`); a server that could not be reached, or nothing at that path (404),
    stays so (``exc`` itself)."""
    if isinstance(exc, TransportError) and exc.status in (0, 404):
        return exc
    return CliError(
        Exit.USAGE,
        f"{doing.target} does not speak 2026-07-28 (server/discover: {exc}); "
        "try --era legacy or --era auto",
    )


async def call_command(args: argparse.Namespace, doing: Doing) -> int:
    """``mcpfast call``: call the tool with its arguments (``--json`` and ``key=value`` pairs,
    converted by its input schema) and print its result once on stdout: its content, or its
    ``structuredContent`` with ``--structured``; `Exit.TOOL_ERROR` when the result is an error.

    Raises:
        CliError: an unknown tool or argument, a value not of its type, an elicitation that
            could not be answered (it cancels the call).
    """
    given = _json_arguments(args.json)
    pairs = parse_pairs(args.arguments, "arguments")
    answers = Answers(given_answers(args), Terminal() if _interactive() else None)
    async with connected(args, doing, on_elicit=answers.elicit, elicitation_url=True) as client:
        doing.what = "listing tools"
        tools = {tool.name: tool for tool in await client.list_tools()}
        tool = tools.get(args.name)
        if tool is None and args.name not in client.dropped_tools:
            raise CliError(Exit.USAGE, unknown("tool", args.name, tools))
        schema = tool.inputSchema if tool is not None else {}
        try:
            arguments = tool_arguments(schema, pairs, given)
        except ValueError as exc:
            raise CliError(Exit.USAGE, f"{args.name}: {exc}") from None
        doing.what = f"calling {args.name}"
        with trio.CancelScope() as scope:
            answers.scope = scope
            result = await client.call_tool(args.name, arguments, progress=show_progress)
    if answers.failure is not None:  # it cancelled the call
        raise answers.failure
    if args.structured and result.structuredContent is not msgspec.UNSET:
        print(json.dumps(result.structuredContent, ensure_ascii=False))
    else:
        print_content(result.content)
    return Exit.TOOL_ERROR if result.isError else Exit.OK


def print_content(blocks: list[Any]) -> None:
    """Content blocks on stdout: a text as is, any other block as one line of JSON."""
    for block in blocks:
        text = getattr(block, "text", None)
        print(text if isinstance(text, str) else json.dumps(msgspec.to_builtins(block)))


def _json_arguments(text: str | None) -> dict[str, Any]:
    """The arguments object of ``--json`` (empty without it).

    Raises:
        CliError: (`Exit.USAGE`) not a JSON object.
    """
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise CliError(Exit.USAGE, f"--json: not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise CliError(Exit.USAGE, "--json: give the arguments as one JSON object {...}")
    return value


def _interactive() -> bool:
    return sys.stdin is not None and sys.stdin.isatty()


async def discover(client: Any, doing: Doing) -> None:
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


def client_command(
    args: argparse.Namespace, run: Callable[[argparse.Namespace, Doing], Awaitable[int]]
) -> int:
    """Run a client command (``inspect``, ``call``, ``read``, ``prompt``) in Trio; its exit
    code.

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
