"""The ``mcpfast`` command: ``serve`` a server (the demo by default) over HTTP or stdio;
``inspect`` a server and ``call`` its tools with the client.

An ordinary failure is one line on stderr (``mcpfast: ...``) and an exit code from `Exit`; a
traceback means a bug (in mcpfast, or in the code of a served module)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .authorization import add_token_arguments
from .client_commands import call_command, client_command, inspect_command
from .exits import CliError, Exit, exit_code_table
from .governing import add_governing_arguments
from .limiting import add_limit_arguments
from .serving import add_auth_arguments, add_observability_arguments, serve_command


def _parser() -> argparse.ArgumentParser:
    common: dict[str, Any] = {
        "epilog": exit_code_table(),
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }
    parser = argparse.ArgumentParser(prog="mcpfast", description=__doc__, **common)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser(
        "serve", help="serve an mcpfast Server (the demo by default)", **common
    )
    serve.add_argument(
        "target", nargs="?", help="module:attribute or file.py:attribute of a Server"
    )
    serve.add_argument("--host", default="127.0.0.1")
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
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--path", default="/mcp")
    serve.add_argument("--workers", type=int, default=1)
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
    serve.add_argument("--stdio", action="store_true", help="serve over stdin/stdout")
    add_observability_arguments(serve)
    add_auth_arguments(serve)
    add_governing_arguments(serve)
    add_limit_arguments(serve)
    for name, text in (
        ("inspect", "show a server's era, version, info, capabilities and tools"),
        ("call", "call a tool and print its result (exit 1 on a tool error)"),
    ):
        sub = commands.add_parser(name, help=text, **common)
        sub.add_argument("url", nargs="?", help="the server's URL")
        sub.add_argument("--stdio", metavar="COMMAND", help="spawn this server command instead")
        sub.add_argument("--era", choices=("auto", "modern", "legacy"), default="auto")
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
        if name == "call":
            sub.add_argument("tool")
            sub.add_argument("arguments", nargs="*", metavar="key=value")
            sub.add_argument("--json", action="store_true", help="also print structuredContent")
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

    load = commands.add_parser("load", help="load-test a server with locust (mcpfast[load])")
    add_load_arguments(load)
    return parser


def main(argv: list[str] | None = None) -> int:
    args: Any = _parser().parse_args(argv)
    try:
        return _run(args)
    except CliError as exc:
        print(f"mcpfast: {exc.message}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("mcpfast: interrupted", file=sys.stderr)
        return Exit.INTERRUPTED


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
        args.command == "call"
        and args.url
        and not args.url.startswith(("http://", "https://"))
        and args.stdio
    ):
        args.arguments.insert(0, args.tool)
        args.tool, args.url = args.url, None
    return client_command(args, inspect_command if args.command == "inspect" else call_command)
