"""The legacy eras at the `Endpoint`: the handshake and its signed session ids, requests of a
session, DELETE, notifications and answers (202), 2025-03-26 batches, live server-to-client
requests, cancellation, and the GET stream."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from mcpfast import Context, Server

from ..helpers import validate, validate_message
from .conftest import SSE_FIRST, Wire, encode, session_headers

LEGACY = ["2025-11-25", "2025-06-18", "2025-03-26"]
NEWEST = "2025-11-25"


@pytest.mark.parametrize("version", LEGACY)
async def test_initialize_mints_a_session_that_serves_requests(wire: Wire, version: str) -> None:
    session, reply = await wire.initialize(version)
    validate_message(version, "initialize", reply.message)
    assert reply.result["protocolVersion"] == version
    assert reply.result["serverInfo"]["name"] == "server-tests"
    assert session and all(0x21 <= ord(c) <= 0x7E for c in session)
    for method, params in (
        ("ping", None),
        ("tools/list", {}),
        ("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}),
        ("resources/read", {"uri": "test://doc"}),
        ("prompts/get", {"name": "describe", "arguments": {"city": "Rome"}}),
    ):
        got = await wire.legacy(method, params, session=session, version=version)
        assert got.status == 200, (method, got.messages)
        validate_message(version, method, got.message)
        assert "resultType" not in got.result, method
    assert "mcp-session-id" not in got.headers  # a fresh id is not re-minted


@pytest.mark.parametrize(("asked", "got"), [("2024-01-01", NEWEST), ("2026-07-28", NEWEST)])
async def test_initialize_negotiates_a_legacy_revision(wire: Wire, asked: str, got: str) -> None:
    _, reply = await wire.initialize(asked)
    assert reply.result["protocolVersion"] == got


async def test_a_request_needs_a_session(wire: Wire) -> None:
    reply = await wire.legacy("ping", session=None, version=NEWEST)
    assert reply.status == 400 and reply.error["code"] == -32600


@pytest.mark.parametrize("mangle", [lambda s: s[:20], lambda s: s[:-3] + "abc", lambda s: "x" + s])
async def test_an_unknown_session_is_404(wire: Wire, mangle: Any) -> None:
    session, _ = await wire.initialize(NEWEST)
    forged = mangle(session)
    assert forged != session
    reply = await wire.legacy("ping", session=forged, version=NEWEST)
    assert reply.status == 404 and reply.error["code"] == -32001
    assert reply.message["id"] is not None


async def test_the_version_header_must_name_a_legacy_revision(wire: Wire) -> None:
    session, _ = await wire.initialize(NEWEST)
    bad = await wire.legacy("ping", session=session, version="1999-01-01")
    assert bad.status == 400
    absent = await wire.post(wire.legacy_body("ping"), {"mcp-session-id": session})
    assert absent.status == 200 and absent.result == {}


async def test_delete_ends_the_session(wire: Wire) -> None:
    session, _ = await wire.initialize(NEWEST)
    deleted = await wire.exchange("DELETE", {"mcp-session-id": session})
    assert deleted.status == 204 and deleted.body == b""
    gone = await wire.legacy("ping", session=session, version=NEWEST)
    assert gone.status == 404 and gone.error["data"] == {"reason": "terminated"}
    again = await wire.exchange("DELETE", {"mcp-session-id": session})
    assert again.status == 404


async def test_unknown_method_is_32601_in_a_200(wire: Wire) -> None:
    session, _ = await wire.initialize(NEWEST)
    reply = await wire.legacy("server/discover", session=session, version=NEWEST)
    assert reply.status == 200 and reply.error["code"] == -32601


async def test_notifications_and_stray_answers_are_202(wire: Wire) -> None:
    session, _ = await wire.initialize(NEWEST)
    headers = session_headers(session, NEWEST)
    note = await wire.legacy(
        "notifications/roots/list_changed", session=session, version=NEWEST, notification=True
    )
    answer = await wire.post({"jsonrpc": "2.0", "id": "nobody-asked", "result": {}}, headers)
    error = await wire.post(
        {"jsonrpc": "2.0", "id": 5, "error": {"code": -1, "message": "no"}}, headers
    )
    for reply in (note, answer, error):
        assert reply.status == 202 and reply.body == b""


async def test_set_level_re_mints_the_session_and_filters_logs(wire: Wire) -> None:
    version = "2025-06-18"
    session, _ = await wire.initialize(version)
    call = {"name": "chatty", "arguments": {}}
    quiet = await wire.legacy("tools/call", call, session=session, version=version)
    assert [m.get("method") for m in quiet.messages] == [None]
    level = await wire.legacy(
        "logging/setLevel", {"level": "info"}, session=session, version=version
    )
    fresh = level.headers["mcp-session-id"]
    assert level.result == {} and fresh != session
    for sent in (fresh, session):  # the first id keeps working, with the new level
        loud = await wire.legacy("tools/call", call, session=sent, version=version)
        assert [m.get("method") for m in loud.messages] == ["notifications/message", None]
    bad = await wire.legacy("logging/setLevel", {"level": "loud"}, session=session, version=version)
    assert bad.error["code"] == -32602


# -------------------------------------------------------------------------------------- batches


def _batch(wire: Wire) -> list[dict[str, Any]]:
    return [
        wire.legacy_body("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}}),
        wire.legacy_body("notifications/initialized", notification=True),
        wire.legacy_body("ping"),
        {"jsonrpc": "1.0", "id": 99, "method": "ping"},
        wire.legacy_body("initialize", {}),
    ]


async def test_a_2025_03_26_batch_is_answered_as_a_batch(wire: Wire) -> None:
    version = "2025-03-26"
    session, _ = await wire.initialize(version)
    batch = _batch(wire)
    reply = await wire.post(batch, session_headers(session, version))
    assert reply.status == 200 and reply.headers["content-type"] == "application/json"
    by_id = {m["id"]: m for m in reply.messages}
    assert set(by_id) == {batch[0]["id"], batch[2]["id"], 99, batch[4]["id"]}
    added = by_id[batch[0]["id"]]["result"]
    assert added["content"][0]["text"] == '{"result":2}'
    assert "structuredContent" not in added  # a 2025-06-18 field: 2025-03-26 has none
    assert by_id[batch[2]["id"]]["result"] == {}
    assert by_id[99]["error"]["code"] == -32600
    assert by_id[batch[4]["id"]]["error"]["code"] == -32600
    validate(version, "JSONRPCBatchResponse", reply.messages)


async def test_a_batch_of_notifications_is_202(wire: Wire) -> None:
    session, _ = await wire.initialize("2025-03-26")
    note = wire.legacy_body("notifications/initialized", notification=True)
    reply = await wire.post([note, note], session_headers(session, "2025-03-26"))
    assert reply.status == 202 and reply.body == b""


@pytest.mark.parametrize(
    ("batch", "status", "answer"),
    [
        (
            [],
            400,
            {"code": -32600, "message": "Invalid Request", "data": {"reason": "empty batch"}},
        ),
        (
            [1],
            200,
            [
                {
                    "code": -32600,
                    "message": "Invalid Request",
                    "data": {"reason": "message must be an object"},
                }
            ],
        ),
    ],
)
async def test_a_malformed_batch_is_answered_per_json_rpc(
    wire: Wire, batch: list[Any], status: int, answer: Any
) -> None:
    session, _ = await wire.initialize("2025-03-26")
    reply = await wire.post(batch, session_headers(session, "2025-03-26"))
    errors = [m["error"] for m in reply.messages]
    assert reply.status == status
    assert errors == (answer if isinstance(answer, list) else [answer])


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", None])
async def test_batches_are_refused_outside_2025_03_26(wire: Wire, version: str | None) -> None:
    headers = {}
    if version is not None:
        session, _ = await wire.initialize(version)
        headers = session_headers(session, version)
    reply = await wire.post(_batch(wire), headers)
    assert reply.status == 400 and reply.error["code"] == -32600
    assert reply.error["data"] == {"reason": "batches need 2025-03-26"}


# --------------------------------------------------------------------- live requests, cancelling


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18"])
async def test_elicitation_is_a_request_on_the_call_stream(wire: Wire, version: str) -> None:
    session, _ = await wire.initialize(version, {"elicitation": {}})
    body = wire.legacy_body("tools/call", {"name": "greet", "arguments": {}})
    call = await wire.start("POST", session_headers(session, version), encode(body))
    asked = await call.next_message()
    assert asked["method"] == "elicitation/create"
    validate(version, "ElicitRequest", asked)
    answer = {
        "jsonrpc": "2.0",
        "id": asked["id"],
        "result": {"action": "accept", "content": {"name": "Ada"}},
    }
    ack = await wire.post(answer, session_headers(session, version))
    assert ack.status == 202
    await call.closed.wait()
    assert call.message["id"] == body["id"]
    assert call.result["content"][0]["text"] == "Hello, Ada!"


async def test_an_error_answer_becomes_the_tools_error(wire: Wire) -> None:
    session, _ = await wire.initialize(NEWEST, {"elicitation": {}})
    body = wire.legacy_body("tools/call", {"name": "greet", "arguments": {}})
    call = await wire.start("POST", session_headers(session, NEWEST), encode(body))
    asked = await call.next_message()
    refusal = {"code": -32600, "message": "the user closed the dialog"}
    await wire.post(
        {"jsonrpc": "2.0", "id": asked["id"], "error": refusal}, session_headers(session, NEWEST)
    )
    await call.closed.wait()
    assert call.result["isError"] is True
    assert call.result["content"][0]["text"] == "the user closed the dialog (-32600)"


async def test_notifications_cancelled_cancels_the_handler(server: Server, wire: Wire) -> None:
    running, cancelled = trio.Event(), trio.Event()

    @server.tool()
    async def forever(ctx: Context) -> str:
        running.set()
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()

    session, _ = await wire.initialize(NEWEST)
    body = wire.legacy_body("tools/call", {"name": "forever", "arguments": {}})
    call = wire.spawn("POST", session_headers(session, NEWEST), encode(body))
    await running.wait()
    note = await wire.legacy(
        "notifications/cancelled",
        {"requestId": body["id"], "reason": "enough"},
        session=session,
        version=NEWEST,
        notification=True,
    )
    assert note.status == 202
    await cancelled.wait()
    await call.closed.wait()
    assert call.streaming and call.messages == []  # no answer to a cancelled request


async def test_cancelling_needs_the_same_session(server: Server, wire: Wire) -> None:
    running, gate = trio.Event(), trio.Event()

    @server.tool()
    async def wait(ctx: Context) -> str:
        running.set()
        await gate.wait()
        return "finished"

    session, _ = await wire.initialize(NEWEST)
    other, _ = await wire.initialize(NEWEST)
    body = wire.legacy_body("tools/call", {"name": "wait", "arguments": {}})
    call = wire.spawn("POST", session_headers(session, NEWEST), encode(body))
    await running.wait()
    await wire.legacy(
        "notifications/cancelled",
        {"requestId": body["id"]},
        session=other,
        version=NEWEST,
        notification=True,
    )
    gate.set()
    await call.closed.wait()
    assert call.result["content"][0]["text"] == "finished"


@pytest.mark.parametrize(
    ("accept", "stream"),
    [(SSE_FIRST, True), ("application/json, text/event-stream", False), ("*/*", False)],
)
async def test_a_plain_call_follows_the_accept_ranking(
    wire: Wire, accept: str, stream: bool
) -> None:
    session, _ = await wire.initialize(NEWEST)
    reply = await wire.post(
        wire.legacy_body("ping"), session_headers(session, NEWEST, accept=accept)
    )
    assert reply.streaming is stream
    assert reply.message["result"] == {}
    if stream:  # 2025-11-25: a priming event with an id and retry opens the stream
        assert reply.events[0].data == "" and reply.events[0].id and reply.events[0].retry == 1000


# ----------------------------------------------------------------------------------- GET stream


async def test_get_needs_an_event_stream_accept(wire: Wire) -> None:
    session, _ = await wire.initialize(NEWEST)
    reply = await wire.exchange("GET", session_headers(session, NEWEST, accept="application/json"))
    assert reply.status == 406 and reply.error["code"] == -32600


async def test_get_of_an_unknown_or_ended_session_is_404(wire: Wire) -> None:
    reply = await wire.exchange("GET", session_headers("nope", NEWEST, accept="text/event-stream"))
    assert reply.status == 404
    session, _ = await wire.initialize(NEWEST)
    await wire.exchange("DELETE", {"mcp-session-id": session})
    ended = await wire.exchange("GET", session_headers(session, NEWEST, accept="text/event-stream"))
    assert ended.status == 404 and ended.error["data"] == {"reason": "terminated"}


async def test_get_stream_primes_then_delivers_subscribed_updates(
    server: Server, wire: Wire
) -> None:
    session, _ = await wire.initialize(NEWEST)
    sub = await wire.legacy(
        "resources/subscribe", {"uri": "test://doc"}, session=session, version=NEWEST
    )
    assert sub.result == {}
    stream = await wire.stream(session, NEWEST)
    assert stream.status == 200 and stream.streaming
    priming = stream.events[0]
    assert priming.data == "" and priming.id and priming.retry == 1000
    await server.resource_updated("test://elsewhere")
    await server.resource_updated("test://doc")
    update = await stream.next_message()
    assert update == {
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": {"uri": "test://doc"},
    }
    validate(NEWEST, "ResourceUpdatedNotification", update)
    stream.disconnect()


async def test_get_stream_carries_list_changes(server: Server, wire: Wire) -> None:
    session, _ = await wire.initialize("2025-06-18")
    stream = await wire.stream(session, "2025-06-18")
    assert stream.events == []  # no priming event before 2025-11-25
    server.add_tool(lambda: "x", name="added")
    changed = await stream.next_message()
    assert changed["method"] == "notifications/tools/list_changed"
    assert stream.events[-1].id
    stream.disconnect()


async def test_get_stream_resumes_after_the_last_event_id(server: Server, wire: Wire) -> None:
    session, _ = await wire.initialize(NEWEST)
    first = await wire.stream(session, NEWEST)
    server.add_tool(lambda: "x", name="one")
    await first.next_message()
    first.disconnect()
    last = first.events[-1].id
    server.add_tool(lambda: "y", name="two")
    server.remove_tool("two")
    await trio.testing.wait_all_tasks_blocked()  # both changes are published
    resumed = await wire.stream(session, NEWEST, last=last)
    missed = [await resumed.next_message(), await resumed.next_message()]
    assert [m["method"] for m in missed] == ["notifications/tools/list_changed"] * 2
    assert last not in [e.id for e in resumed.events if e.data]
    resumed.disconnect()


async def test_a_request_stream_resumes_by_get(server: Server, wire: Wire) -> None:
    gate = trio.Event()

    @server.tool()
    async def steps(ctx: Context) -> str:
        await ctx.report_progress(1, 2)
        await gate.wait()
        await ctx.report_progress(2, 2)
        return "steps done"

    version = "2025-06-18"
    session, _ = await wire.initialize(version)
    body = wire.legacy_body(
        "tools/call", {"name": "steps", "arguments": {}, "_meta": {"progressToken": "s"}}
    )
    call = await wire.start("POST", session_headers(session, version), encode(body))
    first = await call.next_message()
    assert first["params"]["progress"] == 1
    call.disconnect()  # the client loses the connection
    resumed = await wire.stream(session, version, last=call.events[0].id)
    gate.set()
    assert (await resumed.next_message())["params"]["progress"] == 2
    assert (await resumed.next_message())["result"]["content"][0]["text"] == "steps done"
    await resumed.closed.wait()  # the response ends the resumed stream


async def test_streams_end_when_the_server_closes(wire: Wire) -> None:
    session, _ = await wire.initialize(NEWEST)
    stream = await wire.stream(session, NEWEST)
    wire.endpoint.closing.set()
    await stream.closed.wait()
    assert [e.data for e in stream.events] == [""]  # the priming event only
