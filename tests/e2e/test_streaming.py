"""Streaming, cancellation, subscriptions, multi-round-trip input and tasks, on a real server."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

import mcpfast
from mcpfast import Context, InputRequest
from mcpfast.protocol import sse

from ..helpers import MODERN, Wire, meta, validate_message

app = mcpfast.Server("streaming-tests", "1.0")
cancelled = trio.Event()
started = trio.Event()


@app.tool()
async def chatty(ctx: Context) -> str:
    await ctx.report_progress(1, 2, "half")
    await ctx.log("info", "working")
    await ctx.log("debug", "noise")
    return "ok"


@app.tool()
async def forever(ctx: Context) -> str:
    global started, cancelled
    started.set()
    try:
        await ctx.report_progress(0, 1)
        await trio.sleep_forever()
    except trio.Cancelled:
        cancelled.set()
        raise


@app.tool()
async def boom() -> str:
    raise RuntimeError("it broke")


@app.tool()
async def two_questions(ctx: Context) -> str:
    name = await ctx.elicit(
        "Name?", {"type": "object", "properties": {"n": {"type": "string"}}}, key="name"
    )
    answers = await ctx.ask(
        {
            "color": InputRequest(
                method="elicitation/create",
                params={
                    "message": "Color?",
                    "requestedSchema": {"type": "object", "properties": {}},
                },
            ),
            "roots": InputRequest(method="roots/list"),
        }
    )
    roots = [r["uri"] for r in answers["roots"]["roots"]]
    return f"{name['content']['n']} likes {answers['color']['content']['c']} in {roots}"


@app.tool(task="optional")
async def long_job(ctx: Context, seconds: float = 0.2) -> str:
    await trio.sleep(seconds)
    return "job done"


@app.tool(task="required")
async def task_asker(ctx: Context) -> str:
    answer = await ctx.elicit("Sure?", {"type": "object", "properties": {}}, key="sure")
    return f"answer: {answer['action']}"


@app.resource("test://watched")
def watched() -> str:
    return "v1"


@pytest.fixture
def served() -> mcpfast.Server:
    """`wire` talks to this module's server."""
    return app


async def test_notifications_before_the_result_make_an_sse_stream(wire: Wire) -> None:
    reply = await wire.modern(
        "tools/call",
        {
            "name": "chatty",
            "arguments": {},
            "_meta": meta(progressToken="tok", **{"io.modelcontextprotocol/logLevel": "info"}),
        },
    )
    assert reply.headers["content-type"].startswith("text/event-stream")
    assert reply.headers["x-accel-buffering"] == "no"
    methods = [m.get("method", "result") for m in reply.messages]
    assert methods == ["notifications/progress", "notifications/message", "result"]
    for message in reply.messages:
        validate_message(MODERN, "tools/call", message)
    assert reply.messages[0]["params"]["progressToken"] == "tok"


async def test_no_logs_without_log_level_and_no_progress_without_token(wire: Wire) -> None:
    reply = await wire.modern("tools/call", {"name": "chatty", "arguments": {}})
    assert reply.headers["content-type"] == "application/json"
    assert reply.result["content"][0]["text"] == "ok"


async def test_tool_exception_is_an_error_result(wire: Wire) -> None:
    reply = await wire.modern("tools/call", {"name": "boom", "arguments": {}})
    assert reply.result["isError"] is True
    assert reply.result["content"][0]["text"] == "it broke"
    assert (await wire.modern("tools/call", {"name": "chatty", "arguments": {}})).status == 200


async def test_closing_the_stream_cancels_the_handler(wire: Wire) -> None:
    global started, cancelled
    started, cancelled = trio.Event(), trio.Event()
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "forever", "arguments": {}, "_meta": meta(progressToken=1)},
    }
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "forever",
    }
    async with wire.client.stream("POST", wire.url, json=body, headers=headers) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        async for chunk in response.aiter_bytes():
            assert b"notifications/progress" in chunk
            break
    with trio.fail_after(5):
        await cancelled.wait()


async def test_input_required_round_trips_with_signed_state(wire: Wire) -> None:
    caps: dict[str, Any] = {"elicitation": {}, "roots": {}}
    params: dict[str, Any] = {"name": "two_questions", "arguments": {}}
    first = await wire.modern("tools/call", params, capabilities=caps)
    validate_message(MODERN, "tools/call", first.message)
    assert first.result["resultType"] == "input_required"
    assert list(first.result["inputRequests"]) == ["name"]
    state = first.result["requestState"]
    second = await wire.modern(
        "tools/call",
        {
            **params,
            "inputResponses": {"name": {"action": "accept", "content": {"n": "Ada"}}},
            "requestState": state,
        },
        capabilities=caps,
    )
    assert second.result["resultType"] == "input_required"
    assert set(second.result["inputRequests"]) == {"color", "roots"}
    third = await wire.modern(
        "tools/call",
        {
            **params,
            "inputResponses": {
                "color": {"action": "accept", "content": {"c": "green"}},
                "roots": {"roots": [{"uri": "file:///home"}]},
                "extra": {"ignored": True},
            },
            "requestState": second.result["requestState"],
        },
        capabilities=caps,
    )
    assert third.result["content"][0]["text"] == "Ada likes green in ['file:///home']"


async def test_tampered_or_foreign_request_state_is_rejected(wire: Wire) -> None:
    caps: dict[str, Any] = {"elicitation": {}, "roots": {}}
    first = await wire.modern(
        "tools/call", {"name": "two_questions", "arguments": {}}, capabilities=caps
    )
    state = first.result["requestState"]
    tampered = state[:-2] + ("AA" if not state.endswith("AA") else "BB")
    reply = await wire.modern(
        "tools/call",
        {"name": "two_questions", "arguments": {}, "requestState": tampered},
        capabilities=caps,
    )
    assert reply.error["code"] == -32602
    foreign = await wire.modern(
        "tools/call", {"name": "chatty", "arguments": {}, "requestState": state}
    )
    assert foreign.error["code"] == -32602
    assert foreign.error["data"] == {"reason": "bound to another request"}


async def _listen(
    wire: Wire, notifications: dict[str, Any], frames: int, action: Any
) -> list[dict[str, Any]]:
    body = {
        "jsonrpc": "2.0",
        "id": "sub-1",
        "method": "subscriptions/listen",
        "params": {"_meta": meta(), "notifications": notifications},
    }
    headers = {
        "content-type": "application/json",
        "accept": "text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "subscriptions/listen",
    }
    got: list[dict[str, Any]] = []
    parser = sse.Parser()
    with trio.move_on_after(3):
        async with wire.client.stream("POST", wire.url, json=body, headers=headers) as response:
            async for chunk in response.aiter_bytes():
                for event in parser.feed(chunk):
                    got.append(json.loads(event.data))
                    if len(got) == 1:
                        await action()
                if len(got) >= frames:
                    break
    return got


async def test_listen_acknowledges_then_sends_only_what_was_asked(wire: Wire) -> None:
    async def change() -> None:
        app.add_tool(lambda: "x", name="added")
        app.remove_tool("added")
        await app.resource_updated("test://watched")
        await app.resource_updated("test://other")

    frames = await _listen(
        wire, {"toolsListChanged": True, "resourceSubscriptions": ["test://watched"]}, 4, change
    )
    assert frames[0]["method"] == "notifications/subscriptions/acknowledged"
    assert frames[0]["params"]["notifications"] == {
        "toolsListChanged": True,
        "resourceSubscriptions": ["test://watched"],
    }
    methods = [f["method"] for f in frames[1:]]
    assert (
        "notifications/resources/updated" in methods
        and "notifications/tools/list_changed" in methods
    )
    assert all(
        f["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "sub-1" for f in frames
    )
    assert all(f["params"].get("uri", "test://watched") == "test://watched" for f in frames[1:])
    for frame in frames:
        validate_message(MODERN, "subscriptions/listen", frame)


async def test_listen_filter_excludes_unrequested_kinds(wire: Wire) -> None:
    async def change() -> None:
        app.add_tool(lambda: "x", name="added2")
        app.remove_tool("added2")

    frames = await _listen(wire, {"promptsListChanged": True}, 2, change)
    assert [f["method"] for f in frames] == ["notifications/subscriptions/acknowledged"]


TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


async def test_tasks_run_in_the_background_and_report_their_result(wire: Wire) -> None:
    created = await wire.modern(
        "tools/call", {"name": "long_job", "arguments": {"seconds": 0.1}}, capabilities=TASKS
    )
    assert created.result["resultType"] == "task"
    task_id = created.result["taskId"]
    assert created.result["status"] == "working" and "requestState" not in created.result
    with trio.fail_after(5):
        while True:
            got = await wire.modern("tasks/get", {"taskId": task_id}, capabilities=TASKS)
            assert got.result["resultType"] == "complete"
            if got.result["status"] == "completed":
                break
            await trio.sleep(0.05)
    assert got.result["result"]["content"][0]["text"] == "job done"


async def test_tasks_without_the_extension(wire: Wire) -> None:
    plain = await wire.modern("tools/call", {"name": "long_job", "arguments": {"seconds": 0}})
    assert plain.result["resultType"] == "complete"
    required = await wire.modern("tools/call", {"name": "task_asker", "arguments": {}})
    assert required.error["code"] == -32021
    assert required.error["data"]["requiredCapabilities"] == TASKS
    get = await wire.modern("tasks/get", {"taskId": "x"})
    assert get.error["code"] == -32021


async def test_task_input_cancel_and_unknown_ids(wire: Wire) -> None:
    caps = {**TASKS, "elicitation": {}}
    created = await wire.modern(
        "tools/call", {"name": "task_asker", "arguments": {}}, capabilities=caps
    )
    task_id = created.result["taskId"]
    with trio.fail_after(5):
        while (await wire.modern("tasks/get", {"taskId": task_id}, capabilities=caps)).result[
            "status"
        ] != "input_required":
            await trio.sleep(0.02)
    got = await wire.modern("tasks/get", {"taskId": task_id}, capabilities=caps)
    assert list(got.result["inputRequests"]) == ["sure"]
    ack = await wire.modern(
        "tasks/update",
        {"taskId": task_id, "inputResponses": {"sure": {"action": "accept"}}},
        capabilities=caps,
    )
    assert ack.result == {"resultType": "complete", "_meta": ack.result["_meta"]}
    with trio.fail_after(5):
        while (
            got := await wire.modern("tasks/get", {"taskId": task_id}, capabilities=caps)
        ).result["status"] != "completed":
            await trio.sleep(0.02)
    assert got.result["result"]["content"][0]["text"] == "answer: accept"
    slow = await wire.modern(
        "tools/call", {"name": "long_job", "arguments": {"seconds": 30}}, capabilities=TASKS
    )
    await wire.modern("tasks/cancel", {"taskId": slow.result["taskId"]}, capabilities=TASKS)
    with trio.fail_after(5):
        while (
            await wire.modern("tasks/get", {"taskId": slow.result["taskId"]}, capabilities=TASKS)
        ).result["status"] != "cancelled":
            await trio.sleep(0.02)
    unknown = await wire.modern("tasks/get", {"taskId": "missing"}, capabilities=TASKS)
    assert unknown.error["code"] == -32602


@app.tool()
async def needs_login(ctx: Context) -> str:
    raise mcpfast.UrlElicitationRequired(
        [{"message": "Log in", "url": "https://example.com/login", "elicitationId": "login"}]
    )


async def test_url_elicitation_required_becomes_input_required(wire: Wire) -> None:
    caps: dict[str, Any] = {"elicitation": {"url": {}}}
    reply = await wire.modern(
        "tools/call", {"name": "needs_login", "arguments": {}}, capabilities=caps
    )
    assert reply.result["resultType"] == "input_required"
    request = reply.result["inputRequests"]["login"]
    assert request == {
        "method": "elicitation/create",
        "params": {"mode": "url", "message": "Log in", "url": "https://example.com/login"},
    }
    validate_message(MODERN, "tools/call", reply.message)
