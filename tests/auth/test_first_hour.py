"""The first hour with authorization, as a new user meets it (issue 29): the manual's quick
start (docs/authorization.md, "Protecting a server") run as written (only the ports change), a kept token reused without a browser and with
``--no-login`` (refreshed once expired), a ``$BROWSER`` that waits for its process not holding
the login, and the 403 naming the scope the token lacks. The CLI in its own process; the MCP
server on the engine under test."""

from __future__ import annotations

import errno
import json
import os
import re
import shlex
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path

import httpx2
import pytest
import trio

from mcpfast.cli.exits import Exit

from ..e2e.processes import cli, failure, free_port, started_process
from ..helpers import ENGINE, meta
from ..manual import block, page, section
from .test_cli_auth import browser, protected

pytestmark = pytest.mark.slow

AUTHORIZATION = page("authorization.md")
BIN = Path(sys.executable).parent


def _quick_start() -> tuple[str, str]:
    """The "Protecting a server" example and the quick start's commands."""
    server = block(AUTHORIZATION, "## Protecting a server", "python")
    start = section(AUTHORIZATION, "## Protecting a server")
    return server, block(start, "Quick start:", "bash")


async def test_the_authorization_quick_start_runs_as_written(tmp_path: Path) -> None:
    server, commands = _quick_start()
    ports = {"9000": str(free_port()), "8000": str(free_port())}

    def ported(text: str) -> str:
        return re.sub(r"\b(9000|8000)\b", lambda m: ports[m.group(1)], text)

    engine = f"mcpfast.Config(engine={ENGINE!r}, "
    (tmp_path / "files.py").write_text(ported(server).replace("mcpfast.Config(", engine))
    opener, log = browser(tmp_path, "browser")
    env = {
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "MCPFAST_STATE_DIR": str(tmp_path / "state"),
    }
    lines = [line.split("  #")[0].strip() for line in ported(commands).splitlines()]
    assert len(lines) == 4 and lines[2].endswith("save path=notes.txt"), lines
    async with AsyncExitStack() as stack:
        for line, port in zip(lines[:2], (ports["9000"], ports["8000"]), strict=True):
            assert line.endswith(" &"), line
            argv = shlex.split(line.removesuffix(" &"))
            await stack.enter_async_context(started_process(argv, int(port), env, tmp_path))
        for line in lines[2:]:
            assert line.startswith("mcpfast "), line
            with trio.fail_after(90):
                run = await cli(*shlex.split(line)[1:], BROWSER=str(opener), **env)
            assert run.returncode == 0, (line, run.stderr)
            assert run.stdout == "dev-user saved notes.txt\n", (line, run.stderr)
    opened = log.read_text().count("/authorize?")
    assert opened == 2, log.read_text()  # the login, then the tool's scope: none with --no-login


async def test_a_kept_token_is_used_without_a_browser_and_refreshed(tmp_path: Path) -> None:
    state = {"MCPFAST_STATE_DIR": str(tmp_path / "state")}
    tokens = tmp_path / "state" / "tokens.json"
    opener, log = browser(tmp_path, "browser")
    async with protected(scopes=("mcp", "files:write", "offline_access")) as (dev, url):
        nothing = await cli("call", url, "whoami", "--no-login", **state)
        assert nothing.returncode == Exit.NOT_AUTHORIZED and "401" in failure(nothing)
        registered = len(dev.clients())
        with trio.fail_after(60):
            login = await cli("call", url, "whoami", BROWSER=str(opener), **state)
        assert login.returncode == 0, login.stderr
        assert len(dev.clients()) == registered + 1  # the login registered once
        kept = json.loads(tokens.read_text())
        first = kept["tokens"][url]
        assert first["refresh_token"]
        for flags in (["--no-login"], []):  # --no-login; no browser at all
            again = await cli("call", url, "whoami", *flags, **state)
            assert again.returncode == 0, again.stderr
            assert json.loads(again.stdout)["subject"] == "dev-user"
        assert json.loads(tokens.read_text())["tokens"][url] == first  # no new token
        first["expires_at"] = time.time() - 60  # expired: refreshed, then used
        tokens.write_text(json.dumps(kept))
        refreshed = await cli("call", url, "whoami", "--no-login", **state)
        assert refreshed.returncode == 0, refreshed.stderr
        renewed = json.loads(tokens.read_text())["tokens"][url]
        assert renewed["access_token"] != first["access_token"]
        assert renewed["expires_at"] > time.time()
        renewed.update(access_token="forged", refresh_token="spent")  # refused, and no refresh
        tokens.write_text(json.dumps({**kept, "tokens": {url: renewed}}))
        refused = await cli("call", url, "whoami", "--no-login", **state)
        assert refused.returncode == Exit.NOT_AUTHORIZED, refused.stderr
        assert "a login is needed" in failure(refused) and "--no-login" in failure(refused)
        assert len(dev.clients()) == registered + 1 and log.read_text().count("/authorize?") == 1


BLOCKING_BROWSERS = {
    # fetches the URL (the redirects, as a browser would), then waits until the test lets go
    "fetches, then waits": "{fetch}\ncat {fifo} > /dev/null\n",
    # waits a moment, then fetches the URL in the foreground (the login listens meanwhile)
    "waits, then fetches": "sleep 1\n{fetch}\n",
}


@pytest.mark.parametrize("behaviour", sorted(BLOCKING_BROWSERS))
async def test_a_browser_that_waits_for_its_process_does_not_hold_the_login(
    tmp_path: Path, behaviour: str
) -> None:
    fifo = tmp_path / "release"
    os.mkfifo(fifo)
    fetch = (
        f"{sys.executable} -c 'import sys, urllib.request; "
        'urllib.request.urlopen(sys.argv[1], timeout=20).read()\' "$1"'
    )
    script = tmp_path / "browser.sh"
    body = BLOCKING_BROWSERS[behaviour].format(fetch=fetch, fifo=fifo)
    log = tmp_path / "browser.log"  # not the command's stdout: the test reads it to its end
    script.write_text(f"#!/bin/sh\nexec >>{log} 2>&1\n{body}")
    script.chmod(0o755)
    state = str(tmp_path / "state")
    try:
        async with protected() as (_, url):
            started = time.monotonic()
            called = await cli("call", url, "whoami", BROWSER=str(script), MCPFAST_STATE_DIR=state)
            assert called.returncode == 0, called.stderr
            assert json.loads(called.stdout)["subject"] == "dev-user"
            assert time.monotonic() - started < 30
    finally:
        _release(fifo)


def _release(fifo: Path) -> None:
    """Let a browser script blocked on ``fifo`` finish (nothing when none reads it)."""
    try:
        descriptor = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        assert exc.errno == errno.ENXIO  # no reader: the script did not block there
        return
    os.close(descriptor)


async def test_the_403_names_the_scope_the_token_lacks() -> None:
    async with protected() as (dev, url):
        token = dev.mint("alice", scope="mcp", audience=url)
        body = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "save", "arguments": {"path": "a"}, "_meta": meta()},
        }
        headers = {
            "authorization": f"Bearer {token}",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": "save",
            "accept": "application/json, text/event-stream",
        }
        async with httpx2.AsyncClient(timeout=10) as http:
            reply = await http.post(url, json=body, headers=headers)
        assert reply.status_code == 403
        challenge = reply.headers.get_list("www-authenticate")[0]
        assert 'scope="files:write mcp"' in challenge
        assert 'error_description="the token lacks the scope files:write"' in challenge
        error = reply.json()["error"]
        assert error["message"] == "Forbidden: the token lacks the scope files:write"
        assert error["data"]["requiredScopes"] == ["files:write", "mcp"]
        called = await cli("call", url, "save", "path=a", "--bearer-env", "T", T=token)
        assert called.returncode == Exit.NOT_AUTHORIZED
        assert "lacks the scope files:write" in failure(called)
