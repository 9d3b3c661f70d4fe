"""Typed text as values: ``key=value`` pairs, JSON-or-text values, text converted to the
type of a schema property (`convert`, described in words by `describe_type`) and a tool's
``key=value`` arguments converted by its input schema (`tool_arguments`)."""

from __future__ import annotations

import json
from typing import Any

from .exits import CliError, Exit, unknown


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
    """A property's type in words: ``string``, ``integer``, ``one of a, b``, ``yes/no``,
    ``any value`` (no type)..."""
    choices = _choices(prop)
    if choices:
        return "one of " + ", ".join(str(c) for c in choices)
    kinds = [kind for kind, _ in _kinds(prop) if kind != "null"]
    kind = kinds[0] if kinds else "any value"
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
    """``text`` as a value of the schema property ``prop``: one of its choices, else of its
    type (the first of a union, ``type: [...]`` or ``anyOf``, that takes it), a string as is;
    JSON-ish (`parse_value`) when there is no property or it names no type.

    Raises:
        ValueError: the text is not such a value (the message says what is expected).
    """
    if prop is None:
        return parse_value(text)
    choices = _choices(prop)
    if choices:
        for choice in choices:
            if text in (str(choice), json.dumps(choice)):
                return choice
        raise ValueError(f"expected one of {', '.join(map(str, choices))}, got {text!r}")
    kinds = _kinds(prop)
    if not kinds:
        return parse_value(text)
    for kind, schema in kinds:
        try:
            return _as(kind, text, schema)
        except ValueError as exc:
            if len(kinds) == 1:
                raise exc from None
    names = " or ".join(_ARTICLED.get(kind, kind) for kind, _ in kinds)
    raise ValueError(f"expected {names}, got {text!r}")


def _kinds(prop: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The JSON types ``prop`` allows, in its order, each with the schema that says it."""
    kind = prop.get("type")
    if isinstance(kind, str):
        return [(kind, prop)]
    if isinstance(kind, list):
        return [(str(k), prop) for k in kind]
    options = prop.get("anyOf") or prop.get("oneOf") or []
    return [found for o in options if isinstance(o, dict) for found in _kinds(o)]


_ARTICLED = {
    "integer": "an integer",
    "number": "a number",
    "boolean": "yes or no",
    "array": "a list",
    "object": "a JSON object",
    "null": "null",
}


def _as(kind: str, text: str, prop: dict[str, Any]) -> Any:
    """``text`` as a value of one JSON type (``prop``: the schema naming it)."""
    expected = ValueError(f"expected {_ARTICLED.get(kind, kind)}, got {text!r}")
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise expected from None
    if kind == "number":
        try:
            return int(text) if text.lstrip("-").isdigit() else float(text)
        except ValueError:
            raise expected from None
    if kind == "boolean":
        if text.lower() not in _TRUE + _FALSE:
            raise expected
        return text.lower() in _TRUE
    if kind == "null":
        if text != "null":
            raise expected
        return None
    if kind == "array":
        if text.lstrip().startswith("["):
            return _json_of(text, list, expected)
        parts = text.split(",") if text else []
        return [convert(part.strip(), prop.get("items") or {}) for part in parts]
    if kind == "object":
        return _json_of(text, dict, expected)
    return text


def _json_of(text: str, kind: type, expected: ValueError) -> Any:
    try:
        value = json.loads(text)
    except ValueError:
        raise expected from None
    if not isinstance(value, kind):
        raise expected
    return value


def tool_arguments(
    schema: dict[str, Any], pairs: dict[str, str], given: dict[str, Any]
) -> dict[str, Any]:
    """A tool's arguments: ``given`` (values, as is) updated with the ``key=value`` texts
    ``pairs``, each converted by its property of the tool's input ``schema`` (`convert`).

    Raises:
        ValueError: a key the schema does not take (naming the closest), a text that is not
            of its property's type (``key: expected ...``).
    """
    properties: dict[str, Any] = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    for key in (*given, *pairs):
        if properties and not extra and key not in properties:
            raise ValueError(unknown("argument", key, properties))
    out = dict(given)
    for key, text in pairs.items():
        prop = properties.get(key)
        if prop is None:
            prop = extra if isinstance(extra, dict) else None
        try:
            out[key] = convert(text, prop)
        except ValueError as exc:
            raise ValueError(f"{key}: {exc}") from None
    return out
