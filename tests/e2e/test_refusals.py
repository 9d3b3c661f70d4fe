"""A refusal means nothing happened (issue 26, item 7), both engines, a real ``redis-server``
frozen (SIGSTOP) or killed mid-way: a 503 with ``Retry-After`` is sent only for work that was
not started; what was started is carried through or fails with an error that says no "retry",
and a stream that was open ends with its final message (`mcpfast.server.core.refusal`)."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx2
import msgspec
import pytest
import trio

import mcpfast
from mcpfast.server import Context
from mcpfast.server.state import sessions
from mcpfast.server.state.redis_bus import RedisBus

from ..helpers import TEST_KEYS, meta, running
from ..redis_server import RedisServer

ENGINES = pytest.mark.parametrize("engine", ["hypercorn", "native"])
LEGACY = "2025-11-25"
ACCEPT = {"accept": "application/json, text/event-stream"}
BOUND = 20.0
"""Every exchange ends within this (the bus's own bound is 2 s a call)."""


def _server(counter: list[int]) -> mcpfast.Server:
    server = mcpfast.Server("refusals")

    @server.resource("res://counter")
    def counter_resource() -> str:
        return str(counter[0])

    @server.tool()
    async def bump_and_report(ctx: Context) -> int:
        """Counts, then reports progress (recorded on the bus for resumption)."""
        counter[0] += 1
        await ctx.report_progress(1, 1)
        return counter[0]

    @server.tool()
    async def bump_and_publish() -> int:
        """Counts, then tells subscribers (a publish on the bus)."""
        counter[0] += 1
        await server.resource_updated("res://counter")
        return counter[0]

    @server.tool()
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("Go on?", {"type": "object", "properties": {}})
        return str(answer["action"])

    return server


@contextmanager
def frozen(redis: RedisServer) -> Iterator[None]:
    """Redis stopped (SIGSTOP) while open: connected, and silent; it runs what it received once
    it goes on (SIGCONT)."""
    assert redis.process is not None
    os.kill(redis.process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(redis.process.pid, signal.SIGCONT)


def _request(id_: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


async def _initialize(http: httpx2.AsyncClient, url: str) -> dict[str, str]:
    """A legacy session's headers (its first id, kept, as the official SDK does)."""
    params = {
        "protocolVersion": LEGACY,
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "refusals", "version": "1"},
    }
    opened = await http.post(url, json=_request(0, "initialize", params), headers=ACCEPT)
    assert opened.status_code == 200
    headers = {
        **ACCEPT,
        "mcp-session-id": opened.headers["mcp-session-id"],
        "mcp-protocol-version": LEGACY,
    }
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(url, json=done, headers=headers)).status_code == 202
    return headers


def _messages(response: httpx2.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a reply: its JSON body, or the data of its SSE events."""
    if not response.headers.get("content-type", "").startswith("text/event-stream"):
        return [response.json()]
    return [
        msgspec.json.decode(line[5:].strip())
        for line in response.text.splitlines()
        if line.startswith("data:") and line[5:].strip()
    ]


def _answer(response: httpx2.Response, id_: int) -> dict[str, Any]:
    """The reply's answer to request ``id_`` (its last message: a stream is never cut off)."""
    last = _messages(response)[-1]
    assert last.get("id") == id_, f"no final answer: {response.text!r}"
    return last


@asynccontextmanager
async def _served(engine: str, redis: RedisServer, counter: list[int]) -> AsyncIterator[str]:
    config: dict[str, Any] = {"engine": engine, "bus": redis.url, "input_timeout_seconds": 1.0}
    async with running(_server(counter), **config) as url:
        yield url


def _retry_later(response: httpx2.Response) -> bool:
    return response.status_code == 503 and "retry-after" in response.headers


@ENGINES
@pytest.mark.parametrize("tool", ["bump_and_report", "bump_and_publish"])
async def test_a_call_in_a_redis_freeze_is_refused_or_done_never_both(
    engine: str, tool: str, redis_server: RedisServer
) -> None:
    """Failure 8: the tool ran (the counter moved), so no 503: a progress notification goes
    out unrecorded and the result follows; a publish that failed fails the call with -32603
    that says it may have taken effect (no ``Retry-After``)."""
    counter = [0]
    async with _served(engine, redis_server, counter) as url:
        async with httpx2.AsyncClient(timeout=BOUND) as http:
            headers = await _initialize(http, url)
            params = {"name": tool, "arguments": {}, "_meta": {"progressToken": "p"}}
            with trio.fail_after(BOUND), frozen(redis_server):
                reply = await http.post(
                    url, json=_request(1, "tools/call", params), headers=headers
                )
    assert not (_retry_later(reply) and counter[0]), "503 'retry later' for a call that ran"
    assert reply.status_code == 200 and counter == [1]
    answer = _answer(reply, 1)
    if tool == "bump_and_report":
        assert answer["result"]["structuredContent"] == {"result": 1}
        assert any(m.get("method") == "notifications/progress" for m in _messages(reply))
    else:
        assert answer["error"]["code"] == -32603
        assert "retry later" not in answer["error"]["message"]
        assert "may have taken effect" in answer["error"]["message"]


@ENGINES
async def test_a_stateless_call_in_a_redis_freeze_is_never_refused_after_it_ran(
    engine: str, redis_server: RedisServer
) -> None:
    """Failure 8 in 2026-07-28: the same rule for a request without a session."""
    counter = [0]
    async with _served(engine, redis_server, counter) as url:
        async with httpx2.AsyncClient(timeout=BOUND) as http:
            params = {"name": "bump_and_publish", "arguments": {}, "_meta": meta()}
            headers = {
                **ACCEPT,
                "mcp-protocol-version": "2026-07-28",
                "mcp-method": "tools/call",
                "mcp-name": "bump_and_publish",
            }
            with trio.fail_after(BOUND), frozen(redis_server):
                reply = await http.post(
                    url, json=_request(1, "tools/call", params), headers=headers
                )
    assert counter == [1] and reply.status_code == 200
    error = _answer(reply, 1)["error"]
    assert error["code"] == -32603 and "retry later" not in error["message"]


async def _record(redis: RedisServer, headers: dict[str, str]) -> sessions.SessionRecord | None:
    """What Redis keeps of the session, read by a bus of its own."""
    session, _ = sessions.open_session(TEST_KEYS, headers["mcp-session-id"], 10**9)
    bus = RedisBus(redis.url)
    async with bus.attached():
        return await bus.load_session(session.id)


@ENGINES
@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("logging/setLevel", {"level": "info"}),
        ("resources/subscribe", {"uri": "res://counter"}),
    ],
)
async def test_session_state_in_a_redis_freeze_is_refused_first(
    engine: str, method: str, params: dict[str, Any], redis_server: RedisServer
) -> None:
    """A change of a session's state during the freeze is refused (503, ``Retry-After``)
    before anything is written: once Redis goes on, the session's record has no trace of it
    (a write Redis received frozen would land then). Sent again after, it is kept."""
    async with _served(engine, redis_server, [0]) as url:
        async with httpx2.AsyncClient(timeout=BOUND) as http:
            headers = await _initialize(http, url)
            with trio.fail_after(BOUND):
                with frozen(redis_server):
                    refused = await http.post(
                        url, json=_request(1, method, params), headers=headers
                    )
                await trio.sleep(0.5)  # what Redis received frozen, it has run by now
                record = await _record(redis_server, headers)
                assert _retry_later(refused), refused.text
                assert record is None or (record.log_level, record.subscriptions) == (None, None)
                again = await http.post(url, json=_request(2, method, params), headers=headers)
                assert again.status_code == 200 and "result" in _answer(again, 2)
                record = await _record(redis_server, headers)
    assert record is not None
    assert record.log_level == "info" or record.subscriptions == ["res://counter"]


@ENGINES
@pytest.mark.parametrize("answered", [True, False], ids=["answered", "unanswered"])
async def test_an_elicitation_when_redis_stops_ends_with_its_answer(
    engine: str, answered: bool, redis_server: RedisServer
) -> None:
    """Failure 9: Redis is killed while a legacy call waits for the client's answer to its
    elicitation. The call's stream still ends with its final message (the result, or the tool
    error saying the client did not answer), unrecorded: never a 503 after the stream opened,
    never a stream cut off."""
    async with _served(engine, redis_server, [0]) as url:
        async with httpx2.AsyncClient(timeout=BOUND) as http:
            headers = await _initialize(http, url)
            call = _request(1, "tools/call", {"name": "ask", "arguments": {}})
            lines: list[str] = []
            with trio.fail_after(BOUND):
                async with http.stream("POST", url, json=call, headers=headers) as response:
                    assert response.status_code == 200
                    async for line in response.aiter_lines():
                        lines.append(line)
                        if not line.startswith("data:") or "elicitation/create" not in line:
                            continue
                        redis_server.stop()
                        if answered:
                            asked = msgspec.json.decode(line[5:].strip())
                            answer = {
                                "jsonrpc": "2.0",
                                "id": asked["id"],
                                "result": {"action": "accept", "content": {}},
                            }
                            sent = await http.post(url, json=answer, headers=headers)
                            assert sent.status_code == 202
    finals = [
        msgspec.json.decode(line[5:].strip())
        for line in lines
        if line.startswith("data:") and '"id":1' in line.replace(" ", "")
    ]
    assert finals, f"the stream was cut off: {lines!r}"
    result = finals[-1]["result"]
    if answered:
        assert result["content"][0]["text"] == "accept"
    else:
        assert result["isError"] is True
