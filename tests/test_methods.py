"""The method table (`mcpfast.protocol.methods`) is the one source of method facts: the eras'
features serving each method in each era (`core.dispatch`), both codec backends' routing (the ``Mcp-Name`` member a frame reports and the
header ``check_headers`` requires), and the scope check (every object a method's params name
needs its scopes), agree with it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import msgspec.inspect as mi
import pytest

import mcpfast
from mcpfast.errors import CodecError
from mcpfast.protocol.methods import (
    KINDS,
    METHODS,
    NAME_FIELD,
    PROMPT,
    REACHES,
    REFERENCE,
    RESOURCE,
    TASK,
    TOOL,
    Reach,
    in_era,
)
from mcpfast.server.config import Config
from mcpfast.server.core.dispatch import TABLES
from mcpfast.server.core.endpoint import Endpoint
from mcpfast.server.core.turn import FEATURES, serves

from .helpers import TEST_KEYS

FIELDS = ("name", "uri", "taskId")
UNKNOWN = "vendor/unknown"


def test_the_eras_serve_exactly_the_table() -> None:
    endpoint = Endpoint(mcpfast.Server("methods", "1"), Config(), TEST_KEYS)
    assert set(endpoint.modern.handlers) == in_era("modern")
    assert set(endpoint.legacy.handlers) | {"initialize"} == in_era("legacy")


def test_one_feature_serves_a_method_in_both_eras() -> None:
    both = in_era("modern") & in_era("legacy")
    assert both  # the lists, tools/call, resources/read, tasks/get, ...
    for method in both:
        assert TABLES["modern"][method] is TABLES["legacy"][method], method


def test_a_feature_serves_only_a_method_of_the_table() -> None:
    with pytest.raises(KeyError):
        serves(UNKNOWN)(FEATURES["tools/list"])
    with pytest.raises(ValueError, match="served twice"):
        serves("tools/call")(FEATURES["tools/list"])


@pytest.mark.parametrize("method", [*METHODS, UNKNOWN])
def test_frame_routes_by_the_table(codec: ModuleType, method: str) -> None:
    for field in FIELDS:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {field: "x"}}
        _, (message,) = codec.frame(json.dumps(body).encode(), 64)
        routed = message.name
        assert (routed == "x") == (NAME_FIELD.get(method) == field), (method, field, routed)


@pytest.mark.parametrize("method", [*METHODS, UNKNOWN])
def test_check_headers_requires_mcp_name_by_the_table(codec: ModuleType, method: str) -> None:
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": method}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"name": "x"}}
    _, (message,) = codec.frame(json.dumps(body).encode(), 64)
    if method in NAME_FIELD:
        with pytest.raises(CodecError) as info:
            codec.check_headers(headers, message, ())
        assert info.value.data == {"header": "Mcp-Name", "reason": "missing"}
    else:
        codec.check_headers(headers, message, ())


# ------------------------------------------------------------------- what each method reaches

NAMING = frozenset(("name", "uri", "ref", "taskId", "resourceSubscriptions", "taskIds"))
"""Params members that name an object a request reaches."""
NOT_OBJECTS = {
    ("completion/complete", ("argument", "name")): "the argument completed, not an object",
    ("resources/directory/read", ("uri",)): "a skills directory: listed as lists are, unscoped",
}


def naming_members(tp: mi.Type, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The paths of the `NAMING` members of a params type (not inside one)."""
    if isinstance(tp, mi.UnionType):
        for inner in tp.types:
            yield from naming_members(inner, path)
    elif isinstance(tp, mi.StructType):
        for field in tp.fields:
            here = (*path, field.name)
            if field.name in NAMING:
                yield here
            else:
                yield from naming_members(field.type, here)


@pytest.mark.parametrize("method", list(METHODS))
def test_every_member_naming_an_object_is_a_reach(method: str) -> None:
    """A method whose params name a tool, prompt, resource, template or task says so in the
    table (`Method.reaches`), so that the scope check reads it."""
    row = METHODS[method]
    declared = {reach.path for reach in row.reaches}
    named = set(naming_members(mi.type_info(row.params))) - {
        path for (m, path) in NOT_OBJECTS if m == method
    }
    assert named == declared, (method, named, declared)
    assert all(reach.kind in KINDS for reach in row.reaches)


SCOPED = ("s",)
SAMPLES: dict[str, list[tuple[Any, Any]]] = {
    TOOL: [("t", "other")],
    PROMPT: [("p", "other")],
    RESOURCE: [("r://1", "other://1"), ("r://fixed", "r://fixed/")],
    REFERENCE: [
        ({"type": "ref/prompt", "name": "p"}, {"type": "ref/prompt", "name": "other"}),
        ({"type": "ref/resource", "uri": "r://{x}"}, {"type": "ref/resource", "uri": "o://{x}"}),
    ],
}
"""Per kind: the key of a scoped object, and of one that is not (or does not exist)."""
REQUIRED = {"completion/complete": {"argument": {"name": "x", "value": ""}}}
"""Other members a method's params need to decode."""


def scoped_server() -> mcpfast.Server:
    """A tool, a prompt, a fixed resource and a template needing scope ``s``; unscoped others."""
    server = mcpfast.Server("reach", "1")
    server.tool("t", scopes=SCOPED)(lambda: "")
    server.tool("other")(lambda: "")
    server.prompt("p", scopes=SCOPED)(lambda: "")
    server.prompt("other")(lambda: "")
    server.resource("r://fixed", scopes=SCOPED)(lambda: "")
    server.resource("r://{x}", scopes=SCOPED)(lambda x: x)
    server.resource("o://{x}")(lambda x: x)
    return server


def naming(method: str, reach: Reach, key: Any) -> bytes:
    params: dict[str, Any] = json.loads(json.dumps(REQUIRED.get(method, {})))
    node = params
    for member in reach.path[:-1]:
        node = node.setdefault(member, {})
    node[reach.path[-1]] = [key] if reach.many else key
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()


@pytest.mark.parametrize(
    ("method", "reach"),
    [
        pytest.param(m, r, id=f"{m}:{'.'.join(r.path)}")
        for m, reaches in REACHES.items()
        for r in reaches
    ],
)
def test_every_reach_is_scope_checked(codec: ModuleType, method: str, reach: Reach) -> None:
    """Each object a method reaches needs its scopes at the endpoint's check (batched or not);
    a task's are its tool's, read from the bus by the endpoint (`tasks`)."""
    server = scoped_server()
    if reach.kind == TASK:
        assert TASK not in server.reach_scopes
        return
    endpoint = Endpoint(server, Config(), TEST_KEYS)
    for scoped, unscoped in SAMPLES[reach.kind]:
        _, messages = codec.frame(naming(method, reach, scoped), 64)
        assert endpoint._needed(messages) == frozenset(SCOPED), (method, scoped)
        _, messages = codec.frame(naming(method, reach, unscoped), 64)
        assert endpoint._needed(messages) == frozenset(), (method, unscoped)
        batch = b"[" + naming(method, reach, unscoped) + b"," + naming(method, reach, scoped) + b"]"
        _, messages = codec.frame(batch, 64)
        assert endpoint._needed(messages) == frozenset(SCOPED), (method, "batch")
