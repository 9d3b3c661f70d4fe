"""How a complete reply is framed on the engine under test: every JSON reply says its length
(``Content-Length``, no chunked encoding), so that clients and proxies read it without chunk
framing, whatever the status; streams stay chunked."""

from __future__ import annotations

import json

import h11
import pytest
import trio

from mcpfast.demo import server as demo_server

from ..helpers import meta, running

MODERN = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
}


async def exchange(url: str, headers: dict[str, str], body: bytes) -> tuple[h11.Response, bytes]:
    """One POST over a fresh connection, read back with h11 (an independent parser)."""
    host, port = url.split("://")[1].split("/")[0].rsplit(":", 1)
    conn = h11.Connection(h11.CLIENT)
    request = h11.Request(
        method="POST",
        target="/mcp",
        headers=[("host", f"{host}:{port}"), ("content-length", str(len(body))), *headers.items()],
    )
    stream = await trio.open_tcp_stream(host, int(port))
    async with stream:
        await stream.send_all(conn.send(request) + conn.send(h11.Data(data=body)))
        await stream.send_all(conn.send(h11.EndOfMessage()))
        response, data = None, b""
        with trio.fail_after(5):
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await stream.receive_some())
                elif isinstance(event, h11.Response):
                    response = event
                elif isinstance(event, h11.Data):
                    data += event.data
                elif isinstance(event, h11.EndOfMessage):
                    break
    assert response is not None
    return response, data


def fields(response: h11.Response) -> dict[bytes, bytes]:
    return {name.lower(): value for name, value in response.headers}


def call(name: str, arguments: dict[str, object], *, id_: int = 1) -> bytes:
    params = {"name": name, "arguments": arguments, "_meta": meta()}
    return json.dumps(
        {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}
    ).encode()


@pytest.mark.parametrize(
    ("case", "headers", "body", "status"),
    [
        (
            "result",
            {"mcp-method": "tools/call", "mcp-name": "echo"},
            call("echo", {"text": "hi"}),
            200,
        ),
        (
            "refused",
            {"mcp-method": "tools/call", "mcp-name": "other"},
            call("echo", {"text": "hi"}),
            400,
        ),
        ("not json", {}, b"{nope", 400),
        ("notification", {}, b'{"jsonrpc": "2.0", "method": "notifications/initialized"}', 202),
    ],
)
async def test_a_complete_reply_says_its_length(
    case: str, headers: dict[str, str], body: bytes, status: int
) -> None:
    async with running(demo_server) as url:
        response, data = await exchange(url, {**MODERN, **headers}, body)
    assert response.status_code == status, (case, data)
    got = fields(response)
    assert b"transfer-encoding" not in got, got
    assert int(got[b"content-length"]) == len(data), got
    if data:
        assert json.loads(data)["jsonrpc"] == "2.0"


async def test_a_stream_is_chunked_and_ends_with_its_result() -> None:
    """A reply that became a stream (progress first) has no length: it is chunked."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {
                "name": "slow",
                "arguments": {"steps": 2, "delay": 0.01},
                "_meta": meta(progressToken="p"),
            },
        }
    ).encode()
    headers = {**MODERN, "mcp-method": "tools/call", "mcp-name": "slow"}
    async with running(demo_server) as url:
        response, data = await exchange(url, headers, body)
    got = fields(response)
    assert response.status_code == 200 and got[b"content-type"].startswith(b"text/event-stream")
    assert b"content-length" not in got and got.get(b"transfer-encoding") == b"chunked"
    assert data.count(b"notifications/progress") == 2 and b"done after 2 steps" in data
