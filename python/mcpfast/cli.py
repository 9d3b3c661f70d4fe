"""The ``mcpfast`` command: ``serve`` a server (the demo by default) over HTTP or stdio;
``inspect`` a server and ``call`` its tools with the client."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import shlex
import sys
from functools import partial
from typing import Any

import msgspec
import trio

from .client import connect
from .errors import MCPError, TransportError
from .server import Config, Server


def load_target(target: str | None) -> Server:
    """``module:attribute`` or ``file.py:attribute`` naming a `Server`; the demo if None."""
    if target is None:
        from .demo import server

        return server
    module_name, _, attribute = target.partition(":")
    if module_name.endswith(".py"):
        spec = importlib.util.spec_from_file_location("mcpfast_target", module_name)
        if spec is None or spec.loader is None:
            raise SystemExit(f"cannot load {module_name}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    found = getattr(module, attribute or "server")
    if not isinstance(found, Server):
        raise SystemExit(f"{target} is not an mcpfast.Server")
    return found


def _serve(args: argparse.Namespace) -> int:
    server = load_target(args.target)
    if args.stdio:
        from .server.stdio import serve_stdio

        trio.run(serve_stdio, server)
        return 0
    config = Config(
        host=args.host, port=args.port, path=args.path, workers=args.workers, engine=args.engine
    )
    url = f"http://{args.host}:{args.port}{args.path}"
    print(f"mcpfast: serving {server.info.name} at {url}", file=sys.stderr)
    print(_curl_hint(url), file=sys.stderr)
    if args.workers > 1:
        from .server.workers import run_workers

        run_workers(args.target, config)
        return 0
    from .server.serve import serve, until_signal

    trio.run(partial(serve, server, config, shutdown_trigger=until_signal))
    return 0


def _curl_hint(url: str) -> str:
    return (
        "try it:\n"
        f"  curl -s {url} -H 'content-type: application/json' "
        "-H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2026-07-28' "
        "-H 'mcp-method: tools/call' -H 'mcp-name: echo' "
        '-d \'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
        '"arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":'
        '"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}\''
    )


def _target(args: argparse.Namespace) -> str | list[str]:
    if args.stdio:
        return shlex.split(args.stdio)
    if not args.url:
        raise SystemExit("give a URL or --stdio COMMAND")
    return str(args.url)


def _value(text: str) -> Any:
    """A ``key=value`` value: JSON when it parses (numbers, booleans, objects), else text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


async def _inspect(args: argparse.Namespace) -> int:
    async with connect(_target(args), args.era, timeout=args.timeout) as client:
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
    return 0


async def _call(args: argparse.Namespace) -> int:
    arguments = {}
    for pair in args.arguments:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"arguments are key=value, got {pair!r}")
        arguments[key] = _value(value)
    async with connect(_target(args), args.era, timeout=args.timeout) as client:
        await client.list_tools()
        result = await client.call_tool(args.tool, arguments)
    for block in result.content:
        text = getattr(block, "text", None)
        print(text if isinstance(text, str) else json.dumps(msgspec.to_builtins(block)))
    if result.structuredContent is not msgspec.UNSET and args.json:
        print(json.dumps(result.structuredContent))
    return 1 if result.isError else 0


def _client_command(args: argparse.Namespace, run: Any) -> int:
    try:
        return int(trio.run(run, args))
    except (MCPError, TransportError) as exc:
        print(f"mcpfast: {exc}", file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mcpfast", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve an mcpfast Server (the demo by default)")
    serve.add_argument("target", nargs="?", help="module:attribute of a Server")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--path", default="/mcp")
    serve.add_argument("--workers", type=int, default=1)
    serve.add_argument(
        "--engine",
        choices=("hypercorn", "native"),
        default="hypercorn",
        help="HTTP engine: Hypercorn's Trio worker (default) or mcpfast's own HTTP/1.1 on Trio",
    )
    serve.add_argument("--stdio", action="store_true", help="serve over stdin/stdout")
    for name, text in (
        ("inspect", "show a server's era, version, info, capabilities and tools"),
        ("call", "call a tool and print its result (exit 1 on a tool error)"),
    ):
        sub = commands.add_parser(name, help=text)
        sub.add_argument("url", nargs="?", help="the server's URL")
        sub.add_argument("--stdio", metavar="COMMAND", help="spawn this server command instead")
        sub.add_argument("--era", choices=("auto", "modern", "legacy"), default="auto")
        sub.add_argument("--timeout", type=float, default=30.0)
        if name == "call":
            sub.add_argument("tool")
            sub.add_argument("arguments", nargs="*", metavar="key=value")
            sub.add_argument("--json", action="store_true", help="also print structuredContent")
    from .load.runner import add_arguments as add_load_arguments

    load = commands.add_parser("load", help="load-test a server with locust (mcpfast[load])")
    add_load_arguments(load)
    args: Any = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "load":
        from .load.runner import run as run_load

        return run_load(args)
    if (
        args.command == "call"
        and args.url
        and not args.url.startswith(("http://", "https://"))
        and args.stdio
    ):
        args.arguments.insert(0, args.tool)
        args.tool, args.url = args.url, None
    return _client_command(args, _inspect if args.command == "inspect" else _call)


if __name__ == "__main__":
    raise SystemExit(main())
