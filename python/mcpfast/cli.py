"""The ``mcpfast`` command: ``serve`` a server (the demo by default) over HTTP or stdio."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

import trio

from .server import Config, Server


def load_target(target: str | None) -> Server:
    """``module:attribute`` (or ``path/to/file.py:attribute``) naming a `Server`; the demo if None."""
    if target is None:
        from .demo import server

        return server
    module_name, _, attribute = target.partition(":")
    if module_name.endswith(".py"):
        import importlib.util

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
    config = Config(host=args.host, port=args.port, path=args.path, workers=args.workers)
    url = f"http://{args.host}:{args.port}{args.path}"
    print(f"mcpfast: serving {server.info.name} at {url}", file=sys.stderr)
    print(_curl_hint(url), file=sys.stderr)
    if args.workers > 1:
        from .server.workers import run_workers

        run_workers(args.target, config)
        return 0
    from .server.serve import serve

    trio.run(serve, server, config)
    return 0


def _curl_hint(url: str) -> str:
    return (
        "try it:\n"
        f"  curl -s {url} -H 'content-type: application/json' "
        "-H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2026-07-28' "
        "-H 'mcp-method: tools/call' -H 'mcp-name: echo' "
        "-d '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
        "\"arguments\":{\"text\":\"hello\"},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
        "\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}'"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mcpfast", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve an mcpfast Server (the demo by default)")
    serve.add_argument("target", nargs="?", help="module:attribute of a Server")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--path", default="/mcp")
    serve.add_argument("--workers", type=int, default=1)
    serve.add_argument("--stdio", action="store_true", help="serve over stdin/stdout")
    args: Any = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
