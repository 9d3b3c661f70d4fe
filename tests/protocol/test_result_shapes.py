"""`protocol.results`: what a server's result carries in each revision, as tables: how a
2026-07-28 result says it ended and carries the server's ``_meta``, ``input_required``, cache
hints by method and revision, the fields a legacy revision lacks, and the errors it has."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from mcpfast import jsonrpc
from mcpfast.errors import ClientCapabilityError, ProtocolError, UrlElicitationRequired
from mcpfast.protocol import results
from mcpfast.protocol.capabilities import InputRequest
from mcpfast.types import SERVER_INFO_KEY, Implementation, TextContent, Tool, ToolResult

META = results.server_meta("srv", "1.0")
INFO = {SERVER_INFO_KEY: {"name": "srv", "version": "1.0"}}


def test_server_meta_names_the_server() -> None:
    assert META == INFO


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        ({"x": 1}, {"x": 1, "resultType": "complete", "_meta": INFO}),
        (
            {"_meta": {"own": 1, SERVER_INFO_KEY: "mine"}},
            {"_meta": {SERVER_INFO_KEY: "mine", "own": 1}, "resultType": "complete"},
        ),
        ({"_meta": "not an object"}, {"_meta": INFO, "resultType": "complete"}),
        ({"resultType": "task"}, {"resultType": "task", "_meta": INFO}),
        ({"resultType": "input_required"}, {"resultType": "input_required", "_meta": INFO}),
    ],
    ids=["plain", "own _meta keys win", "bad _meta replaced", "task kept", "input kept"],
)
def test_stamped_dicts(result: dict[str, Any], expected: dict[str, Any]) -> None:
    assert results.stamped(result, META) == expected


def test_complete_marks_even_a_result_that_says_otherwise() -> None:
    assert results.complete({"resultType": "task"}, META)["resultType"] == "complete"


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        (msgspec.UNSET, INFO),
        ({"k": 1}, {**INFO, "k": 1}),
        ({SERVER_INFO_KEY: 0}, {SERVER_INFO_KEY: 0}),
    ],
    ids=["none", "merged", "own wins"],
)
def test_stamped_tool_results(meta: Any, expected: dict[str, Any]) -> None:
    stamped = results.stamped(ToolResult(content=[TextContent(text="t")], meta=meta), META)
    assert stamped.resultType == "complete"
    assert stamped.meta == expected


def test_input_required_lists_the_requests_and_the_state() -> None:
    requests = {
        "a": InputRequest(method="roots/list"),
        "b": InputRequest(method="x", params={"p": 1}),
    }
    assert results.input_required(requests, "S") == {
        "resultType": "input_required",
        "inputRequests": {
            "a": {"method": "roots/list", "params": {}},
            "b": {"method": "x", "params": {"p": 1}},
        },
        "requestState": "S",
    }
    carried = results.input_required(requests, "S", lambda p: {**p, "_meta": "trace"})
    assert carried["inputRequests"]["b"]["params"] == {"p": 1, "_meta": "trace"}


def test_url_elicitations_become_input_requests_by_their_ids() -> None:
    exc = UrlElicitationRequired(
        [{"message": "m", "url": "https://a", "elicitationId": "e1"}, {"url": "https://b"}]
    )
    assert results.url_input_requests(exc) == {
        "e1": InputRequest(
            method="elicitation/create", params={"mode": "url", "message": "m", "url": "https://a"}
        ),
        "url-1": InputRequest(
            method="elicitation/create", params={"mode": "url", "url": "https://b"}
        ),
    }


HINTS = {"ttlMs": 5, "cacheScope": "private"}


@pytest.mark.parametrize(
    ("method", "version", "hinted"),
    [
        ("server/discover", "2026-07-28", True),
        ("tools/list", "2026-07-28", True),
        ("resources/list", "2026-07-28", True),
        ("resources/templates/list", "2026-07-28", True),
        ("prompts/list", "2026-07-28", True),
        ("resources/read", "2026-07-28", True),
        ("skills/list", "2026-07-28", True),
        ("skills/get", "2026-07-28", True),
        ("resources/directory/read", "2026-07-28", True),
        ("tools/call", "2026-07-28", False),
        ("prompts/get", "2026-07-28", False),
        ("completion/complete", "2026-07-28", False),
        ("tasks/get", "2026-07-28", False),
        ("tools/list", "2025-11-25", False),
        ("resources/read", "2025-06-18", False),
        ("tasks/list", "2025-11-25", False),
    ],
)
def test_cache_hints_by_method_and_revision(method: str, version: str, hinted: bool) -> None:
    result = results.cache_hints({"x": 1}, method, version, ttl_ms=5, scope="private")
    assert result == ({"x": 1, **HINTS} if hinted else {"x": 1})


FULL_TOOL = Tool(
    name="t",
    inputSchema={"type": "object"},
    title="T",
    outputSchema={"type": "object"},
    icons=[],
    execution={"taskSupport": "optional"},
    meta={"k": 1},
)
FULL_INFO = Implementation(
    name="s", version="1", title="S", description="d", websiteUrl="https://s", icons=[]
)


@pytest.mark.parametrize(
    ("version", "item", "kept"),
    [
        ("2026-07-28", FULL_TOOL, {"title", "outputSchema", "icons", "execution", "meta"}),
        ("2025-11-25", FULL_TOOL, {"title", "outputSchema", "icons", "execution", "meta"}),
        ("2025-06-18", FULL_TOOL, {"title", "outputSchema", "meta"}),
        ("2025-03-26", FULL_TOOL, set()),
        ("2025-11-25", FULL_INFO, {"title", "description", "websiteUrl", "icons"}),
        ("2025-06-18", FULL_INFO, {"title"}),
        ("2025-03-26", FULL_INFO, set()),
    ],
)
def test_for_revision_drops_the_fields_a_revision_lacks(
    version: str, item: Any, kept: set[str]
) -> None:
    shaped = results.for_revision(version, item)
    optional = {"title", "outputSchema", "icons", "execution", "meta", "description", "websiteUrl"}
    present = {f for f in item.__struct_fields__ if getattr(shaped, f) is not msgspec.UNSET}
    assert present & optional == kept
    assert (shaped is item) == (version not in results.NEWER_FIELDS)


def test_a_2025_03_26_tool_result_loses_structured_content_keeps_text() -> None:
    result = ToolResult(content=[TextContent(text="{}")], structuredContent={})
    shaped = results.for_revision("2025-03-26", result)
    assert shaped.structuredContent is msgspec.UNSET
    assert shaped.content == result.content
    assert results.for_revision("2025-06-18", result) is result


def test_page_for_revision_is_the_page_itself_when_nothing_is_lacking() -> None:
    page = [FULL_TOOL]
    assert results.page_for_revision("2026-07-28", page) is page
    assert results.page_for_revision("2025-03-26", page)[0].title is msgspec.UNSET


URL = UrlElicitationRequired([{"url": "https://a"}, {"url": "https://b"}], "Go there")
CAPABILITY = ClientCapabilityError("no roots", {"roots": {}})
PLAIN = ProtocolError(jsonrpc.INVALID_PARAMS, "bad")


@pytest.mark.parametrize(
    ("exc", "version", "expected"),
    [
        (CAPABILITY, "2025-11-25", (jsonrpc.INTERNAL_ERROR, "no roots")),
        (CAPABILITY, "2025-03-26", (jsonrpc.INTERNAL_ERROR, "no roots")),
        (URL, "2025-11-25", None),
        (URL, "2025-06-18", (jsonrpc.INTERNAL_ERROR, "Go there: https://a, https://b")),
        (URL, "2025-03-26", (jsonrpc.INTERNAL_ERROR, "Go there: https://a, https://b")),
        (PLAIN, "2025-03-26", None),
    ],
)
def test_legacy_errors_by_revision(
    exc: ProtocolError, version: str, expected: tuple[int, str] | None
) -> None:
    mapped = results.legacy_error(exc, version)
    if expected is None:
        assert mapped is exc
    else:
        assert (mapped.code, mapped.message, mapped.data) == (*expected, exc.data)


@pytest.mark.parametrize(
    ("version", "text"),
    [("2025-11-25", None), ("2025-06-18", "Go there: https://a, https://b")],
)
def test_legacy_tool_error_for_url_elicitation(version: str, text: str | None) -> None:
    instead = results.legacy_tool_error(URL, version)
    if text is None:
        assert instead is None
    else:
        assert instead == ToolResult(content=[TextContent(text=text)], isError=True)
