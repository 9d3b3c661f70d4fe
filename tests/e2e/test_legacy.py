"""The legacy revisions on the same endpoint: sessions as signed tokens, server-to-client
requests, the GET stream with resumption, cancellation and 2025-03-26 batches."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import trio

import mcpfast
from mcpfast import Context
from mcpfast.protocol import sse

from ..helpers import Wire, running, validate, validate_message

LEGACY = ["2025-11-25", "2025-06-18", "2025-03-26"]
app = mcpfast.Server("legacy-tests", "1.0")
cancelled = trio.Event()


@app.tool()
def add(a: int, b: int) -> int:
    return a + b


@app.tool()
async def logs(ctx: Context) -> str:
    for level in ("debug", "info", "warning"):
        await ctx.log(level, f"at {level}")
    return "logged"


@app.tool()
async def progress(ctx: Context) -> str:
    await ctx.report_progress(50, 100)
    return "done"


@app.tool()
async def ask_name(ctx: Context) -> str:
    answer = await ctx.elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}})
    return f"hello {answer['content']['name']}"


@app.tool()
async def ask_model(ctx: Context, prompt: str) -> str:
    answer = await ctx.sample(prompt, max_tokens=50)
    return "model said " + answer["content"]["text"]


@app.tool()
async def roots(ctx: Context) -> str:
    return ",".join(r["uri"] for r in await ctx.list_roots())


@app.tool()
async def forever(ctx: Context) -> str:
    try:
        await trio.sleep_forever()
    except trio.Cancelled:
        cancelled.set()
        raise
    return "never"


@app.resource("test://doc")
def doc() -> str:
    return "doc"


@pytest.fixture
async def wire() -> AsyncIterator[Wire]:
    async with running(app) as url, httpx.AsyncClient(timeout=10) as client:
        yield Wire(client, url)


@pytest.mark.parametrize("version", LEGACY)
async def test_handshake_and_calls_validate_against_the_revision(wire: Wire, version: str) -> None:
    session, reply = await wire.initialize(version)
    validate_message(version, "initialize", reply.message)
    assert reply.result["protocolVersion"] == version
    assert all(0x21 <= ord(c) <= 0x7E for c in session)
    for method, params in (
        ("ping", None),
        ("tools/list", {}),
        ("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}),
        ("resources/list", {}),
        ("resources/read", {"uri": "test://doc"}),
        ("prompts/list", {}),
    ):
        got = await wire.legacy(method, params, session=session, version=version)
        assert got.status == 200, (method, got.messages)
        validate_message(version, method, got.message)
        assert "resultType" not in got.result
    missing = await wire.legacy("resources/read", {"uri": "test://none"}, session=session, version=version)
    assert missing.error["code"] == -32002


async def test_unknown_requested_version_gets_the_newest_legacy(wire: Wire) -> None:
    _, reply = await wire.initialize("2024-01-01")
    assert reply.result["protocolVersion"] == "2025-11-25"


async def test_initialize_never_negotiates_the_modern_revision(wire: Wire) -> None:
    _, reply = await wire.initialize("2026-07-28")
    assert reply.result["protocolVersion"] == "2025-11-25"


async def test_session_errors(wire: Wire) -> None:
    version = "2025-11-25"
    session, _ = await wire.initialize(version)
    no_session = await wire.legacy("ping", session=None, version=version)
    assert no_session.status == 400
    tampered = session[:-3] + ("abc" if not session.endswith("abc") else "xyz")
    assert (await wire.legacy("ping", session=tampered, version=version)).status == 404
    assert (await wire.legacy("ping", session=session[:20], version=version)).status == 404
    bad_version = await wire.legacy("ping", session=session, version="1999-01-01")
    assert bad_version.status == 400
    no_header = await wire.post({"jsonrpc": "2.0", "id": 9, "method": "ping"}, {"mcp-session-id": session})
    assert no_header.status == 200
    deleted = await wire.client.delete(wire.url, headers={"mcp-session-id": session})
    assert deleted.status_code == 204
    assert (await wire.legacy("ping", session=session, version=version)).status == 404


async def test_set_level_re_mints_the_session_and_filters_logs(wire: Wire) -> None:
    version = "2025-06-18"
    session, _ = await wire.initialize(version)
    quiet = await wire.legacy("tools/call", {"name": "logs", "arguments": {}}, session=session, version=version)
    assert [m.get("method") for m in quiet.messages] == [None]
    set_level = await wire.legacy("logging/setLevel", {"level": "info"}, session=session, version=version)
    assert set_level.result == {}
    fresh = set_level.headers["mcp-session-id"]
    assert fresh != session
    loud = await wire.legacy("tools/call", {"name": "logs", "arguments": {}}, session=fresh, version=version)
    levels = [m["params"]["level"] for m in loud.messages if m.get("method") == "notifications/message"]
    assert levels == ["info", "warning"]
    for message in loud.messages:
        validate_message(version, "tools/call", message)


async def _answering(wire: Wire, session: str, version: str, call: dict[str, Any], answer: Any) -> list[dict[str, Any]]:
    """POST a call, answer the server's request from its SSE stream, return all frames."""
    body = {"jsonrpc": "2.0", "id": 77, "method": "tools/call", "params": call}
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-session-id": session, "mcp-protocol-version": version}
    frames: list[dict[str, Any]] = []
    parser = sse.Parser()
    with trio.fail_after(5):
        async with wire.client.stream("POST", wire.url, json=body, headers=headers) as response:
            async for chunk in response.aiter_bytes():
                for event in parser.feed(chunk):
                    if not event.data:
                        continue
                    frame = json.loads(event.data)
                    frames.append(frame)
                    if "method" in frame and "id" in frame:
                        reply = {"jsonrpc": "2.0", "id": frame["id"], "result": answer(frame)}
                        ack = await wire.post(reply, {"mcp-session-id": session, "mcp-protocol-version": version})
                        assert ack.status == 202
    return frames


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18"])
async def test_elicitation_is_a_live_request_on_the_call_stream(wire: Wire, version: str) -> None:
    session, _ = await wire.initialize(version, {"elicitation": {}})
    frames = await _answering(
        wire, session, version, {"name": "ask_name", "arguments": {}},
        lambda _: {"action": "accept", "content": {"name": "Ada"}},
    )
    request, result = frames
    assert request["method"] == "elicitation/create"
    validate(version, "ElicitRequest", request)
    assert result["result"]["content"][0]["text"] == "hello Ada"


@pytest.mark.parametrize("version", LEGACY)
async def test_sampling_and_roots_are_live_requests(wire: Wire, version: str) -> None:
    session, _ = await wire.initialize(version, {"sampling": {}, "roots": {}})
    frames = await _answering(
        wire, session, version, {"name": "ask_model", "arguments": {"prompt": "hi"}},
        lambda _: {"role": "assistant", "content": {"type": "text", "text": "hey"}, "model": "m"},
    )
    validate(version, "CreateMessageRequest", frames[0])
    assert frames[-1]["result"]["content"][0]["text"] == "model said hey"
    frames = await _answering(
        wire, session, version, {"name": "roots", "arguments": {}},
        lambda _: {"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]},
    )
    validate(version, "ListRootsRequest", frames[0])
    assert frames[-1]["result"]["content"][0]["text"] == "file:///a,file:///b"


async def test_undeclared_capability_is_refused(wire: Wire) -> None:
    session, _ = await wire.initialize("2025-11-25")
    reply = await wire.legacy("tools/call", {"name": "ask_name", "arguments": {}}, session=session, version="2025-11-25")
    assert reply.error["code"] == -32021


async def test_cancelled_notification_cancels_the_handler(wire: Wire) -> None:
    global cancelled
    cancelled = trio.Event()
    version = "2025-11-25"
    session, _ = await wire.initialize(version)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(wire.post, {"jsonrpc": "2.0", "id": "long-1", "method": "tools/call",
                                       "params": {"name": "forever", "arguments": {}}},
                           {"mcp-session-id": session, "mcp-protocol-version": version})
        await trio.sleep(0.2)
        note = await wire.legacy("notifications/cancelled", {"requestId": "long-1"}, session=session,
                                 version=version, notification=True)
        assert note.status == 202
        with trio.fail_after(5):
            await cancelled.wait()


async def _get_stream(wire: Wire, session: str, version: str, frames: int, action: Any, last: str | None = None) -> list[sse.Event]:
    headers = {"accept": "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": version}
    if last:
        headers["last-event-id"] = last
    events: list[sse.Event] = []
    parser = sse.Parser()
    with trio.move_on_after(3):
        async with wire.client.stream("GET", wire.url, headers=headers) as response:
            assert response.status_code == 200
            acted = False
            async for chunk in response.aiter_bytes():
                events.extend(parser.feed(chunk))
                if not acted:
                    acted = True
                    await action()
                if len(events) >= frames:
                    break
    return events


async def test_get_stream_delivers_subscriptions_and_resumes(wire: Wire) -> None:
    version = "2025-11-25"
    session, _ = await wire.initialize(version)
    sub = await wire.legacy("resources/subscribe", {"uri": "test://doc"}, session=session, version=version)
    session = sub.headers["mcp-session-id"]

    async def publish() -> None:
        await app.resource_updated("test://doc")
        await app.resource_updated("test://elsewhere")

    events = await _get_stream(wire, session, version, 2, publish)
    priming, update = events[0], events[1]
    assert priming.data == "" and priming.id and priming.retry is not None
    assert json.loads(update.data)["params"] == {"uri": "test://doc"}
    validate(version, "ResourceUpdatedNotification", json.loads(update.data))

    async def nothing() -> None:
        return None

    await app.resource_updated("test://doc")
    resumed = await _get_stream(wire, session, version, 2, nothing, last=update.id)
    data = [e for e in resumed if e.data]
    assert len(data) == 1 and json.loads(data[0].data)["method"] == "notifications/resources/updated"


async def test_batches_only_under_2025_03_26(wire: Wire) -> None:
    session, _ = await wire.initialize("2025-03-26")
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 1}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        {"jsonrpc": "1.0", "id": 3, "method": "ping"},
    ]
    reply = await wire.post(batch, {"mcp-session-id": session, "mcp-protocol-version": "2025-03-26"})
    assert reply.status == 200
    by_id = {m.get("id"): m for m in reply.messages}
    assert by_id[1]["result"]["structuredContent"] == {"result": 2}
    assert by_id[2]["result"] == {}
    assert by_id[3]["error"]["code"] == -32600
    validate("2025-03-26", "JSONRPCBatchResponse", reply.messages)
    only_notes = await wire.post([{"jsonrpc": "2.0", "method": "notifications/initialized"}],
                                 {"mcp-session-id": session, "mcp-protocol-version": "2025-03-26"})
    assert only_notes.status == 202
    later, _ = await wire.initialize("2025-06-18")
    refused = await wire.post(batch, {"mcp-session-id": later, "mcp-protocol-version": "2025-06-18"})
    assert refused.status == 400 and refused.error["code"] == -32600
