"""Differential tests: both backends get the same random inputs and must agree exactly.

Every call is compared by its outcome: the ``repr`` of the value returned (a framed `Message`
has no ``==``, but the same ``repr`` in both backends), or the exception's type and args.
`check_headers` takes a message framed by the same backend: each backend frames the body, the
two framings must agree, and each backend checks the headers against its own message.

For arguments of types the stub (`mcpfast._rust`) does not declare, parity stops: the Rust
backend refuses them with a `TypeError`, and what the twin does is not specified.
"""

from __future__ import annotations

import base64
import enum
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import MappingProxyType, ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mcpfast import _codec_py
from mcpfast.errors import HttpError

from .conftest import load_backend

VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
ROUTED = [
    "tools/call",
    "prompts/get",
    "resources/read",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
]

FAST = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@pytest.fixture(scope="module")
def pair() -> tuple[ModuleType, ModuleType]:
    return load_backend("rust"), load_backend("python")


def outcome(function: Callable[..., Any], *args: Any) -> tuple[Any, ...]:
    try:
        return ("returned", repr(function(*args)))
    except Exception as error:  # the comparison is the point
        return ("raised", type(error), error.args)


def agree(pair: tuple[ModuleType, ModuleType], name: str, *args: Any) -> tuple[Any, ...]:
    rust, python = pair
    expected = outcome(getattr(python, name), *args)
    assert outcome(getattr(rust, name), *args) == expected
    return expected


def frame_call(pair: tuple[ModuleType, ModuleType], data: bytes) -> tuple[Any, Any] | None:
    """Frames ``data`` with each backend (the two must agree); when it is one call (a request or
    a notification), each backend's own message, else None."""
    framed = []
    for backend in pair:
        try:
            framed.append(backend.frame(data))
        except Exception as error:  # the comparison is the point
            framed.append(error)
    rust, python = framed
    if isinstance(python, Exception):
        assert isinstance(rust, Exception), (repr(rust), repr(python))
        assert (type(rust), rust.args) == (type(python), python.args)
        return None
    assert not isinstance(rust, Exception), (repr(rust), repr(python))
    assert repr(rust) == repr(python)
    batch, messages = python
    if batch or messages[0].kind not in (_codec_py.KIND_REQUEST, _codec_py.KIND_NOTIFICATION):
        return None
    return rust[1][0], python[1][0]


def check_alike(
    pair: tuple[ModuleType, ModuleType],
    data: bytes,
    headers: Any,
    param_headers: Any,
) -> tuple[Any, ...] | None:
    """`check_headers` on each backend's framing of ``data``: the outcomes must agree. None when
    ``data`` is not one call."""
    messages = frame_call(pair, data)
    if messages is None:
        return None
    outcomes = [
        outcome(backend.check_headers, headers, message, param_headers)
        for backend, message in zip(pair, messages, strict=True)
    ]
    assert outcomes[0] == outcomes[1]
    return outcomes[1]


# ------------------------------------------------------------------------------ JSON as text

WHITESPACE = st.sampled_from(["", "", "", " ", "\n", "\t", "\r\n  "])

NUMBER_TEXTS = st.one_of(
    st.integers().map(str),
    st.integers(min_value=-(10**60), max_value=10**60).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(
        [
            "-0",
            "0.0",
            "1E+2",
            "1e-2",
            "1e400",
            "-1e400",
            "1.7976931348623157e308",
            "1.7976931348623159e308",
            "0e999999999",
            "9" * 4300,
            "-" + "9" * 4300,
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
        ]
    ),
)

STRING_BODIES = st.one_of(
    st.text(max_size=8).map(lambda text: json.dumps(text)[1:-1]),
    st.text(max_size=8).map(lambda text: json.dumps(text, ensure_ascii=False)[1:-1]),
    st.sampled_from(["\\u0041", "\\ud83d\\ude00", "\\/", "\\\\", '\\"', "caf\u00e9", "\\u00e9"]),
)

KEYS = st.one_of(
    st.sampled_from(
        [
            "jsonrpc",
            "id",
            "method",
            "params",
            "result",
            "error",
            "name",
            "uri",
            "taskId",
            "_meta",
            "arguments",
            VERSION_KEY,
            "io.modelcontextprotocol\\/protocolVersion",
            "\\u0069d",
            "n\\u0061me",
        ]
    ),
    STRING_BODIES,
)


def string(body: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return body.map(lambda text: f'"{text}"')


def raw_json(max_leaves: int = 8) -> st.SearchStrategy[str]:
    scalars = st.one_of(
        st.sampled_from(["null", "true", "false"]), NUMBER_TEXTS, string(STRING_BODIES)
    )

    def containers(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        member = st.tuples(WHITESPACE, string(KEYS), WHITESPACE, children)
        return st.one_of(
            st.lists(st.tuples(WHITESPACE, children), max_size=4).map(
                lambda items: "[" + ",".join(ws + item for ws, item in items) + "]"
            ),
            st.lists(member, max_size=4).map(
                lambda items: "{" + ",".join(f"{a}{k}{b}:{v}" for a, k, b, v in items) + "}"
            ),
        )

    return st.recursive(scalars, containers, max_leaves=max_leaves)


def params_text() -> st.SearchStrategy[str]:
    meta = st.lists(
        st.tuples(
            st.sampled_from([VERSION_KEY, "io.modelcontextprotocol\\/protocolVersion", "x"]),
            st.one_of(string(st.sampled_from(["2026-07-28", "2025-06-18", "v"])), raw_json(2)),
        ),
        max_size=3,
    ).map(lambda items: "{" + ",".join(f'"{k}":{v}' for k, v in items) + "}")
    member = st.one_of(
        st.tuples(
            st.sampled_from(["name", "uri", "taskId"]), string(st.sampled_from(["a", "b", "é"]))
        ),
        st.tuples(st.sampled_from(["name", "uri", "taskId", "n\\u0061me"]), raw_json(2)),
        st.tuples(st.just("_meta"), st.one_of(meta, meta, raw_json(2))),
        st.tuples(st.sampled_from(["arguments", "other"]), raw_json(4)),
    )
    return st.lists(member, max_size=5).map(
        lambda items: "{" + ",".join(f'"{k}":{v}' for k, v in items) + "}"
    )


ANY_JSON = raw_json(4)
PARAMS = params_text()


# Mostly what a peer sends, sometimes anything: each member's value, by member name.
def weighted(*choices: tuple[int, st.SearchStrategy[str]]) -> st.SearchStrategy[str]:
    """Draws from each strategy in proportion to its weight."""
    pool = [strategy for weight, strategy in choices for _ in range(weight)]
    return st.integers(0, len(pool) - 1).flatmap(pool.__getitem__)


MEMBER_VALUES: dict[str, st.SearchStrategy[str]] = {
    "jsonrpc": weighted(
        (8, st.just('"2.0"')),
        (1, st.sampled_from(['"1.0"', "2.0", '"2\\u002e0"', "null"])),
        (1, ANY_JSON),
    ),
    "id": weighted(
        (4, st.integers(-5, 10**6).map(str)),
        (2, string(STRING_BODIES)),
        (2, NUMBER_TEXTS),
        (1, st.sampled_from(["null", "true", "1.0"])),
        (1, ANY_JSON),
    ),
    "method": weighted(
        (8, string(st.sampled_from([*ROUTED, "tools/list", "ping", "tools\\/call", "x"]))),
        (1, st.sampled_from(["5", "null", "[]"])),
    ),
    "params": weighted((4, PARAMS), (1, ANY_JSON)),
    "result": ANY_JSON,
    "error": weighted((1, st.just('{"code":-32601,"message":"x"}')), (1, ANY_JSON)),
    "other": ANY_JSON,
}
SHAPES = st.sampled_from(
    [
        ("jsonrpc", "id", "method", "params"),
        ("jsonrpc", "method", "params"),
        ("jsonrpc", "id", "method"),
        ("jsonrpc", "id", "result"),
        ("jsonrpc", "id", "error"),
        ("jsonrpc", "error"),
        ("jsonrpc", "id", "result", "error"),
        (),
    ]
)
EXTRA_MEMBERS = st.lists(st.sampled_from(list(MEMBER_VALUES)), max_size=2)


@st.composite
def message_text(draw: st.DrawFn) -> str:
    keys = [*draw(SHAPES), *draw(EXTRA_MEMBERS)]
    if draw(st.integers(0, 3)) == 0:
        keys = draw(st.permutations(keys))
    members = []
    for key in keys:
        value = draw(MEMBER_VALUES[key])
        name = key if draw(st.integers(0, 9)) else key.replace("i", "\\u0069", 1)
        members.append(f'{draw(WHITESPACE)}"{name}"{draw(WHITESPACE)}:{draw(WHITESPACE)}{value}')
    return "{" + ",".join(members) + draw(WHITESPACE) + "}"


BODIES = st.one_of(
    message_text(),
    st.lists(st.one_of(message_text(), raw_json(3)), max_size=4).map(
        lambda items: "[" + ", ".join(items) + "]"
    ),
    raw_json(),
)

NOISE = st.sampled_from(list(b'{}[],:"\\ -0123456789eE.tfnu\x00\x1f\x7f\xff\xc3\xa9\xed\n'))


@st.composite
def mutated(draw: st.DrawFn, source: st.SearchStrategy[str] = BODIES) -> bytes:
    data = bytearray(draw(source).encode())
    for _ in range(draw(st.integers(1, 3))):
        position = draw(st.integers(0, len(data)))
        operation = draw(st.sampled_from(["insert", "delete", "replace", "truncate"]))
        if operation == "insert":
            data.insert(position, draw(NOISE))
        elif operation == "truncate":
            del data[position:]
        elif position < len(data):
            if operation == "delete":
                del data[position]
            else:
                data[position] = draw(NOISE)
    return bytes(data)


# ------------------------------------------------------------------------------------- framing


@settings(FAST, max_examples=500)
@given(text=BODIES, max_depth=st.one_of(st.just(64), st.integers(-2, 8)))
@example(text='{"jsonrpc":"2.0","id":1e400,"x":tru', max_depth=64)
@example(text="[" * 70 + "1" + "]" * 70, max_depth=64)
def test_frame_json_text(pair: tuple[ModuleType, ModuleType], text: str, max_depth: int) -> None:
    agree(pair, "frame", text.encode(), max_depth)


@settings(FAST, max_examples=500)
@given(data=mutated())
@example(  # found by fuzzing: the Rust scanner let this invalid UTF-8 through
    data=b'[{"":[{"\xc2\x800\xff\\u001f":null}],"u0069d":0,"method":"tools/call","params":{}},'
    b' {"jsonrpc":"2.0","\\u0069d":0,"method":"tools/call","params":{}}]'
)
def test_frame_mutated(pair: tuple[ModuleType, ModuleType], data: bytes) -> None:
    agree(pair, "frame", data)


@FAST
@given(data=st.binary(max_size=40), max_depth=st.integers(-1, 4))
def test_frame_random_bytes(
    pair: tuple[ModuleType, ModuleType], data: bytes, max_depth: int
) -> None:
    agree(pair, "frame", data, max_depth)


JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
    ),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.one_of(KEYS, st.text(max_size=4)), children, max_size=4)
    ),
    max_leaves=10,
)


@FAST
@given(
    value=JSON_VALUES,
    method=st.sampled_from([*ROUTED, "initialize", "notifications/initialized"]),
    id_=st.one_of(st.none(), st.integers(), st.text(max_size=4)),
    ensure_ascii=st.booleans(),
)
def test_frame_json_rpc_objects(
    pair: tuple[ModuleType, ModuleType], value: Any, method: str, id_: Any, ensure_ascii: bool
) -> None:
    for members in (
        {"jsonrpc": "2.0", "id": id_, "method": method, "params": value},
        {"jsonrpc": "2.0", "id": id_, "result": value},
        {"jsonrpc": "2.0", "id": id_, "error": value},
        {"jsonrpc": "2.0", "method": method, "params": {"name": value, "_meta": value}},
    ):
        agree(pair, "frame", json.dumps(members, ensure_ascii=ensure_ascii).encode())
    agree(pair, "frame", json.dumps([value, {"jsonrpc": "2.0", "method": method}]).encode())


class Depth(enum.IntEnum):
    ONE = 1


@FAST
@given(
    max_depth=st.one_of(
        st.booleans(),
        st.integers(min_value=2**63 - 2),
        st.integers(max_value=-(2**63) + 2),
        st.integers(-3, 8),
        st.sampled_from([2**64, 2**70, -(2**70), Depth.ONE]),
    )
)
def test_frame_max_depth_types(pair: tuple[ModuleType, ModuleType], max_depth: int) -> None:
    # Every int is a depth, whatever its size: bools and int subclasses too.
    for data in (b"[[1]]", b"{}", b"]]][", b'["[[["]'):
        agree(pair, "frame", data, max_depth)


@st.composite
def boundary_number(draw: st.DrawFn) -> str:
    """A number text near where msgspec stops converting: around the largest float, written in
    many ways, or an integer of about 4300 characters."""
    if draw(st.booleans()):
        digits = draw(st.sampled_from(["17976931348623157", "1797693134862315807937289714", "1"]))
        digits += draw(st.text("0123456789", max_size=25))
        point = draw(st.integers(0, len(digits)))
        zeros = draw(st.integers(0, 3))
        exponent = 308 - (point - 1) + zeros + draw(st.integers(-1, 1))
        if point == 0:
            text = "0." + "0" * zeros + digits
        else:
            text = digits[:point] + ("." + digits[point:] if point < len(digits) else "")
            exponent -= zeros
        return text + draw(st.sampled_from(["e", "E", "e+"])) + str(exponent)
    length = draw(st.integers(4290, 4310))
    sign = draw(st.sampled_from(["", "-"]))
    return sign + "9" * (length - len(sign))


@FAST
@given(number=boundary_number(), member=st.sampled_from(["id", "jsonrpc", "method", "result"]))
@example(number="1.7976931348623158e308", member="id")
@example(number="1.7976931348623159e308", member="id")
@example(number="1" * 20000 + "e-100000000", member="id")
def test_frame_number_range(pair: tuple[ModuleType, ModuleType], number: str, member: str) -> None:
    data = '{"jsonrpc":"2.0","method":"m","' + member + '":' + number + "}"
    agree(pair, "frame", data.encode())
    agree(pair, "frame", f"[{data}]".encode())


# ------------------------------------------------------------------------------------- headers

VISIBLE = st.characters(min_codepoint=0x20, max_codepoint=0x7E)
PADDING = st.sampled_from(["", "", " ", "\t", " \t "])


def wrapped(payload: st.SearchStrategy[bytes]) -> st.SearchStrategy[str]:
    return payload.map(lambda data: "=?base64?" + base64.b64encode(data).decode() + "?=")


HEADER_TEXTS = st.one_of(
    st.text(VISIBLE, max_size=10),
    st.text(st.characters(categories=["Cs", "Cc", "Ll", "Lo", "Zs"]), max_size=4),
    wrapped(st.text(max_size=6).map(str.encode)),
    wrapped(st.binary(max_size=4)),
    st.text(st.sampled_from("AQw=+/ -_"), max_size=9).map(lambda text: f"=?base64?{text}?="),
    st.sampled_from(
        ["=?base64??=", "=?base64?=", "=?base64?AAAA=?=", "=?base64?AB==?=", "true", "-0"]
    ),
)


@st.composite
def header_value(draw: st.DrawFn, mirror: str | None) -> str | None:
    choice = draw(st.integers(0, 9))
    if choice == 0:
        return None
    if choice <= 7 and mirror is not None:
        text = mirror
    else:
        text = draw(HEADER_TEXTS)
    return draw(PADDING) + text + draw(PADDING)


ARGUMENT_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**50), max_value=10**50),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
    st.lists(st.integers(), max_size=2),
)


def mirror_of(value: Any) -> st.SearchStrategy[str]:
    if isinstance(value, bool):
        return st.sampled_from(["true" if value else "false", "True", "1"])
    if isinstance(value, int):
        return st.sampled_from([str(value), "0" + str(abs(value)), "-" + str(value), "+1"])
    if isinstance(value, str):
        encoded = value
        if not (value.isascii() and value.isprintable() and value.strip(" \t") == value):
            encoded = "=?base64?" + base64.b64encode(value.encode()).decode() + "?="
        return st.sampled_from([encoded, value])
    return st.just(json.dumps(value))


ROUTING_FIELD = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
ROUTED_VALUES = st.one_of(st.none(), st.sampled_from(["search", "é", " x", "t-1", ""]))
IDS = st.sampled_from(['"id":1,', '"id":"a",', ""])


def call_text(method: str, params: bytes | None, id_text: str = '"id":1,') -> bytes:
    data = ('{"jsonrpc":"2.0",' + id_text + '"method":' + json.dumps(method)).encode()
    if params is not None:
        data += b',"params":' + params
    return data + b"}"


@st.composite
def header_case(draw: st.DrawFn) -> tuple[bytes, dict[str, Any], list[tuple[str, list[str]]]]:
    """A call body (mostly well-formed, sometimes raw or mutated params), headers that mostly
    mirror it, and parameter headers."""
    method = draw(st.sampled_from([*ROUTED, "tools/list", "ping"]))
    routed = {field: draw(ROUTED_VALUES) for field in ("name", "uri", "taskId")}
    version = draw(st.one_of(st.none(), st.sampled_from(["2026-07-28", "v", " v"])))
    arguments: Any = draw(
        st.dictionaries(st.sampled_from(["a", "b", "c"]), ARGUMENT_VALUES, max_size=3)
    )
    if draw(st.booleans()):
        arguments["n"] = {"a": draw(ARGUMENT_VALUES)}
    members: dict[str, Any] = {key: value for key, value in routed.items() if value is not None}
    if version is not None:
        members["_meta"] = {VERSION_KEY: version}
        if draw(st.booleans()):
            members["_meta"]["progressToken"] = 1
    if draw(st.integers(0, 5)):
        members["arguments"] = arguments
    else:
        arguments = None
    keys = draw(st.permutations(list(members)))
    built = json.dumps({key: members[key] for key in keys}).encode()
    params_choice = draw(st.integers(0, 7))
    params: bytes | None
    if params_choice == 0:
        params = None
    elif params_choice == 1:
        params = draw(raw_json(4)).encode()
    elif params_choice == 2:
        params = draw(PARAMS).encode()
    elif params_choice == 3:
        params = draw(mutated(st.just(built.decode())))
    else:
        params = built
    data = call_text(method, params, draw(IDS))

    headers: dict[str, Any] = {}
    field = ROUTING_FIELD.get(method)
    name = routed[field] if field else draw(st.sampled_from(list(routed.values())))
    for key, mirror in (
        ("mcp-protocol-version", version),
        ("mcp-method", method),
        ("mcp-name", name),
    ):
        value = draw(header_value(mirror))
        if value is not None or draw(st.booleans()):
            headers[key] = value
    param_headers = []
    for header_name in draw(st.lists(st.sampled_from(["A", "b", "N", "ẞ", "İ"]), max_size=3)):
        path = draw(st.lists(st.sampled_from(["a", "b", "c", "n"]), max_size=2))
        param_headers.append((header_name, path))
        member: Any = arguments
        for key in path:
            member = member.get(key) if isinstance(member, dict) else None
        mirror = draw(mirror_of(member)) if member is not None else None
        text = draw(header_value(mirror))
        if text is not None:
            headers["mcp-param-" + header_name.lower()] = text
    return data, headers, param_headers


@settings(FAST, max_examples=600)
@given(case=header_case())
def test_check_headers(pair: tuple[ModuleType, ModuleType], case: tuple[Any, ...]) -> None:
    check_alike(pair, *case)


@FAST
@given(
    value=st.one_of(
        st.text(max_size=8),
        st.text(st.characters(categories=["Cs", "Cc", "Zs", "Lo", "Po"]), max_size=4),
        st.text(VISIBLE, max_size=12).map(lambda text: f"=?base64?{text}?="),
        st.integers(),
        st.integers(min_value=10**4295, max_value=10**4305),
        st.booleans(),
    )
)
def test_encode_header_value(pair: tuple[ModuleType, ModuleType], value: Any) -> None:
    encoded = agree(pair, "encode_header_value", value)
    if encoded[0] == "returned" and isinstance(value, str):
        text = _codec_py.encode_header_value(value)
        headers = {"mcp-protocol-version": "v", "mcp-method": "m", "mcp-param-x": text}
        params = {"_meta": {VERSION_KEY: "v"}, "arguments": {"x": value}}
        data = call_text("m", json.dumps(params).encode())
        # The encoded text mirrors the value it encodes.
        assert check_alike(pair, data, headers, [("X", ["x"])]) == ("returned", "None")


@FAST
@given(
    params=PARAMS,
    texts=st.lists(st.one_of(HEADER_TEXTS, st.sampled_from(["a", "true", "0", "1"])), max_size=3),
    paths=st.lists(st.lists(st.sampled_from(["a", "b", "arguments", "x"]), max_size=2), max_size=3),
)
def test_check_headers_on_framed_params(
    pair: tuple[ModuleType, ModuleType], params: str, texts: list[str], paths: list[list[str]]
) -> None:
    # The Rust backend remembers where a message's arguments are: checking a message of a
    # batch, or the same message twice, must agree with the twin all the same.
    data = call_text("tools/call", params.encode())
    messages = frame_call(pair, data)
    assert messages is not None
    name, version = messages[1].name, messages[1].version
    headers = {
        "mcp-protocol-version": "v" if version is None else _codec_py.encode_header_value(version),
        "mcp-method": "tools/call",
        "mcp-name": "x" if name is None else _codec_py.encode_header_value(name),
    }
    param_headers = []
    for index, path in enumerate(paths):
        param_headers.append((f"P{index}", path))
        if index < len(texts):
            headers[f"mcp-param-p{index}"] = texts[index]
    batch = b'[{"jsonrpc":"2.0","method":"ping"},' + bytes(bytearray(data)) + b"]"
    outcomes = []
    for backend, message in zip(pair, messages, strict=True):
        in_batch = backend.frame(batch)[1][1]
        for framed in (message, message, in_batch):
            outcomes.append(outcome(backend.check_headers, headers, framed, param_headers))
    assert outcomes == [outcomes[0]] * 6


# -------------------------------------------------------------------------------------- tokens

KID_TEXT = st.text(st.sampled_from("abcXYZ019_-.é \ud800"), max_size=34)
ISSUED_AT = st.one_of(
    st.integers(-2, 10**15 + 2), st.integers(), st.just(10**15 - 1), st.booleans()
)


@FAST
@given(
    key_id=KID_TEXT, key=st.binary(max_size=40), payload=st.binary(max_size=40), issued_at=ISSUED_AT
)
def test_mint_token(
    pair: tuple[ModuleType, ModuleType], key_id: str, key: bytes, payload: bytes, issued_at: int
) -> None:
    agree(pair, "mint_token", key_id, key, payload, issued_at)


TOKEN_NOISE = st.sampled_from(list("AQgw_-.=v1é0/+"))


@st.composite
def token_case(draw: st.DrawFn) -> tuple[Any, ...]:
    kid = draw(st.sampled_from(["k1", "k2", "rotated-2026", "K"]))
    key = draw(st.binary(min_size=0, max_size=40))
    issued_at = draw(st.integers(0, 10**15 - 1))
    token = _codec_py.mint_token(kid, key, draw(st.binary(max_size=30)), issued_at)
    for _ in range(draw(st.integers(0, 2))):
        position = draw(st.integers(0, len(token)))
        operation = draw(st.sampled_from(["replace", "insert", "delete", "truncate"]))
        noise = draw(TOKEN_NOISE)
        if operation == "replace":
            token = token[:position] + noise + token[position + 1 :]
        elif operation == "insert":
            token = token[:position] + noise + token[position:]
        elif operation == "delete":
            token = token[:position] + token[position + 1 :]
        else:
            token = token[:position]
    keys = draw(
        st.sampled_from(
            [
                {kid: key},
                {kid: key + b"x"},
                {},
                {"k1": key, "k2": key, "rotated-2026": key, "K": key},
            ]
        )
    )
    now = issued_at + draw(st.integers(-400, 400))
    max_age = draw(st.one_of(st.integers(-5, 400), st.integers(), st.booleans()))
    return token, keys, now, max_age


@settings(FAST, max_examples=500)
@given(case=token_case())
def test_verify_token(pair: tuple[ModuleType, ModuleType], case: tuple[Any, ...]) -> None:
    agree(pair, "verify_token", *case)


@FAST
@given(token=st.text(st.sampled_from("v1.kA_-=Qgwé\ud800"), max_size=60), now=st.integers())
def test_verify_random_token_text(
    pair: tuple[ModuleType, ModuleType], token: str, now: int
) -> None:
    agree(pair, "verify_token", token, {"k": b"key", "kA": b""}, now, 10)


# ------------------------------------------------------------------------ arguments of other types

_HEADERS = {"mcp-protocol-version": "v", "mcp-method": "m"}
_TOKEN = _codec_py.mint_token("k", b"k", b"", 1)
_CALL = call_text(
    "m", b'{"_meta":{"' + VERSION_KEY.encode() + b'":"v"},"arguments":{"a":{"b":"1"},"c":"1"}}'
)


@dataclass(frozen=True)
class Framed:
    """Stands for the message a backend frames from ``data`` (its own, or with ``other``, the
    other backend's)."""

    data: bytes = _CALL
    other: bool = False


MESSAGE = Framed()


def _arg_id(arg: object) -> str:
    if isinstance(arg, Framed):
        return "OTHER_MESSAGE" if arg.other else "MESSAGE"
    if isinstance(arg, memoryview):
        return "memoryview"
    if isinstance(arg, dict) and arg and _HEADERS.items() <= arg.items():
        extra = {key: value for key, value in arg.items() if key not in _HEADERS}
        return "HEADERS" + (f"+{extra!r}" if extra else "")
    return repr(arg)[:40]


def case_id(value: object) -> str | None:
    """A short, stable test id for a tuple of arguments."""
    return ", ".join(map(_arg_id, value)) if isinstance(value, tuple) else None


def framed_args(
    pair: tuple[ModuleType, ModuleType], backend: ModuleType, args: Sequence[Any]
) -> list[Any]:
    """``args`` with each `Framed` replaced by the message it stands for."""
    resolved = []
    for arg in args:
        if isinstance(arg, Framed):
            framer = pair[1] if (backend is pair[0]) == arg.other else pair[0]
            batch, messages = framer.frame(arg.data)
            assert batch is False
            arg = messages[0]
        resolved.append(arg)
    return resolved


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("frame", ("{}",)),
        ("frame", (memoryview(b"{}"),)),
        ("frame", (5,)),
        ("frame", (None,)),
        ("frame", ([b"{}"],)),
        ("frame", (b"{}", None)),
        ("frame", (b"[[1]]", "x")),
        ("frame", (b"[[1]]", 1.5)),
        ("frame", (b"[[1]]", 2.0)),
        ("frame", (b"{}", 64.0)),
        ("frame", (b"[[1]]", -3.0)),
        # headers: values that are not str, or not a mapping
        ("check_headers", ({"mcp-protocol-version": 5}, MESSAGE, [])),
        ("check_headers", ({"mcp-protocol-version": b"v"}, MESSAGE, [])),
        ("check_headers", ({**_HEADERS, "mcp-param-x": 5}, MESSAGE, [("x", ["c"])])),
        ("check_headers", ({**_HEADERS, "mcp-param-x": b"1"}, MESSAGE, [("x", ["c"])])),
        ("check_headers", (5, MESSAGE, [])),  # (not a mapping: the type of error may vary)
        ("check_headers", (None, MESSAGE, [])),
        # the message: not a Message, or the other backend's
        ("check_headers", (_HEADERS, (0, 1, "m", None, "v", None, None, None), [])),
        ("check_headers", (_HEADERS, None, [])),
        ("check_headers", (_HEADERS, "m", [])),
        ("check_headers", (_HEADERS, Framed(other=True), [])),
        # param_headers: not a sequence of (str, sequence of str) pairs
        ("check_headers", (_HEADERS, MESSAGE, 5)),
        ("check_headers", (_HEADERS, MESSAGE, [5])),
        ("check_headers", (_HEADERS, MESSAGE, [None])),
        ("check_headers", (_HEADERS, MESSAGE, [("a", [], 1)])),
        ("check_headers", (_HEADERS, MESSAGE, [("a",)])),
        ("check_headers", (_HEADERS, MESSAGE, [["a"]])),
        ("check_headers", (_HEADERS, MESSAGE, [["x", ["c"]]])),
        ("check_headers", (_HEADERS, MESSAGE, ["xc"])),
        ("check_headers", (_HEADERS, MESSAGE, [(5, [])])),
        ("check_headers", (_HEADERS, MESSAGE, [(b"x", [])])),
        ("check_headers", (_HEADERS, MESSAGE, [(None, ["c"])])),
        # paths: a str, not a sequence, or holding what is not a str
        ("check_headers", (_HEADERS, MESSAGE, [("x", 5)])),
        ("check_headers", (_HEADERS, MESSAGE, [("x", None)])),
        ("check_headers", (_HEADERS, MESSAGE, [("x", "c")])),
        ("check_headers", (_HEADERS, MESSAGE, [("x", "a")])),
        ("check_headers", (_HEADERS, MESSAGE, [("x", [5])])),
        ("check_headers", (_HEADERS, MESSAGE, [("x", [None])])),
        ("check_headers", (_HEADERS, MESSAGE, [("x", [b"c"])])),
        ("check_headers", (_HEADERS, MESSAGE, [("x", ["a", 5])])),
        ("check_headers", (_HEADERS, MESSAGE, [("x", [["a"]])])),
    ],
    ids=case_id,
)
def test_arguments_of_other_types(
    pair: tuple[ModuleType, ModuleType], name: str, args: tuple[Any, ...]
) -> None:
    # Parity stops at the stub's types: the Rust boundary is typed and refuses anything else
    # with a TypeError (never a crash or a result); what the twin does with such arguments is
    # whatever its Python code does, and is not specified.
    rust, _ = pair
    with pytest.raises((TypeError, AttributeError)) as caught:
        getattr(rust, name)(*framed_args(pair, rust, args))
    if name == "frame" or isinstance(args[0], dict):
        assert caught.type is TypeError


@pytest.mark.parametrize(
    ("name", "args"),
    [
        # str that is not UTF-8-encodable is still a str: exact agreement
        ("check_headers", ({"mcp-protocol-version": "\ud800"}, MESSAGE, [])),
        ("check_headers", (_HEADERS, MESSAGE, [("\ud800", [])])),
        ("check_headers", ({**_HEADERS, "mcp-param-x": "\ud800"}, MESSAGE, [("x", ["c"])])),
        ("check_headers", (_HEADERS, MESSAGE, [("x", ["\ud800"])])),
        # sequences other than lists, pairs other than plain tuples
        ("check_headers", (_HEADERS, MESSAGE, (("x", ("c",)),))),
        ("check_headers", (_HEADERS, MESSAGE, [("x", ["a", "b"])])),
        ("check_headers", ({**_HEADERS, "mcp-param-x": "1"}, MESSAGE, [("x", ["c"])])),
        ("check_headers", ({**_HEADERS, "mcp-param-x": "1"}, MESSAGE, [("x", [])])),
        ("check_headers", ({}, MESSAGE, [])),
    ],
    ids=case_id,
)
def test_check_headers_edges_of_the_stub_types(
    pair: tuple[ModuleType, ModuleType], name: str, args: tuple[Any, ...]
) -> None:
    outcomes = [
        outcome(getattr(backend, name), *framed_args(pair, backend, args)) for backend in pair
    ]
    assert outcomes[0] == outcomes[1]


_BIG = 2**127
_LONGEST = _codec_py.mint_token("k", b"k", b"x" * 49_113, 10)  # 65536 characters
_TOO_LONG = _codec_py.mint_token("k", b"k", b"x" * 49_114, 1)  # 65537
assert (len(_LONGEST), len(_TOO_LONG)) == (65536, 65537)


@pytest.mark.parametrize(
    ("name", "args"),
    [
        # ints beyond 64 and 128 bits, bools, lone surrogates, other mappings, bytearrays
        ("mint_token", ("k", b"k", b"p", True)),
        ("mint_token", ("k", b"k", b"p", False)),
        ("mint_token", ("k", b"k", b"p", 2**64)),
        ("mint_token", ("k", b"k", b"p", -(2**200))),
        ("mint_token", ("k\ud800", b"k", b"p", 1)),
        ("mint_token", ("k", bytearray(b"k"), bytearray(b"p"), 1)),
        ("mint_token", ("k", b"", b"", 0)),
        ("verify_token", (_TOKEN, {"k": b"k"}, True, False)),
        ("verify_token", (_TOKEN, {"k": b"k"}, True, True)),
        ("verify_token", (_TOKEN, {"k": b"k"}, _BIG, _BIG - 1)),
        ("verify_token", (_TOKEN, {"k": b"k"}, _BIG, _BIG - 2)),
        ("verify_token", (_TOKEN, {"k": b"k"}, 2**300, 2**300 - 1)),
        ("verify_token", (_TOKEN, {"k": b"k"}, 2**300, 2**300 - 2)),
        ("verify_token", (_TOKEN, {"k": b"k"}, -(2**300), 2**300)),
        ("verify_token", (_TOKEN, {"k": b"k"}, -299, -(2**300))),
        ("verify_token", (_TOKEN, {"k": b"k"}, -300, -(2**300))),
        ("verify_token", (_TOKEN, {"k": b"k"}, 1, -_BIG)),
        ("verify_token", (_TOKEN, {"k": b"k"}, 1, 2**300)),
        ("verify_token", (_TOKEN, {"k": bytearray(b"k")}, 1, 0)),
        ("verify_token", (_TOKEN, MappingProxyType({"k": b"k"}), 1, 0)),
        ("verify_token", (_TOKEN, {"k": None}, 1, 0)),
        ("verify_token", (_TOKEN[:-1] + "\ud800", {"k": b"k"}, 1, 0)),
        ("verify_token", ("", {}, 1, 1)),
        ("verify_token", (_LONGEST, {"k": b"k"}, 10, 0)),
        ("verify_token", (_TOO_LONG, {"k": b"k"}, 1, 0)),
        ("encode_header_value", (2**64,)),
        ("encode_header_value", ("\ud800",)),
    ],
    ids=case_id,
)
def test_token_and_encode_edges_of_the_stub_types(
    pair: tuple[ModuleType, ModuleType], name: str, args: tuple[Any, ...]
) -> None:
    agree(pair, name, *args)


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("mint_token", (5, b"k", b"p", 1)),
        ("mint_token", (b"k", b"k", b"p", 1)),
        ("mint_token", ("k", b"k", b"p", 1.5)),
        ("mint_token", ("k", b"k", b"p", "1")),
        ("mint_token", ("k", memoryview(b"k"), b"p", 1)),
        ("mint_token", ("k", "k", b"p", 1)),
        ("mint_token", ("k", b"k", 5, 1)),
        ("mint_token", ("k", b"k", memoryview(b"p"), 1)),
        ("verify_token", (b"v1.k.1.x.y", {}, 1, 1)),
        ("verify_token", (b"x" * 70_000, {}, 1, 1)),
        ("verify_token", (5, {}, 1, 1)),
        ("verify_token", (_TOKEN, {"k": b"k"}, "1", 1)),
        ("verify_token", (_TOKEN, {"k": b"k"}, 1.0, 1)),
        ("verify_token", (_TOKEN, {"k": b"k"}, 1, 1.0)),
        ("verify_token", (_TOKEN, {"k": "k"}, 1, 1)),
        ("verify_token", (_TOKEN, [], 1, 1)),
        ("encode_header_value", (b"x",)),
        ("encode_header_value", (None,)),
        ("encode_header_value", (1.5,)),
    ],
    ids=case_id,
)
def test_token_and_encode_arguments_of_other_types(
    pair: tuple[ModuleType, ModuleType], name: str, args: tuple[Any, ...]
) -> None:
    # As for `frame` and `check_headers`: Rust refuses with a TypeError; the twin is unspecified.
    rust, _ = pair
    with pytest.raises(TypeError):
        getattr(rust, name)(*args)


# ------------------------------------------------------------------------------- HTTP heads

HEAD_PIECES = st.sampled_from(
    [
        b"GET",
        b"POST",
        b"get",
        b" ",
        b"  ",
        b"/mcp",
        b"http://h:1/mcp?x",
        b"*",
        b"HTTP/1.1",
        b"HTTP/1.0",
        b"HTTP/2.0",
        b"\r\n",
        b"\n",
        b"\r",
        b"Host: h",
        b"host:x",
        b"HOST :x",
        b"Content-Length: 5",
        b"content-length: 5, 5",
        b"content-length: 5, 6",
        b"Content-Length: 0012",
        b"Content-Length: 1234567890123456789",
        b"Content-Length: \xb2",
        b"Transfer-Encoding: chunked",
        b"transfer-encoding: CHUNKED ",
        b"transfer-encoding: gzip",
        b"Connection: close",
        b"connection: keep-alive",
        b"Expect: 100-continue",
        b":",
        b",",
        b"\t",
        b"x-\xe9: \xff",
        b"X-Empty:",
        b"\x00",
    ]
)


def head_outcome(module: ModuleType, head: bytes) -> tuple[Any, ...]:
    """What ``module.parse_head`` makes of ``head``: the head's ``repr``, or the refusal."""
    try:
        return ("returned", repr(module.parse_head(head)))
    except HttpError as error:
        return ("raised", error.status, error.reason, error.args)


@FAST
@given(st.lists(HEAD_PIECES, max_size=24).map(b"".join) | st.binary(max_size=160))
@example(b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\ncontent-length: 5")
@example(b"GET / HTTP/1.1\r\nHost: h\r\nHost: h")
@example(b"GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked")
@example(b"GET /\n\rx HTTP/1.1\r\nHost: h")
@example(b"GET / HTTP/1.0")
@example(b"GET / HTTP/1.1\r\n")
@example(b"POST /\xff/h\x07mcp HTTP/1.1\r\nHost: h")  # found by fuzzing against h11 (HARDENING.md)
@example(b"DELETE /m\xd1cp HTTP/1.0\r\nConnection: \r\nConnection:/1.0\r\nConnection: ")
def test_parse_head_agrees(pair: tuple[ModuleType, ModuleType], head: bytes) -> None:
    rust, python = pair
    assert head_outcome(rust, head) == head_outcome(python, head)


def take_outcome(module: ModuleType, data: bytes, limit: int, max_lines: int) -> tuple[Any, ...]:
    """What ``module.take_head`` makes of a buffer holding ``data``: the head's ``repr`` (or
    None) or the refusal, and what is left in the buffer."""
    buffer = bytearray(data)
    try:
        outcome: tuple[Any, ...] = ("returned", repr(module.take_head(buffer, limit, max_lines)))
    except HttpError as error:
        outcome = ("raised", error.status, error.reason)
    return (*outcome, bytes(buffer))


@FAST
@given(
    st.lists(HEAD_PIECES | st.sampled_from([b"\r\n\r\n", b"\r\n", b"{}"]), max_size=24).map(
        b"".join
    )
    | st.binary(max_size=160),
    st.integers(0, 200),
    st.integers(0, 8),
)
@example(b"\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\nGET", 100, 8)
@example(b"\r\n\r\nGET / HTT", 100, 8)
@example(b"\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", 18, 1)  # just at both limits
@example(b"\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", 17, 1)
@example(b"\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", 18, 0)
@example(b"\r\nGET / HTTP/1.1\r\nHost: h\r\n\r", 18, 1)  # no blank line yet, past the limit
@example(b"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 1x\r\n\r\nrest", 100, 8)
def test_take_head_agrees(
    pair: tuple[ModuleType, ModuleType], data: bytes, limit: int, max_lines: int
) -> None:
    rust, python = pair
    assert take_outcome(rust, data, limit, max_lines) == take_outcome(
        python, data, limit, max_lines
    )


def test_take_head_takes_one_head_at_a_time(pair: tuple[ModuleType, ModuleType]) -> None:
    one = b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}"
    for backend in pair:
        buffer = bytearray(b"\r\n" + one + one[:20])
        head = backend.take_head(buffer, 100, 8)
        assert (head.method, head.content_length, bytes(buffer)) == ("POST", 2, b"{}" + one[:20])
        del buffer[:2]
        assert backend.take_head(buffer, 100, 8) is None
        assert bytes(buffer) == one[:20]  # a head in pieces is left whole


@pytest.mark.parametrize(
    "target", [b"/\x07", b"/\x7f", b"/caf\xe9", b"/\xff/h", b"/a\tb", b"/\x80", b"\x01"]
)
def test_parse_head_refuses_targets_that_are_not_visible_ascii(
    pair: tuple[ModuleType, ModuleType], target: bytes
) -> None:
    # Found by fuzzing against h11: both backends accepted a target with control or non-ASCII
    # bytes, which h11 (the Hypercorn engine) refuses with 400 (RFC 9112 §3.2).
    for backend in pair:
        outcome = head_outcome(backend, b"GET " + target + b" HTTP/1.1\r\nHost: h")
        assert outcome[:3] == ("raised", 400, "malformed request line")


@FAST
@given(
    st.sampled_from(["POST", "GET", "DELETE", "HEAD", "post", "PUT"]),
    st.lists(
        st.tuples(
            # the names (and methods) Rust keeps interned, in any case, and others
            st.sampled_from(
                [
                    "Host",
                    "host",
                    "X-A",
                    "Connection",
                    "Content-Length",
                    "Accept",
                    "Content-Type",
                    "Accept-Encoding",
                    "User-Agent",
                    "Authorization",
                    "Origin",
                    "MCP-Protocol-Version",
                    "Mcp-Session-Id",
                    "mcp-method",
                    "Mcp-Name",
                    "Last-Event-ID",
                    "Transfer-Encoding",
                    "Expect",
                ]
            ),
            st.text(st.characters(min_codepoint=32, max_codepoint=255), max_size=12)
            | st.sampled_from(
                ["close", " Close\t", "keep-alive, close", "\x1cclose", "100-CONTINUE"]
            ),
        ),
        max_size=8,
    ),
)
def test_parse_head_agrees_on_well_formed_heads(
    pair: tuple[ModuleType, ModuleType], method: str, fields: list[tuple[str, str]]
) -> None:
    rust, python = pair
    lines = [f"{method} /mcp HTTP/1.1", *(f"{name}: {value}" for name, value in fields)]
    head = "\r\n".join(lines).encode("latin-1")
    assert head_outcome(rust, head) == head_outcome(python, head)


@pytest.mark.parametrize("max_length", [-(2**70), -1, 0, 9, 10, 2**70, True])
def test_verify_token_max_length(pair: tuple[ModuleType, ModuleType], max_length: int) -> None:
    token = _codec_py.mint_token("k", b"k", b"p", 1)
    for limit in (max_length, len(token) - 1, len(token)):
        agree(pair, "verify_token", token, {"k": b"k"}, 1, 10, limit)


# --- response ---

_DATE_END = _codec_py.http.DATE_END
_HEADER_PAIRS = st.lists(
    st.tuples(st.binary(max_size=12), st.binary(max_size=24))
    | st.sampled_from([(b"content-type", b"application/json"), (b"mcp-session-id", b"s")]),
    max_size=6,
)


@FAST
@given(
    st.integers(100, 999) | st.sampled_from([-1, 0, 99, 1000, 2**16 + 200, -(2**63)]),
    _HEADER_PAIRS,
    st.binary(max_size=40),
    st.none() | st.integers(-3, 2**63 - 1),
    st.booleans(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1) | st.integers(-2, 200),
    st.integers(0, _DATE_END - 1) | st.sampled_from([-1, _DATE_END, 2**63 - 1, -(2**63)]),
)
@example(204, [], b"", 5, True, True, 0, 0)
@example(100, [(b"a", b"b")], b"x", None, True, False, 6, 951_782_400)  # 2000-02-29, at the limit
@example(200, [(b"a", b"b")], b"x", None, True, False, 5, 4_107_542_400)  # 2100-03-01, one past
@example(200, [], b"", None, False, True, 0, _DATE_END - 1)
@example(-1, [], b"", -1, False, True, -1, -1)  # every check fails: the status is reported
@example(200, [], b"", -1, False, True, -1, -1)
@example(200, [], b"", 0, False, True, -1, -1)
def test_response_agrees(
    pair: tuple[ModuleType, ModuleType],
    status: int,
    headers: list[tuple[bytes, bytes]],
    body: bytes,
    length: int | None,
    chunked: bool,
    keep_alive: bool,
    limit: int,
    now: int,
) -> None:
    agree(pair, "response", status, headers, body, length, chunked, keep_alive, limit, now)


def test_response_status_lines_agree(pair: tuple[ModuleType, ModuleType]) -> None:
    # every three-digit status, named or not: the reason phrases are one table in two languages
    for status in range(100, 1000):
        agree(pair, "response", status, [], b"", None, False, True, 0, 0)


def test_response_dates_agree(pair: tuple[ModuleType, ModuleType]) -> None:
    # a day in 37 (each weekday and day of the month in turn) through the 400 years the
    # Gregorian calendar repeats over, each at another second, and the last second written
    for now in [*range(43_210, 146_097 * 86_400, 86_400 * 37 + 1), _DATE_END - 1]:
        agree(pair, "response", 200, [], b"", 0, False, True, 0, now)


@pytest.mark.parametrize(
    "args",
    [
        (200, None, b"", 0, False, True, 0, 0),  # headers: not iterable
        (200, [b"ab"], b"", 0, False, True, 0, 0),  # a pair that is not a tuple of two bytes
        (200, [("a", "b")], b"", 0, False, True, 0, 0),
        (200, [(b"a", b"b", b"c")], b"", 0, False, True, 0, 0),
        (200, [], "body", 0, False, True, 0, 0),  # body: str
        (200, [], bytearray(), 0, False, True, 0, 0),
        (200.0, [], b"", 0, False, True, 0, 0),  # numbers: float
        (200, [], b"", 0, False, True, 0, 0.5),
        (200, [], b"", 0, False, True, 2**63, 0),  # past 64 signed bits
    ],
    ids=str,
)
def test_response_arguments_of_other_types(
    pair: tuple[ModuleType, ModuleType], args: tuple[Any, ...]
) -> None:
    rust, _ = pair
    with pytest.raises((TypeError, OverflowError)):
        rust.response(*args)


# --- scope_head ---

_SCOPE_PAIRS = st.lists(
    st.tuples(st.binary(max_size=12), st.binary(max_size=24))
    | st.sampled_from(
        [
            (b"host", b"h"),
            (b"content-length", b"5"),
            (b"transfer-encoding", b"chunked"),
            (b"mcp-session-id", b"\xe9s"),
        ]
    ),
    max_size=8,
)


@FAST
@given(
    st.text(max_size=8),  # any str, not only a token: both measure it in characters
    st.binary(max_size=40),
    st.binary(max_size=12),
    _SCOPE_PAIRS,
    st.integers(-(2**63), 2**63 - 1) | st.integers(-2, 200),
    st.integers(-(2**63), 2**63 - 1) | st.integers(-1, 9),
)
@example("POST", b"/mcp", b"", [(b"host", b"h")], 27, 1)  # just at both limits
@example("POST", b"/mcp", b"", [(b"host", b"h")], 26, 1)
@example("POST", b"/mcp", b"", [(b"host", b"h")], 27, 0)
@example("POST", b"/mcp", b"a=1", [(b"host", b"h")], 31, 1)  # a query counts with its "?"
@example("GET", b"/", b"", [(b"host", b"a"), (b"host", b"b")], 99, 9)
@example("GET", b"/", b"", [(b"content-length", b"1"), (b"transfer-encoding", b"x")], 99, 9)
@example("GET", b"/", b"", [(b"x", b"1"), (b"x", b"\xff")], 99, 9)  # the last value is kept
def test_scope_head_agrees(
    pair: tuple[ModuleType, ModuleType],
    method: str,
    target: bytes,
    query: bytes,
    headers: list[tuple[bytes, bytes]],
    limit: int,
    max_lines: int,
) -> None:
    agree(pair, "scope_head", method, target, query, headers, limit, max_lines)


@pytest.mark.parametrize(
    "args",
    [
        ("GET", b"/", b"", None, 99, 9),  # headers: not iterable
        ("GET", b"/", b"", [b"ab"], 99, 9),  # a pair that is not a tuple of two bytes
        ("GET", b"/", b"", [("a", "b")], 99, 9),
        (b"GET", b"/", b"", [], 99, 9),  # method: bytes
        ("GET", "/", b"", [], 99, 9),  # target: str
        ("GET", b"/", None, [], 99, 9),  # query: None
        ("GET", b"/", b"", [], 99.0, 9),  # limits: float, past 64 signed bits
        ("GET", b"/", b"", [], 99, 2**63),
    ],
    ids=str,
)
def test_scope_head_arguments_of_other_types(
    pair: tuple[ModuleType, ModuleType], args: tuple[Any, ...]
) -> None:
    rust, _ = pair
    with pytest.raises((TypeError, OverflowError)):
        rust.scope_head(*args)
