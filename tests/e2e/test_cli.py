"""The `mcpfast` command as a user runs it: serve, inspect, call (HTTP and stdio); its failures
(one line on stderr and an exit code from `mcpfast.cli.exits.Exit`), elicitations and progress."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve as hypercorn_serve

import mcpfast
from mcpfast.cli.exits import Exit
from mcpfast.cli.values import convert
from mcpfast.demo import server as demo_server

from ..helpers import DEMO_TOOLS, REPO, TEST_KEYS, meta, running
from .processes import free_port, mcpfast_command, server_process


def run(*args: str, stdin: int | None = subprocess.DEVNULL) -> subprocess.CompletedProcess[str]:
    """``mcpfast ARGS`` in its own process (stdin is not a terminal unless given one)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    return subprocess.run(
        mcpfast_command(*args), capture_output=True, text=True, env=env, timeout=60, stdin=stdin
    )


async def run_async(*args: str) -> subprocess.CompletedProcess[str]:
    return await trio.to_thread.run_sync(lambda: run(*args))


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    """The single ``mcpfast: ...`` line a failure prints (no traceback)."""
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("mcpfast: ")]
    assert len(lines) == 1, result.stderr
    return lines[0]


async def test_serve_answers_the_readme_curl_then_inspect_and_call() -> None:
    port = free_port()
    async with server_process(mcpfast_command("serve", "--port", str(port)), port) as url:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hello"}, "_meta": meta()},
        }
        headers = {
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": "echo",
        }
        async with httpx2.AsyncClient() as client:
            response = await client.post(url, json=body, headers=headers)
        assert response.json()["result"]["content"] == [{"type": "text", "text": "hello"}]
        inspected = await run_async("inspect", url)
        report = json.loads(inspected.stdout)
        assert report["era"] == "modern" and report["serverInfo"]["name"] == "mcpfast-demo"
        assert {t["name"] for t in report["tools"]} == DEMO_TOOLS
        legacy = await run_async("inspect", "--era", "legacy", url)
        assert json.loads(legacy.stdout)["protocolVersion"] == "2025-11-25"
        added = await run_async("call", url, "add", "a=2", "b=40")
        assert added.returncode == 0 and json.loads(added.stdout) == {"result": 42}
        failed = await run_async("call", url, "add", "--json", '{"a": "x", "b": 1}')
        assert failed.returncode == Exit.TOOL_ERROR and "$.a" in failed.stdout
        unknown = await run_async("call", url, "nope")
        assert unknown.returncode == Exit.USAGE and "Unknown tool" in one_line(unknown)


def test_call_over_stdio() -> None:
    server = f"{sys.executable} -m mcpfast serve --stdio"
    result = run("call", "--stdio", server, "echo", "text=over stdio")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "over stdio"


def test_help_shows_the_exit_codes() -> None:
    shown = run("--help").stdout
    assert "exit codes:" in shown
    for code in Exit:
        assert f"  {code.value:<4} " in shown


# ----------------------------------------------------------------------------------- timeouts


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_a_call_that_outlasts_the_timeout_is_exit_4(demo_url: str, era: str) -> None:
    result = await run_async("call", "--era", era, "--timeout", "1", demo_url, "slow", "steps=50")
    assert result.returncode == Exit.TIMEOUT
    assert "--timeout 1s" in one_line(result) and "slow" in one_line(result)


@contextmanager
def silent_listener() -> Iterator[str]:
    """A URL whose port accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"


@pytest.mark.parametrize("era", ["auto", "modern", "legacy"])
async def test_inspect_of_a_server_that_never_answers_is_exit_4(era: str) -> None:
    with silent_listener() as url:
        with trio.fail_after(20):
            result = await run_async("inspect", "--era", era, "--timeout", "1", url)
    assert result.returncode == Exit.TIMEOUT
    assert "--timeout 1s" in one_line(result)


# --------------------------------------------------------------------------------- connections


async def test_https_to_a_plain_http_server_names_the_cause(demo_url: str) -> None:
    """Both engines answer a TLS handshake with a plain 400 at once (the native engine, too,
    no longer waits for a blank line that never comes)."""
    url = demo_url.replace("http://", "https://")
    for era in ("auto", "modern", "legacy"):
        with trio.fail_after(15):
            result = await run_async("call", "--era", era, url, "echo", "text=x")
        assert result.returncode == Exit.CONNECTION, era
        assert "the server speaks plain HTTP, use http://" in one_line(result)


async def test_connection_refused_is_exit_3() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    result = await run_async("call", url, "echo", "text=x")
    assert result.returncode == Exit.CONNECTION
    assert f"cannot reach {url}: connection refused" in one_line(result)


@pytest.mark.parametrize("url", ["ftp://example.com/mcp", "127.0.0.1:8000/mcp", "http://", "x"])
def test_a_bad_url_is_a_usage_error(url: str) -> None:
    result = run("call", url, "echo", "text=x")
    assert result.returncode == Exit.USAGE
    assert f"not an http:// or https:// URL: {url!r}" in one_line(result)


# ---------------------------------------------------------------------------------- elicitation


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_answer_flags_answer_an_elicitation(demo_url: str, era: str, tmp_path: Path) -> None:
    flagged = await run_async("call", "--era", era, demo_url, "greet", "--answer", "name=Ada")
    assert flagged.returncode == 0, flagged.stderr
    assert flagged.stdout.strip() == "Hello, Ada!"
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"name": "Grace"}))
    filed = await run_async("call", "--era", era, demo_url, "greet", "--answer-file", str(answers))
    assert filed.returncode == 0, filed.stderr
    assert filed.stdout.strip() == "Hello, Grace!"


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_an_elicitation_nobody_can_answer_is_exit_5(demo_url: str, era: str) -> None:
    with trio.fail_after(20):
        result = await run_async("call", "--era", era, demo_url, "greet")
    assert result.returncode == Exit.INPUT_REQUIRED
    line = one_line(result)
    assert "What is your name?" in line and "--answer name=VALUE" in line
    assert "--answer-file" in line and result.stdout == ""


def run_on_terminal(typed: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``mcpfast ARGS`` with a pseudo-terminal as stdin, on which ``typed`` was typed."""
    main, terminal = os.openpty()
    try:
        os.write(main, typed.encode())
        return run(*args, stdin=terminal)
    finally:
        os.close(terminal)
        os.close(main)


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_an_elicitation_is_asked_on_the_terminal(demo_url: str, era: str) -> None:
    call = ("call", "--era", era, demo_url, "greet")
    accepted = await trio.to_thread.run_sync(lambda: run_on_terminal("a\nAda Lovelace\n", *call))
    assert accepted.returncode == 0, accepted.stderr
    assert accepted.stdout.strip() == "Hello, Ada Lovelace!"
    assert "the server asks: What is your name?" in accepted.stderr
    assert "name (string, required): " in accepted.stderr
    declined = await trio.to_thread.run_sync(lambda: run_on_terminal("d\n", *call))
    assert declined.returncode == 0, declined.stderr
    assert declined.stdout.strip() == "No name given."


# ------------------------------------------------------------------------------------ progress


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_call_shows_progress_on_stderr(demo_url: str, era: str) -> None:
    result = await run_async("call", "--era", era, demo_url, "slow", "steps=3", "delay=0.01")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "done after 3 steps"
    shown = [line for line in result.stderr.splitlines() if line.startswith("progress ")]
    assert shown == [f"progress {i}/3 step {i} of 3" for i in (1, 2, 3)]


# --------------------------------------------------------------------------- inspect --era modern


async def test_inspect_modern_discovers_the_server(demo_url: str) -> None:
    result = await run_async("inspect", "--era", "modern", demo_url)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["era"] == "modern" and report["serverInfo"]["name"] == "mcpfast-demo"
    assert "tools" in report["capabilities"] and report["instructions"]
    assert {t["name"] for t in report["tools"]} == {
        "echo",
        "add",
        "slow",
        "greet",
        "touch",
        "clock",
    }


LEGACY_ONLY = r"""
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        out = {"result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                          "serverInfo": {"name": "old", "version": "1"}}}
    elif msg["method"] == "tools/list":
        out = {"result": {"tools": []}}
    else:
        out = {"error": {"code": -32601, "message": "Method not found"}}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], **out}), flush=True)
"""


def test_inspect_modern_of_a_legacy_only_server_fails_clearly(tmp_path: Path) -> None:
    script = tmp_path / "legacy_only.py"
    script.write_text(LEGACY_ONLY)
    command = f"{sys.executable} {script}"
    result = run("inspect", "--era", "modern", "--stdio", command)
    assert result.returncode == Exit.USAGE
    line = one_line(result)
    assert "does not speak 2026-07-28" in line and "--era legacy" in line
    assert json.loads(run("inspect", "--stdio", command).stdout)["era"] == "legacy"


class LegacyOnly:
    """The demo as a server of the 2025 revisions only: a ``server/discover`` POST (no
    session) is refused as such servers do, with a 400."""

    def __init__(self) -> None:
        self.inner = mcpfast.asgi_app(demo_server, keys=TEST_KEYS)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and (b"mcp-method", b"server/discover") in scope["headers"]:
            while (await receive()).get("more_body"):
                pass
            await send({"type": "http.response.start", "status": 400, "headers": []})
            await send({"type": "http.response.body", "body": b"Bad Request: no session id"})
            return
        await self.inner(scope, receive, send)


async def test_inspect_modern_of_a_legacy_only_http_server_fails_clearly() -> None:
    config = HypercornConfig()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    app: Any = LegacyOnly()
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(partial(hypercorn_serve, app, config))
        url = urls[0] + "/mcp"
        result = await run_async("inspect", "--era", "modern", url)
        assert result.returncode == Exit.USAGE
        line = one_line(result)
        assert "does not speak 2026-07-28" in line and "HTTP 400" in line
        assert json.loads((await run_async("inspect", url)).stdout)["era"] == "legacy"
        nursery.cancel_scope.cancel()


def asking_server() -> mcpfast.Server:
    """Tools that need what mcpfast call cannot give: sampling, roots."""
    server = mcpfast.Server("asking")

    @server.tool()
    async def summarize(ctx: mcpfast.Context) -> str:
        reply = await ctx.sample("Summarize: mcpfast")
        return str(reply)

    @server.tool()
    async def roots(ctx: mcpfast.Context) -> str:
        return str(await ctx.list_roots())

    return server


@pytest.mark.parametrize("tool", ["summarize", "roots"])
async def test_sampling_and_roots_cannot_be_answered(tool: str) -> None:
    """Under 2026-07-28 the server answers -32021 (exit 5, naming the capability); a legacy
    session's tool returns an error result in words (exit 1), as the server decides."""
    capability = "sampling" if tool == "summarize" else "roots"
    async with running(asking_server()) as url:
        modern = await run_async("call", "--era", "modern", url, tool)
        legacy = await run_async("call", "--era", "legacy", url, tool)
    assert modern.returncode == Exit.INPUT_REQUIRED
    assert f"the server needs {capability} from the client" in one_line(modern)
    assert legacy.returncode == Exit.TOOL_ERROR, legacy.stderr
    assert capability in legacy.stdout


@pytest.mark.parametrize(
    ("text", "prop", "value"),
    [
        ("Ada", {"type": "string"}, "Ada"),
        ("42", {"type": "integer"}, 42),
        ("-1.5", {"type": "number"}, -1.5),
        ("7", {"type": "number"}, 7),
        ("yes", {"type": "boolean"}, True),
        ("off", {"type": "boolean"}, False),
        ("b", {"type": "string", "enum": ["a", "b"]}, "b"),
        ("x, y", {"type": "array", "items": {"enum": ["x", "y", "z"]}}, ["x", "y"]),
        ('{"k": 1}', None, {"k": 1}),
    ],
)
def test_typed_answers_take_the_schema_type(text: str, prop: dict[str, Any], value: Any) -> None:
    assert convert(text, prop) == value


@pytest.mark.parametrize(
    ("text", "prop", "said"),
    [
        ("many", {"type": "integer"}, "expected an integer"),
        ("maybe", {"type": "boolean"}, "expected yes or no"),
        ("c", {"type": "string", "oneOf": [{"const": "a"}, {"const": "b"}]}, "one of a, b"),
    ],
)
def test_an_answer_of_the_wrong_type_says_what_is_expected(
    text: str, prop: dict[str, Any], said: str
) -> None:
    with pytest.raises(ValueError, match=said):
        convert(text, prop)


async def test_a_bad_answer_flag_is_a_usage_error() -> None:
    server = mcpfast.Server("typed")

    @server.tool()
    async def age(ctx: mcpfast.Context) -> str:
        schema = {"type": "object", "properties": {"age": {"type": "integer"}}}
        return str(await ctx.elicit("Your age?", schema))

    async with running(server) as url:
        result = await run_async("call", url, "age", "--answer", "age=old")
        good = await run_async("call", url, "age", "--answer", "age=36")
    assert result.returncode == Exit.USAGE
    assert "--answer age: expected an integer, got 'old'" in one_line(result)
    assert good.returncode == 0 and "'age': 36" in good.stdout
