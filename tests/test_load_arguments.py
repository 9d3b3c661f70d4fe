"""Schema-driven tool arguments for the load suite: every generated value validates."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import jsonschema
import msgspec
import pytest

import mcpfast
from mcpfast.demo import server as demo_server
from mcpfast.load.arguments import arguments_for, value_for

from .helpers import running

SCHEMAS: list[tuple[str, dict[str, Any]]] = [
    ("empty", {"type": "object"}),
    ("string", {"type": "object", "properties": {"s": {"type": "string"}}, "required": ["s"]}),
    (
        "string bounds",
        {
            "type": "object",
            "properties": {
                "long": {"type": "string", "minLength": 12},
                "short": {"type": "string", "maxLength": 2},
                "exact": {"type": "string", "minLength": 3, "maxLength": 3},
            },
            "required": ["long", "short", "exact"],
        },
    ),
    (
        "formats",
        {
            "type": "object",
            "properties": {
                f: {"type": "string", "format": f} for f in ("date-time", "email", "uri", "uuid")
            },
            "required": ["date-time", "email", "uri", "uuid"],
        },
    ),
    (
        "integer bounds",
        {
            "type": "object",
            "properties": {
                "low": {"type": "integer", "minimum": 10},
                "high": {"type": "integer", "maximum": -5},
                "between": {"type": "integer", "minimum": 3, "maximum": 3},
                "exclusive": {"type": "integer", "exclusiveMinimum": 7, "exclusiveMaximum": 9},
                "multiple": {"type": "integer", "minimum": 5, "multipleOf": 4},
            },
            "required": ["low", "high", "between", "exclusive", "multiple"],
        },
    ),
    (
        "number bounds",
        {
            "type": "object",
            "properties": {
                "ratio": {"type": "number", "minimum": 0, "maximum": 1},
                "positive": {"type": "number", "exclusiveMinimum": 100},
                "negative": {"type": "number", "exclusiveMaximum": -1},
                "step": {"type": "number", "multipleOf": 0.25, "minimum": 2.1},
            },
            "required": ["ratio", "positive", "negative", "step"],
        },
    ),
    (
        "boolean enum const default",
        {
            "type": "object",
            "properties": {
                "flag": {"type": "boolean"},
                "unit": {"enum": ["celsius", "fahrenheit"]},
                "fixed": {"const": 42},
                "mode": {"type": "string", "enum": ["fast", "slow"], "default": "slow"},
                "count": {"type": "integer", "default": 7, "minimum": 1},
            },
            "required": ["flag", "unit", "fixed", "mode", "count"],
        },
    ),
    (
        "arrays",
        {
            "type": "object",
            "properties": {
                "tags": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 3,
                    "uniqueItems": True,
                },
                "numbers": {
                    "type": "array",
                    "items": {"type": "integer", "maximum": 0},
                    "maxItems": 1,
                },
                "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
            },
            "required": ["tags", "numbers", "pair"],
        },
    ),
    (
        "nested objects",
        {
            "type": "object",
            "properties": {
                "address": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string", "minLength": 2},
                        "geo": {
                            "type": "object",
                            "properties": {
                                "lat": {"type": "number", "minimum": -90, "maximum": 90}
                            },
                            "required": ["lat"],
                        },
                        "optional": {"type": "string"},
                    },
                    "required": ["city", "geo"],
                    "additionalProperties": False,
                }
            },
            "required": ["address"],
        },
    ),
    (
        "pydantic style ($defs, anyOf with null, allOf)",
        {
            "$defs": {
                "Point": {
                    "type": "object",
                    "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                    "required": ["x", "y"],
                }
            },
            "type": "object",
            "properties": {
                "origin": {"$ref": "#/$defs/Point"},
                "label": {"anyOf": [{"type": "null"}, {"type": "string", "minLength": 5}]},
                "both": {
                    "allOf": [
                        {"$ref": "#/$defs/Point"},
                        {"properties": {"z": {"type": "integer"}}, "required": ["z"]},
                    ]
                },
            },
            "required": ["origin", "label", "both"],
            "title": "fnArguments",
        },
    ),
    (
        "type lists and untyped",
        {
            "type": "object",
            "properties": {
                "maybe": {"type": ["null", "integer"], "minimum": 3},
                "anything": {},
                "implied": {"properties": {"a": {"type": "string"}}, "required": ["a"]},
            },
            "required": ["maybe", "anything", "implied"],
        },
    ),
    (
        "minProperties",
        {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
            "minProperties": 2,
        },
    ),
    (
        "x-mcp-header",
        {
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "n": {"type": "integer"},
            },
            "required": ["region", "n"],
        },
    ),
]


@pytest.mark.parametrize(("label", "schema"), SCHEMAS, ids=[label for label, _ in SCHEMAS])
def test_generated_arguments_validate(label: str, schema: dict[str, Any]) -> None:
    arguments = arguments_for(schema)
    jsonschema.Draft202012Validator(schema).validate(arguments)
    for name in schema.get("required", []):
        assert name in arguments, (label, name)


def test_only_required_properties_and_given_values() -> None:
    schema = {
        "type": "object",
        "properties": {
            "mode": {"enum": ["b", "a"]},
            "n": {"type": "integer", "minimum": 10},
            "flag": {"type": "boolean"},
            "optional": {"type": "string"},
        },
        "required": ["mode", "n", "flag"],
    }
    assert arguments_for(schema) == {"mode": "b", "n": 10, "flag": True}


def test_unique_items_differ() -> None:
    values = value_for(
        {
            "type": "array",
            "items": {"type": "integer", "minimum": 0},
            "minItems": 4,
            "uniqueItems": True,
        }
    )
    assert len(set(values)) == 4


def test_absent_or_odd_schemas() -> None:
    assert arguments_for(None) == {}
    assert arguments_for({}) == {}
    assert arguments_for({"type": "object", "properties": {"a": True}, "required": ["a"]}) == {
        "a": "load"
    }
    recursive = {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {"next": {"$ref": "#/$defs/node"}},
                "required": ["next"],
            }
        },
        "$ref": "#/$defs/node",
    }
    assert isinstance(arguments_for(recursive), dict)  # bounded depth, no RecursionError


def test_every_demo_tool_gets_valid_arguments() -> None:
    for entry in demo_server.tools.values():
        schema = entry.definition.inputSchema
        jsonschema.Draft202012Validator(schema).validate(arguments_for(schema))


class Address(msgspec.Struct):
    city: Annotated[str, msgspec.Meta(min_length=2)]
    zip_code: Annotated[int, msgspec.Meta(ge=1000, le=9999)]


varied = mcpfast.Server("varied", "1")


@varied.tool()
def ship(
    address: Address,
    weight: Annotated[float, msgspec.Meta(gt=0, le=30)],
    speed: Literal["standard", "express"],
    items: Annotated[list[str], msgspec.Meta(min_length=2)],
    gift: bool,
    note: str | None = None,
) -> str:
    return f"{address.city} {weight} {speed} {len(items)} {gift} {note}"


@pytest.mark.slow
async def test_a_server_accepts_the_arguments_built_from_its_own_schemas() -> None:
    async with running(varied) as url, mcpfast.connect(url) as client:
        for tool in await client.list_tools():
            arguments = arguments_for(tool.inputSchema)
            result = await client.call_tool(tool.name, arguments)
            assert not result.isError, (tool.name, arguments, result)
