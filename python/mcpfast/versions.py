"""Protocol revisions mcpfast speaks, newest first, and what each one changes on the wire.

Every question of the form "does this revision have X" is one predicate here; no other module
compares revision strings. Revisions are ``YYYY-MM-DD`` strings, so they compare in time order.
"""

from __future__ import annotations

from collections.abc import Callable

MODERN = "2026-07-28"
LEGACY = ("2025-11-25", "2025-06-18", "2025-03-26")
MODERN_VERSIONS = (MODERN,)
ALL_VERSIONS = (MODERN, *LEGACY)
LATEST_LEGACY = LEGACY[0]


def negotiate_legacy(requested: object) -> str:
    """The revision an `initialize` answers: the requested one when served, else the newest."""
    return requested if isinstance(requested, str) and requested in LEGACY else LATEST_LEGACY


def is_modern(version: str) -> bool:
    """Stateless revisions (2026-07-28 and later) compare after every legacy one."""
    return version >= MODERN


def supports_batching(version: str) -> bool:
    """Only 2025-03-26 accepts JSON-RPC batches."""
    return version == "2025-03-26"


def has_elicitation(version: str) -> bool:
    """Elicitation (form mode) exists from 2025-06-18."""
    return version >= "2025-06-18"


def has_url_elicitation(version: str) -> bool:
    """URL-mode elicitation (its ``elicitation.url`` capability, its -32042 error and
    ``notifications/elicitation/complete``) exists from 2025-11-25."""
    return version >= "2025-11-25"


def has_sampling_tools(version: str) -> bool:
    """Sampling with tools (the ``sampling.tools`` capability) exists from 2025-11-25."""
    return version >= "2025-11-25"


def gates_sampling_context(version: str) -> bool:
    """From 2025-11-25 a client declares ``sampling.context``, and a non-``none``
    ``includeContext`` needs it (before, the field needs nothing)."""
    return version >= "2025-11-25"


def has_legacy_tasks(version: str) -> bool:
    """2025-11-25's experimental core tasks (``params.task``, ``capabilities.tasks``,
    ``tasks/get|result|list|cancel``); 2026-07-28 has the tasks extension instead."""
    return version == "2025-11-25"


def has_polling(version: str) -> bool:
    """A 2025-11-25 session polls (SEP-1699): each SSE stream opens with a priming event that
    carries ``retry``, and the server may close it for the client to resume."""
    return version == "2025-11-25"


def names_form_mode(version: str) -> bool:
    """A 2025-11-25 session's form elicitation names its mode (``mode: "form"``; optional in
    the schema, left out in other revisions)."""
    return version == "2025-11-25"


def at_least(version: str, first: str) -> bool:
    """Whether ``version`` is ``first`` or a later revision: for a rule that holds its first
    revision as data (`mcpfast.protocol.extensions.Extension.since`)."""
    return version >= first


def first_with(has: Callable[[str], bool]) -> str:
    """The oldest known revision that ``has`` holds for (for messages naming it).

    Raises:
        StopIteration: none does.
    """
    return next(version for version in reversed(ALL_VERSIONS) if has(version))
