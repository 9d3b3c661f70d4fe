"""The client's corner rules as tables: ``x-mcp-header`` declarations must be statically
reachable, URL-mode elicitation is declared only on request, a negotiated revision the client
does not speak is refused, stdio falls back only on the seed's codes, and after a -32022 that
lists legacy revisions only, ``initialize`` asks for the highest common one."""

from __future__ import annotations

from typing import Any

import pytest

from mcpfast.errors import TransportError
from mcpfast.protocol.capabilities import client_capabilities, elicitation_modes
from mcpfast.protocol.discovery import (
    EraCache,
    Verdict,
    judge_stdio,
    legacy_version_for,
)
from mcpfast.protocol.headers import header_params
from mcpfast.protocol.initialize import read_result
from mcpfast.protocol.session import ClientSession

STRING = {"type": "string", "x-mcp-header": "H"}


def obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


@pytest.mark.parametrize(
    ("schema", "found"),
    [
        (obj(a=STRING), (("H", ("a",)),)),
        (obj(o=obj(b={"type": "integer", "x-mcp-header": "B"})), (("B", ("o", "b")),)),
        (obj(a={"type": "string", "default": {"x-mcp-header": "data"}}), ()),
        (obj(a={"type": "string", "enum": [{"x-mcp-header": "data"}]}), ()),
        (obj(a={"type": "string", "examples": [{"x-mcp-header": "data"}]}), ()),
        (obj(a={"const": {"x-mcp-header": "data"}}), ()),
        (obj(**{"x-mcp-header": {"type": "string"}}), ()),  # a property of that name
        ({"type": "object", "$defs": {"x-mcp-header": {"type": "string"}}}, ()),
    ],
)
def test_statically_reachable_declarations(schema: dict[str, Any], found: Any) -> None:
    assert header_params(schema) == found


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        (obj(a={"type": "array", "items": STRING}), "properties/a/items"),
        (obj(a={"type": "array", "prefixItems": [STRING]}), "properties/a/prefixItems/0"),
        (obj(a={"anyOf": [STRING, {"type": "null"}]}), "properties/a/anyOf/0"),
        (obj(a={"oneOf": [STRING]}), "properties/a/oneOf/0"),
        ({"type": "object", "allOf": [obj(a=STRING)]}, "allOf/0/properties/a"),
        (obj(a={"not": STRING}), "properties/a/not"),
        ({"type": "object", "if": obj(a=STRING)}, "if/properties/a"),
        ({"type": "object", "then": obj(a=STRING)}, "then/properties/a"),
        ({"type": "object", "else": obj(a=STRING)}, "else/properties/a"),
        (
            {
                "type": "object",
                "properties": {"p": {"$ref": "#/$defs/P"}},
                "$defs": {"P": obj(a=STRING)},
            },
            "$defs/P/properties/a",
        ),
        ({"type": "object", "additionalProperties": STRING}, "additionalProperties"),
        ({"type": "object", "patternProperties": {"^x": STRING}}, "patternProperties/^x"),
        (
            obj(o={"type": "object", "additionalProperties": STRING}),
            "properties/o/additionalProperties",
        ),
    ],
)
def test_declarations_that_are_not_statically_reachable(schema: dict[str, Any], where: str) -> None:
    with pytest.raises(ValueError, match="not statically reachable") as raised:
        header_params(schema)
    assert f"at {where};" in str(raised.value)
    assert "'H'" in str(raised.value)


def test_a_declaration_on_the_root_is_refused() -> None:
    with pytest.raises(ValueError, match="schema root"):
        header_params({"type": "object", "x-mcp-header": "Root"})


@pytest.mark.parametrize(
    ("version", "url", "declared"),
    [
        ("2025-03-26", True, None),
        ("2025-06-18", True, {}),
        ("2025-11-25", False, {"form": {}}),
        ("2025-11-25", True, {"form": {}, "url": {}}),
        ("2026-07-28", False, {"form": {}}),
        ("2026-07-28", True, {"form": {}, "url": {}}),
    ],
)
def test_url_elicitation_is_declared_only_on_request(
    version: str, url: bool, declared: dict[str, Any] | None
) -> None:
    caps = client_capabilities(
        version, elicit=True, elicit_url=url, sample=False, sampling_tools=False, roots=False
    )
    assert caps.get("elicitation") == declared


@pytest.mark.parametrize(
    ("capabilities", "modes"),
    [
        ({}, set()),
        ({"elicitation": {}}, {"form"}),
        ({"elicitation": {"form": {}}}, {"form"}),
        ({"elicitation": {"url": {}}}, {"url"}),
        ({"elicitation": {"form": {}, "url": {}}}, {"form", "url"}),
    ],
)
def test_elicitation_modes(capabilities: dict[str, Any], modes: set[str]) -> None:
    assert elicitation_modes(capabilities) == modes


@pytest.mark.parametrize("version", ["2024-11-05", "2026-07-28", "2099-01-01", "1"])
def test_a_negotiated_revision_the_client_does_not_speak_is_refused(version: str) -> None:
    with pytest.raises(TransportError, match=repr(version)):
        read_result({"protocolVersion": version}, "2025-11-25")
    session = ClientSession("2025-11-25")
    with pytest.raises(TransportError, match="does not speak"):
        session.opened({"protocolVersion": version})
    assert session.initialized is None


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26"])
def test_every_legacy_revision_is_accepted(version: str) -> None:
    assert read_result({"protocolVersion": version}, "2025-11-25").version == version


def error(code: int, data: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": "no"}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": 0, "error": body}


@pytest.mark.parametrize("code", [-32020, -32021, -32601])
def test_stdio_falls_back_on_the_seed_codes(code: int) -> None:
    assert judge_stdio(error(code)) == Verdict("legacy", "")


@pytest.mark.parametrize("code", [-32603, -32600, -32602, -32000, -32002])
def test_stdio_raises_on_any_other_error(code: int) -> None:
    with pytest.raises(TransportError, match=str(code)):
        judge_stdio(error(code))


def test_stdio_raises_on_an_answer_that_is_not_json_rpc() -> None:
    with pytest.raises(TransportError):
        judge_stdio({"jsonrpc": "2.0", "id": 0})


@pytest.mark.parametrize(
    ("message", "requested", "asked"),
    [
        (error(-32022, {"supported": ["2025-06-18", "2025-03-26"]}), "2025-11-25", "2025-06-18"),
        (error(-32022, {"supported": ["2025-03-26"]}), "2025-11-25", "2025-03-26"),
        (error(-32022, {"supported": ["2025-06-18", "2025-03-26"]}), "2025-03-26", "2025-03-26"),
        (error(-32022, {"supported": ["2026-07-28", "2025-11-25"]}), "2025-11-25", "2025-11-25"),
        (error(-32022, {"supported": ["2024-11-05"]}), "2025-11-25", "2025-11-25"),
        (error(-32022), "2025-11-25", "2025-11-25"),
        (error(-32601), "2025-11-25", "2025-11-25"),
        (None, "2025-06-18", "2025-06-18"),
    ],
)
def test_the_legacy_revision_asked_for_after_a_probe(
    message: Any, requested: str, asked: str
) -> None:
    assert legacy_version_for(message, requested) == asked


def test_the_cache_keeps_a_discover_result_for_its_ttl() -> None:
    cache = EraCache(ttl=3600)
    cache.put("u", "modern", "2026-07-28", {"d": 1}, ttl_ms=60_000)
    assert cache.get("u") == ("modern", "2026-07-28")
    assert cache.discovered("u") == {"d": 1}
    cache.put("u", "modern", "2026-07-28", {"d": 2}, ttl_ms=0)
    assert cache.discovered("u") is None
    cache.put("u", "modern", "2026-07-28", {"d": 3}, ttl_ms=-5)
    assert cache.discovered("u") is None and cache.get("u") is not None
    cache.put("u", "modern", "2026-07-28", {"d": 4}, ttl_ms=60_000)
    cache.forget("u")
    assert cache.discovered("u") is None
    stale = EraCache(ttl=-1)
    stale.put("u", "modern", "2026-07-28", {"d": 5}, ttl_ms=60_000)
    assert stale.discovered("u") is None
