"""The 2026-07-28 era at the `Endpoint`: discovery, calls, the checks a request passes (in
order, with their codes and statuses), multi-round-trip input and cache hints."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from mcpfast import Context, Server

from ..helpers import MODERN, meta, validate_message
from .conftest import SSE_FIRST, Wire, encode, serving


async def test_discover_describes_the_server(wire: Wire) -> None:
    reply = await wire.modern("server/discover", id=7)
    assert reply.status == 200 and reply.headers["content-type"] == "application/json"
    assert reply.message["id"] == 7
    result = reply.result
    validate_message(MODERN, "server/discover", reply.message)
    assert MODERN in result["supportedVersions"]
    assert result["serverInfo"]["name"] == "server-tests"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == {
        "name": "server-tests",
        "version": "1.0",
    }
    assert result["instructions"] == "for tests"
    assert result["resultType"] == "complete"


async def test_tools_call_answers_json(wire: Wire) -> None:
    reply = await wire.modern("tools/call", {"name": "add", "arguments": {"a": 2, "b": 40}})
    assert reply.status == 200 and not reply.streaming
    validate_message(MODERN, "tools/call", reply.message)
    assert reply.result["structuredContent"] == {"result": 42}
    assert json.loads(reply.result["content"][0]["text"]) == {"result": 42}
    assert reply.result["resultType"] == "complete"


async def test_notifications_before_the_result_make_a_stream(wire: Wire) -> None:
    reply = await wire.modern(
        "tools/call",
        {"name": "chatty", "arguments": {}, "_meta": meta(progressToken="p", **_info())},
    )
    assert reply.streaming
    methods = [m.get("method") for m in reply.messages]
    assert methods == ["notifications/progress", "notifications/message", None]
    assert reply.messages[0]["params"]["progressToken"] == "p"
    assert reply.result["content"][0]["text"] == "said"
    assert reply.closed.is_set()


def _info() -> dict[str, Any]:
    return {"io.modelcontextprotocol/logLevel": "info"}


async def test_sse_when_the_client_ranks_it_first(wire: Wire) -> None:
    reply = await wire.modern("server/discover", headers={"accept": SSE_FIRST})
    assert reply.streaming
    assert [e.id for e in reply.events] == [None]
    assert reply.result["resultType"] == "complete"


@pytest.mark.parametrize(
    ("headers", "header", "reason"),
    [
        ({"mcp-protocol-version": None}, "MCP-Protocol-Version", "missing"),
        ({"mcp-protocol-version": "2025-11-25"}, "MCP-Protocol-Version", "mismatch"),
        ({"mcp-method": None}, "Mcp-Method", "missing"),
        ({"mcp-method": "tools/list"}, "Mcp-Method", "mismatch"),
        ({"mcp-name": None}, "Mcp-Name", "missing"),
        ({"mcp-name": "add"}, "Mcp-Name", "mismatch"),
        ({"mcp-name": "=?base64?!!!?="}, "Mcp-Name", "invalid"),
    ],
)
async def test_header_mismatch_is_32020_400(
    wire: Wire, headers: dict[str, str | None], header: str, reason: str
) -> None:
    reply = await wire.modern(
        "tools/call", {"name": "echo", "arguments": {"text": "x"}}, headers=headers
    )
    assert reply.status == 400
    assert reply.error["code"] == -32020
    assert reply.error["data"] == {"header": header, "reason": reason}


async def test_headers_accept_base64_and_whitespace(wire: Wire) -> None:
    reply = await wire.modern(
        "tools/call",
        {"name": "echo", "arguments": {"text": "x"}},
        headers={"mcp-name": "=?base64?ZWNobw==?=", "mcp-method": " \ttools/call "},
    )
    assert reply.status == 200, reply.messages


async def test_unsupported_version_is_32022_400(wire: Wire) -> None:
    params = {"_meta": meta(**{"io.modelcontextprotocol/protocolVersion": "2099-01-01"})}
    reply = await wire.modern(
        "server/discover", params, headers={"mcp-protocol-version": "2099-01-01"}
    )
    assert reply.status == 400
    assert reply.error["code"] == -32022
    assert reply.error["data"]["requested"] == "2099-01-01"
    assert MODERN in reply.error["data"]["supported"]


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}},
        {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}},
    ],
)
async def test_incomplete_meta_is_invalid_params_400(wire: Wire, params: dict[str, Any]) -> None:
    body = {"jsonrpc": "2.0", "id": 3, "method": "server/discover", "params": params}
    reply = await wire.post(body, {"mcp-protocol-version": MODERN, "mcp-method": "server/discover"})
    assert reply.status == 400
    assert reply.error["code"] == -32602 and reply.message["id"] == 3


@pytest.mark.parametrize("method", ["nope/nothing", "ping", "logging/setLevel"])
async def test_unknown_and_legacy_only_methods_are_404(wire: Wire, method: str) -> None:
    reply = await wire.modern(method)
    assert reply.status == 404
    assert reply.error["code"] == -32601


async def test_checks_go_in_order(wire: Wire) -> None:
    """A request failing several checks gets the first failure's answer."""
    reply = await wire.modern(
        "nope/nothing", headers={"mcp-method": "other", "mcp-protocol-version": "2099-01-01"}
    )
    assert (reply.status, reply.error["code"]) == (400, -32020)
    reply = await wire.modern("nope/nothing", headers={"mcp-method": "other"})
    assert (reply.status, reply.error["code"]) == (400, -32020)
    reply = await wire.modern("nope/nothing")
    assert (reply.status, reply.error["code"]) == (404, -32601)


async def test_undeclared_capability_is_32021(wire: Wire) -> None:
    reply = await wire.modern("tools/call", {"name": "greet", "arguments": {}})
    assert reply.status == 400
    assert reply.error["code"] == -32021
    assert reply.error["data"]["requiredCapabilities"] == {"elicitation": {}}


async def test_bad_params_and_log_level_are_32602_200(wire: Wire) -> None:
    bad = await wire.modern("tools/call", {"name": 5})
    assert (bad.status, bad.error["code"]) == (200, -32602)
    params = {"_meta": meta(**{"io.modelcontextprotocol/logLevel": "loud"})}
    level = await wire.modern("server/discover", params)
    assert (level.status, level.error["code"]) == (200, -32602)
    assert level.error["data"] == {"logLevel": "loud"}


async def test_unknown_tool_and_resource_are_invalid_params(wire: Wire) -> None:
    tool = await wire.modern("tools/call", {"name": "nope", "arguments": {}})
    assert tool.error["code"] == -32602
    resource = await wire.modern("resources/read", {"uri": "test://none"})
    assert resource.error["code"] == -32602 and resource.error["data"] == {"uri": "test://none"}


async def test_invalid_tool_arguments_are_a_tool_error(wire: Wire) -> None:
    reply = await wire.modern("tools/call", {"name": "add", "arguments": {"a": "two", "b": 1}})
    assert reply.status == 200 and reply.result["isError"] is True
    assert "$.a" in reply.result["content"][0]["text"]


async def test_notification_is_202_without_a_body(wire: Wire) -> None:
    reply = await wire.post(
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        {"mcp-protocol-version": MODERN},
    )
    assert reply.status == 202 and reply.body == b""


@pytest.mark.parametrize("method", ["GET", "DELETE"])
async def test_get_and_delete_without_a_session_are_405(wire: Wire, method: str) -> None:
    reply = await wire.exchange(method, {"accept": "text/event-stream"})
    assert reply.status == 405 and reply.headers["allow"] == "POST"


async def test_other_http_methods_are_405(wire: Wire) -> None:
    reply = await wire.exchange("PUT")
    assert reply.status == 405 and reply.headers["allow"] == "GET, POST, DELETE"


async def test_foreign_origin_or_host_is_403(wire: Wire) -> None:
    origin = await wire.modern("server/discover", headers={"origin": "http://evil.example"})
    host = await wire.modern("server/discover", headers={"host": "evil.example"})
    assert origin.status == host.status == 403
    assert origin.error["code"] == -32600
    local = await wire.modern("server/discover", headers={"origin": "http://localhost:3000"})
    assert local.status == 200


@pytest.mark.parametrize(
    ("raw", "status", "code"),
    [(b"{not json", 400, -32700), (b'{"jsonrpc": "1.0", "id": 1, "method": "x"}', 400, -32600)],
)
async def test_unframeable_bodies_are_refused(
    wire: Wire, raw: bytes, status: int, code: int
) -> None:
    reply = await wire.post(None, {"mcp-protocol-version": MODERN}, raw=raw)
    assert reply.status == status and reply.error["code"] == code


# ------------------------------------------------------------------------------ input_required


async def test_input_required_round_trips_with_request_state(wire: Wire) -> None:
    caps: dict[str, Any] = {"elicitation": {}}
    params: dict[str, Any] = {"name": "greet", "arguments": {}}
    first = await wire.modern("tools/call", params, capabilities=caps)
    validate_message(MODERN, "tools/call", first.message)
    assert first.result["resultType"] == "input_required"
    assert first.result["inputRequests"]["name"]["method"] == "elicitation/create"
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
    assert second.result["content"][0]["text"] == "Hello, Ada!"
    assert second.result["resultType"] == "complete"


async def test_request_state_is_signed_and_bound(wire: Wire) -> None:
    caps: dict[str, Any] = {"elicitation": {}}
    first = await wire.modern("tools/call", {"name": "greet", "arguments": {}}, capabilities=caps)
    state = first.result["requestState"]
    tampered = state[:-2] + ("AA" if not state.endswith("AA") else "BB")
    forged = await wire.modern(
        "tools/call",
        {"name": "greet", "arguments": {}, "requestState": tampered},
        capabilities=caps,
    )
    assert forged.error["code"] == -32602
    foreign = await wire.modern(
        "tools/call", {"name": "chatty", "arguments": {}, "requestState": state}
    )
    assert foreign.error["data"] == {"reason": "bound to another request"}


# --------------------------------------------------------------------------------- cache hints


async def test_lists_carry_the_servers_cache_hints(wire: Wire) -> None:
    for method, key in (
        ("tools/list", "tools"),
        ("resources/list", "resources"),
        ("prompts/list", "prompts"),
    ):
        reply = await wire.modern(method)
        validate_message(MODERN, method, reply.message)
        assert reply.result[key], method
        assert (reply.result["ttlMs"], reply.result["cacheScope"]) == (5000, "public"), method
    discover = await wire.modern("server/discover")
    assert (discover.result["ttlMs"], discover.result["cacheScope"]) == (5000, "public")


async def test_a_private_cache_scope_is_announced() -> None:
    async with serving(Server("private", cache_ttl_ms=0, cache_scope="private")) as wire:
        reply = await wire.modern("tools/list")
    assert (reply.result["ttlMs"], reply.result["cacheScope"]) == (0, "private")


async def test_pagination_with_opaque_cursors() -> None:
    paged = Server("paged", page_size=2)
    for i in range(5):
        paged.add_tool(lambda: "x", name=f"tool{i}")
    async with serving(paged) as wire:
        names, cursor = [], None
        for _ in range(3):
            params: dict[str, Any] = {"cursor": cursor} if cursor is not None else {}
            page = (await wire.modern("tools/list", params)).result
            names += [t["name"] for t in page["tools"]]
            cursor = page.get("nextCursor")
        assert cursor is None and names == [f"tool{i}" for i in range(5)]
        bad = await wire.modern("tools/list", {"cursor": "not-a-cursor"})
    assert bad.error["code"] == -32602


# ------------------------------------------------------------------------- streams and tasks


async def test_the_client_going_away_cancels_the_handler(server: Server, wire: Wire) -> None:
    cancelled = trio.Event()

    @server.tool()
    async def forever(ctx: Context) -> str:
        await ctx.report_progress(0, 1)
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()

    params = {"name": "forever", "arguments": {}, "_meta": meta(progressToken=1)}
    body, headers = wire.modern_body("tools/call", params)
    call = await wire.start("POST", headers, encode(body))
    assert (await call.next_message())["method"] == "notifications/progress"
    call.disconnect()
    await cancelled.wait()
    assert [m.get("method") for m in call.messages] == ["notifications/progress"]


async def test_listen_sends_only_what_was_asked(server: Server, wire: Wire) -> None:
    asked = {"toolsListChanged": True, "resourceSubscriptions": ["test://doc"]}
    body, headers = wire.modern_body("subscriptions/listen", {"notifications": asked}, id="sub-1")
    stream = await wire.start("POST", {**headers, "accept": "text/event-stream"}, encode(body))
    ack = await stream.next_message()
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == asked
    await server.resource_updated("test://other")
    await server.resource_updated("test://doc")
    server.add_tool(lambda: "x", name="added")
    updated, changed = await stream.next_message(), await stream.next_message()
    assert updated["params"]["uri"] == "test://doc"
    assert changed["method"] == "notifications/tools/list_changed"
    for frame in (ack, updated, changed):
        assert frame["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "sub-1"
        validate_message(MODERN, "subscriptions/listen", frame)
    stream.disconnect()


TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


async def test_a_task_runs_in_the_background(
    server: Server, wire: Wire, autojump_clock: trio.abc.Clock
) -> None:
    @server.tool(task="optional")
    async def job() -> str:
        await trio.sleep(60)
        return "job done"

    created = await wire.modern("tools/call", {"name": "job", "arguments": {}}, capabilities=TASKS)
    assert (created.result["resultType"], created.result["status"]) == ("task", "working")
    task = {"taskId": created.result["taskId"]}
    await trio.sleep(30)
    working = await wire.modern("tasks/get", task, capabilities=TASKS)
    assert working.result["status"] == "working"
    await trio.sleep(31)
    done = await wire.modern("tasks/get", task, capabilities=TASKS)
    assert done.result["status"] == "completed"
    assert done.result["result"]["content"][0]["text"] == "job done"
    without = await wire.modern("tasks/get", task)
    assert without.error["code"] == -32021
