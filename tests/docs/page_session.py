"""Run one page's Python blocks as a reader would type them into one session, in order and in
one namespace (``python page_session.py BLOCKS.json``):

- a block with a top-level ``await`` / ``async with`` is awaited on Trio (as in Trio's REPL,
  ``python -m trio``); any other runs on a worker thread, so it may block or call ``trio.run``;
- ``__name__`` is not ``"__main__"``: a script's ``if __name__ == "__main__":`` part (serving
  forever on a fixed port) is the reader's to run, and runs in tests/examples instead;
- each block that names ``url`` (unless the page set ``url`` itself) gets the page's ``server``
  as declared so far (or, on a page that defines none, the demo server ``mcpfast serve``
  serves) served afresh on a free loopback port, with ``url`` its MCP URL (the pages say "your
  server's URL"): a server is declared, then served.

Prints ``ok N`` after the Nth block; a failing block raises (the traceback names it)."""

from __future__ import annotations

import ast
import inspect
import json
import re
import sys
from typing import Any

import trio

import mcpfast
from mcpfast import demo


async def main(blocks: list[str]) -> None:
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    async with trio.open_nursery() as nursery:
        serving: trio.CancelScope | None = None
        for index, code in enumerate(blocks, 1):
            if re.search(r"\burl\b", code) and (serving or "url" not in namespace):
                if serving is not None:
                    serving.cancel()
                serving, namespace["url"] = await nursery.start(_serve, namespace)
            compiled = compile(
                code, f"<block {index}>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
            )
            if compiled.co_flags & inspect.CO_COROUTINE:
                await eval(compiled, namespace)
            else:
                await trio.to_thread.run_sync(exec, compiled, namespace)
            print("ok", index, flush=True)
        nursery.cancel_scope.cancel()


async def _serve(
    namespace: dict[str, Any],
    *,
    task_status: trio.TaskStatus[tuple[trio.CancelScope, str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the page's ``server`` as declared so far (else the demo's) until cancelled."""
    config = mcpfast.Config(host="127.0.0.1", port=0)
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            server = namespace.get("server") or demo.server
            urls = await nursery.start(mcpfast.serve, server, config)
            task_status.started((scope, urls[0] + config.path))


if __name__ == "__main__":
    with open(sys.argv[1]) as file:
        trio.run(main, json.load(file))
