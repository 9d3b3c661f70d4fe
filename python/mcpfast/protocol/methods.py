"""The one table of method facts: every client-to-server request either era knows, and what the
server, the client, the load tester and the tests need to know of it. Every other table of
method names is derived from this one (the Rust codec's routing table is checked against it by
``tests/test_methods.py``)."""

from __future__ import annotations

import msgspec

from ..types import (
    CallToolParams,
    CompleteParams,
    GetPromptParams,
    InitializeParams,
    ListenParams,
    ListParams,
    Params,
    ReadResourceParams,
    SetLevelParams,
    TaskParams,
    UriParams,
)
from .skills import DIRECTORY_READ, SKILLS_EXTENSION, DirectoryReadParams

MODERN_ERA = "modern"
LEGACY_ERA = "legacy"
BOTH = frozenset((MODERN_ERA, LEGACY_ERA))


class Method(msgspec.Struct, frozen=True, kw_only=True):
    """What one request method is.

    Attributes:
        name: the JSON-RPC method.
        params: the Struct its params decode into.
        eras: ``"modern"`` (2026-07-28), ``"legacy"`` (2025-*) or both.
        name_field: the params member mirrored in ``Mcp-Name`` (2026-07-28, SEP-2243).
        instant: it never waits on anything (a legacy server gives it no cancel scope).
        cacheable: its 2026-07-28 result carries cache hints (``ttlMs``); clients may cache it.
        list_key: for a list method, the result member holding the page.
        capability: the server capability (and the flag inside it) it needs.
        changed_by: the ``list_changed`` notification that makes a cached result stale.
        extension: the server extension (SEP-2133) it needs, and the setting inside it that
            must be ``true`` (None: the extension alone).
        result: the official schema's definition of its result.
    """

    name: str
    params: type[Params] = Params
    eras: frozenset[str] = BOTH
    name_field: str | None = None
    instant: bool = False
    cacheable: bool = False
    list_key: str | None = None
    capability: tuple[str, str | None] | None = None
    changed_by: str | None = None
    extension: tuple[str, str | None] | None = None
    result: str = "Result"


def _list(name: str, key: str, capability: str, changed: str, result: str) -> Method:
    return Method(
        name=name,
        params=ListParams,
        instant=True,
        cacheable=True,
        list_key=key,
        capability=(capability, None),
        changed_by=f"notifications/{changed}/list_changed",
        result=result,
    )


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method(name="server/discover", eras=frozenset((MODERN_ERA,)), result="DiscoverResult"),
        Method(
            name="initialize",
            params=InitializeParams,
            eras=frozenset((LEGACY_ERA,)),
            result="InitializeResult",
        ),
        Method(name="ping", eras=frozenset((LEGACY_ERA,)), instant=True, result="EmptyResult"),
        Method(
            name="logging/setLevel",
            params=SetLevelParams,
            eras=frozenset((LEGACY_ERA,)),
            instant=True,
            capability=("logging", None),
            result="EmptyResult",
        ),
        _list("tools/list", "tools", "tools", "tools", "ListToolsResult"),
        Method(
            name="tools/call",
            params=CallToolParams,
            name_field="name",
            capability=("tools", None),
            result="CallToolResult",
        ),
        _list("resources/list", "resources", "resources", "resources", "ListResourcesResult"),
        _list(
            "resources/templates/list",
            "resourceTemplates",
            "resources",
            "resources",
            "ListResourceTemplatesResult",
        ),
        Method(
            name="resources/read",
            params=ReadResourceParams,
            name_field="uri",
            cacheable=True,
            capability=("resources", None),
            result="ReadResourceResult",
        ),
        Method(
            name="resources/subscribe",
            params=UriParams,
            eras=frozenset((LEGACY_ERA,)),
            instant=True,
            capability=("resources", "subscribe"),
            result="EmptyResult",
        ),
        Method(
            name="resources/unsubscribe",
            params=UriParams,
            eras=frozenset((LEGACY_ERA,)),
            instant=True,
            capability=("resources", "subscribe"),
            result="EmptyResult",
        ),
        _list("prompts/list", "prompts", "prompts", "prompts", "ListPromptsResult"),
        Method(
            name="prompts/get",
            params=GetPromptParams,
            name_field="name",
            capability=("prompts", None),
            result="GetPromptResult",
        ),
        Method(
            name="completion/complete",
            params=CompleteParams,
            capability=("completions", None),
            result="CompleteResult",
        ),
        Method(name="subscriptions/listen", params=ListenParams, eras=frozenset((MODERN_ERA,))),
        Method(name="tasks/get", params=TaskParams, name_field="taskId", instant=True),
        Method(name="tasks/result", params=TaskParams, eras=frozenset((LEGACY_ERA,))),
        Method(name="tasks/list", params=ListParams, eras=frozenset((LEGACY_ERA,)), instant=True),
        Method(
            name="tasks/update",
            params=TaskParams,
            eras=frozenset((MODERN_ERA,)),
            name_field="taskId",
        ),
        Method(name="tasks/cancel", params=TaskParams, name_field="taskId", instant=True),
        Method(
            name="skills/list",
            params=ListParams,
            instant=True,
            cacheable=True,
            list_key="skills",
            extension=(SKILLS_EXTENSION, None),
        ),
        Method(
            name="skills/get",
            params=UriParams,
            instant=True,
            cacheable=True,
            extension=(SKILLS_EXTENSION, None),
        ),
        Method(
            name="resources/directory/read",
            params=DirectoryReadParams,
            instant=True,
            cacheable=True,
            capability=("resources", None),
            changed_by="notifications/resources/list_changed",
            extension=(SKILLS_EXTENSION, DIRECTORY_READ),
        ),
    )
}

NAME_FIELD = {m.name: m.name_field for m in METHODS.values() if m.name_field is not None}
"""Which params member each method mirrors in the ``Mcp-Name`` header."""

INSTANT = frozenset(m.name for m in METHODS.values() if m.instant)
CACHEABLE = frozenset(m.name for m in METHODS.values() if m.cacheable)
LIST_KEYS = {m.name: m.list_key for m in METHODS.values() if m.list_key is not None}
CHANGES: dict[str, tuple[str, ...]] = {}
"""A ``list_changed`` notification, and the methods whose cached results it makes stale."""
for _method in METHODS.values():
    if _method.changed_by is not None:
        CHANGES[_method.changed_by] = (*CHANGES.get(_method.changed_by, ()), _method.name)
del _method


def in_era(era: str) -> frozenset[str]:
    """The methods an era (``"modern"`` or ``"legacy"``) serves."""
    return frozenset(m.name for m in METHODS.values() if era in m.eras)
