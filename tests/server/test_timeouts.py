"""The time-based rules, on Trio's virtual clock: session lifetimes, the wait for a client's
answer, ``requestState`` expiry and GET-stream keepalives. Each waits minutes, instantly."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from trio.testing import MockClock

from mcpfast import Server
from mcpfast.server.config import Config

from ..helpers import validate_message
from .conftest import Wire, encode, serving, session_headers

VERSION = "2025-11-25"
IDLE = 600
REFRESH = 60


def lifetimes(**overrides: Any) -> Config:
    return Config(**{"session_seconds": IDLE, "session_refresh_seconds": REFRESH, **overrides})


async def _ping(wire: Wire, session: str) -> tuple[int, str | None, Any]:
    """The status of a ping, the re-minted id if any, and the error's data if any."""
    reply = await wire.legacy("ping", session=session, version=VERSION)
    data = reply.error.get("data") if "error" in reply.message else None
    return reply.status, reply.headers.get("mcp-session-id"), data


async def test_an_idle_session_ends_whichever_id_is_sent(
    server: Server, wall_clock: MockClock
) -> None:
    async with serving(server, lifetimes()) as wire:
        first, _ = await wire.initialize(VERSION)
        await trio.sleep(REFRESH + 1)
        status, fresh, _ = await _ping(wire, first)
        assert status == 200 and fresh is not None and fresh != first  # old enough: re-minted
        await trio.sleep(IDLE - 10)
        assert (await _ping(wire, first))[0] == 200  # used: the first id lives on
        await trio.sleep(IDLE + 60)  # past the idle lifetime and its touch interval
        for sent in (first, fresh):
            status, _, data = await _ping(wire, sent)
            assert (status, data) == (404, {"reason": "expired"})


async def test_a_used_session_outlives_its_idle_time(server: Server, wall_clock: MockClock) -> None:
    async with serving(server, lifetimes()) as wire:
        session, _ = await wire.initialize(VERSION)
        for _ in range(5):  # 5 idle lifetimes in all, never idle for one
            await trio.sleep(IDLE / 2)
            assert (await _ping(wire, session))[0] == 200


async def test_no_session_outlives_its_absolute_lifetime(
    server: Server, wall_clock: MockClock
) -> None:
    lifetime = 3 * IDLE
    async with serving(server, lifetimes(session_lifetime_seconds=lifetime)) as wire:
        session, _ = await wire.initialize(VERSION)
        start = trio.current_time()
        while (await _ping(wire, session))[0] == 200:
            await trio.sleep(IDLE / 4)
        status, _, data = await _ping(wire, session)
    assert (status, data) == (404, {"reason": "expired"})
    assert lifetime - IDLE / 4 < trio.current_time() - start <= lifetime + IDLE / 4


async def test_an_unanswered_server_request_times_out(
    server: Server, wall_clock: MockClock
) -> None:
    version = "2025-06-18"
    async with serving(server, Config(input_timeout_seconds=30)) as wire:
        session, _ = await wire.initialize(version, {"elicitation": {}})
        start = trio.current_time()
        reply = await wire.legacy(
            "tools/call", {"name": "greet", "arguments": {}}, session=session, version=version
        )
    assert trio.current_time() - start == pytest.approx(30)
    asked, cancelled, answer = reply.messages
    assert asked["method"] == "elicitation/create"
    assert cancelled["method"] == "notifications/cancelled"
    assert cancelled["params"]["requestId"] == asked["id"]
    validate_message(version, "tools/call", cancelled)
    assert answer["result"]["isError"] is True
    text = answer["result"]["content"][0]["text"]
    assert text == "The client did not answer elicitation/create within 30 s (-32603)"


async def test_a_late_answer_is_ignored(server: Server, wall_clock: MockClock) -> None:
    async with serving(server, Config(input_timeout_seconds=30)) as wire:
        session, _ = await wire.initialize(VERSION, {"elicitation": {}})
        body = wire.legacy_body("tools/call", {"name": "greet", "arguments": {}})
        call = await wire.start("POST", session_headers(session, VERSION), encode(body))
        asked = await call.next_message()
        await call.closed.wait()
        late = {"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept"}}
        ack = await wire.post(late, session_headers(session, VERSION))
    assert ack.status == 202
    assert call.result["isError"] is True


@pytest.mark.parametrize(("waited", "ok"), [(50, True), (70, False)])
async def test_request_state_expires(
    server: Server, waited: int, ok: bool, wall_clock: MockClock
) -> None:
    caps: dict[str, Any] = {"elicitation": {}}
    params: dict[str, Any] = {"name": "greet", "arguments": {}}
    async with serving(server, Config(request_state_seconds=60)) as wire:
        first = await wire.modern("tools/call", params, capabilities=caps)
        await trio.sleep(waited)
        answer = {"action": "accept", "content": {"name": "Ada"}}
        second = await wire.modern(
            "tools/call",
            {
                **params,
                "inputResponses": {"name": answer},
                "requestState": first.result["requestState"],
            },
            capabilities=caps,
        )
    if ok:
        assert second.result["content"][0]["text"] == "Hello, Ada!"
    else:
        assert second.error["code"] == -32602
        assert second.error["data"] == {"reason": "expired"}


async def test_an_idle_get_stream_gets_keepalives(server: Server, wall_clock: MockClock) -> None:
    async with serving(server, Config(keepalive_seconds=15)) as wire:
        session, _ = await wire.initialize(VERSION)
        stream = await wire.stream(session, VERSION)
        await trio.sleep(15 * 4 + 1)
        assert stream.keepalives == 4
        stream.disconnect()
