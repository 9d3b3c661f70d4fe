"""Rate limits through the real stack, on both engines (issue 27): the refusal on the wire
(-32023, HTTP 429, ``Retry-After`` and ``RateLimit-*``) in both eras, a 2025-03-26 batch's
refused members inside its array, and whose bucket a request takes from when nobody is
authenticated (the connection's address; ``X-Forwarded-For`` only behind trusted proxies).
The bucket arithmetic itself is `tests/protocol/test_limits.py`'s (virtual clock)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio

import mcpfast
from mcpfast.jsonrpc import RATE_LIMITED

from ..helpers import REPO, Wire, meta, running
from .processes import mcpfast_command

ENGINES = ["hypercorn", "native"]


def limited_server() -> mcpfast.Server:
    """``echo`` twice a minute per caller; ``free`` unlimited; ``tools/list`` 3 a minute."""
    server = mcpfast.Server("limited", method_rate_limits={"tools/list": "3/min"})

    @server.tool(rate_limit="2/min")
    def echo(text: str) -> str:
        return text

    @server.tool()
    def free() -> str:
        return "ok"

    return server


def call(name: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    return "tools/call", {"name": name, "arguments": arguments}


def assert_refused(reply: Any, limit: int) -> None:
    """A refusal as the draft SEP shapes it, over HTTP."""
    assert reply.status == 429, reply.messages
    error = reply.error
    assert error["code"] == RATE_LIMITED == -32023
    data = error["data"]
    assert data["reason"] == "rate" and data["limit"] == limit and data["remaining"] == 0
    assert 0 < data["retryAfterMs"] <= 60_000
    assert int(reply.headers["retry-after"]) == max(1, -(-data["retryAfterMs"] // 1000))
    assert reply.headers["ratelimit-limit"] == str(limit)
    assert reply.headers["ratelimit-remaining"] == "0"
    assert reply.headers["ratelimit-reset"] == reply.headers["retry-after"]


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_tool_limit_refuses_the_third_call_429_in_the_modern_era(engine: str) -> None:
    async with running(limited_server(), engine=engine) as url, httpx2.AsyncClient() as http:
        wire = Wire(http, url)
        for _ in range(2):
            ok = await wire.modern(*call("echo", text="hi"))
            assert ok.status == 200 and ok.result["content"][0]["text"] == "hi"
        assert_refused(await wire.modern(*call("echo", text="hi")), 2)
        for _ in range(4):  # another tool is not limited, and the refusal ran nothing
            assert (await wire.modern(*call("free"))).status == 200
        for _ in range(3):
            assert (await wire.modern("tools/list")).status == 200
        assert_refused(await wire.modern("tools/list"), 3)


@pytest.mark.parametrize("engine", ENGINES)
async def test_legacy_request_and_batch_refusals(engine: str) -> None:
    async with running(limited_server(), engine=engine) as url, httpx2.AsyncClient() as http:
        wire = Wire(http, url)
        session, _ = await wire.initialize("2025-03-26")
        batch = [wire.legacy_body(*call("echo", text=str(i))) for i in range(3)]
        batch.append(wire.legacy_body("notifications/progress", {}, notification=True))
        reply = await wire.post(
            batch, {"mcp-session-id": session, "mcp-protocol-version": "2025-03-26"}
        )
        assert reply.status == 200  # the batch was served: its refused member says so inside
        by_id = {m["id"]: m for m in reply.messages}
        assert len(by_id) == 3
        refused = [m for m in by_id.values() if "error" in m]
        assert len(refused) == 1 and refused[0]["error"]["code"] == RATE_LIMITED
        assert refused[0]["error"]["data"]["retryAfterMs"] > 0
        single = await wire.legacy(*call("echo", text="x"), session=session, version="2025-03-26")
        assert_refused(single, 2)
        assert single.message["id"] is not None


@pytest.mark.parametrize("engine", ENGINES)
async def test_unauthenticated_callers_are_keyed_by_address(engine: str) -> None:
    """Without a token the connection's address is the key: a client's own
    ``X-Forwarded-For`` is not believed, unless the server sits behind trusted proxies."""
    server = mcpfast.Server("addr", rate_limit="2/min")
    async with running(server, engine=engine) as url, httpx2.AsyncClient() as http:
        wire = Wire(http, url)
        for i in range(2):
            forged = {"x-forwarded-for": f"10.0.0.{i}"}
            assert (await wire.post(*_ping(wire, forged))).status == 200
        assert (await wire.post(*_ping(wire, {"x-forwarded-for": "10.9.9.9"}))).status == 429
    async with (
        running(server, engine=engine, trusted_proxy_hops=1) as url,
        httpx2.AsyncClient() as http,
    ):
        wire = Wire(http, url)
        for _ in range(2):
            assert (await wire.post(*_ping(wire, {"x-forwarded-for": "1.1.1.1"}))).status == 200
        assert (await wire.post(*_ping(wire, {"x-forwarded-for": "1.1.1.1"}))).status == 429
        proxied = {"x-forwarded-for": "1.1.1.1, 2.2.2.2"}  # the proxy saw 2.2.2.2
        assert (await wire.post(*_ping(wire, proxied))).status == 200


def _ping(wire: Wire, headers: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    body, mirrored = wire.modern_body("tools/list")
    return body, {**{k: v for k, v in mirrored.items() if v is not None}, **headers}


async def test_stdio_gets_the_jsonrpc_error() -> None:
    """``mcpfast serve --stdio --tool-rate-limit``: the flag reaches stdio, whose one caller
    gets the refusal as its JSON-RPC error line (no status, no headers there)."""
    argv = mcpfast_command("serve", "--stdio", "--tool-rate-limit", "echo=1/h")
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    process = await trio.lowlevel.open_process(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        for id_ in (1, 2):
            params = {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta()}
            line = {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}
            await process.stdin.send_all(json.dumps(line).encode() + b"\n")
        received = b""
        with trio.fail_after(30):
            while received.count(b"\n") < 2:
                chunk = await process.stdout.receive_some()
                assert chunk, "the server ended early"
                received += chunk
        answers = {m["id"]: m for m in map(json.loads, received.splitlines())}
        assert answers[1]["result"]["content"][0]["text"] == "hi"
        assert answers[2]["error"]["code"] == RATE_LIMITED
        assert answers[2]["error"]["data"]["limit"] == 1
    finally:
        await process.stdin.aclose()
        with trio.move_on_after(10):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()


@pytest.mark.parametrize("engine", ENGINES)
async def test_the_access_log_shows_the_refusal(tmp_path: Path, engine: str) -> None:
    log = tmp_path / "access.log"
    config = {"engine": engine, "access_log": str(log), "log_format": "json"}
    async with running(limited_server(), **config) as url, httpx2.AsyncClient() as http:
        wire = Wire(http, url)
        statuses = [(await wire.modern(*call("echo", text="hi"))).status for _ in range(3)]
    assert statuses == [200, 200, 429]
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["status"], r["error"], r["refused"]) for r in records] == [
        (200, None, None),
        (200, None, None),
        (429, RATE_LIMITED, "rate"),
    ]
