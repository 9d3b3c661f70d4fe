"""Bad input gets a clear JSON-RPC error and status: never a crash, a hang or unbounded memory."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from ..helpers import MODERN, Wire, meta, raw_http


async def test_unparsable_json_is_32700_400(wire: Wire) -> None:
    reply = await wire.post(
        None, {"mcp-protocol-version": MODERN}, raw=b'{"jsonrpc": "2.0", "id": 1,'
    )
    assert reply.status == 400
    assert reply.error["code"] == -32700 and "id" not in reply.message


async def test_not_a_request_is_32600_with_the_id(wire: Wire) -> None:
    reply = await wire.post(
        {"jsonrpc": "1.0", "id": 5, "method": "x"}, {"mcp-protocol-version": MODERN}
    )
    assert reply.status == 400
    assert reply.error["code"] == -32600 and reply.message["id"] == 5
    scalar = await wire.post(None, {}, raw=b"42")
    assert scalar.status == 400 and scalar.error["code"] == -32600


async def test_deep_nesting_is_refused(wire: Wire) -> None:
    body = (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":'
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}}}"
    )
    reply = await wire.post(None, {"mcp-protocol-version": MODERN}, raw=body)
    assert reply.status == 400
    assert reply.error["data"]["reason"] == "nesting too deep"


async def test_body_over_the_limit_is_413_without_reading_it(wire: Wire) -> None:
    huge = b"x" * (5 * 1024 * 1024)
    request = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(huge)).encode() + b"\r\n\r\n"
    )
    reply = await raw_http(wire.url, request)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:100]
    assert b'"code":-32600' in reply


async def test_chunked_body_over_the_limit_is_413(wire: Wire) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(9):
            yield b"x" * (512 * 1024)

    response = await wire.client.post(
        wire.url, content=chunks(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 413


async def test_huge_headers_are_refused_by_the_http_layer(wire: Wire) -> None:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta()}}
    ).encode()
    request = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * (128 * 1024) + b"\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )
    reply = await raw_http(wire.url, request)
    assert reply == b"" or reply.split(b" ", 2)[1] in (b"400", b"413", b"431")


async def test_wrong_path_is_404(wire: Wire) -> None:
    response = await wire.client.post(wire.url.replace("/mcp", "/other"), content=b"{}")
    assert response.status_code == 404


async def test_server_survives_garbage(wire: Wire) -> None:
    for raw in (
        b"",
        b"\xff\xfe",
        b"[]",
        b"[1,2]",
        b'{"jsonrpc":"2.0","id":null,"method":"x"}',
        b"null",
    ):
        reply = await wire.post(None, {"mcp-protocol-version": MODERN}, raw=raw)
        assert reply.status in (400, 202), raw
    ok = await wire.modern("server/discover")
    assert ok.status == 200
