"""Typed text as values: ``key=value`` pairs, JSON-or-text values, and text converted to the
type of a schema property (`convert`, described in words by `describe_type`)."""

from __future__ import annotations

import json
from typing import Any

from .exits import CliError, Exit


def parse_value(text: str) -> Any:
    """A ``key=value`` value: JSON when it parses (numbers, booleans, objects), else text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_pairs(pairs: list[str], what: str) -> dict[str, str]:
    """``key=value`` texts as a dict.

    Raises:
        CliError: (`Exit.USAGE`) an item without ``=``.
    """
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CliError(Exit.USAGE, f"{what} are key=value, got {pair!r}")
        out[key] = value
    return out


def describe_type(prop: dict[str, Any]) -> str:
    """A property's type in words: ``string``, ``integer``, ``one of a, b``, ``yes/no``..."""
    choices = _choices(prop)
    if choices:
        return "one of " + ", ".join(str(c) for c in choices)
    kind = prop.get("type", "string")
    if kind == "boolean":
        return "yes/no"
    if kind == "array":
        items = _choices(prop.get("items") or {})
        return "comma-separated" + (" of " + ", ".join(map(str, items)) if items else "")
    return str(kind)


def _choices(prop: dict[str, Any]) -> list[Any]:
    if isinstance(prop.get("enum"), list):
        return list(prop["enum"])
    options = prop.get("oneOf") or prop.get("anyOf")
    if isinstance(options, list):
        return [o["const"] for o in options if isinstance(o, dict) and "const" in o]
    return []


_TRUE = ("y", "yes", "true", "1", "on")
_FALSE = ("n", "no", "false", "0", "off")


def convert(text: str, prop: dict[str, Any] | None) -> Any:
    """``text`` as a value of the schema property ``prop`` (JSON-ish when there is none).

    Raises:
        ValueError: the text is not such a value (the message says what is expected).
    """
    if prop is None:
        return parse_value(text)
    kind = prop.get("type", "string")
    if kind == "array":
        return [convert(part.strip(), prop.get("items") or {}) for part in text.split(",")]
    value: Any = text
    if kind == "integer":
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"expected an integer, got {text!r}") from None
    elif kind == "number":
        try:
            value = int(text) if text.lstrip("-").isdigit() else float(text)
        except ValueError:
            raise ValueError(f"expected a number, got {text!r}") from None
    elif kind == "boolean":
        if text.lower() not in _TRUE + _FALSE:
            raise ValueError(f"expected yes or no, got {text!r}")
        value = text.lower() in _TRUE
    choices = _choices(prop)
    if choices and value not in choices:
        raise ValueError(f"expected one of {', '.join(map(str, choices))}, got {text!r}")
    return value
