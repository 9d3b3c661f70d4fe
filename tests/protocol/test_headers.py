"""`protocol.headers` both ways: the headers a client sends (`request_headers`) pass the
server's check (`codec.check_headers`), and a header that does not mirror the body fails it."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from mcpfast import codec
from mcpfast.errors import CodecError
from mcpfast.protocol.headers import ACCEPT, header_params, request_headers
from mcpfast.types import VERSION_KEY

VERSION = "2026-07-28"
SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "options": {
            "type": "object",
            "properties": {"dry": {"type": "boolean", "x-mcp-header": "Dry"}},
        },
    },
}
PARAM_HEADERS = {"deploy": header_params(SCHEMA)}


def server_check(headers: dict[str, str], method: str, params: dict[str, Any]) -> None:
    params = {**params, "_meta": {VERSION_KEY: VERSION}}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    _, (message,) = codec.frame(msgspec.json.encode(body))
    codec.check_headers(
        headers,
        message,
        PARAM_HEADERS.get(params.get("name", ""), ()) if method == "tools/call" else (),
    )


@pytest.mark.parametrize(
    ("method", "params", "expected"),
    [
        ("tools/list", {}, {}),
        ("tools/call", {"name": "echo", "arguments": {}}, {"mcp-name": "echo"}),
        ("resources/read", {"uri": "demo://readme"}, {"mcp-name": "demo://readme"}),
        ("prompts/get", {"name": "describe"}, {"mcp-name": "describe"}),
        (
            "tools/call",
            {"name": "deploy", "arguments": {"region": "eu", "options": {"dry": True}}},
            {"mcp-name": "deploy", "mcp-param-region": "eu", "mcp-param-dry": "true"},
        ),
        ("tools/call", {"name": "deploy", "arguments": {}}, {"mcp-name": "deploy"}),
    ],
)
def test_the_client_mirrors_what_the_server_checks(
    method: str, params: dict[str, Any], expected: dict[str, str]
) -> None:
    headers = request_headers(VERSION, method, params, PARAM_HEADERS)
    assert headers == {
        "accept": ACCEPT,
        "content-type": "application/json",
        "mcp-protocol-version": VERSION,
        "mcp-method": method,
        **expected,
    }
    server_check(headers, method, params)


@pytest.mark.parametrize(
    ("change", "header"),
    [
        ({"mcp-method": "tools/list"}, "Mcp-Method"),
        ({"mcp-name": "other"}, "Mcp-Name"),
        ({"mcp-param-region": "us"}, "Mcp-Param-Region"),
    ],
)
def test_the_server_refuses_a_header_that_does_not_mirror(
    change: dict[str, str], header: str
) -> None:
    params = {"name": "deploy", "arguments": {"region": "eu"}}
    headers = {**request_headers(VERSION, "tools/call", params, PARAM_HEADERS), **change}
    with pytest.raises(CodecError) as raised:
        server_check(headers, "tools/call", params)
    assert raised.value.code == -32020
    assert raised.value.data["header"].lower() == header.lower()


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"properties": {"a": {"type": "string", "x-mcp-header": "bad name"}}}, "HTTP token"),
        ({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}, "string, integer"),
        (
            {
                "properties": {
                    "a": {"type": "string", "x-mcp-header": "A"},
                    "b": {"type": "string", "x-mcp-header": "a"},
                }
            },
            "unique",
        ),
    ],
)
def test_declarations_the_rules_forbid(schema: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        header_params(schema)
