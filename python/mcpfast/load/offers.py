"""What a server offers, as the load test's probe found it, and which user classes that rules out.

Pure decisions (no gevent, no I/O): the locustfile fills an `Offer` once per process before any
user starts (``server/discover`` or ``initialize`` capabilities, the listed tools and resources,
a trial legacy session, a trial GET stream) and asks `skip_reason` for every user class; a class
with a reason is left out of the run with one line that says why. The rules, per class:

* ``ToolCallUser``: the ``tools`` capability and a tool to call (``--mcp-tool``, or one from
  ``tools/list`` that does not require a task).
* ``DiscoverUser``: never skipped (``server/discover`` or ``ping`` always exists).
* ``ResourceUser``: the ``resources`` capability and at least one listed resource.
* ``LegacySessionUser``: a legacy session could be opened (``initialize`` answered).
* ``ListenUser``: modern era, something to listen to (a ``listChanged`` capability, or
  ``resources.subscribe`` with a listed resource); legacy era, a GET stream (a 405 means none).
* ``SessionChurnUser``: a legacy session could be opened, and a tool to call.
* ``ResumeUser``: a legacy session could be opened, and its trial call (`mcpfast.load.resume`)
  streamed a message with an event id, resumed with GET + ``Last-Event-ID``.

`OPT_IN` classes run only when named (``--user-class``, ``--mix``, locust's class names): they
are not part of the default mix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..versions import LATEST_LEGACY

__all__ = ["OPT_IN", "Offer", "era_text", "listen_filter", "skip_reason", "skip_reasons"]

OPT_IN = ("SessionChurnUser", "ResumeUser")
"""User classes left out unless named: churn makes every call a new session, which is not what
the default mix measures; resumption needs a tool that streams progress."""
LEGACY_ONLY = ("LegacySessionUser", *OPT_IN)
"""User classes that speak a legacy session whatever the server's newest era."""

LIST_CHANGED = (
    ("tools", "toolsListChanged"),
    ("prompts", "promptsListChanged"),
    ("resources", "resourcesListChanged"),
)


@dataclass
class Offer:
    """What the probe found: the era and version the users speak and its ``capabilities``, the
    listed tools (``tool``: the one to call), the listed resource URIs; ``legacy_*``: the trial
    legacy session (``legacy_problem`` is None when it opened, else its ``initialize`` failure);
    ``get_stream_problem`` likewise for the session's GET stream (legacy era only; None also when
    it was not tried)."""

    era: str
    version: str
    capabilities: dict[str, Any] = field(default_factory=dict)
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool: str | None = None
    resources: list[str] = field(default_factory=list)
    legacy_version: str = LATEST_LEGACY
    legacy_capabilities: dict[str, Any] = field(default_factory=dict)
    legacy_problem: str | None = None
    get_stream_problem: str | None = None
    resume_tool: str | None = None
    resume_arguments: dict[str, Any] = field(default_factory=dict)
    resume_problem: str | None = None
    """Why ResumeUser cannot run (its trial call, `mcpfast.load.resume.prepare`; None: it
    can, or it was not tried)."""


def _flag(capabilities: dict[str, Any], capability: str, key: str) -> bool:
    entry = capabilities.get(capability)
    return isinstance(entry, dict) and entry.get(key) is True


def listen_filter(offer: Offer) -> dict[str, Any]:
    """The ``notifications`` of a ``subscriptions/listen`` request: every list change the server
    advertises (``listChanged``), and the first listed resource when it advertises
    ``resources.subscribe``; empty when it advertises none of them."""
    caps = offer.capabilities
    wanted: dict[str, Any] = {
        flag: True for capability, flag in LIST_CHANGED if _flag(caps, capability, "listChanged")
    }
    if _flag(caps, "resources", "subscribe") and offer.resources:
        wanted["resourceSubscriptions"] = offer.resources[:1]
    return wanted


def era_text(offer: Offer, user_class: str) -> str:
    """The era a user class speaks, as a skip line names it: ``2026-07-28`` or
    ``2025-11-25 session``."""
    if user_class in LEGACY_ONLY:
        return f"{offer.legacy_version} session"
    return offer.version if offer.era == "modern" else f"{offer.version} session"


def skip_reason(user_class: str, offer: Offer) -> str | None:
    """Why ``user_class`` cannot run against this server (None: it can), without the era."""
    caps = offer.capabilities
    if user_class == "ToolCallUser":
        if "tools" not in caps:
            return "the server does not advertise tools"
        if offer.tool is None:
            if offer.tools:
                return "the server lists no tool that runs without a task"
            return "the server lists no tools"
        return None
    if user_class == "ResourceUser":
        if "resources" not in caps:
            return "the server does not advertise resources"
        if not offer.resources:
            return "the server lists no resources"
        return None
    if user_class in LEGACY_ONLY and offer.legacy_problem is not None:
        return f"the server opens no legacy session: initialize got {offer.legacy_problem}"
    if user_class == "SessionChurnUser" and (
        offer.tool is None or "tools" not in offer.legacy_capabilities
    ):
        return "the server's sessions offer no tool to call"
    if user_class == "ResumeUser":
        return offer.resume_problem
    if user_class == "ListenUser":
        return _listen_reason(offer)
    return None


def _listen_reason(offer: Offer) -> str | None:
    if offer.era == "legacy":
        if offer.get_stream_problem is not None:
            return f"the server offers no GET stream: it answered {offer.get_stream_problem}"
        return None
    if listen_filter(offer):
        return None
    if _flag(offer.capabilities, "resources", "subscribe"):
        return "the server advertises no listChanged, and lists no resource to subscribe to"
    return "the server does not advertise subscriptions: no listChanged, no resources.subscribe"


def skip_reasons(user_classes: list[str], offer: Offer) -> dict[str, str]:
    """The skip line's text (``reason (era)``) of every class in ``user_classes`` that cannot
    run, in their order."""
    out: dict[str, str] = {}
    for name in user_classes:
        reason = skip_reason(name, offer)
        if reason is not None:
            out[name] = f"{reason} ({era_text(offer, name)})"
    return out


# -------------------------------------------------- the flows that need a tool of their own

FLOW_TOOLS = {"NotifyUser": "--notify-tool", "ElicitUser": "--elicit-tool"}
"""The user classes that need a tool named for them (`mcpfast.load.notify`,
`mcpfast.load.elicit`), by the option that names it (``mcpfast load``'s; locust's is
``--mcp-notify-tool`` / ``--mcp-elicit-tool``). Each joins the run when its tool is given or
when it is named; named without its tool, it is skipped with a line that says so."""


def flows_left_out(user_classes: list[str], named: bool, tools: dict[str, str]) -> list[str]:
    """The `FLOW_TOOLS` classes of ``user_classes`` left out of the run without a word: none
    when the classes were ``named``, else those whose tool ``tools`` (class -> tool) lacks."""
    if named:
        return []
    return [name for name in user_classes if name in FLOW_TOOLS and not tools.get(name)]


def flow_skip_reason(user_class: str, offer: Offer, tool: str, uri: str | None) -> str | None:
    """Why a `FLOW_TOOLS` class cannot run (None: it can, or it is not one of them), without
    the era: ``tool`` is the one given for it, ``uri`` the resource `NotifyUser` listens to.
    ``NotifyUser`` needs ``resources.subscribe``, a URI and (legacy era) a GET stream."""
    if user_class not in FLOW_TOOLS:
        return None
    if not tool:
        return f"no tool to call: give {FLOW_TOOLS[user_class]} NAME"
    if "tools" not in offer.capabilities:
        return "the server does not advertise tools"
    if user_class != "NotifyUser":
        return None
    if not _flag(offer.capabilities, "resources", "subscribe"):
        return "the server does not advertise resources.subscribe"
    if uri is None:
        return "the server lists no resource to subscribe to: give --notify-uri"
    if offer.era == "legacy" and offer.get_stream_problem is not None:
        return f"the server offers no GET stream: it answered {offer.get_stream_problem}"
    return None


def flow_skip_reasons(
    user_classes: list[str], offer: Offer, tools: dict[str, str], uri: str | None
) -> dict[str, str]:
    """`skip_reasons` for the `FLOW_TOOLS` classes (``tools``: class -> the tool given)."""
    out: dict[str, str] = {}
    for name in user_classes:
        reason = flow_skip_reason(name, offer, tools.get(name, ""), uri)
        if reason is not None:
            out[name] = f"{reason} ({era_text(offer, name)})"
    return out
