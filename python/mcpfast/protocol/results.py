"""What a server's result carries in each revision, as pure functions over the result.

- A 2026-07-28 result says how the request ended (``resultType``: ``complete``,
  ``input_required`` or ``task``) and carries the server's info in its ``_meta``, merged
  under the result's own keys (`complete`, `with_server_meta`, `stamped`).
- An ``input_required`` result lists what the server waits for and the state the retry sends
  back (`input_required`); a -32042's URL elicitations are asked for that way too
  (`url_input_requests`).
- The results of the methods the method table marks ``cacheable`` carry ``ttlMs`` and
  ``cacheScope`` in 2026-07-28 (`cache_hints`).
- A legacy revision's objects lack the fields its schema does not have (`for_revision`), and
  the errors of later revisions become what it has (`legacy_error`, `legacy_tool_error`).

The server's methods build a result's members; these rules then shape it. What a client does
with a result (the retry, the ``resultType`` it allows) is `mcpfast.protocol.modern`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from .. import jsonrpc
from ..errors import ClientCapabilityError, ProtocolError, UrlElicitationRequired
from ..types import (
    SERVER_INFO_KEY,
    Implementation,
    Prompt,
    Resource,
    ResourceTemplate,
    TextContent,
    Tool,
    ToolResult,
)
from ..versions import has_url_elicitation, is_modern
from .capabilities import InputRequest
from .methods import CACHEABLE

# ------------------------------------------------------------------------------- 2026-07-28


def server_meta(name: str, version: str) -> dict[str, Any]:
    """The ``_meta`` every 2026-07-28 result SHOULD carry: the server's name and version."""
    return {SERVER_INFO_KEY: {"name": name, "version": version}}


def with_server_meta(result: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """``result`` (changed in place) with ``meta`` (`server_meta`) merged into its ``_meta``,
    its own keys winning."""
    own = result.get("_meta")
    result["_meta"] = {**meta, **own} if isinstance(own, dict) else meta
    return result


def complete(result: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """``result`` (changed in place) marked ``complete``, with the server's ``_meta``."""
    result["resultType"] = "complete"
    return with_server_meta(result, meta)


def stamped(result: Any, meta: dict[str, Any]) -> Any:
    """A result (changed in place) as 2026-07-28 sends it, with the server's ``_meta`` (its
    own keys kept): a `ToolResult` marked ``complete``; a dict marked ``complete`` unless it
    says how it ended already (an ``input_required`` or task result)."""
    if isinstance(result, dict):
        if "resultType" in result:
            return with_server_meta(result, meta)
        return complete(result, meta)
    result.resultType = "complete"
    own = result.meta
    result.meta = {**meta, **own} if isinstance(own, dict) else meta
    return result


def input_requests(
    requests: Mapping[str, InputRequest],
    carry: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> dict[str, dict[str, Any]]:
    """What a result waits for (``inputRequests``), by key: each request's method and params,
    the params passed through ``carry`` (the trace context) when given."""
    return {
        key: {"method": req.method, "params": carry(req.params) if carry else req.params}
        for key, req in requests.items()
    }


def input_required(
    requests: Mapping[str, InputRequest],
    request_state: str,
    carry: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The ``input_required`` result: what it waits for (`input_requests`) and the
    ``requestState`` the retry sends back."""
    return {
        "resultType": "input_required",
        "inputRequests": input_requests(requests, carry),
        "requestState": request_state,
    }


def url_input_requests(exc: UrlElicitationRequired) -> dict[str, InputRequest]:
    """The URL elicitations of a -32042 as 2026-07-28 asks for them: input requests keyed by
    their ``elicitationId`` (``url-<n>`` when one has none), which their params leave out."""
    return {
        e.get("elicitationId") or f"url-{i}": InputRequest(
            method="elicitation/create",
            params={k: v for k, v in e.items() if k != "elicitationId"},
        )
        for i, e in enumerate(exc.elicitations)
    }


def cache_hints(
    result: dict[str, Any], method: str, version: str, *, ttl_ms: int, scope: str
) -> dict[str, Any]:
    """``result`` (changed in place) with ``ttlMs``/``cacheScope`` when ``method`` is
    ``cacheable`` (`mcpfast.protocol.methods`) and ``version`` is 2026-07-28; else as is."""
    if method in CACHEABLE and is_modern(version):
        result["ttlMs"] = ttl_ms
        result["cacheScope"] = scope
    return result


# ------------------------------------------------------------------------------- legacy


NEWER_FIELDS: dict[str, dict[type, tuple[str, ...]]] = {
    "2025-03-26": {
        Tool: ("title", "outputSchema", "icons", "execution", "meta"),
        Resource: ("title", "icons"),
        ResourceTemplate: ("title", "icons"),
        Prompt: ("title", "icons"),
        Implementation: ("title", "description", "websiteUrl", "icons"),
        ToolResult: ("structuredContent",),
    },
    "2025-06-18": {
        Tool: ("icons", "execution"),
        Resource: ("icons",),
        ResourceTemplate: ("icons",),
        Prompt: ("icons",),
        Implementation: ("description", "websiteUrl", "icons"),
    },
}
"""The fields a revision's schema does not have, by the Struct that has them: 2025-06-18 added
``title``, ``outputSchema``/``structuredContent`` and ``_meta`` on tools; 2025-11-25 added
``icons``, ``execution`` (tasks) and ``Implementation.description``/``websiteUrl``."""


def for_revision(version: str, item: Any) -> Any:
    """``item`` (a tool, resource, template, prompt, implementation or tool result) without
    the fields that ``version`` does not have (`NEWER_FIELDS`); as is for other revisions
    and other values. A 2025-03-26 tool result keeps its text content, which mirrors the
    structured content it loses."""
    fields = NEWER_FIELDS.get(version, {}).get(type(item))
    if not fields:
        return item
    unset = {f: msgspec.UNSET for f in fields if getattr(item, f) is not msgspec.UNSET}
    return msgspec.structs.replace(item, **unset) if unset else item


def page_for_revision(version: str, page: list[Any]) -> list[Any]:
    """A list result's items as ``version`` has them (`for_revision`); ``page`` itself when
    the revision lacks no field."""
    if version not in NEWER_FIELDS:
        return page
    return [for_revision(version, item) for item in page]


def url_text(exc: UrlElicitationRequired) -> str:
    """A -32042's message with the URLs it names, for a revision without the error."""
    urls = ", ".join(str(e.get("url")) for e in exc.elicitations)
    return f"{exc.message}: {urls}" if urls else exc.message


def legacy_tool_error(exc: UrlElicitationRequired, version: str) -> ToolResult | None:
    """What a legacy ``tools/call`` whose tool raised -32042 answers: None (the error itself)
    from 2025-11-25; before, which has no URL-mode elicitation, a tool error that says where
    the user must go."""
    if has_url_elicitation(version):
        return None
    return ToolResult(content=[TextContent(text=url_text(exc))], isError=True)


def legacy_error(exc: ProtocolError, version: str) -> ProtocolError:
    """The error a legacy session gets for ``exc``: the codes of 2026-07-28 and of later
    revisions become what the session's revision has. An undeclared client capability (-32021
    is 2026-07-28's) is -32603: the request was valid, the server cannot serve it to this
    client (``data.requiredCapabilities`` says why); -32042 before 2025-11-25 is -32603 too,
    naming the URLs."""
    if isinstance(exc, ClientCapabilityError):
        return ProtocolError(jsonrpc.INTERNAL_ERROR, exc.message, exc.data)
    if isinstance(exc, UrlElicitationRequired) and not has_url_elicitation(version):
        return ProtocolError(jsonrpc.INTERNAL_ERROR, url_text(exc), exc.data)
    return exc
