"""The ``mcpfast`` client command lines of the pages run as written against the server each page
is about (only the port changes): the demo for Clients and Stdio, the weather example for
Getting started. Each must exit 0, print something and no traceback."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import pytest
import trio

from ..e2e.processes import free_port, mcpfast_command, server_process
from ..helpers import REPO
from .blocks import DOCS, blocks, commands

CLIENT_COMMANDS = ("inspect", "call", "read", "prompt")
SERVERS = {
    "clients.md": [],
    "stdio.md": [],
    "getting-started.md": ["examples/weather/server.py:server"],
}
"""Each page and the ``mcpfast serve`` target its lines are about (none: the demo)."""


def _lines(page: str) -> list[list[str]]:
    found = []
    for block in blocks(DOCS / page):
        if block.language in ("bash", "sh"):
            found += [w for w in commands(block.code) if w[:1] == ["mcpfast"]]
    return [w for w in found if len(w) > 1 and w[1] in CLIENT_COMMANDS]


@pytest.mark.timeout(180)  # a process per line
@pytest.mark.slow  # a server on loopback, the CLI in processes of its own
@pytest.mark.parametrize("page", sorted(SERVERS))
async def test_client_lines_run(page: str) -> None:
    lines = _lines(page)
    assert lines, page
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "python"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    serve = mcpfast_command("serve", *SERVERS[page], "--port", str(port))
    async with server_process(serve, port, cwd=REPO):
        for words in lines:
            argv = [w.replace(":8000/", f":{port}/") for w in words]
            with trio.fail_after(60):
                run = await trio.run_process(
                    argv, env=env, cwd=REPO, capture_stdout=True, capture_stderr=True,
                    check=False, stdin=b"",
                )  # fmt: skip
            stdout, stderr = run.stdout.decode(), run.stderr.decode()
            line = shlex.join(words)
            assert run.returncode == 0, (page, line, stderr[-2000:])
            assert "Traceback" not in stderr and stdout.strip(), (page, line)
