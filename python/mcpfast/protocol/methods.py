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

TOOL = "tool"
"""A tool, by name."""
PROMPT = "prompt"
"""A prompt, by name."""
RESOURCE = "resource"
"""A resource, by URI: the fixed resource of that URI, else the first template matching it."""
REFERENCE = "reference"
"""A completion reference (``CompletionRef``): ``ref/prompt`` names a prompt, ``ref/resource``
a resource template (by its ``uriTemplate``; else the resource of that URI)."""
TASK = "task"
"""A task, by id."""
KINDS = frozenset((TOOL, PROMPT, RESOURCE, REFERENCE, TASK))


class Reach(msgspec.Struct, frozen=True):
    """One object a request reaches (and whose scopes it needs): its ``kind`` (`KINDS`), and
    the params member naming it, ``path`` from the params down (with ``many``, a list of them)."""

    kind: str
    path: tuple[str, ...]
    many: bool = False


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
        reaches: the objects (tools, prompts, resources, tasks) its params name, each needing
            its scopes on a protected server; every row states them (``()``: none).
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
    reaches: tuple[Reach, ...]


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
        reaches=(),
    )


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method(
            name="server/discover",
            eras=frozenset((MODERN_ERA,)),
            cacheable=True,
            result="DiscoverResult",
            reaches=(),
        ),
        Method(
            name="initialize",
            params=InitializeParams,
            eras=frozenset((LEGACY_ERA,)),
            result="InitializeResult",
            reaches=(),
        ),
        Method(
            name="ping",
            eras=frozenset((LEGACY_ERA,)),
            instant=True,
            result="EmptyResult",
            reaches=(),
        ),
        Method(
            name="logging/setLevel",
            params=SetLevelParams,
            eras=frozenset((LEGACY_ERA,)),
            instant=True,
            capability=("logging", None),
            result="EmptyResult",
            reaches=(),
        ),
        _list("tools/list", "tools", "tools", "tools", "ListToolsResult"),
        Method(
            name="tools/call",
            params=CallToolParams,
            name_field="name",
            capability=("tools", None),
            result="CallToolResult",
            reaches=(Reach(TOOL, ("name",)),),
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
            reaches=(Reach(RESOURCE, ("uri",)),),
        ),
        Method(
            name="resources/subscribe",
            params=UriParams,
            eras=frozenset((LEGACY_ERA,)),
            instant=True,
            capability=("resources", "subscribe"),
            result="EmptyResult",
            reaches=(Reach(RESOURCE, ("uri",)),),
        ),
        Method(
            name="resources/unsubscribe",
            params=UriParams,
            eras=frozenset((LEGACY_ERA,)),
            instant=True,
            capability=("resources", "subscribe"),
            result="EmptyResult",
            reaches=(Reach(RESOURCE, ("uri",)),),
        ),
        _list("prompts/list", "prompts", "prompts", "prompts", "ListPromptsResult"),
        Method(
            name="prompts/get",
            params=GetPromptParams,
            name_field="name",
            capability=("prompts", None),
            result="GetPromptResult",
            reaches=(Reach(PROMPT, ("name",)),),
        ),
        Method(
            name="completion/complete",
            params=CompleteParams,
            capability=("completions", None),
            result="CompleteResult",
            reaches=(Reach(REFERENCE, ("ref",)),),
        ),
        Method(
            name="subscriptions/listen",
            params=ListenParams,
            eras=frozenset((MODERN_ERA,)),
            reaches=(
                Reach(RESOURCE, ("notifications", "resourceSubscriptions"), many=True),
                Reach(TASK, ("notifications", "taskIds"), many=True),
            ),
        ),
        Method(
            name="tasks/get",
            params=TaskParams,
            name_field="taskId",
            instant=True,
            reaches=(Reach(TASK, ("taskId",)),),
        ),
        Method(
            name="tasks/result",
            params=TaskParams,
            eras=frozenset((LEGACY_ERA,)),
            reaches=(Reach(TASK, ("taskId",)),),
        ),
        Method(
            name="tasks/list",
            params=ListParams,
            eras=frozenset((LEGACY_ERA,)),
            instant=True,
            reaches=(),
        ),
        Method(
            name="tasks/update",
            params=TaskParams,
            eras=frozenset((MODERN_ERA,)),
            name_field="taskId",
            reaches=(Reach(TASK, ("taskId",)),),
        ),
        Method(
            name="tasks/cancel",
            params=TaskParams,
            name_field="taskId",
            instant=True,
            reaches=(Reach(TASK, ("taskId",)),),
        ),
        Method(
            name="skills/list",
            params=ListParams,
            instant=True,
            cacheable=True,
            list_key="skills",
            extension=(SKILLS_EXTENSION, None),
            reaches=(),
        ),
        Method(
            name="skills/get",
            params=UriParams,
            instant=True,
            cacheable=True,
            extension=(SKILLS_EXTENSION, None),
            reaches=(Reach(RESOURCE, ("uri",)),),
        ),
        Method(
            name="resources/directory/read",
            params=DirectoryReadParams,
            instant=True,
            cacheable=True,
            capability=("resources", None),
            changed_by="notifications/resources/list_changed",
            extension=(SKILLS_EXTENSION, DIRECTORY_READ),
            reaches=(),
        ),
    )
}

NAME_FIELD = {m.name: m.name_field for m in METHODS.values() if m.name_field is not None}
"""Which params member each method mirrors in the ``Mcp-Name`` header."""

REACHES = {m.name: m.reaches for m in METHODS.values() if m.reaches}
"""What each method that reaches objects reaches (`Reach`)."""

INSTANT = frozenset(m.name for m in METHODS.values() if m.instant)
CACHEABLE = frozenset(m.name for m in METHODS.values() if m.cacheable)
"""The methods whose 2026-07-28 results carry cache hints (`protocol.results.cache_hints`)."""
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
