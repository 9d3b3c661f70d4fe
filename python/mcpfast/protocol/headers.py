"""The 2026-07-28 request headers both sides agree on: what a tool's ``x-mcp-header``
declarations mirror, and the headers a client sends for a request (the server's check of them
is the codec's ``check_headers``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .. import codec
from .methods import NAME_FIELD

ACCEPT = "application/json, text/event-stream"
"""What a Streamable HTTP client accepts, on every POST."""

ParamHeaders = tuple[tuple[str, tuple[str, ...]], ...]
"""A tool's ``x-mcp-header`` declarations: (header name, property path under ``arguments``)."""


def request_headers(
    version: str,
    method: str,
    params: dict[str, Any],
    param_headers: Mapping[str, ParamHeaders],
) -> dict[str, str]:
    """``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*`` for a request
    (``param_headers`` by tool name, from `header_params` of each listed tool)."""
    out = {
        "accept": ACCEPT,
        "content-type": "application/json",
        "mcp-protocol-version": version,
        "mcp-method": method,
    }
    field = NAME_FIELD.get(method)
    if field is not None and isinstance(params.get(field), str):
        out["mcp-name"] = codec.encode_header_value(params[field])
    if method == "tools/call":
        arguments = params.get("arguments") or {}
        for header, path in param_headers.get(params.get("name", ""), ()):
            value: Any = arguments
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            if isinstance(value, (str, int, bool)) and not isinstance(value, float):
                out["mcp-param-" + header.lower()] = codec.encode_header_value(value)
    return out


def header_params(schema: dict[str, Any]) -> ParamHeaders:
    """The ``x-mcp-header`` declarations of an input schema, as (header name, property path).

    A declaration counts only where it is *statically reachable*: in a property schema reached
    from the root through ``properties`` keys alone. One anywhere else (under ``items``,
    ``anyOf``/``oneOf``/``allOf``/``not``, ``if``/``then``/``else``, ``$ref``'d ``$defs``, on
    the root itself, ...) makes the whole schema invalid; values of ``const``, ``enum``,
    ``default`` and ``examples`` are data, not schemas, and are not searched.

    Raises:
        ValueError: for a declaration the 2026-07-28 rules forbid (bad token, duplicate name,
            a type other than string/integer/boolean, or one not statically reachable), the
            message naming the declaration and where it sits.
    """
    found: list[tuple[str, tuple[str, ...]]] = []
    _collect_headers(schema, (), found)
    names = [name.lower() for name, _ in found]
    if len(set(names)) != len(names):
        raise ValueError("x-mcp-header names must be unique (case-insensitively)")
    return tuple(found)


_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})
"""Keywords whose values are instances, not schemas: an ``x-mcp-header`` key there is data."""


_SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
"""Keywords whose values map names to schemas (a name is never a declaration)."""


def _pointer(path: tuple[str, ...]) -> str:
    return "/".join(f"properties/{key}" for key in path)


def _collect_headers(
    schema: dict[str, Any], path: tuple[str, ...], found: list[tuple[str, tuple[str, ...]]]
) -> None:
    """Walk a schema reached through ``properties`` keys only (``path``): record its
    declaration; below any keyword other than ``properties`` there may be none."""
    name = schema.get("x-mcp-header")
    if name is not None:
        if not path:
            raise ValueError(f"x-mcp-header {name!r} is on the schema root, not on a property")
        if not isinstance(name, str) or not _TOKEN.match(name):
            raise ValueError(f"x-mcp-header {name!r} is not an HTTP token")
        if schema.get("type") not in ("string", "integer", "boolean"):
            raise ValueError(f"x-mcp-header {name!r} must be a string, integer or boolean")
        found.append((name, path))
    for keyword, value in schema.items():
        if keyword == "properties" and isinstance(value, dict):
            for key, prop in value.items():
                if isinstance(prop, dict):
                    _collect_headers(prop, (*path, key), found)
        elif keyword not in _DATA_KEYWORDS:
            prefix = _pointer(path)
            _refuse_below(value, f"{prefix}/{keyword}" if prefix else keyword, keyword)


def _refuse_below(value: Any, where: str, keyword: str = "") -> None:
    """Raise for any ``x-mcp-header`` declaration inside ``value``, the value of ``keyword``
    at ``where`` (none there is statically reachable).

    Raises:
        ValueError: naming the declaration and the schema path to it.
    """
    if isinstance(value, dict):
        if keyword in _SCHEMA_MAPS:
            for key, inner in value.items():
                _refuse_below(inner, f"{where}/{key}")
            return
        name = value.get("x-mcp-header")
        if name is not None:
            raise ValueError(
                f"x-mcp-header {name!r} is not statically reachable from the schema root "
                f"(it sits at {where}; only a chain of properties keys may lead to it, not "
                "items, anyOf/oneOf/allOf/not, if/then/else, $ref or $defs)"
            )
        for inner_keyword, inner in value.items():
            if inner_keyword not in _DATA_KEYWORDS:
                _refuse_below(inner, f"{where}/{inner_keyword}", inner_keyword)
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            _refuse_below(inner, f"{where}/{index}")
