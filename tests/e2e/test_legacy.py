"""The legacy revisions on the same endpoint: sessions as signed tokens, server-to-client
requests, the GET stream with resumption, resumable POST streams and SSE polling (2025-11-25),
cancellation and 2025-03-26 batches."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
import trio
import trio.testing

import mcpfast
from mcpfast import Context
from mcpfast.errors import ClientCapabilityError
from mcpfast.protocol import sse

from ..helpers import Wire, meta, running, validate, validate_message

LEGACY = ["2025-11-25", "2025-06-18", "2025-03-26"]
app = mcpfast.Server("legacy-tests", "1.0")
cancelled = trio.Event()
forever_started = trio.Event()
gate = trio.Event()


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
    answer = await ctx.elicit(
        "Name?", {"type": "object", "properties": {"name": {"type": "string"}}}
    )
    return f"hello {answer['content']['name']}"


@app.tool()
async def ask_model(ctx: Context, prompt: str) -> str:
    answer = await ctx.sample(prompt, max_tokens=50)
    text: str = answer["content"]["text"]
    return "model said " + text


@app.tool()
async def roots(ctx: Context) -> str:
    return ",".join(r["uri"] for r in await ctx.list_roots())


@app.tool()
async def forever(ctx: Context) -> str:
    forever_started.set()
    try:
        await trio.sleep_forever()
    except trio.Cancelled:
        cancelled.set()
        raise


@app.tool()
async def polled(ctx: Context) -> str:
    """Sends one notification, ends its HTTP response, then goes on (SSE polling)."""
    await ctx.report_progress(1, 3)
    await ctx.close_stream()
    await ctx.report_progress(2, 3)
    await gate.wait()
    await ctx.report_progress(3, 3)
    return "polled done"


@app.tool()
async def polled_ask(ctx: Context) -> str:
    """Ends its HTTP response at once, then asks the client a question."""
    await ctx.close_stream()
    answer = await ctx.elicit(
        "Name?", {"type": "object", "properties": {"name": {"type": "string"}}}
    )
    return f"hello {answer['content']['name']}"


@app.tool()
async def closes_early(ctx: Context) -> str:
    await ctx.close_stream()
    return "still here"


@app.tool()
async def steps(ctx: Context) -> str:
    await ctx.report_progress(1, 2)
    await ctx.close_stream()
    await gate.wait()
    await ctx.report_progress(2, 2)
    return "steps done"


@app.resource("test://doc")
def doc() -> str:
    return "doc"


@pytest.fixture
def served() -> mcpfast.Server:
    """`wire` talks to this module's server."""
    return app


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
    missing = await wire.legacy(
        "resources/read", {"uri": "test://none"}, session=session, version=version
    )
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
    no_header = await wire.post(
        {"jsonrpc": "2.0", "id": 9, "method": "ping"}, {"mcp-session-id": session}
    )
    assert no_header.status == 200
    deleted = await wire.client.delete(wire.url, headers={"mcp-session-id": session})
    assert deleted.status_code == 204
    assert (await wire.legacy("ping", session=session, version=version)).status == 404


async def test_set_level_re_mints_the_session_and_filters_logs(wire: Wire) -> None:
    version = "2025-06-18"
    session, _ = await wire.initialize(version)
    quiet = await wire.legacy(
        "tools/call", {"name": "logs", "arguments": {}}, session=session, version=version
    )
    assert [m.get("method") for m in quiet.messages] == [None]
    set_level = await wire.legacy(
        "logging/setLevel", {"level": "info"}, session=session, version=version
    )
    assert set_level.result == {}
    fresh = set_level.headers["mcp-session-id"]
    assert fresh != session
    loud = await wire.legacy(
        "tools/call", {"name": "logs", "arguments": {}}, session=fresh, version=version
    )
    levels = [
        m["params"]["level"] for m in loud.messages if m.get("method") == "notifications/message"
    ]
    assert levels == ["info", "warning"]
    for message in loud.messages:
        validate_message(version, "tools/call", message)


@pytest.mark.parametrize("version", LEGACY)
async def test_the_log_level_reaches_a_client_that_keeps_its_first_id(
    wire: Wire, version: str
) -> None:
    """The official SDK's client sends the ``initialize`` id for the whole session."""
    session, _ = await wire.initialize(version)
    await wire.legacy("logging/setLevel", {"level": "warning"}, session=session, version=version)
    loud = await wire.legacy(
        "tools/call", {"name": "logs", "arguments": {}}, session=session, version=version
    )
    levels = [
        m["params"]["level"] for m in loud.messages if m.get("method") == "notifications/message"
    ]
    assert levels == ["warning"]
    # a subscription made with the first id reaches the GET stream opened with it
    await wire.legacy(
        "resources/subscribe", {"uri": "test://doc"}, session=session, version=version
    )

    headers = {"accept": "text/event-stream", "mcp-session-id": session}
    headers["mcp-protocol-version"] = version
    updates: list[dict[str, Any]] = []
    with trio.fail_after(5):
        async with wire.client.stream("GET", wire.url, headers=headers) as response:
            assert response.status_code == 200
            await app.resource_updated("test://doc")
            parser = sse.Parser()
            async for chunk in response.aiter_bytes():
                updates.extend(json.loads(e.data) for e in parser.feed(chunk) if e.data)
                if updates:
                    break
    assert [u["params"] for u in updates] == [{"uri": "test://doc"}]


async def _answering(
    wire: Wire,
    session: str,
    version: str,
    call: dict[str, Any],
    answer: Any,
    method: str = "tools/call",
) -> list[dict[str, Any]]:
    """POST a call, answer the server's request from its SSE stream, return all frames.
    ``answer(frame)`` is the result, or ``{"error": {...}}`` to answer with an error."""
    body = {"jsonrpc": "2.0", "id": 77, "method": method, "params": call}
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-session-id": session,
        "mcp-protocol-version": version,
    }
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
                        answered = answer(frame)
                        reply = {"jsonrpc": "2.0", "id": frame["id"]}
                        reply.update(answered if "error" in answered else {"result": answered})
                        ack = await wire.post(
                            reply, {"mcp-session-id": session, "mcp-protocol-version": version}
                        )
                        assert ack.status == 202
    return frames


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18"])
async def test_elicitation_is_a_live_request_on_the_call_stream(wire: Wire, version: str) -> None:
    session, _ = await wire.initialize(version, {"elicitation": {}})
    frames = await _answering(
        wire,
        session,
        version,
        {"name": "ask_name", "arguments": {}},
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
        wire,
        session,
        version,
        {"name": "ask_model", "arguments": {"prompt": "hi"}},
        lambda _: {"role": "assistant", "content": {"type": "text", "text": "hey"}, "model": "m"},
    )
    validate(version, "CreateMessageRequest", frames[0])
    assert frames[-1]["result"]["content"][0]["text"] == "model said hey"
    frames = await _answering(
        wire,
        session,
        version,
        {"name": "roots", "arguments": {}},
        lambda _: {"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]},
    )
    validate(version, "ListRootsRequest", frames[0])
    assert frames[-1]["result"]["content"][0]["text"] == "file:///a,file:///b"


async def test_undeclared_capability_is_a_tool_error_that_says_so(wire: Wire) -> None:
    session, _ = await wire.initialize("2025-11-25")
    reply = await wire.legacy(
        "tools/call", {"name": "ask_name", "arguments": {}}, session=session, version="2025-11-25"
    )
    assert [m.get("method") for m in reply.messages] == [None]  # nothing was asked
    assert reply.result["isError"] is True
    text = reply.result["content"][0]["text"]
    assert "did not declare the elicitation capability" in text


@pytest.mark.parametrize("declared", [{}, {"elicitation": {}}])
async def test_no_elicitation_is_sent_to_a_2025_03_26_session(
    wire: Wire, declared: dict[str, Any]
) -> None:
    version = "2025-03-26"
    session, _ = await wire.initialize(version, declared)
    reply = await wire.legacy(
        "tools/call", {"name": "ask_name", "arguments": {}}, session=session, version=version
    )
    assert [m.get("method") for m in reply.messages] == [None]
    assert reply.result["isError"] is True
    text = reply.result["content"][0]["text"]
    assert "revision 2025-03-26 has none" in text and "2025-06-18" in text
    validate_message(version, "tools/call", reply.message)


@app.tool()
async def ask_or_default(ctx: Context) -> str:
    try:
        answer = await ctx.elicit("Name?", {"type": "object", "properties": {}})
    except ClientCapabilityError as exc:
        return f"default ({exc.code})"
    return str(answer["action"])


async def test_a_handler_catches_the_capability_error(wire: Wire) -> None:
    version = "2025-03-26"
    session, _ = await wire.initialize(version, {"elicitation": {}})
    reply = await wire.legacy(
        "tools/call", {"name": "ask_or_default", "arguments": {}}, session=session, version=version
    )
    assert reply.result["content"][0]["text"] == "default (-32021)"


async def test_a_client_error_answer_reads_as_the_client_said_it(wire: Wire) -> None:
    version = "2025-11-25"
    session, _ = await wire.initialize(version, {"elicitation": {}})
    frames = await _answering(
        wire,
        session,
        version,
        {"name": "ask_name", "arguments": {}},
        lambda _: {"error": {"code": -32600, "message": "the user closed the dialog"}},
    )
    assert frames[0]["method"] == "elicitation/create"
    result = frames[-1]["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"] == "the user closed the dialog (-32600)"


async def test_an_unanswered_server_request_times_out() -> None:
    version = "2025-06-18"
    async with running(app, input_timeout_seconds=0.5) as url, httpx2.AsyncClient() as client:
        wire = Wire(client, url)
        session, _ = await wire.initialize(version, {"elicitation": {}})
        with trio.fail_after(5):
            reply = await wire.legacy(
                "tools/call",
                {"name": "ask_name", "arguments": {}},
                session=session,
                version=version,
            )
    asked, cancelled, answer = reply.messages
    assert asked["method"] == "elicitation/create"
    assert cancelled["method"] == "notifications/cancelled"
    assert cancelled["params"]["requestId"] == asked["id"]
    assert answer["result"]["isError"] is True
    text = answer["result"]["content"][0]["text"]
    assert text == "The client did not answer elicitation/create within 0.5 s (-32603)"
    validate_message(version, "tools/call", cancelled)


async def test_cancelled_notification_cancels_the_handler(wire: Wire) -> None:
    global cancelled, forever_started
    cancelled, forever_started = trio.Event(), trio.Event()
    version = "2025-11-25"
    session, _ = await wire.initialize(version)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(
            wire.post,
            {
                "jsonrpc": "2.0",
                "id": "long-1",
                "method": "tools/call",
                "params": {"name": "forever", "arguments": {}},
            },
            {"mcp-session-id": session, "mcp-protocol-version": version},
        )
        with trio.fail_after(5):
            await forever_started.wait()
        note = await wire.legacy(
            "notifications/cancelled",
            {"requestId": "long-1"},
            session=session,
            version=version,
            notification=True,
        )
        assert note.status == 202
        with trio.fail_after(5):
            await cancelled.wait()


async def _get_stream(
    wire: Wire, session: str, version: str, frames: int, action: Any, last: str | None = None
) -> list[sse.Event]:
    headers = {
        "accept": "text/event-stream",
        "mcp-session-id": session,
        "mcp-protocol-version": version,
    }
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
    sub = await wire.legacy(
        "resources/subscribe", {"uri": "test://doc"}, session=session, version=version
    )
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
    assert (
        len(data) == 1 and json.loads(data[0].data)["method"] == "notifications/resources/updated"
    )


async def test_batches_only_under_2025_03_26(wire: Wire) -> None:
    session, _ = await wire.initialize("2025-03-26")
    batch = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 1}},
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        {"jsonrpc": "1.0", "id": 3, "method": "ping"},
    ]
    reply = await wire.post(
        batch, {"mcp-session-id": session, "mcp-protocol-version": "2025-03-26"}
    )
    assert reply.status == 200
    by_id = {m.get("id"): m for m in reply.messages}
    assert by_id[1]["result"]["content"][0]["text"] == '{"result":2}'
    assert "structuredContent" not in by_id[1]["result"]  # 2025-03-26 has none
    assert by_id[2]["result"] == {}
    assert by_id[3]["error"]["code"] == -32600
    validate("2025-03-26", "JSONRPCBatchResponse", reply.messages)
    only_notes = await wire.post(
        [{"jsonrpc": "2.0", "method": "notifications/initialized"}],
        {"mcp-session-id": session, "mcp-protocol-version": "2025-03-26"},
    )
    assert only_notes.status == 202
    later, _ = await wire.initialize("2025-06-18")
    refused = await wire.post(
        batch, {"mcp-session-id": later, "mcp-protocol-version": "2025-06-18"}
    )
    assert refused.status == 400 and refused.error["code"] == -32600


# ------------------------------------------------------------------ resumable POST streams, polling

JSON_FIRST = "application/json, text/event-stream"
SSE_FIRST = "text/event-stream, application/json"


def _headers(
    session: str, version: str, accept: str = JSON_FIRST, last: str | None = None
) -> dict[str, str]:
    headers = {
        "content-type": "application/json",
        "accept": accept,
        "mcp-session-id": session,
        "mcp-protocol-version": version,
    }
    if last is not None:
        headers["last-event-id"] = last
    return headers


def _call(name: str, id_: int | str, token: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": {}}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}


async def _read(response: httpx2.Response, on_event: Any = None) -> list[sse.Event]:
    """Every event of an SSE response until the server ends it; ``on_event`` sees each."""
    assert response.headers["content-type"].startswith("text/event-stream")
    events: list[sse.Event] = []
    parser = sse.Parser()
    async for chunk in response.aiter_bytes():
        for event in parser.feed(chunk):
            events.append(event)
            if on_event is not None:
                await on_event(event)
    return events


async def _post_events(
    wire: Wire, session: str, version: str, body: Any, accept: str = JSON_FIRST
) -> list[sse.Event]:
    with trio.fail_after(5):
        async with wire.client.stream(
            "POST", wire.url, json=body, headers=_headers(session, version, accept)
        ) as response:
            assert response.status_code == 200
            return await _read(response)


async def _resume(
    wire: Wire, session: str, version: str, last: str, on_event: Any = None
) -> list[sse.Event]:
    headers = _headers(session, version, "text/event-stream", last)
    del headers["content-type"]
    with trio.fail_after(5):
        async with wire.client.stream("GET", wire.url, headers=headers) as response:
            assert response.status_code == 200
            return await _read(response, on_event)


def _messages(events: list[sse.Event]) -> list[dict[str, Any]]:
    return [json.loads(e.data) for e in events if e.data]


async def test_a_2025_03_26_batch_stream_has_event_ids_and_resumes(wire: Wire) -> None:
    version = "2025-03-26"
    session, _ = await wire.initialize(version)
    batch = [_call("progress", 1, token="t"), {"jsonrpc": "2.0", "id": 2, "method": "ping"}]
    events = await _post_events(wire, session, version, batch)
    assert all(e.id for e in events) and len({e.id for e in events}) == len(events)
    assert all(e.data for e in events), "no priming event before 2025-11-25"
    messages = _messages(events)
    assert messages[0]["method"] == "notifications/progress"
    assert {m.get("id") for m in messages[1:]} == {1, 2}
    replayed = await _resume(wire, session, version, events[0].id or "")
    assert _messages(replayed) == messages[1:], "what followed the first event, in order"


async def test_a_2025_11_25_stream_opens_with_a_priming_event_and_retry(wire: Wire) -> None:
    version = "2025-11-25"
    session, _ = await wire.initialize(version)
    events = await _post_events(wire, session, version, _call("progress", 1, token="t"))
    priming, *rest = events
    assert priming.data == "" and priming.id and priming.retry == 1000
    assert [m.get("method") for m in _messages(rest)] == ["notifications/progress", None]
    assert all(e.id for e in events) and len({e.id for e in events}) == len(events)
    assert _messages(rest)[-1]["result"]["content"][0]["text"] == "done"
    # a client ranking text/event-stream first gets a stream even for a plain call; one ranking
    # JSON first gets JSON when nothing streams
    listed = await _post_events(
        wire, session, version, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, SSE_FIRST
    )
    assert listed[0].data == "" and listed[0].id and listed[0].retry == 1000
    assert listed[1].id and "tools" in json.loads(listed[1].data)["result"]
    plain = await wire.legacy("tools/list", {}, session=session, version=version)
    assert plain.headers["content-type"] == "application/json" and "tools" in plain.result


@pytest.mark.parametrize(
    ("accept", "stream"),
    [
        ("text/event-stream, application/json", True),
        ("application/json, text/event-stream", False),
        ("application/json;q=0.5, text/event-stream", True),
        ("text/event-stream;q=0.8, application/json", False),
        ("*/*", False),
    ],
)
async def test_a_plain_call_follows_the_accept_ranking(
    wire: Wire, accept: str, stream: bool
) -> None:
    version = "2025-11-25"
    session, _ = await wire.initialize(version)
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    reply = await wire.post(body, _headers(session, version, accept))
    kind = reply.headers["content-type"]
    assert kind.startswith("text/event-stream" if stream else "application/json")
    assert reply.message == {"jsonrpc": "2.0", "id": 1, "result": {}}


async def test_a_handler_closes_its_stream_and_the_client_resumes(wire: Wire) -> None:
    global gate
    gate = trio.Event()
    version = "2025-11-25"
    session, _ = await wire.initialize(version)
    first = await _post_events(wire, session, version, _call("polled", 5, token="p"))
    priming, progress = first  # the response ended before the result
    assert priming.data == "" and priming.retry == 1000
    assert json.loads(progress.data)["params"]["progress"] == 1

    async def release(event: sse.Event) -> None:
        if event.data and json.loads(event.data).get("params", {}).get("progress") == 2:
            gate.set()

    resumed = await _resume(wire, session, version, progress.id or "", release)
    assert resumed[0].data == "" and resumed[0].id == progress.id and resumed[0].retry == 1000
    messages = _messages(resumed)
    assert [m.get("params", {}).get("progress") for m in messages[:-1]] == [2, 3]
    assert messages[-1] == {"jsonrpc": "2.0", "id": 5, "result": messages[-1]["result"]}
    assert messages[-1]["result"]["content"][0]["text"] == "polled done"
    validate_message(version, "tools/call", messages[-1])
    ids = [e.id for e in first + resumed[1:]]
    assert all(ids) and len(set(ids)) == len(ids)
    # the stream is replayable on its own from any of its ids, the response included; it ended,
    # so the replay ends too
    again = _messages(await _resume(wire, session, version, priming.id or ""))
    assert [m.get("params", {}).get("progress") for m in again[:-1]] == [1, 2, 3]
    assert again[-1]["id"] == 5


async def test_a_server_request_is_answered_after_resuming(wire: Wire) -> None:
    version = "2025-11-25"
    session, _ = await wire.initialize(version, {"elicitation": {}})
    (priming,) = await _post_events(wire, session, version, _call("polled_ask", "ask-1"))
    assert priming.data == "" and priming.id

    async def answer(event: sse.Event) -> None:
        if not event.data:
            return
        frame = json.loads(event.data)
        if frame.get("method") == "elicitation/create":
            validate(version, "ElicitRequest", frame)
            reply = {
                "jsonrpc": "2.0",
                "id": frame["id"],
                "result": {"action": "accept", "content": {"name": "Ada"}},
            }
            ack = await wire.post(
                reply, {"mcp-session-id": session, "mcp-protocol-version": version}
            )
            assert ack.status == 202

    messages = _messages(await _resume(wire, session, version, priming.id or "", answer))
    assert [m.get("method") for m in messages] == ["elicitation/create", None]
    assert messages[-1]["id"] == "ask-1"
    assert messages[-1]["result"]["content"][0]["text"] == "hello Ada"


async def test_resuming_needs_an_id_of_the_same_session(wire: Wire) -> None:
    version = "2025-11-25"
    session, _ = await wire.initialize(version)
    other, _ = await wire.initialize(version)
    (priming,) = await _post_events(wire, session, version, _call("closes_early", 1))
    # another session's id is unknown there: the plain GET stream, not that call's response
    headers = _headers(other, version, "text/event-stream", priming.id)
    events: list[sse.Event] = []
    with trio.move_on_after(0.5):
        async with wire.client.stream("GET", wire.url, headers=headers) as response:
            assert response.status_code == 200
            parser = sse.Parser()
            async for chunk in response.aiter_bytes():
                events.extend(parser.feed(chunk))
    assert events and not any(e.data for e in events) and events[0].id != priming.id
    # and the owner gets it
    (message,) = _messages(await _resume(wire, session, version, priming.id or ""))
    assert message["result"]["content"][0]["text"] == "still here"


@pytest.mark.parametrize("version", ["2025-06-18", "2025-03-26"])
async def test_older_revisions_number_their_events_without_priming(
    wire: Wire, version: str
) -> None:
    """SSE ids and resumption exist in every legacy revision; the priming event, ``retry`` and
    closing a stream early (polling) only in 2025-11-25, so `close_stream` does nothing here."""
    global gate
    gate = trio.Event()
    session, _ = await wire.initialize(version)
    body = _call("steps", 3, token="s")
    seen: list[sse.Event] = []
    with trio.fail_after(5):
        async with wire.client.stream(
            "POST", wire.url, json=body, headers=_headers(session, version)
        ) as response:
            parser = sse.Parser()
            async for chunk in response.aiter_bytes():
                seen.extend(parser.feed(chunk))
                if seen:
                    break  # the client loses the connection after the first event
    (first,) = seen
    assert first.id and first.retry is None and json.loads(first.data)["params"]["progress"] == 1
    await trio.testing.wait_all_tasks_blocked()  # the server saw the connection go
    gate.set()  # the handler goes on sending to the lost connection, which is recorded
    resumed = await _resume(wire, session, version, first.id)
    assert all(e.data and e.id and e.retry is None for e in resumed)
    messages = _messages(resumed)
    assert messages[0]["params"]["progress"] == 2
    assert messages[-1]["result"]["content"][0]["text"] == "steps done"
    # close_stream is a no-op: the whole call is answered on its POST
    whole = await wire.legacy(
        "tools/call", {"name": "closes_early", "arguments": {}}, session=session, version=version
    )
    assert whole.headers["content-type"] == "application/json"
    assert whole.result["content"][0]["text"] == "still here"


async def test_close_stream_is_a_no_op_in_the_modern_era(wire: Wire) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "closes_early", "arguments": {}, "_meta": meta()},
    }
    headers = {
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "closes_early",
    }
    reply = await wire.post(body, headers)
    assert reply.status == 200 and reply.result["content"][0]["text"] == "still here"


@app.tool(task="optional")
async def background(ctx: Context, seconds: float = 0.05) -> str:
    await trio.sleep(seconds)
    return "background done"


@app.tool()
async def needs_login(ctx: Context, done: bool = False) -> str:
    if not done:
        raise mcpfast.UrlElicitationRequired(
            [{"message": "Log in", "url": "https://example.com/login", "elicitationId": "login-1"}]
        )
    await ctx.complete_elicitation("login-1")
    return "logged in"


@app.tool(task="optional")
async def task_asks(ctx: Context) -> str:
    answer = await ctx.elicit(
        "Name?", {"type": "object", "properties": {"name": {"type": "string"}}}
    )
    return f"task says hello {answer['content']['name']}"


async def _asking_task(wire: Wire, version: str) -> tuple[str, str]:
    """A session declaring elicitation, and the id of a ``task_asks`` task it started."""
    session, _ = await wire.initialize(version, {"elicitation": {}})
    created = await wire.legacy(
        "tools/call",
        {"name": "task_asks", "arguments": {}, "task": {}},
        session=session,
        version=version,
    )
    return session, created.result["task"]["taskId"]


async def test_a_2025_11_25_task_asks_for_input_through_tasks_result(wire: Wire) -> None:
    version = "2025-11-25"
    session, task_id = await _asking_task(wire, version)
    with trio.fail_after(5):
        while (
            await wire.legacy("tasks/get", {"taskId": task_id}, session=session, version=version)
        ).result["status"] != "input_required":
            await trio.sleep(0.02)
    frames = await _answering(
        wire,
        session,
        version,
        {"taskId": task_id},
        lambda _: {"action": "accept", "content": {"name": "Ada"}},
        method="tasks/result",
    )
    request, result = frames
    assert request["method"] == "elicitation/create"
    validate(version, "ElicitRequest", request)
    assert request["params"]["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
    assert result["result"]["content"][0]["text"] == "task says hello Ada"
    got = await wire.legacy("tasks/get", {"taskId": task_id}, session=session, version=version)
    assert got.result["status"] == "completed"


async def test_cancelling_a_task_ends_the_tasks_result_waiting_for_input(wire: Wire) -> None:
    version = "2025-11-25"
    session, task_id = await _asking_task(wire, version)
    body = {"jsonrpc": "2.0", "id": 5, "method": "tasks/result", "params": {"taskId": task_id}}
    frames: list[dict[str, Any]] = []
    parser = sse.Parser()
    with trio.fail_after(5):
        async with wire.client.stream(
            "POST", wire.url, json=body, headers=_headers(session, version)
        ) as response:
            async for chunk in response.aiter_bytes():
                for event in parser.feed(chunk):
                    if not event.data:
                        continue
                    frames.append(json.loads(event.data))
                    if frames[-1].get("method") == "elicitation/create":  # left unanswered
                        cancelled = await wire.legacy(
                            "tasks/cancel", {"taskId": task_id}, session=session, version=version
                        )
                        assert cancelled.result["status"] == "cancelled"
    assert frames[0]["method"] == "elicitation/create"
    assert frames[-1]["id"] == 5 and frames[-1]["error"]["code"] == -32602


async def test_2025_11_25_experimental_tasks(wire: Wire) -> None:
    version = "2025-11-25"
    session, init = await wire.initialize(version)
    assert init.result["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
    created = await wire.legacy(
        "tools/call",
        {"name": "background", "arguments": {}, "task": {"ttl": 60000}},
        session=session,
        version=version,
    )
    validate(version, "CreateTaskResult", created.result)
    task_id = created.result["task"]["taskId"]
    result = await wire.legacy(
        "tasks/result", {"taskId": task_id}, session=session, version=version
    )
    assert result.result["content"][0]["text"] == "background done"
    assert result.result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
    got = await wire.legacy("tasks/get", {"taskId": task_id}, session=session, version=version)
    validate(version, "GetTaskResult", got.result)
    assert got.result["status"] == "completed"
    listed = await wire.legacy("tasks/list", {}, session=session, version=version)
    assert task_id in [t["taskId"] for t in listed.result["tasks"]]
    terminal = await wire.legacy(
        "tasks/cancel", {"taskId": task_id}, session=session, version=version
    )
    assert terminal.error["code"] == -32602
    slow = await wire.legacy(
        "tools/call",
        {"name": "background", "arguments": {"seconds": 30}, "task": {}},
        session=session,
        version=version,
    )
    cancelled = await wire.legacy(
        "tasks/cancel", {"taskId": slow.result["task"]["taskId"]}, session=session, version=version
    )
    validate(version, "CancelTaskResult", cancelled.result)
    assert cancelled.result["status"] == "cancelled"
    plain = await wire.legacy(
        "tools/call",
        {"name": "add", "arguments": {"a": 1, "b": 1}, "task": {}},
        session=session,
        version=version,
    )
    assert plain.error["code"] == -32601


async def test_url_elicitation_required_and_completion_notice(wire: Wire) -> None:
    version = "2025-11-25"
    session, _ = await wire.initialize(version, {"elicitation": {"url": {}}})
    refused = await wire.legacy(
        "tools/call", {"name": "needs_login", "arguments": {}}, session=session, version=version
    )
    assert refused.error["code"] == -32042
    validate(version, "URLElicitationRequiredError", refused.message)
    assert refused.error["data"]["elicitations"][0]["elicitationId"] == "login-1"

    async def finish() -> None:
        done = await wire.legacy(
            "tools/call",
            {"name": "needs_login", "arguments": {"done": True}},
            session=session,
            version=version,
        )
        assert done.result["content"][0]["text"] == "logged in"

    events = await _get_stream(wire, session, version, 2, finish)
    notes = [json.loads(e.data) for e in events if e.data]
    assert notes == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/elicitation/complete",
            "params": {"elicitationId": "login-1"},
        }
    ]
    validate(version, "ElicitationCompleteNotification", notes[0])
