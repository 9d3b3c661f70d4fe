"""The client honours refusals (issue 27), through the real stack: a real mcpfast endpoint on
loopback behind a stand-in that refuses some calls its own way (a hostile ``Retry-After``
among them), a real rate-limited server on both engines, ``mcpfast call``'s one line and exit
code, and the client's own timeout giving a request up at the server, in both eras."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

import mcpfast
from mcpfast.cli.exits import Exit
from mcpfast.client import EraCache
from mcpfast.client.connect import EraChoice
from mcpfast.errors import RateLimited
from mcpfast.protocol.retries import RetryPolicy
from mcpfast.server.config import Config
from mcpfast.server.core.endpoint import Endpoint
from mcpfast.server.engines.asgi import App

from ..helpers import TEST_KEYS, read_body, replay, running, serving
from .processes import mcpfast_command

ERAS: list[EraChoice] = ["modern", "legacy"]
ENGINES = ["hypercorn", "native"]


def build() -> mcpfast.Server:
    server = mcpfast.Server("refused", "1.0")

    @server.tool(annotations={"readOnlyHint": True})
    def lookup(key: str) -> str:
        return f"value of {key}"

    @server.tool()
    def send(to: str) -> str:
        return f"sent to {to}"

    return server


class Refusing:
    """A real endpoint for `build`'s server; the first ``refusals`` calls of each tool are
    answered ``status`` with ``headers`` and a -32023 error carrying ``data`` instead. Counts
    the calls that reach it."""

    def __init__(
        self, refusals: int, status: int, headers: list[tuple[bytes, bytes]], data: dict[str, Any]
    ) -> None:
        self.inner = App(Endpoint(build(), Config(), TEST_KEYS))
        self.left: dict[str, int] = {}
        self.refusals, self.status, self.headers, self.data = refusals, status, headers, data
        self.calls: dict[str, int] = {}
        """Calls of each tool, refused or not."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.inner(scope, receive, send)
            return
        body = await read_body(receive)
        message = json.loads(body)
        name = message.get("params", {}).get("name") if isinstance(message, dict) else None
        if message.get("method") != "tools/call" or not isinstance(name, str):
            await self.inner(scope, replay(body, receive), send)
            return
        self.calls[name] = self.calls.get(name, 0) + 1
        if self.calls[name] > self.refusals:
            await self.inner(scope, replay(body, receive), send)
            return
        error = {"code": -32023, "message": "Rate limit exceeded", "data": self.data}
        out = json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}).encode()
        headers = [(b"content-type", b"application/json"), *self.headers]
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": out})


@asynccontextmanager
async def refusing(app: Refusing, era: EraChoice, **options: Any) -> AsyncIterator[mcpfast.Client]:
    async with (
        serving(app) as base,
        mcpfast.connect(base + "/mcp", era, era_cache=EraCache(), **options) as client,
    ):
        await client.list_tools()  # what the client knows of the tools' annotations
        yield client


@pytest.mark.parametrize("era", ERAS)
async def test_a_read_only_tool_is_called_again_after_its_wait(era: EraChoice) -> None:
    app = Refusing(2, 429, [(b"retry-after", b"1")], {"retryAfterMs": 50, "limit": 5})
    async with refusing(app, era) as client:
        with trio.fail_after(10):
            started = trio.current_time()
            result = await client.call_tool("lookup", {"key": "k"})
            took = trio.current_time() - started
    assert result.content[0].text == "value of k"  # type: ignore[union-attr]
    assert app.calls == {"lookup": 3}
    assert 0.1 <= took < 2.0  # two waits of retryAfterMs (50 ms) plus jitter, not Retry-After


@pytest.mark.parametrize("era", ERAS)
async def test_a_plain_tool_is_not_called_again(era: EraChoice) -> None:
    data = {"retryAfterMs": 2000, "limit": 10, "remaining": 0, "reason": "rate"}
    app = Refusing(1, 429, [(b"retry-after", b"2")], data)
    async with refusing(app, era) as client:
        with trio.fail_after(10), pytest.raises(RateLimited) as caught:
            await client.call_tool("send", {"to": "x"})
        assert app.calls == {"send": 1}
        assert (caught.value.retry_after_ms, caught.value.limit) == (2000, 10)
        assert (caught.value.remaining, caught.value.http_status) == (0, 429)
        result = await client.call_tool("send", {"to": "x"})  # the caller's own retry
    assert result.content[0].text == "sent to x"  # type: ignore[union-attr]


@pytest.mark.parametrize("era", ERAS)
async def test_a_hostile_retry_after_cannot_hold_the_client(era: EraChoice) -> None:
    """A server asking for 999999 s (and as many ms) is answered at once with its refusal:
    waiting that long is past the retry budget (30 s by default), so it is not waited for."""
    app = Refusing(10**6, 429, [(b"retry-after", b"999999")], {"retryAfterMs": 999_999_000})
    async with refusing(app, era) as client:
        with trio.fail_after(2), pytest.raises(RateLimited) as caught:
            await client.call_tool("lookup", {"key": "k"})
    assert caught.value.retry_after_ms == 999_999_000
    assert app.calls == {"lookup": 1}


async def test_retries_stop_at_the_attempt_cap_and_a_503_is_a_refusal_too() -> None:
    app = Refusing(10**6, 503, [(b"retry-after", b"1")], {"retryAfterMs": 10, "reason": "x"})
    async with refusing(app, "modern", retry=RetryPolicy(attempts=2)) as client:
        with trio.fail_after(10), pytest.raises(RateLimited) as caught:
            await client.call_tool("lookup", {"key": "k"})
    assert (caught.value.http_status, caught.value.reason) == (503, "x")
    assert app.calls == {"lookup": 3}  # the first, then two retries


# ------------------------------------------------------------- the client's own timeout


@pytest.mark.parametrize("era", ERAS)
async def test_the_clients_timeout_gives_the_request_up_at_the_server(era: EraChoice) -> None:
    """Legacy: ``notifications/cancelled`` (a dropped connection is no cancellation there);
    2026-07-28: the closed response stream is the cancellation. Either way the handler ends."""
    server = mcpfast.Server("timeout", "1.0")
    started, cancelled = trio.Event(), trio.Event()

    @server.tool()
    async def block() -> str:
        started.set()
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()
        raise AssertionError("unreachable")

    async with (
        running(server) as url,
        mcpfast.connect(url, era, timeout=1, era_cache=EraCache()) as client,
    ):
        with pytest.raises(trio.TooSlowError):
            await client.call_tool("block")
        assert started.is_set()
        with trio.fail_after(5):
            await cancelled.wait()


# ------------------------------------------------------------------ a real server's limits


def limited() -> tuple[mcpfast.Server, dict[str, int]]:
    """``lookup`` (read-only) once a second, ``send`` once a minute; how often each ran."""
    server = mcpfast.Server("limited", "1.0")
    ran = {"lookup": 0, "send": 0}

    @server.tool(annotations={"readOnlyHint": True}, rate_limit="1/s burst=1")
    def lookup(key: str) -> str:
        ran["lookup"] += 1
        return f"value of {key}"

    @server.tool(rate_limit="1/min")
    def send(to: str) -> str:
        ran["send"] += 1
        return f"sent to {to}"

    return server, ran


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("era", ERAS)
async def test_a_real_limit_is_waited_out_for_a_read_only_tool_only(
    engine: str, era: EraChoice, caplog: pytest.LogCaptureFixture
) -> None:
    server, ran = limited()
    caplog.set_level(logging.INFO, "mcpfast.client")
    async with (
        running(server, engine=engine) as url,
        mcpfast.connect(url, era, era_cache=EraCache()) as client,
    ):
        await client.list_tools()
        with trio.fail_after(15):
            for i in range(3):  # back to back: the 2nd and 3rd are refused, then sent again
                result = await client.call_tool("lookup", {"key": str(i)})
                assert result.content[0].text == f"value of {i}"  # type: ignore[union-attr]
        assert ran["lookup"] == 3
        assert sum("tools/call refused (rate)" in r.getMessage() for r in caplog.records) >= 2
        await client.call_tool("send", {"to": "a"})
        with trio.fail_after(5), pytest.raises(RateLimited) as caught:
            await client.call_tool("send", {"to": "b"})
    assert ran["send"] == 1
    refused = caught.value
    assert (refused.reason, refused.http_status, refused.limit, refused.remaining) == (
        "rate",
        429,
        1,
        0,
    )
    assert 0 < refused.retry_after_ms <= 60_000


# ----------------------------------------------------------------------------- the CLI


@pytest.mark.parametrize("era", ERAS)
async def test_the_cli_says_a_refusal_in_one_line_with_its_own_exit_code(era: str) -> None:
    server, ran = limited()
    async with running(server) as url:
        first = await _cli("call", "--era", era, url, "send", "to=a")
        assert first.returncode == Exit.OK, first.stderr
        refused = await _cli("call", "--era", era, url, "send", "to=b")
    assert refused.returncode == Exit.RATE_LIMITED and int(Exit.RATE_LIMITED) == 8
    assert "Traceback" not in refused.stderr
    (line,) = [ln for ln in refused.stderr.splitlines() if ln.startswith("mcpfast: ")]
    assert re.fullmatch(
        r"mcpfast: rate limited by the server: retry after \d+ s \(limit 1, 0 left\) \(.*send.*\)",
        line,
    ), line
    assert ran["send"] == 1


async def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(mcpfast.__file__).parents[1])}
    command = mcpfast_command(*args)
    return await trio.to_thread.run_sync(
        lambda: subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    )


STDIO_LIMITED = """
import mcpfast

server = mcpfast.Server("limited", "1.0")


@server.tool(annotations={"readOnlyHint": True}, rate_limit="1/s burst=1")
def lookup(key: str) -> str:
    return "value of " + key


@server.tool(rate_limit="1/h")
def send(to: str) -> str:
    return "sent to " + to
"""


@pytest.mark.parametrize("era", ["auto", "legacy"])
async def test_over_stdio_the_32023_line_is_retried_or_raised_alike(
    tmp_path: Path, era: EraChoice, caplog: pytest.LogCaptureFixture
) -> None:
    """No status nor header over stdio: ``retryAfterMs`` alone says the wait."""
    caplog.set_level(logging.INFO, "mcpfast.client")
    module = tmp_path / "limited.py"
    module.write_text(STDIO_LIMITED)
    command = mcpfast_command("serve", "--stdio", f"{module}:server")
    async with mcpfast.connect(command, era, timeout=20, era_cache=EraCache()) as client:
        await client.list_tools()
        with trio.fail_after(15):
            for i in range(2):
                result = await client.call_tool("lookup", {"key": str(i)})
                assert result.content[0].text == f"value of {i}"  # type: ignore[union-attr]
            await client.call_tool("send", {"to": "a"})
            with pytest.raises(RateLimited) as caught:
                await client.call_tool("send", {"to": "b"})
    assert (caught.value.limit, caught.value.remaining) == (1, 0)
    assert caught.value.retry_after_ms > 60_000  # an hour's bucket: not waited for
    assert any("tools/call refused (rate)" in r.getMessage() for r in caplog.records)
