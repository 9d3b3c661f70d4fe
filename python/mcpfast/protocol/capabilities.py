"""Capabilities on both sides, by revision: what a server advertises and which server
capability each client request needs; what a client declares and what each server-to-client
request (an `InputRequest`) needs of it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import msgspec

from ..errors import ClientCapabilityError
from ..versions import (
    first_with,
    gates_sampling_context,
    has_elicitation,
    has_legacy_tasks,
    has_sampling_tools,
    has_url_elicitation,
    is_modern,
)
from .extensions import TASKS, Extension, advertised
from .methods import METHODS


def unadvertised(method: str, capabilities: dict[str, Any]) -> str | None:
    """The capability ``method`` needs that ``capabilities`` lacks, in words; None if none.
    A method of an extension (SEP-2133) needs it under ``capabilities.extensions`` (and the
    setting it names there, if any, true)."""
    entry = METHODS.get(method)
    if entry is not None and entry.extension is not None:
        identifier, setting = entry.extension
        declared = (capabilities.get("extensions") or {}).get(identifier)
        if not isinstance(declared, dict):
            return f"the {identifier} extension"
        if setting is not None and not declared.get(setting):
            return f"{identifier}.{setting}"
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


LEGACY_TASK_CAPABILITY: dict[str, tuple[str, ...]] = {
    "tools/call": ("requests", "tools", "call"),
    "tasks/list": ("list",),
    "tasks/cancel": ("cancel",),
}
"""What a 2025-11-25 server advertises under ``capabilities.tasks`` for each task request
(``tasks/get`` and ``tasks/result`` need ``tasks`` itself)."""


def unadvertised_task(method: str, capabilities: dict[str, Any]) -> str | None:
    """The ``tasks`` capability a 2025-11-25 task request needs that ``capabilities`` lacks,
    in words (``tasks.requests.tools.call``); None if advertised."""
    node: Any = capabilities.get("tasks")
    needed = LEGACY_TASK_CAPABILITY.get(method, ())
    for key in needed:
        node = node.get(key) if isinstance(node, dict) else None
    if isinstance(node, dict):
        return None
    return ".".join(("tasks", *needed))


def server_capabilities(
    version: str,
    *,
    tools: bool = True,
    resources: bool = True,
    prompts: bool = True,
    completions: bool = True,
    tasks: bool = True,
    extensions: Iterable[Extension] = (),
) -> dict[str, Any]:
    """What an mcpfast server advertises in a revision: ``logging`` always, each feature only
    when the server has it (the flags; all by default): ``tools``, ``resources`` (with
    ``subscribe``), ``prompts`` (each with ``listChanged``: the registry can change while
    serving), ``completions``, the tasks of the revision (2025-11-25's experimental ``tasks``,
    2026-07-28's tasks extension, `extensions.TASKS`) when some tool runs as a task, and under
    ``extensions`` each of ``extensions`` the revision has (SEP-2133; absent when none)."""
    caps: dict[str, Any] = {}
    if tools:
        caps["tools"] = {"listChanged": True}
    if resources:
        caps["resources"] = {"subscribe": True, "listChanged": True}
    if prompts:
        caps["prompts"] = {"listChanged": True}
    if completions:
        caps["completions"] = {}
    caps["logging"] = {}
    if tasks and has_legacy_tasks(version):
        caps["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    declared = advertised((TASKS, *extensions) if tasks else extensions, version)
    if declared:
        caps["extensions"] = declared
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
    if elicit and has_elicitation(version):
        if has_url_elicitation(version):
            caps["elicitation"] = {"form": {}, "url": {}} if elicit_url else {"form": {}}
        else:
            caps["elicitation"] = {}
    if sample:
        caps["sampling"] = {"tools": {}} if sampling_tools and has_sampling_tools(version) else {}
    if roots:
        caps["roots"] = {} if is_modern(version) else {"listChanged": True}
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
        needed: dict[str, Any] = {}
        if request.params.get("tools"):
            needed["tools"] = {}
        if _wants_context(request):
            needed["context"] = {}
        return {"sampling": needed}
    return {"roots": {}}


def _wants_context(request: InputRequest) -> bool:
    """Whether a ``sampling/createMessage`` asks for context (``includeContext`` other than
    ``none``)."""
    return bool(request.params.get("includeContext", "none") != "none")


def _needs(request: InputRequest) -> tuple[Callable[[str], bool], str] | None:
    """Whether a revision has what ``request`` asks for (`mcpfast.versions`), and that thing in
    words; None when every revision has it."""
    if request.method == "elicitation/create":
        if request.params.get("mode") == "url":
            return has_url_elicitation, "URL-mode elicitation"
        return has_elicitation, "elicitation"
    if request.method == "sampling/createMessage" and request.params.get("tools"):
        return has_sampling_tools, "sampling with tools"
    return None


def _declares(version: str, capabilities: dict[str, Any], request: InputRequest) -> bool:
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
        if request.params.get("tools") and "tools" not in sampling:
            return False
        return (
            not gates_sampling_context(version)
            or not _wants_context(request)
            or "context" in sampling
        )
    return isinstance(capabilities.get("roots"), dict)


def _name_of(capabilities: dict[str, Any], request: InputRequest) -> str:
    """The capability ``request`` lacks, in words: the feature, or its flag when the feature
    itself was declared (``elicitation.url``, ``sampling.tools``, ``sampling.context``)."""
    feature = FEATURE_OF.get(request.method, request.method)
    declared = capabilities.get(feature)
    if not isinstance(declared, dict):
        return feature
    flags = [
        f"{feature}.{flag}" for flag in _capability_for(request)[feature] if flag not in declared
    ]
    return " and ".join(flags) or feature


def refusal(
    version: str, capabilities: dict[str, Any], requests: Mapping[str, InputRequest]
) -> ClientCapabilityError | None:
    """Why the client of ``version`` with ``capabilities`` may not be sent ``requests``, if it
    may not: the first request its revision lacks, else every capability it did not declare."""
    for request in requests.values():
        needs = _needs(request)
        if needs is not None and not needs[0](version):
            has, what = needs
            return ClientCapabilityError(
                f"The client cannot be asked for {what}: protocol revision {version} has "
                f"none (it needs {first_with(has)} or later)",
                _capability_for(request),
            )
    needed: dict[str, Any] = {}
    for request in requests.values():
        if not _declares(version, capabilities, request):
            for name, flags in _capability_for(request).items():
                needed.setdefault(name, {}).update(flags)
    if not needed:
        return None
    names = " and ".join(
        _name_of(capabilities, r)
        for r in requests.values()
        if not _declares(version, capabilities, r)
    )
    return ClientCapabilityError(
        f"The client did not declare the {names} capability, so it cannot be asked for it",
        needed,
    )
