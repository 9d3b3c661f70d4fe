"""The 2026-07-28 wire rules, through a real Hypercorn server on loopback and real HTTP."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ..helpers import MODERN, Wire, meta, raw_http, validate_message


async def test_discover_describes_the_server(wire: Wire) -> None:
    reply = await wire.modern("server/discover")
    assert reply.status == 200
    result = reply.result
    validate_message(MODERN, "server/discover", result and reply.message)
    assert MODERN in result["supportedVersions"]
    assert result["capabilities"]["tools"] == {"listChanged": True}
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcpfast-demo"
    assert result["resultType"] == "complete"
    assert result["ttlMs"] >= 0 and result["cacheScope"] in ("public", "private")
    assert result["instructions"]


async def test_echo_and_add_through_tools_call(wire: Wire) -> None:
    echo = await wire.modern("tools/call", {"name": "echo", "arguments": {"text": "héllo"}})
    validate_message(MODERN, "tools/call", echo.message)
    assert echo.headers["content-type"] == "application/json"
    assert echo.result["content"] == [{"type": "text", "text": "héllo"}]
    add = await wire.modern("tools/call", {"name": "add", "arguments": {"a": 2, "b": 40}})
    validate_message(MODERN, "tools/call", add.message)
    assert add.result["structuredContent"] == {"result": 42}
    assert json.loads(add.result["content"][0]["text"]) == {"result": 42}
    assert add.result["resultType"] == "complete"


async def test_every_list_is_valid_and_carries_cache_hints(wire: Wire) -> None:
    for method, key in (
        ("tools/list", "tools"),
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
        ("prompts/list", "prompts"),
    ):
        reply = await wire.modern(method)
        validate_message(MODERN, method, reply.message)
        assert reply.result[key], method
        assert reply.result["ttlMs"] >= 0 and reply.result["cacheScope"] == "public"
    tools = (await wire.modern("tools/list")).result["tools"]
    add = next(t for t in tools if t["name"] == "add")
    assert add["inputSchema"]["required"] == ["a", "b"]
    assert add["outputSchema"]["properties"]["result"] == {"type": "integer"}


async def test_resources_prompts_and_completion(wire: Wire) -> None:
    read = await wire.modern("resources/read", {"uri": "demo://readme"})
    validate_message(MODERN, "resources/read", read.message)
    assert read.result["contents"][0]["mimeType"] == "text/markdown"
    templated = await wire.modern("resources/read", {"uri": "demo://cities/Lisbon"})
    assert json.loads(templated.result["contents"][0]["text"]) == {"city": "Lisbon", "known": True}
    prompt = await wire.modern("prompts/get", {"name": "describe", "arguments": {"city": "Rome"}})
    validate_message(MODERN, "prompts/get", prompt.message)
    assert "Rome" in prompt.result["messages"][0]["content"]["text"]
    complete = await wire.modern(
        "completion/complete",
        {
            "ref": {"type": "ref/prompt", "name": "describe"},
            "argument": {"name": "city", "value": "P"},
        },
    )
    validate_message(MODERN, "completion/complete", complete.message)
    assert complete.result["completion"]["values"] == ["Paris", "Porto", "Prague"]


async def test_unknown_resource_is_invalid_params_with_the_uri(wire: Wire) -> None:
    reply = await wire.modern("resources/read", {"uri": "demo://nope"})
    validate_message(MODERN, "resources/read", reply.message)
    assert reply.error["code"] == -32602
    assert reply.error["data"] == {"uri": "demo://nope"}


@pytest.mark.parametrize(
    ("params", "missing"),
    [
        ({}, "_meta"),
        ({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}, "protocolVersion"),
        ({"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}, "clientCapabilities"),
    ],
)
async def test_missing_meta_keys_are_invalid_params_400(
    wire: Wire, params: dict[str, Any], missing: str
) -> None:
    body = {"jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": params}
    reply = await wire.post(body, {"mcp-protocol-version": MODERN, "mcp-method": "server/discover"})
    assert reply.status == 400, missing
    assert reply.error["code"] == -32602
    assert reply.message["id"] == 7


async def test_client_info_is_optional(wire: Wire) -> None:
    params = {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    }
    reply = await wire.modern("server/discover", params)
    assert reply.status == 200 and "result" in reply.message


async def test_unsupported_version_names_the_supported_ones(wire: Wire) -> None:
    params = {"_meta": meta(**{"io.modelcontextprotocol/protocolVersion": "2099-01-01"})}
    reply = await wire.modern(
        "server/discover", params, headers={"mcp-protocol-version": "2099-01-01"}
    )
    assert reply.status == 400
    assert reply.error["code"] == -32022
    assert reply.error["data"]["requested"] == "2099-01-01"
    assert MODERN in reply.error["data"]["supported"]
    validate_message(MODERN, "server/discover", reply.message)


@pytest.mark.parametrize(
    ("headers", "header", "reason"),
    [
        ({"mcp-protocol-version": None}, "MCP-Protocol-Version", "missing"),
        ({"mcp-protocol-version": "2025-11-25"}, "MCP-Protocol-Version", "mismatch"),
        ({"mcp-method": None}, "Mcp-Method", "missing"),
        ({"mcp-method": "TOOLS/CALL"}, "Mcp-Method", "mismatch"),
        ({"mcp-name": None}, "Mcp-Name", "missing"),
        ({"mcp-name": "add"}, "Mcp-Name", "mismatch"),
        ({"mcp-name": "=?base64?!!!?="}, "Mcp-Name", "invalid"),
    ],
)
async def test_header_mismatches_are_32020_400(
    wire: Wire, headers: dict[str, str | None], header: str, reason: str
) -> None:
    reply = await wire.modern(
        "tools/call", {"name": "echo", "arguments": {"text": "x"}}, headers=headers
    )
    assert reply.status == 400
    assert reply.error["code"] == -32020
    assert reply.error["data"] == {"header": header, "reason": reason}


async def test_headers_accept_case_and_base64(wire: Wire) -> None:
    reply = await wire.modern(
        "tools/call",
        {"name": "echo", "arguments": {"text": "x"}},
        headers={"MCP-METHOD": "tools/call", "mcp-name": "=?base64?ZWNobw==?="},
    )
    assert reply.status == 200, reply.message


async def test_headers_accept_surrounding_whitespace(wire: Wire) -> None:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta()}}
    ).encode()
    request = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"MCP-Protocol-Version:   2026-07-28  \r\nMcp-Method: \t server/discover\r\n"
        b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )
    reply = await raw_http(wire.url, request)
    assert reply.startswith(b"HTTP/1.1 200"), reply[:200]


async def test_unknown_and_removed_methods_are_404(wire: Wire) -> None:
    for method in ("nope/nothing", "ping", "logging/setLevel", "resources/subscribe"):
        reply = await wire.modern(method)
        assert reply.status == 404, method
        assert reply.error["code"] == -32601


async def test_undeclared_capability_is_32021(wire: Wire) -> None:
    reply = await wire.modern("tools/call", {"name": "greet", "arguments": {}})
    assert reply.status == 400
    assert reply.error["code"] == -32021
    assert reply.error["data"]["requiredCapabilities"] == {"elicitation": {}}


async def test_notification_gets_202_even_without_meta(wire: Wire) -> None:
    reply = await wire.post(
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        {"mcp-protocol-version": MODERN},
    )
    assert reply.status == 202 and reply.response.content == b""


async def test_get_and_delete_are_405(wire: Wire) -> None:
    for method in ("GET", "DELETE"):
        response = await wire.client.request(
            method, wire.url, headers={"accept": "text/event-stream"}
        )
        assert response.status_code == 405, method


async def test_bad_origin_and_host_are_403(wire: Wire) -> None:
    bad_origin = await wire.modern("server/discover", headers={"origin": "http://evil.example"})
    assert bad_origin.status == 403
    bad_host = await wire.modern("server/discover", headers={"host": "evil.example"})
    assert bad_host.status == 403
    good = await wire.modern("server/discover", headers={"origin": "http://localhost:3000"})
    assert good.status == 200


async def test_json_even_when_accept_lacks_event_stream(wire: Wire) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta()}}
    reply = await wire.post(
        body,
        {
            "accept": "application/json",
            "mcp-protocol-version": MODERN,
            "mcp-method": "server/discover",
        },
    )
    assert reply.status == 200 and reply.headers["content-type"] == "application/json"


async def test_invalid_tool_arguments_are_a_tool_error(wire: Wire) -> None:
    reply = await wire.modern("tools/call", {"name": "add", "arguments": {"a": "two", "b": 1}})
    assert reply.status == 200
    assert reply.result["isError"] is True
    assert "$.a" in reply.result["content"][0]["text"]


async def test_unknown_tool_is_invalid_params(wire: Wire) -> None:
    reply = await wire.modern("tools/call", {"name": "nope", "arguments": {}})
    assert reply.error["code"] == -32602


async def test_pagination_with_opaque_cursors() -> None:
    import httpx2

    import mcpfast

    from ..helpers import running

    paged = mcpfast.Server("paged", page_size=2)
    for i in range(5):
        paged.add_tool(lambda: "x", name=f"tool{i}")
    async with running(paged) as url, httpx2.AsyncClient() as client:
        wire = Wire(client, url)
        names, cursor, pages = [], None, 0
        while True:
            params: dict[str, Any] = {"cursor": cursor} if cursor is not None else {}
            reply = await wire.modern("tools/list", params)
            names += [t["name"] for t in reply.result["tools"]]
            pages += 1
            cursor = reply.result.get("nextCursor")
            if cursor is None:
                break
        assert names == [f"tool{i}" for i in range(5)] and pages == 3
        bad = await wire.modern("tools/list", {"cursor": "not-a-cursor"})
        assert bad.error["code"] == -32602
        async with mcpfast.connect(url, "modern") as mcp_client:
            assert len(await mcp_client.list_tools()) == 5


async def test_stalled_client_is_timed_out() -> None:
    import mcpfast

    from ..helpers import running

    async with running(mcpfast.Server("stall"), read_timeout_seconds=1.0) as url:
        host, port = url.split("//")[1].split("/")[0].split(":")
        import trio

        stream = await trio.open_tcp_stream(host, int(port))
        await stream.send_all(
            b'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{"jsonrpc"'
        )
        with trio.fail_after(10):
            data = b""
            while chunk := await stream.receive_some():
                data += chunk
        assert data == b"" or data.split(b" ", 2)[1] in (b"400", b"408"), data[:80]


async def test_sse_when_the_client_ranks_it_first(wire: Wire) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta()}}
    reply = await wire.post(
        body,
        {
            "accept": "text/event-stream, application/json",
            "mcp-protocol-version": MODERN,
            "mcp-method": "server/discover",
        },
    )
    assert reply.headers["content-type"].startswith("text/event-stream")
    assert reply.result["resultType"] == "complete"
