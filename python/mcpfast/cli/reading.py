"""``mcpfast read URI`` (a resource's contents) and ``mcpfast prompt NAME [key=value...]``
(the messages a prompt returns), both eras; a name the server does not know is `unknown`."""

from __future__ import annotations

import argparse
import base64
import sys
from typing import Any

from ..errors import MCPError
from ..jsonrpc import INVALID_PARAMS, RESOURCE_NOT_FOUND_LEGACY
from .client_commands import connected, print_content
from .exits import CliError, Doing, Exit, unknown
from .values import parse_pairs


async def read_command(args: argparse.Namespace, doing: Doing) -> int:
    """``mcpfast read``: print the resource's contents on stdout: a text as is, a blob as its
    bytes.

    Raises:
        CliError: (`Exit.USAGE`) a URI the server does not serve (naming the closest).
    """
    async with connected(args, doing) as client:
        doing.what = f"reading {args.uri}"
        try:
            result = await client.read_resource(args.uri)
        except MCPError as exc:
            if exc.code not in (RESOURCE_NOT_FOUND_LEGACY, INVALID_PARAMS):
                raise
            known = await _resource_uris(client, doing)
            if args.uri in known:
                raise
            raise CliError(Exit.USAGE, unknown("resource", args.uri, known)) from None
    for contents in result.contents:
        if isinstance(contents.text, str):
            print(contents.text)
        elif isinstance(contents.blob, str):
            sys.stdout.flush()
            sys.stdout.buffer.write(base64.b64decode(contents.blob))
            sys.stdout.buffer.flush()
    return Exit.OK


async def _resource_uris(client: Any, doing: Doing) -> list[str]:
    """The URIs of the server's resources, then its templates."""
    if "resources" not in client.server_capabilities:
        return []
    doing.what = "listing resources"
    known = [r.uri for r in await client.list_resources()]
    return known + [t.uriTemplate for t in await client.list_resource_templates()]


async def prompt_command(args: argparse.Namespace, doing: Doing) -> int:
    """``mcpfast prompt``: get the prompt with its ``key=value`` arguments (texts) and print
    its messages on stdout, each as ``role:`` and its content.

    Raises:
        CliError: (`Exit.USAGE`) an unknown prompt or argument, a required argument missing.
    """
    given = parse_pairs(args.arguments, "arguments")
    async with connected(args, doing) as client:
        doing.what = "listing prompts"
        offered = "prompts" in client.server_capabilities
        prompts = {p.name: p for p in await client.list_prompts()} if offered else {}
        prompt = prompts.get(args.name)
        if prompt is None:
            raise CliError(Exit.USAGE, unknown("prompt", args.name, prompts))
        _check_arguments(args.name, prompt.arguments or [], given)
        doing.what = f"getting prompt {args.name}"
        result = await client.get_prompt(args.name, given)
    for message in result.messages:
        print(f"{message.role}:")
        print_content([message.content])
    return Exit.OK


def _check_arguments(name: str, declared: list[Any], given: dict[str, str]) -> None:
    """Raises `CliError` (`Exit.USAGE`) for an argument the prompt does not declare, or a
    required one left out."""
    names = [a.name for a in declared]
    for key in given:
        if key not in names:
            raise CliError(Exit.USAGE, f"{name}: {unknown('argument', key, names)}")
    missing = [a.name for a in declared if a.required and a.name not in given]
    if missing:
        flags = " ".join(f"{m}=VALUE" for m in missing)
        raise CliError(Exit.USAGE, f"{name} needs {', '.join(missing)}: add {flags}")
