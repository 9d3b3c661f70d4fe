"""The method table (`mcpfast.protocol.methods`) is the one source of method facts: the eras'
handler tables, and both codec backends' routing (the ``Mcp-Name`` member a frame reports and
the header ``check_headers`` requires), agree with it."""

from __future__ import annotations

import json
from types import ModuleType

import pytest

import mcpfast
from mcpfast.errors import CodecError
from mcpfast.protocol.methods import METHODS, NAME_FIELD, in_era
from mcpfast.server.config import Config
from mcpfast.server.endpoint import Endpoint

from .helpers import TEST_KEYS

FIELDS = ("name", "uri", "taskId")
UNKNOWN = "vendor/unknown"


def test_the_eras_serve_exactly_the_table() -> None:
    endpoint = Endpoint(mcpfast.Server("methods", "1"), Config(), TEST_KEYS)
    assert set(endpoint.modern.handlers) == in_era("modern")
    assert set(endpoint.legacy.handlers) | {"initialize"} == in_era("legacy")


@pytest.mark.parametrize("method", [*METHODS, UNKNOWN])
def test_frame_routes_by_the_table(codec: ModuleType, method: str) -> None:
    for field in FIELDS:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {field: "x"}}
        _, (message,) = codec.frame(json.dumps(body).encode(), 64)
        routed = message.name
        assert (routed == "x") == (NAME_FIELD.get(method) == field), (method, field, routed)


@pytest.mark.parametrize("method", [*METHODS, UNKNOWN])
def test_check_headers_requires_mcp_name_by_the_table(codec: ModuleType, method: str) -> None:
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": method}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"name": "x"}}
    _, (message,) = codec.frame(json.dumps(body).encode(), 64)
    if method in NAME_FIELD:
        with pytest.raises(CodecError) as info:
            codec.check_headers(headers, message, ())
        assert info.value.data == {"header": "Mcp-Name", "reason": "missing"}
    else:
        codec.check_headers(headers, message, ())
