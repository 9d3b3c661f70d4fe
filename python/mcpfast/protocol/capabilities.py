"""Capabilities on both sides, by revision: what a server advertises and which server
capability each client request needs; what a client declares and what each server-to-client
request (an `InputRequest`) needs of it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ..errors import ClientCapabilityError
from .methods import METHODS


def unadvertised(method: str, capabilities: dict[str, Any]) -> str | None:
    """The capability ``method`` needs that ``capabilities`` lacks, in words; None if none."""
    entry = METHODS.get(method)
    needed = entry.capability if entry is not None else None
    if needed is None:
        return None
    name, flag = needed
    advertised = capabilities.get(name)
    if not isinstance(advertised, dict):
        return f"the {name} capability"
    if flag is not None and not advertised.get(flag):
        return f"{name}.{flag}"
    return None


def server_capabilities(version: str) -> dict[str, Any]:
    """What an mcpfast server advertises in a revision."""
    caps: dict[str, Any] = {
        "tools": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "prompts": {"listChanged": True},
        "completions": {},
        "logging": {},
    }
    if version >= "2026-07-28":
        caps["extensions"] = {"io.modelcontextprotocol/tasks": {}}
    elif version == "2025-11-25":
        caps["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    return caps


def client_capabilities(
    version: str,
    *,
    elicit: bool,
    sample: bool,
    sampling_tools: bool,
    roots: bool,
    elicit_url: bool = False,
) -> dict[str, Any]:
    """What a client with those handlers declares, in a revision's terms (no elicitation
    before 2025-06-18; its modes and sampling tools from 2025-11-25, URL mode only when the
    elicitation handler supports it: ``elicit_url``)."""
    caps: dict[str, Any] = {}
    if elicit and version >= "2025-06-18":
        if version >= "2025-11-25":
            caps["elicitation"] = {"form": {}, "url": {}} if elicit_url else {"form": {}}
        else:
            caps["elicitation"] = {}
    if sample:
        caps["sampling"] = {"tools": {}} if sampling_tools and version >= "2025-11-25" else {}
    if roots:
        caps["roots"] = {} if version >= "2026-07-28" else {"listChanged": True}
    return caps


def elicitation_modes(capabilities: dict[str, Any]) -> frozenset[str]:
    """The elicitation modes a client's declared ``capabilities`` cover (``{}`` means form)."""
    elicitation = capabilities.get("elicitation")
    if not isinstance(elicitation, dict):
        return frozenset()
    if not elicitation:
        return frozenset({"form"})
    return frozenset(mode for mode in ("form", "url") if mode in elicitation)


class InputRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One thing a server asks the client for: ``elicitation/create``,
    ``sampling/createMessage`` or ``roots/list`` with its params."""

    method: str
    params: dict[str, Any] = msgspec.field(default_factory=dict)


def missing_capability(capabilities: dict[str, Any]) -> ClientCapabilityError:
    """The -32021 error naming the capabilities a request needed."""
    return ClientCapabilityError("Missing required client capability", capabilities)


FEATURE_OF = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}
"""Each server-to-client request, and the client capability it needs."""


def _capability_for(request: InputRequest) -> dict[str, Any]:
    if request.method == "elicitation/create":
        mode = request.params.get("mode", "form")
        return {"elicitation": {mode: {}} if mode == "url" else {}}
    if request.method == "sampling/createMessage":
        if request.params.get("tools"):
            return {"sampling": {"tools": {}}}
        return {"sampling": {}}
    return {"roots": {}}


def _since(request: InputRequest) -> tuple[str, str] | None:
    """The first revision with what ``request`` asks for, and that thing in words."""
    if request.method == "elicitation/create":
        if request.params.get("mode") == "url":
            return "2025-11-25", "URL-mode elicitation"
        return "2025-06-18", "elicitation"
    if request.method == "sampling/createMessage" and request.params.get("tools"):
        return "2025-11-25", "sampling with tools"
    return None


def _declares(capabilities: dict[str, Any], request: InputRequest) -> bool:
    if request.method == "elicitation/create":
        elicitation = capabilities.get("elicitation")
        if not isinstance(elicitation, dict):
            return False
        if request.params.get("mode", "form") == "url":
            return "url" in elicitation
        return not elicitation or "form" in elicitation
    if request.method == "sampling/createMessage":
        sampling = capabilities.get("sampling")
        if not isinstance(sampling, dict):
            return False
        return not request.params.get("tools") or "tools" in sampling
    return isinstance(capabilities.get("roots"), dict)


def refusal(
    version: str, capabilities: dict[str, Any], requests: Mapping[str, InputRequest]
) -> ClientCapabilityError | None:
    """Why the client of ``version`` with ``capabilities`` may not be sent ``requests``, if it
    may not: the first request its revision lacks, else every capability it did not declare."""
    for request in requests.values():
        since = _since(request)
        if since is not None and version < since[0]:
            return ClientCapabilityError(
                f"The client cannot be asked for {since[1]}: protocol revision {version} has "
                f"none (it needs {since[0]} or later)",
                _capability_for(request),
            )
    needed: dict[str, Any] = {}
    for request in requests.values():
        if not _declares(capabilities, request):
            needed.update(_capability_for(request))
    if not needed:
        return None
    names = " and ".join(
        FEATURE_OF.get(r.method, r.method)
        for r in requests.values()
        if not _declares(capabilities, r)
    )
    return ClientCapabilityError(
        f"The client did not declare the {names} capability, so it cannot be asked for it",
        needed,
    )
