"""The server's time-based and bounded rules, on Trio's virtual clock: server requests
withdrawn when their stream loses its reader, tasks parked on input expire and are purged, one
GET stream per notification, and a bounded store of ended sessions."""

from __future__ import annotations

import types
from typing import Any

import pytest
import trio
from trio.testing import MockClock, wait_all_tasks_blocked

import mcpfast
from mcpfast import Context, Server
from mcpfast.server.config import Config
from mcpfast.server.core import task_runner
from mcpfast.server.state.local_bus import LocalBus

from .conftest import build, encode, serving, session_headers

TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}}


@pytest.fixture
def task_clock(wall_clock: MockClock, monkeypatch: pytest.MonkeyPatch) -> MockClock:
    """`wall_clock`, with the task store's TTL clock following Trio's too."""
    monkeypatch.setattr(task_runner, "time", types.SimpleNamespace(monotonic=trio.current_time))
    return wall_clock


def _asking_server(outcome: list[str]) -> Server:
    server = build()

    @server.tool(task="optional")
    async def ask_name(ctx: Context) -> str:
        try:
            answer = await ctx.elicit("Name?", NAME_SCHEMA, key="name")
        except mcpfast.MCPError as exc:
            outcome.append(exc.message)
            raise
        outcome.append("answered")
        return f"Hello, {answer['content']['name']}!"

    return server


# ---------------------------------------------------------------------------- 1a: withdrawal


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_a_server_request_is_withdrawn_when_its_stream_loses_its_reader(
    version: str, wall_clock: MockClock
) -> None:
    outcome: list[str] = []
    config = Config(input_timeout_seconds=600, sse_retry_ms=100)
    async with serving(_asking_server(outcome), config) as wire:
        session, _ = await wire.initialize(version, {"elicitation": {}})
        body = wire.legacy_body("tools/call", {"name": "ask_name", "arguments": {}})
        call = await wire.start("POST", session_headers(session, version), encode(body))
        asked = await call.next_message()
        assert asked["method"] == "elicitation/create"
        live = wire.endpoint.runtime.live
        assert len(live.requests) == 1
        start = trio.current_time()
        call.disconnect()  # the client's connection goes away; nobody resumes the stream
        with trio.fail_after(60):
            while not outcome:
                await trio.sleep(0.5)
        assert trio.current_time() - start < 10  # the grace, not the 600 s input timeout
        assert outcome == ["The client went away before answering elicitation/create"]
        assert len(live.requests) == 0  # the pending entry is gone
        # what a client resuming the stream now finds: the request, then its withdrawal
        with trio.fail_after(5):
            await call.closed.wait()
        resumed = await wire.stream(session, version, last=call.events[0].id)
        with trio.fail_after(5):
            await resumed.closed.wait()
        methods = [m.get("method") for m in resumed.messages]
        assert "notifications/cancelled" in methods
        cancelled = next(
            m for m in resumed.messages if m.get("method") == "notifications/cancelled"
        )
        assert cancelled["params"]["requestId"] == asked["id"]


async def test_a_resumed_stream_keeps_its_server_request(wall_clock: MockClock) -> None:
    """A client that resumes the stream within the grace still gets to answer."""
    version = "2025-11-25"
    outcome: list[str] = []
    config = Config(input_timeout_seconds=600, sse_retry_ms=100)
    async with serving(_asking_server(outcome), config) as wire:
        session, _ = await wire.initialize(version, {"elicitation": {}})
        body = wire.legacy_body("tools/call", {"name": "ask_name", "arguments": {}})
        call = await wire.start("POST", session_headers(session, version), encode(body))
        asked = await call.next_message()
        call.disconnect()
        resumed = await wire.stream(session, version, last=call.events[0].id)
        await trio.sleep(30)  # far past the grace: a client follows the stream
        assert outcome == []
        answer = {"action": "accept", "content": {"name": "Ada"}}
        ack = await wire.post(
            {"jsonrpc": "2.0", "id": asked["id"], "result": answer},
            session_headers(session, version),
        )
        assert ack.status == 202
        with trio.fail_after(5):
            await resumed.closed.wait()
    assert outcome == ["answered"]
    assert resumed.message["result"]["content"][0]["text"] == "Hello, Ada!"


# ---------------------------------------------------------------------- 1b: parked tasks


async def test_a_modern_task_waiting_for_input_expires_and_is_purged(task_clock: MockClock) -> None:
    outcome: list[str] = []
    caps = {"elicitation": {}, **TASKS}
    async with serving(_asking_server(outcome), Config(input_timeout_seconds=120)) as wire:
        created = await wire.modern(
            "tools/call", {"name": "ask_name", "arguments": {}}, capabilities=caps
        )
        task_id = created.result["taskId"]
        await wait_all_tasks_blocked()
        got = await wire.modern("tasks/get", {"taskId": task_id}, capabilities=caps)
        assert got.result["status"] == "input_required"
        await trio.sleep(121)
        got = await wire.modern("tasks/get", {"taskId": task_id}, capabilities=caps)
        assert got.result["status"] == "completed"  # the tool let the MCPError out: a tool error
        assert got.result["result"]["isError"] is True
        assert outcome == ["The client did not provide the input within 120 s"]
        store = wire.endpoint.runtime.tasks
        await trio.sleep(got.result["ttlMs"] / 1000 + 1)
        gone = await wire.modern("tasks/get", {"taskId": task_id}, capabilities=caps)
        assert gone.error["code"] == -32602
        assert task_id not in store.tasks


async def test_a_2025_11_25_task_waiting_for_input_expires(task_clock: MockClock) -> None:
    version = "2025-11-25"
    outcome: list[str] = []
    async with serving(_asking_server(outcome), Config(input_timeout_seconds=120)) as wire:
        session, _ = await wire.initialize(version, {"elicitation": {}})
        created = await wire.legacy(
            "tools/call",
            {"name": "ask_name", "arguments": {}, "task": {"ttl": 300_000}},
            session=session,
            version=version,
        )
        task_id = created.result["task"]["taskId"]
        await wait_all_tasks_blocked()
        got = await wire.legacy("tasks/get", {"taskId": task_id}, session=session, version=version)
        assert got.result["status"] == "input_required"
        await trio.sleep(121)
        got = await wire.legacy("tasks/get", {"taskId": task_id}, session=session, version=version)
        assert got.result["status"] == "failed"  # its tool error (isError): 2025-11-25 failed
        await trio.sleep(300 - 121 + 1)  # past its TTL (from its creation)
        listed = await wire.legacy("tasks/list", {}, session=session, version=version)
        assert listed.result["tasks"] == []
    assert outcome == ["The client did not provide the input within 120 s"]


# ------------------------------------------------------------------ 2b: one GET stream each


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_each_notification_goes_on_one_get_stream_of_the_session(
    version: str, autojump_clock: MockClock
) -> None:
    server = build()
    async with serving(server) as wire:
        session, _ = await wire.initialize(version)
        subscribed = await wire.legacy(
            "resources/subscribe", {"uri": "test://doc"}, session=session, version=version
        )
        assert subscribed.status == 200
        first = await wire.stream(session, version)
        second = await wire.stream(session, version)
        await wait_all_tasks_blocked()
        for _ in range(6):
            await server.resource_updated("test://doc")
        await wait_all_tasks_blocked()
        got = [m for stream in (first, second) for m in stream.messages]
        assert [m["method"] for m in got] == ["notifications/resources/updated"] * 6
        # a stream's own ids: resuming one after its first event replays only its own others
        owned = [e for e in first.events if e.data]
        if owned:
            first.disconnect()
            resumed = await wire.stream(session, version, last=owned[0].id)
            await wait_all_tasks_blocked()
            assert len([m for m in resumed.messages]) == len(owned) - 1
            resumed.disconnect()
        second.disconnect()


# ------------------------------------------------------------- 5: ended sessions are bounded


async def test_ending_sessions_in_a_loop_keeps_memory_bounded(wall_clock: MockClock) -> None:
    server = build()
    config = Config(session_seconds=600, session_refresh_seconds=60)
    async with serving(server, config) as wire:
        bus = server.bus
        assert isinstance(bus, LocalBus)
        for _ in range(3):
            for _ in range(40):
                session, _ = await wire.initialize("2025-11-25")
                ended = await wire.exchange("DELETE", session_headers(session, "2025-11-25"))
                assert ended.status == 204
                refused = await wire.legacy("ping", session=session, version="2025-11-25")
                assert refused.status == 404
            await trio.sleep(600 + 60)  # past any id of those sessions
        assert bus.session_count() <= 40  # the last round's endings, no more


async def test_ending_sessions_never_pushes_out_a_live_record(wall_clock: MockClock) -> None:
    """Past its bound the bus forgets the oldest endings by refusing every session started
    up to them (`LocalBus.ended_before`): a session started later keeps its record."""
    version = "2025-06-18"
    server = build()
    server.bus = LocalBus(max_sessions=8)
    async with serving(server) as wire:
        others = [(await wire.initialize(version))[0] for _ in range(20)]
        await trio.sleep(1)  # a second later on the wall clock
        kept, _ = await wire.initialize(version)  # a client that never adopts re-minted ids
        assert (
            await wire.legacy("logging/setLevel", {"level": "info"}, session=kept, version=version)
        ).status == 200
        for session in others:
            await wire.exchange("DELETE", session_headers(session, version))
        call = await wire.legacy(
            "tools/call", {"name": "chatty", "arguments": {}}, session=kept, version=version
        )
        methods = [m.get("method") for m in call.messages]
        assert "notifications/message" in methods  # the level set on the record still holds


# ----------------------------------------------------------------------- 4: legacy codes


def _capability_server() -> Server:
    server = build()

    @server.prompt()
    async def interview(ctx: Context) -> str:
        answer = await ctx.elicit("Name?", NAME_SCHEMA)
        return f"Interview {answer['content']['name']}"

    @server.tool()
    def login() -> str:
        raise mcpfast.UrlElicitationRequired(
            [{"message": "Log in", "url": "https://example.com/login", "elicitationId": "l-1"}]
        )

    return server


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26"])
async def test_legacy_sessions_never_get_32021(version: str, autojump_clock: MockClock) -> None:
    async with serving(_capability_server()) as wire:
        session, _ = await wire.initialize(version)  # no elicitation declared
        reply = await wire.legacy(
            "prompts/get", {"name": "interview"}, session=session, version=version
        )
    assert reply.status == 200
    assert reply.error["code"] == -32603
    assert reply.error["data"] == {"requiredCapabilities": {"elicitation": {}}}


@pytest.mark.parametrize(
    ("version", "expected"), [("2025-11-25", -32042), ("2025-06-18", None), ("2025-03-26", None)]
)
async def test_url_elicitation_required_by_revision(
    version: str, expected: int | None, autojump_clock: MockClock
) -> None:
    async with serving(_capability_server()) as wire:
        session, _ = await wire.initialize(version)
        reply = await wire.legacy(
            "tools/call", {"name": "login", "arguments": {}}, session=session, version=version
        )
    if expected is not None:
        assert reply.error["code"] == expected
    else:
        result: dict[str, Any] = reply.result
        assert result["isError"] is True
        assert "https://example.com/login" in result["content"][0]["text"]
