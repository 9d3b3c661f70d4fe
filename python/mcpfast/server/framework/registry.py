"""The registry's entries: what `Server` keeps of each tool, resource, template, prompt and
completer, the options a tool is registered with, and the bus topics of registry changes."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, TypedDict, TypeVar

import msgspec

from ...protocol.limits import NO_LIMITS, Rate, ToolLimits, parse_rate
from ...types import Icon, Prompt, Resource, ResourceTemplate, Tool, ToolAnnotations
from .functions import Output, Signature

F = TypeVar("F", bound=Callable[..., Any])


class ToolOptions(TypedDict, total=False):
    """The options of `Server.add_tool` that `Server.tool` forwards."""

    title: str | None
    description: str | None
    annotations: ToolAnnotations | dict[str, Any] | None
    icons: list[Icon] | list[dict[str, Any]] | None
    input_schema: dict[str, Any] | None
    output_schema: dict[str, Any] | None
    task: str
    defer_task: bool
    meta: dict[str, Any] | None
    instant: bool
    scopes: list[str] | tuple[str, ...] | frozenset[str] | None
    app: str | None
    visibility: Sequence[str]
    rate_limit: str | Rate | None
    concurrency: int | None
    timeout: float | None


TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}\Z")
"""What a tool name may be (2025-11-25 and 2026-07-28: "SHOULD be between 1 and 128 characters",
only ASCII letters, digits, ``_``, ``-`` and ``.``); `Server.add_tool` refuses any other."""

LIST_TOPICS = {"tools": "list/tools", "prompts": "list/prompts", "resources": "list/resources"}
TASK_SUPPORT = ("forbidden", "optional", "required")


def resource_topic(uri: str) -> str:
    """The bus topic of one resource's updates."""
    return "resource/" + uri


class ToolEntry(msgspec.Struct, kw_only=True):
    definition: Tool
    fn: Callable[..., Any]
    signature: Signature
    output: Output
    headers: tuple[tuple[str, tuple[str, ...]], ...]
    task_support: str
    defer_task: bool = False
    scopes: frozenset[str] = frozenset()
    app: str | None = None
    """The ``ui://`` resource of the MCP App linked to the tool; None: no app."""
    limits: ToolLimits = NO_LIMITS
    """Its rate limit, concurrency cap and deadline (None in each: the server's default)."""


class ResourceEntry(msgspec.Struct, kw_only=True):
    definition: Resource
    fn: Callable[..., Any]
    signature: Signature
    scopes: frozenset[str] = frozenset()


class TemplateEntry(msgspec.Struct, kw_only=True):
    definition: ResourceTemplate
    pattern: re.Pattern[str]
    fn: Callable[..., Any]
    signature: Signature
    scopes: frozenset[str] = frozenset()


class PromptEntry(msgspec.Struct, kw_only=True):
    definition: Prompt
    fn: Callable[..., Any]
    signature: Signature
    scopes: frozenset[str] = frozenset()


class CompleterEntry(msgspec.Struct, kw_only=True):
    fn: Callable[..., Any]
    on_thread: bool
    """A plain ``def`` run on a worker thread (not ``instant=True``)."""


class CardSettings(msgspec.Struct, frozen=True, kw_only=True):
    """What `Server.publish_card` was given: the card's ``name``, the endpoint ``url`` to
    advertise (None: ``Config.auth.resource``, else ``http://<Host><path>``) and a
    ``description`` for a server that has none."""

    name: str
    url: str | None = None
    description: str | None = None


def template_pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[^}]+\})", template)
    regex = ""
    for part in parts:
        if part.startswith("{") and part.endswith("}"):
            name = part[1:-1]
            greedy = name.startswith("+") or name.endswith("*")
            name = name.strip("+*")
            regex += f"(?P<{name}>{'.+' if greedy else '[^/]+'})"
        else:
            regex += re.escape(part)
    return re.compile(regex + r"\Z")


def icons_of(icons: list[Icon] | list[dict[str, Any]] | None) -> Any:
    if icons is None:
        return msgspec.UNSET
    return [i if isinstance(i, Icon) else msgspec.convert(i, Icon) for i in icons]


def doc_of(fn: Callable[..., Any]) -> str | None:
    doc = fn.__doc__
    return doc.strip() if doc else None


def limits_of(
    rate_limit: str | Rate | None, concurrency: int | None, timeout: float | None
) -> ToolLimits:
    """A tool's `ToolLimits` from `Server.add_tool`'s options.

    Raises:
        ValueError: a rate `parse_rate` refuses, a ``concurrency`` below 1, a ``timeout`` not
            above 0.
    """
    if concurrency is not None and concurrency < 1:
        raise ValueError(f"concurrency must be at least 1: not {concurrency}")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be above 0 seconds: not {timeout}")
    if rate_limit is None and concurrency is None and timeout is None:
        return NO_LIMITS
    rate = parse_rate(rate_limit) if rate_limit is not None else None
    return ToolLimits(rate=rate, concurrency=concurrency, timeout=timeout)
