"""Extensions (SEP-2133), both sides: identifiers, what one party declares, and negotiation.

An extension is named ``{vendor-prefix}/{extension-name}``: the ``_meta`` key rules with a
mandatory prefix, which should be a reversed domain name its author controls
(``com.example/x``). Each side declares the extensions it supports under ``extensions`` in its
capabilities, as a map of identifier to that extension's settings (inline, ``{}`` for none):
the server in ``server/discover`` and in the legacy ``initialize`` result, the client in each
2026-07-28 request's ``_meta`` client capabilities and in a legacy ``initialize``. Nothing is
on by default: an extension is in use for a request only when both sides declared it, and a
side that supports it must otherwise fall back to the core protocol (graceful degradation).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from ..types import TASKS_EXTENSION
from ..versions import ALL_VERSIONS, MODERN, at_least

OLDEST = min(ALL_VERSIONS)
"""The oldest revision spoken: an extension declared with no ``since`` is advertised in all."""

_LABEL = r"[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
IDENTIFIER = re.compile(
    rf"(?P<prefix>{_LABEL}(?:\.{_LABEL})+)/(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\Z"
)
"""An extension identifier: a reverse-DNS prefix (two or more dot-separated labels, each a
letter first, letters, digits or ``-`` inside, a letter or digit last), ``/``, and a name
(letters and digits at both ends, ``-``, ``_`` or ``.`` inside)."""


def check_identifier(identifier: str) -> str:
    """``identifier`` when it is a valid extension identifier (`IDENTIFIER`).

    Raises:
        ValueError: naming the rule it breaks.
    """
    if not isinstance(identifier, str) or IDENTIFIER.match(identifier) is None:
        raise ValueError(
            f"extension identifier {identifier!r} is not {{vendor-prefix}}/{{name}} with a "
            "reverse-DNS vendor prefix (SEP-2133), e.g. 'com.example/my-extension'"
        )
    return identifier


def check_settings(identifier: str, settings: Any) -> dict[str, Any]:
    """An extension's settings object (None is ``{}``).

    Raises:
        ValueError: the identifier is invalid (`check_identifier`) or the settings are not an
            object.
    """
    check_identifier(identifier)
    if settings is None:
        return {}
    if not isinstance(settings, Mapping):
        raise ValueError(f"the settings of extension {identifier!r} must be an object (a dict)")
    return dict(settings)


class Extension(msgspec.Struct, frozen=True, kw_only=True):
    """One extension a server declares: its identifier, its settings (sent inline under the
    identifier) and the first protocol revision it is advertised in (``since``)."""

    identifier: str
    settings: dict[str, Any] = msgspec.field(default_factory=dict)
    since: str = OLDEST


TASKS = Extension(identifier=TASKS_EXTENSION, since=MODERN)
"""The tasks extension (SEP-2663): 2026-07-28 only (2025-11-25 has core ``tasks`` instead)."""


def advertised(extensions: Iterable[Extension], version: str) -> dict[str, dict[str, Any]]:
    """The ``extensions`` capability of ``version``: each extension declared for it, by
    identifier, with its settings."""
    return {e.identifier: e.settings for e in extensions if at_least(version, e.since)}


def declared(capabilities: Mapping[str, Any] | None, identifier: str) -> dict[str, Any] | None:
    """The settings ``capabilities`` (one side's) declare for an extension; None when they do
    not declare it (an entry that is not an object counts as ``{}``)."""
    extensions = capabilities.get("extensions") if capabilities else None
    if not isinstance(extensions, dict) or identifier not in extensions:
        return None
    settings = extensions[identifier]
    return settings if isinstance(settings, dict) else {}
