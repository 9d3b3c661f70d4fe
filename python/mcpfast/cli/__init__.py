"""The ``mcpfast`` command (`main`): its parser (`DESCRIPTION`, plain text like every help
line) and the command each name runs.

An ordinary failure is one line on stderr (``mcpfast: ...``) and an exit code from `Exit`; a
traceback means a bug (in mcpfast, or in the code of a served module)."""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from typing import Any

from .. import BACKEND, BACKEND_REASON, __version__
from .authorization import add_token_arguments
from .client_commands import call_command, client_command
from .exits import CliError, Exit, exit_code_table
from .governing import add_governing_arguments
from .inspecting import inspect_command
from .limiting import add_limit_arguments
from .reading import prompt_command, read_command
from .serving import add_auth_arguments, add_observability_arguments, serve_command

DESCRIPTION = """\
Serve an MCP server (the demo by default) over HTTP or stdio, and use one from the shell:
inspect what it offers, call its tools, read its resources, get its prompts.

A failure is one line on stderr (mcpfast: ...) and one of the exit codes below.
mcpfast COMMAND --help shows each command's options."""

CLIENT_COMMANDS = {
    "inspect": "list a server's tools, resources, resource templates and prompts (and its "
    "era, version, info, capabilities)",
    "call": "call a tool and print its result (exit 1 on a tool error)",
    "read": "read a resource and print its contents",
    "prompt": "get a prompt and print its messages",
}


def _parser() -> argparse.ArgumentParser:
    common: dict[str, Any] = {
        "epilog": exit_code_table(),
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }
    parser = argparse.ArgumentParser(prog="mcpfast", description=DESCRIPTION, **common)
    parser.add_argument(
        "--version",
        action="version",
        version=f"mcpfast {__version__}\ncodec: {BACKEND} ({BACKEND_REASON})",
        help="print mcpfast's version and its codec (Rust or pure Python, and why), then exit",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser(
        "serve",
        help="serve an mcpfast Server (the demo by default)",
        description="Serve an mcpfast Server over HTTP (or stdio) until Ctrl-C or SIGTERM;\n"
        "it prints the URL and a first command to try against it.",
        **common,
    )
    serve.add_argument(
        "target",
        nargs="?",
        help="the Server to serve: module:attribute or file.py:attribute (attribute "
        "default: server), imported from the current directory; default: the demo",
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)",
    )
    serve.add_argument(
        "--allowed-host",
        action="append",
        dest="allowed_hosts",
        metavar="NAME",
        help="a Host name clients use (repeatable; * for any): the DNS-rebinding guard's list "
        "(default: loopback names and this machine's names on a loopback or 0.0.0.0 bind)",
    )
    serve.add_argument(
        "--allowed-origin",
        action="append",
        dest="allowed_origins",
        metavar="ORIGIN",
        help="a browser Origin allowed to call (repeatable, e.g. https://app.example; * for "
        "any; default: pages on loopback names)",
    )
    serve.add_argument("--port", type=int, default=8000, help="the port (default 8000)")
    serve.add_argument("--path", default="/mcp", help="the MCP endpoint's path (default /mcp)")
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        help="worker processes sharing the port (default 1; above 1 needs --bus)",
    )
    serve.add_argument(
        "--bus",
        metavar="URL",
        default=os.environ.get("MCPFAST_BUS") or None,
        help="what several workers and hosts share: redis://HOST:PORT/DB (default $MCPFAST_BUS; "
        "required with --workers above 1)",
    )
    serve.add_argument(
        "--engine",
        choices=("hypercorn", "native"),
        default="hypercorn",
        help="HTTP engine: Hypercorn's Trio worker (default) or mcpfast's own HTTP/1.1 on Trio",
    )
    serve.add_argument(
        "--scheduling",
        choices=("fifo", "trio"),
        default="fifo",
        help="the order Trio runs tasks made ready together: in that order (default; a "
        "steadier p99 under load) or Trio's own, each batch forward or reversed at random",
    )
    serve.add_argument("--stdio", action="store_true", help="serve over stdin/stdout")
    add_observability_arguments(serve)
    add_auth_arguments(serve)
    add_limit_arguments(serve)
    add_governing_arguments(serve)
    for name, text in CLIENT_COMMANDS.items():
        sub = commands.add_parser(
            name, help=text, description=textwrap.fill(text[:1].upper() + text[1:] + "."), **common
        )
        sub.add_argument("url", nargs="?", help="the server's URL, e.g. http://127.0.0.1:8000/mcp")
        sub.add_argument("--stdio", metavar="COMMAND", help="spawn this server command instead")
        sub.add_argument(
            "--era",
            choices=("auto", "modern", "legacy"),
            default="auto",
            help="the protocol era: 2026-07-28 (modern), 2025-11-25 and before (legacy), or "
            "whichever the server speaks (auto, the default)",
        )
        sub.add_argument("--timeout", type=float, default=30.0, help="seconds (default 30)")
        auth = sub.add_argument_group(
            "authorization (a protected server, HTTP)",
            "By default a 401 starts a login in the browser (tokens kept in "
            "$MCPFAST_STATE_DIR/tokens.json, default ~/.cache/mcpfast/tokens.json); secrets "
            "are read from the environment, never from the command line.",
        )
        auth.add_argument(
            "--client-id",
            metavar="ID",
            help="a pre-registered client: with a secret, the client credentials grant; "
            "without one, the public client the login uses",
        )
        auth.add_argument(
            "--client-secret-env",
            metavar="VAR",
            help="read the client secret from $VAR (default: $MCPFAST_CLIENT_SECRET)",
        )
        auth.add_argument(
            "--auth-issuer",
            metavar="URL",
            help="the authorization server the client secret is for (its issuer, needed with "
            "a secret): the secret is sent to no other",
        )
        auth.add_argument(
            "--bearer-env",
            metavar="VAR",
            help="send the access token in $VAR (Authorization: Bearer ...)",
        )
        auth.add_argument(
            "--no-login",
            action="store_true",
            help="never open a browser to log in: a 401 ends the command (exit 7)",
        )
        auth.add_argument(
            "--auth-public-only",
            action="store_true",
            help="fetch the documents and endpoints the server names (off its own origin) "
            "only from public addresses: no private, loopback or link-local ones",
        )
        add_token_arguments(auth)
        _add_subject(sub, name)
        if name == "call":
            sub.add_argument(
                "--json",
                metavar="OBJECT",
                help="the arguments as one JSON object, e.g. --json '{\"a\": 2}' (key=value "
                "pairs are added to it)",
            )
            sub.add_argument(
                "--structured",
                action="store_true",
                help="print the result's structuredContent as JSON instead of its content",
            )
            sub.add_argument(
                "--answer",
                action="append",
                default=[],
                metavar="KEY=VALUE",
                help="answer the server's questions (elicitations) with this field (repeatable)",
            )
            sub.add_argument(
                "--answer-file",
                metavar="FILE",
                help="answer elicitations with this JSON object (--answer adds to it); without "
                "either, questions are asked on the terminal",
            )
    from .auth_server import add_arguments as add_auth_server_arguments

    auth_server = commands.add_parser(
        "auth-server",
        help="run a development OAuth 2.1 authorization server (loopback, in memory)",
        **common,
    )
    add_auth_server_arguments(auth_server)
    from ..load.runner import add_arguments as add_load_arguments

    load = commands.add_parser(
        "load", help="load-test a server (locust: mcpfast[load]; --engine fast: no extra)"
    )
    add_load_arguments(load)
    return parser


def _add_subject(parser: argparse.ArgumentParser, command: str) -> None:
    """What a client command is about: the tool, resource or prompt and its arguments; the
    output format of ``inspect``."""
    if command == "inspect":
        parser.add_argument(
            "--format",
            choices=("text", "json"),
            help="one line per item (text: the default on a terminal) or the whole report as "
            "JSON (the default otherwise)",
        )
    elif command == "read":
        parser.add_argument("uri", metavar="URI", help="the resource's URI, e.g. demo://readme")
    else:
        what = "tool" if command == "call" else "prompt"
        parser.add_argument("name", metavar=what.upper(), help=f"the {what}'s name")
        parser.add_argument(
            "arguments",
            nargs="*",
            metavar="key=value",
            help=f"the {what}'s arguments"
            + (
                ", converted by its input schema (a string stays a string)"
                if what == "tool"
                else ""
            ),
        )


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args: Any
    args, extra = parser.parse_known_args(argv)
    if extra and args.command in ("call", "prompt") and all(_is_pair(e) for e in extra):
        args.arguments += extra  # key=value pairs after an option: call URL add --json {} b=1
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return _run(args)
    except CliError as exc:
        print(f"mcpfast: {exc.message}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("mcpfast: interrupted", file=sys.stderr)
        return Exit.INTERRUPTED


def _is_pair(text: str) -> bool:
    return "=" in text and not text.startswith("-")


def _run(args: Any) -> int:
    if args.command == "serve":
        return serve_command(args)
    if args.command == "auth-server":
        from .auth_server import auth_server_command

        return auth_server_command(args)
    if args.command == "load":
        from ..load.runner import run as run_load

        return int(run_load(args))
    if (
        args.command in ("call", "prompt")
        and args.url
        and not args.url.startswith(("http://", "https://"))
        and args.stdio
    ):
        args.arguments.insert(0, args.name)
        args.name, args.url = args.url, None
    return client_command(args, _CLIENT_RUNS[args.command])


_CLIENT_RUNS = {
    "inspect": inspect_command,
    "call": call_command,
    "read": read_command,
    "prompt": prompt_command,
}
