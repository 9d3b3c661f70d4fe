"""`mcpfast.protocol.modern.check`: one row per request that breaks one rule (or two, where
the earlier check must win), with no server and no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import msgspec
import pytest

from mcpfast import codec, jsonrpc
from mcpfast.errors import ProtocolError
from mcpfast.protocol.modern import check
from mcpfast.types import CAPABILITIES_KEY, LOG_LEVEL_KEY, VERSION_KEY, Params, RequestMeta
from mcpfast.versions import ALL_VERSIONS, LEGACY, MODERN

OLD = LEGACY[0]
SERVED = frozenset(("tools/list", "tools/call"))
TOOL_HEADERS = (("Region", ("region",)),)


@dataclass(frozen=True)
class Request:
    """A ``tools/call`` of tool ``t`` that passes every check; rows change one thing or two."""

    method: str = "tools/call"
    name: str | None = "t"
    meta: dict[str, Any] | None = field(
        default_factory=lambda: {VERSION_KEY: MODERN, CAPABILITIES_KEY: {}}
    )
    arguments: dict[str, Any] = field(default_factory=lambda: {"region": "eu"})
    headers: dict[str, str] | None = field(
        default_factory=lambda: {
            "mcp-protocol-version": MODERN,
            "mcp-method": "tools/call",
            "mcp-name": "t",
            "mcp-param-region": "eu",
        }
    )
    invalid: Exception | None = None

    def with_headers(self, **changes: str | None) -> Request:
        assert self.headers is not None
        headers = dict(self.headers)
        for key, value in changes.items():
            key = key.replace("_", "-")
            if value is None:
                del headers[key]
            else:
                headers[key] = value
        return replace(self, headers=headers)

    def run(self) -> tuple[str, RequestMeta]:
        body: dict[str, Any] = {"arguments": self.arguments}
        if self.name is not None:
            body["name"] = self.name
        if self.meta is not None:
            body["_meta"] = self.meta
        raw = msgspec.json.encode(body)
        envelope = {"jsonrpc": "2.0", "id": 1, "method": self.method, "params": msgspec.Raw(raw)}
        _, (message,) = codec.frame(msgspec.json.encode(envelope))
        return check(
            self.headers,
            message,
            msgspec.json.decode(raw, type=Params).meta,
            TOOL_HEADERS if self.method == "tools/call" else (),
            served_methods=SERVED,
            invalid=self.invalid,
        )


OK = Request()


def _header(name: str, reason: str) -> tuple[int, int, Any]:
    return jsonrpc.HEADER_MISMATCH, 400, {"header": name, "reason": reason}


VERSION_MISSING = _header("MCP-Protocol-Version", "missing")
VERSION_MISMATCH = _header("MCP-Protocol-Version", "mismatch")
UNSUPPORTED = (
    jsonrpc.UNSUPPORTED_VERSION,
    400,
    {"supported": list(ALL_VERSIONS), "requested": OLD},
)
BAD_META = (jsonrpc.INVALID_PARAMS, 400, None)
NOT_FOUND = (jsonrpc.METHOD_NOT_FOUND, 404, None)

ROWS: dict[str, tuple[Request, tuple[int, int, Any]]] = {
    # one rule broken
    "1 version header missing": (OK.with_headers(mcp_protocol_version=None), VERSION_MISSING),
    "1 version header differs from _meta": (
        OK.with_headers(mcp_protocol_version=OLD),
        VERSION_MISMATCH,
    ),
    "2 version not served (HTTP)": (
        replace(OK, meta={VERSION_KEY: OLD, CAPABILITIES_KEY: {}}).with_headers(
            mcp_protocol_version=OLD
        ),
        UNSUPPORTED,
    ),
    "2 version not served (stdio)": (
        replace(OK, headers=None, meta={VERSION_KEY: OLD, CAPABILITIES_KEY: {}}),
        UNSUPPORTED,
    ),
    "3 no _meta": (replace(OK, meta=None), BAD_META),
    "3 _meta without clientCapabilities": (replace(OK, meta={VERSION_KEY: MODERN}), BAD_META),
    "3 clientCapabilities not an object": (
        replace(OK, meta={VERSION_KEY: MODERN, CAPABILITIES_KEY: []}),
        BAD_META,
    ),
    "3 _meta without clientCapabilities (stdio)": (
        replace(OK, headers=None, meta={VERSION_KEY: MODERN}),
        BAD_META,
    ),
    "4 Mcp-Method missing": (OK.with_headers(mcp_method=None), _header("Mcp-Method", "missing")),
    "4 Mcp-Method differs": (
        OK.with_headers(mcp_method="tools/list"),
        _header("Mcp-Method", "mismatch"),
    ),
    "4 Mcp-Name missing": (OK.with_headers(mcp_name=None), _header("Mcp-Name", "missing")),
    "4 Mcp-Param-* differs": (
        OK.with_headers(mcp_param_region="us"),
        _header("Mcp-Param-Region", "mismatch"),
    ),
    "5 method unknown": (
        replace(OK, method="nope/nope", name=None).with_headers(
            mcp_method="nope/nope", mcp_name=None, mcp_param_region=None
        ),
        NOT_FOUND,
    ),
    "5 method unknown (stdio)": (replace(OK, method="nope/nope", headers=None), NOT_FOUND),
    "params do not fit the method": (
        replace(OK, invalid=ValueError("Expected `str`")),
        (jsonrpc.INVALID_PARAMS, 200, None),
    ),
    "log level unknown": (
        replace(
            OK,
            meta={
                VERSION_KEY: MODERN,
                CAPABILITIES_KEY: {},
                LOG_LEVEL_KEY: "loud",
            },
        ),
        (jsonrpc.INVALID_PARAMS, 200, {"logLevel": "loud"}),
    ),
    # two rules broken: the earlier check wins
    "1 beats 2": (
        replace(OK, meta={VERSION_KEY: OLD, CAPABILITIES_KEY: {}}),
        VERSION_MISMATCH,
    ),
    "1 beats 3": (
        replace(OK, meta={VERSION_KEY: MODERN}).with_headers(mcp_protocol_version=None),
        VERSION_MISSING,
    ),
    "2 beats 3": (
        replace(OK, meta={VERSION_KEY: OLD}).with_headers(mcp_protocol_version=OLD),
        UNSUPPORTED,
    ),
    "3 beats 4": (replace(OK, meta={VERSION_KEY: MODERN}).with_headers(mcp_method=None), BAD_META),
    "4 beats 5": (
        replace(OK, method="nope/nope").with_headers(mcp_method="tools/call"),
        _header("Mcp-Method", "mismatch"),
    ),
    "3 beats 5": (
        replace(OK, method="nope/nope", headers=None, meta={VERSION_KEY: MODERN}),
        BAD_META,
    ),
    "5 beats invalid params": (
        replace(OK, method="nope/nope", headers=None, invalid=ValueError("x")),
        NOT_FOUND,
    ),
    "invalid params beat log level": (
        replace(
            OK,
            invalid=ValueError("x"),
            meta={
                VERSION_KEY: MODERN,
                CAPABILITIES_KEY: {},
                LOG_LEVEL_KEY: "loud",
            },
        ),
        (jsonrpc.INVALID_PARAMS, 200, None),
    ),
}


@pytest.mark.parametrize(("request_", "expected"), ROWS.values(), ids=ROWS.keys())
def test_rule_broken(request_: Request, expected: tuple[int, int, Any]) -> None:
    code, http_status, data = expected
    with pytest.raises(ProtocolError) as caught:
        request_.run()
    assert (caught.value.code, caught.value.http_status, caught.value.data) == (
        code,
        http_status,
        data,
    )


@pytest.mark.parametrize("headers", [OK.headers, None], ids=["http", "stdio"])
def test_request_that_breaks_nothing(headers: dict[str, str] | None) -> None:
    version, meta = replace(OK, headers=headers).run()
    assert version == MODERN
    assert meta.protocol_version == MODERN
    assert meta.client_capabilities == {}


def test_version_header_is_trimmed() -> None:
    version, _ = OK.with_headers(mcp_protocol_version=f" {MODERN}\t").run()
    assert version == MODERN
