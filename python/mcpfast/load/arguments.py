"""Valid tool arguments from a JSON Schema, so a load test can call any tool without being told how.

`arguments_for` builds the smallest sensible object an ``inputSchema`` accepts: every required
property (and more when ``minProperties`` asks), each value chosen from ``const``, ``enum``,
``default`` or ``examples`` when the schema gives one, else made to fit the type and its bounds
(``minimum``/``maximum`` and their exclusive forms, ``multipleOf``, ``minLength``/``maxLength``,
``format``, ``minItems``/``maxItems``/``uniqueItems``, nested objects). ``$ref`` to local
definitions, ``anyOf``/``oneOf`` (the first option that is not ``null``), ``allOf`` (merged) and
type lists are followed. ``pattern`` is not solved: a string is padded to its length bounds only.
Pure and deterministic, with no dependency beyond the standard library.
"""

from __future__ import annotations

import math
from typing import Any

MAX_DEPTH = 16
_FORMATS = {
    "date-time": "2026-01-01T00:00:00Z",
    "date": "2026-01-01",
    "time": "00:00:00Z",
    "email": "load@example.com",
    "idn-email": "load@example.com",
    "uri": "https://example.com/load",
    "iri": "https://example.com/load",
    "uri-reference": "https://example.com/load",
    "url": "https://example.com/load",
    "hostname": "example.com",
    "ipv4": "127.0.0.1",
    "ipv6": "::1",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "duration": "PT1S",
}


def arguments_for(schema: Any) -> dict[str, Any]:
    """A valid arguments object for a tool's ``inputSchema`` (``{}`` for an absent schema)."""
    if not isinstance(schema, dict):
        return {}
    value = value_for(schema, root=schema)
    return value if isinstance(value, dict) else {}


def value_for(
    schema: Any, *, root: dict[str, Any] | None = None, index: int = 0, depth: int = 0
) -> Any:
    """A value valid under ``schema``; ``index`` varies it (for ``uniqueItems`` arrays)."""
    if schema is True:
        schema = {}
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return None
    root = schema if root is None else root
    schema = _resolve(schema, root, depth)
    if "const" in schema:
        return schema["const"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[index % len(enum)]
    if "default" in schema and index == 0:
        return schema["default"]
    examples = schema.get("examples")
    if isinstance(examples, list) and examples and index == 0:
        return examples[0]
    kind = _type_of(schema)
    if kind == "object":
        return _object(schema, root, index, depth)
    if kind == "array":
        return _array(schema, root, index, depth)
    if kind == "string":
        return _string(schema, index)
    if kind == "integer":
        return _integer(schema, index)
    if kind == "number":
        return _number(schema, index)
    if kind == "boolean":
        return index % 2 == 0
    if kind == "null":
        return None
    return _string(schema, index)


def _resolve(schema: dict[str, Any], root: dict[str, Any], depth: int) -> dict[str, Any]:
    """``$ref`` (local), ``allOf`` (merged) and ``anyOf``/``oneOf`` (first non-null) unfolded."""
    for _ in range(MAX_DEPTH):
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = _pointer(root, ref)
            schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
            continue
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and all_of:
            merged = {k: v for k, v in schema.items() if k != "allOf"}
            for part in all_of:
                if isinstance(part, dict):
                    merged = _merge(merged, _resolve(part, root, depth + 1))
            schema = merged
            continue
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                chosen = next(
                    (o for o in options if isinstance(o, dict) and not _is_null(o)), options[0]
                )
                rest = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
                schema = _merge(rest, chosen if isinstance(chosen, dict) else {})
                break
        else:
            return schema
    return schema


def _pointer(root: dict[str, Any], ref: str) -> dict[str, Any]:
    if not ref.startswith("#"):
        return {}
    node: Any = root
    for part in ref[1:].split("/"):
        if not part:
            continue
        part = part.replace("~1", "/").replace("~0", "~")
        node = node.get(part) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else {}


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = {**a, **b}
    if isinstance(a.get("properties"), dict) and isinstance(b.get("properties"), dict):
        out["properties"] = {**a["properties"], **b["properties"]}
    if isinstance(a.get("required"), list) and isinstance(b.get("required"), list):
        out["required"] = [*a["required"], *(r for r in b["required"] if r not in a["required"])]
    return out


def _is_null(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "null" or ("const" in schema and schema["const"] is None)


def _type_of(schema: dict[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if kinds else "null"
    if isinstance(kind, str):
        return kind
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    if any(
        k in schema
        for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
    ):
        return "number"
    if any(k in schema for k in ("minLength", "maxLength", "pattern", "format")):
        return "string"
    return None


def _object(schema: dict[str, Any], root: dict[str, Any], index: int, depth: int) -> dict[str, Any]:
    declared = schema.get("properties")
    properties: dict[str, Any] = declared if isinstance(declared, dict) else {}
    required = [r for r in schema.get("required") or [] if isinstance(r, str)]
    names = list(dict.fromkeys(required))
    minimum = schema.get("minProperties")
    if isinstance(minimum, int):
        for name in properties:
            if len(names) >= minimum:
                break
            if name not in names:
                names.append(name)
    out: dict[str, Any] = {}
    for name in names:
        prop = properties.get(name)
        if prop is None:
            extra = schema.get("additionalProperties")
            prop = extra if isinstance(extra, dict) else {}
        out[name] = value_for(prop, root=root, index=index, depth=depth + 1)
    extra_schema = schema.get("additionalProperties")
    while isinstance(minimum, int) and len(out) < minimum:
        key = f"extra{len(out)}"
        out[key] = value_for(
            extra_schema if isinstance(extra_schema, dict) else {"type": "string"},
            root=root,
            depth=depth + 1,
        )
    return out


def _array(schema: dict[str, Any], root: dict[str, Any], index: int, depth: int) -> list[Any]:
    declared = schema.get("prefixItems")
    prefix: list[Any] = declared if isinstance(declared, list) else []
    items = schema.get("items")
    if isinstance(items, list):  # draft-07 tuple form
        prefix, items = items, schema.get("additionalItems")
    low = schema.get("minItems")
    high = schema.get("maxItems")
    count = max(low if isinstance(low, int) else 0, len(prefix), 1)
    if isinstance(high, int):
        count = min(count, high)
    out = []
    for i in range(count):
        item_schema = prefix[i] if i < len(prefix) else items
        if item_schema is False:
            break
        sub = item_schema if isinstance(item_schema, dict) else {}
        out.append(value_for(sub, root=root, index=index + i, depth=depth + 1))
    return out


def _string(schema: dict[str, Any], index: int) -> str:
    fmt = schema.get("format")
    base = _FORMATS.get(fmt, "load") if isinstance(fmt, str) else "load"
    if index and base == "load":
        base = f"load{index}"
    low = schema.get("minLength")
    high = schema.get("maxLength")
    if isinstance(low, int) and len(base) < low:
        base = (base + "x" * low)[:low]
    if isinstance(high, int) and len(base) > high:
        base = base[:high] if high > 0 else ""
        if index and high > 0:
            base = (str(index) + base)[:high]
    return base


def _bounds(schema: dict[str, Any], step: float) -> tuple[float | None, float | None]:
    low: float | None = None
    high: float | None = None
    if isinstance(schema.get("minimum"), (int, float)):
        low = schema["minimum"]
    exclusive = schema.get("exclusiveMinimum")
    if exclusive is True and low is not None:  # draft-04 boolean form
        low = low + step
    elif isinstance(exclusive, (int, float)) and not isinstance(exclusive, bool):
        low = max(low, exclusive + step) if low is not None else exclusive + step
    if isinstance(schema.get("maximum"), (int, float)):
        high = schema["maximum"]
    exclusive = schema.get("exclusiveMaximum")
    if exclusive is True and high is not None:
        high = high - step
    elif isinstance(exclusive, (int, float)) and not isinstance(exclusive, bool):
        high = min(high, exclusive - step) if high is not None else exclusive - step
    return low, high


def _integer(schema: dict[str, Any], index: int) -> int:
    low, high = _bounds(schema, 1)
    low_i = math.ceil(low) if low is not None else None
    high_i = math.floor(high) if high is not None else None
    value = 1 + index
    if low_i is not None:
        value = max(value, low_i + index)
    if high_i is not None and value > high_i:
        value = high_i - (index if low_i is None or high_i - index >= low_i else 0)
    multiple = schema.get("multipleOf")
    if isinstance(multiple, int) and multiple > 0 and value % multiple:
        up = value + (multiple - value % multiple)
        value = up if high_i is None or up <= high_i else value - value % multiple
    return value


def _number(schema: dict[str, Any], index: int) -> float | int:
    multiple = schema.get("multipleOf")
    if isinstance(multiple, (int, float)) and not isinstance(multiple, bool) and multiple > 0:
        low, high = _bounds(schema, 0)
        start = math.ceil((low if low is not None else multiple) / multiple) + index
        stepped = start * multiple
        if high is not None and stepped > high:
            stepped = math.floor(high / multiple) * multiple
        return stepped
    low, high = _bounds(schema, 1e-9)
    value: float = 1.5 + index
    if low is not None:
        value = max(value, low)
    if high is not None and value > high:
        value = high if low is None else max(low, high)
    return value
