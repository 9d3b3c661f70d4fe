"""Behaviour of the codec, run on both backends: ``codec`` is ``mcpfast._rust`` or its twin."""

from __future__ import annotations

import base64
import enum
import json
import re
from collections.abc import Iterator, Mapping
from types import MappingProxyType, ModuleType
from typing import Any

import pytest

from mcpfast.errors import CodecError, TokenError

REQUEST, NOTIFICATION, RESULT, ERROR, INVALID = range(5)
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"


def body(**members: Any) -> bytes:
    return json.dumps(members).encode()


def fields(message: Any) -> tuple[Any, ...]:
    """A message's members in order (messages compare by identity only)."""
    return (
        message.kind,
        message.id,
        message.method,
        message.name,
        message.version,
        message.params,
        message.payload,
        message.reason,
    )


def one(codec: ModuleType, data: bytes, max_depth: int = 64) -> Any:
    """The one message ``data`` frames into (a `Message` of ``codec``)."""
    batch, messages = codec.frame(data, max_depth)
    assert batch is False
    assert len(messages) == 1
    (message,) = messages
    assert type(message) is codec.Message
    return message


def invalid(id_: int | str | None, reason: str) -> tuple[Any, ...]:
    """The fields of an invalid message."""
    return (INVALID, id_, None, None, None, None, None, reason)


def refused(codec: ModuleType, data: bytes, max_depth: int = 64) -> tuple[Any, ...]:
    with pytest.raises(CodecError) as caught:
        codec.frame(data, max_depth)
    assert type(caught.value) is CodecError
    return caught.value.args


PARSE_ERROR = (-32700, "Parse error", None)


def exactly(message: str) -> str:
    """A ``pytest.raises(match=...)`` pattern for exactly ``message``."""
    return f"^{re.escape(message)}$"


def invalid_request(reason: str, **extra: Any) -> tuple[Any, ...]:
    return (-32600, "Invalid Request", {"reason": reason, **extra})


# ------------------------------------------------------------------------------------- constants


def test_kinds(codec: ModuleType) -> None:
    kinds = (codec.KIND_REQUEST, codec.KIND_NOTIFICATION, codec.KIND_RESULT, codec.KIND_ERROR)
    assert (*kinds, codec.KIND_INVALID) == (0, 1, 2, 3, 4)


def test_facade_picks_a_backend() -> None:
    import mcpfast.codec

    assert mcpfast.codec.BACKEND in ("rust", "python")
    assert mcpfast.codec.frame(b'{"jsonrpc":"2.0","method":"ping"}')[1][0].method == "ping"


# -------------------------------------------------------------------------------------- messages

MEMBERS = ("kind", "id", "method", "name", "version", "params", "payload", "reason")


def test_messages_are_frozen(codec: ModuleType) -> None:
    data = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}'
    message = one(codec, data)
    for member in MEMBERS:
        with pytest.raises(AttributeError):
            setattr(message, member, None)
        with pytest.raises(AttributeError):
            delattr(message, member)
    with pytest.raises(AttributeError):
        message.extra = 1
    assert fields(message) == (REQUEST, 1, "tools/call", "x", None, b'{"name":"x"}', None, None)


def test_messages_compare_by_identity(codec: ModuleType) -> None:
    data = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    message = one(codec, data)
    again = one(codec, data)
    assert message == message
    assert message != again
    assert fields(message) == fields(again)


def test_messages_repr(codec: ModuleType) -> None:
    data = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}'
    assert repr(one(codec, data)) == (
        "Message(kind=0, id=1, method='tools/call', name='x', version=None, "
        'params=b\'{"name":"x"}\', payload=None, reason=None)'
    )
    assert repr(one(codec, b'{"id":"a"}')) == (
        "Message(kind=4, id='a', method=None, name=None, version=None, params=None, "
        "payload=None, reason='jsonrpc must be \"2.0\"')"
    )


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b'{"jsonrpc":"1.0","id":1,"method":"ping"}', 'jsonrpc must be "2.0"'),
        (b'{"jsonrpc":"2.0","id":1,"method":5}', "method must be a string"),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', "id must be a string or an integer"),
        (b'{"jsonrpc":"2.0","method":"tools/call","params":["x"]}', "params must be an object"),
    ],
)
def test_invalid_message_has_a_reason_and_no_method(
    codec: ModuleType, data: bytes, reason: str
) -> None:
    message = one(codec, data)
    assert message.kind == INVALID
    assert message.method is None
    assert message.reason == reason
    assert (message.name, message.version, message.params, message.payload) == (None,) * 4


# --------------------------------------------------------------------------------------- framing


def test_request(codec: ModuleType) -> None:
    data = body(
        jsonrpc="2.0",
        id=7,
        method="tools/call",
        params={"name": "echo", "arguments": {"text": "hi"}},
    )
    kind, id_, method, name, version, params, payload, reason = fields(one(codec, data))
    assert (kind, id_, method, name, version, payload, reason) == (
        REQUEST,
        7,
        "tools/call",
        "echo",
        None,
        None,
        None,
    )
    assert params == b'{"name": "echo", "arguments": {"text": "hi"}}'
    assert type(params) is bytes


def test_notification(codec: ModuleType) -> None:
    message = fields(one(codec, b'{"jsonrpc":"2.0","method":"notifications/initialized"}'))
    assert message == (
        NOTIFICATION,
        None,
        "notifications/initialized",
        None,
        None,
        None,
        None,
        None,
    )
    data = b'{"method":"notifications/progress","params":{},"jsonrpc":"2.0"}'
    assert fields(one(codec, data)) == (
        NOTIFICATION,
        None,
        "notifications/progress",
        None,
        None,
        b"{}",
        None,
        None,
    )


def test_results_and_errors(codec: ModuleType) -> None:
    result = fields(one(codec, b'{"jsonrpc":"2.0","id":"a","result": {"content": [1, 2]} }'))
    assert result == (RESULT, "a", None, None, None, None, b'{"content": [1, 2]}', None)
    scalar = fields(one(codec, b'{"jsonrpc":"2.0","id":3,"result":null}'))
    assert scalar == (RESULT, 3, None, None, None, None, b"null", None)
    error = fields(one(codec, b'{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"x"}}'))
    assert error == (ERROR, 3, None, None, None, None, b'{"code":-1,"message":"x"}', None)
    for id_text in (b"null", None):
        members = b'"jsonrpc":"2.0","error":{"code":1}'
        if id_text is not None:
            members += b',"id":' + id_text
        assert fields(one(codec, b"{" + members + b"}")) == (
            ERROR,
            None,
            None,
            None,
            None,
            None,
            b'{"code":1}',
            None,
        )


def test_batch(codec: ModuleType) -> None:
    data = (
        b' [ {"jsonrpc":"2.0","id":1,"method":"ping"} , 5 ,'
        b'{"jsonrpc":"2.0","method":"notifications/initialized"},'
        b'{"jsonrpc":"2.0","id":1,"result":{}}, [], {"id": 1e400} ]\n'
    )
    batch, messages = codec.frame(data)
    assert batch is True
    expected = [
        (REQUEST, 1, "ping", None, None, None, None, None),
        invalid(None, "message must be an object"),
        (NOTIFICATION, None, "notifications/initialized", None, None, None, None, None),
        (RESULT, 1, None, None, None, None, b"{}", None),
        invalid(None, "message must be an object"),
        invalid(None, "message must be an object"),
    ]
    assert [fields(message) for message in messages] == expected
    assert all(type(message) is codec.Message for message in messages)
    again_batch, again = codec.frame(bytearray(data))
    assert again_batch is True
    assert [fields(message) for message in again] == expected


@pytest.mark.parametrize(
    ("id_text", "expected"),
    [
        (b"0", 0),
        (b"-0", 0),
        (b"42", 42),
        (b"-7", -7),
        (b"9223372036854775807", 2**63 - 1),
        (b"9223372036854775808", 2**63),
        (b"-9223372036854775809", -(2**63) - 1),
        (b"18446744073709551616", 2**64),
        (b"123456789012345678901234567890123456789", 123456789012345678901234567890123456789),
        (b'"7"', "7"),
        (b'""', ""),
        (b'"caf\\u00e9 \\ud83d\\ude00"', "café 😀"),
        (b'"\xc3\xa9"', "é"),
    ],
)
def test_id_types_are_preserved(codec: ModuleType, id_text: bytes, expected: int | str) -> None:
    message = one(codec, b'{"jsonrpc":"2.0","method":"m","id":' + id_text + b"}")
    assert (message.kind, message.id) == (REQUEST, expected)
    assert type(message.id) is type(expected)


def test_longest_integer_id(codec: ModuleType) -> None:
    digits = "9" * 4300
    message = one(codec, b'{"jsonrpc":"2.0","method":"m","id":' + digits.encode() + b"}")
    assert message.id == int(digits)
    too_long = b'{"jsonrpc":"2.0","method":"m","id":-' + digits.encode() + b"}"
    assert refused(codec, too_long) == invalid_request("not a JSON-RPC message")


@pytest.mark.parametrize("id_text", [b"1.0", b"1e2", b"true", b"false", b"[1]", b"{}", b"null"])
def test_ids_that_are_not_readable(codec: ModuleType, id_text: bytes) -> None:
    request = b'{"jsonrpc":"2.0","method":"m","id":' + id_text + b"}"
    reason = "id must be a string or an integer"
    assert fields(one(codec, request)) == invalid(None, reason)


@pytest.mark.parametrize(
    ("method", "params", "name"),
    [
        ("tools/call", {"name": "search", "uri": "u"}, "search"),
        ("prompts/get", {"name": "greet"}, "greet"),
        ("resources/read", {"uri": "file:///a.txt", "name": "n"}, "file:///a.txt"),
        ("tasks/get", {"taskId": "t-1"}, "t-1"),
        ("tasks/update", {"taskId": "t-2"}, "t-2"),
        ("tasks/cancel", {"taskId": "t-3", "name": "n"}, "t-3"),
        ("tools/list", {"name": "x"}, None),
        ("tools/call", {"name": 5}, None),
        ("tools/call", {"name": None}, None),
        ("tools/call", {"name": ["x"]}, None),
        ("tools/call", {}, None),
        ("resources/read", {"name": "n"}, None),
    ],
)
def test_routing_name(
    codec: ModuleType, method: str, params: dict[str, Any], name: str | None
) -> None:
    message = one(codec, body(jsonrpc="2.0", id=1, method=method, params=params))
    assert message.name == name


def test_routing_reads_the_last_duplicate_and_escapes(codec: ModuleType) -> None:
    data = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}'
    assert one(codec, data).name == "b"
    data = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":1}}'
    assert one(codec, data).name is None
    data = b'{"jsonrpc":"2.0","id":1,"method":"tools\\/call","params":{"n\\u0061me":"\\u00e9"}}'
    message = one(codec, data)
    assert (message.method, message.name) == ("tools/call", "é")
    data = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"params":{}}'
    message = one(codec, data)
    assert (message.name, message.version, message.params) == (None, None, b"{}")


@pytest.mark.parametrize(
    ("meta", "version"),
    [
        ({VERSION_KEY: "2026-07-28"}, "2026-07-28"),
        ({VERSION_KEY: "x", "other": 1}, "x"),
        ({VERSION_KEY: 2026}, None),
        ({"protocolVersion": "2026-07-28"}, None),
        ([VERSION_KEY], None),
        ("2026-07-28", None),
        (None, None),
    ],
)
def test_meta_version(codec: ModuleType, meta: Any, version: str | None) -> None:
    data = body(jsonrpc="2.0", id=1, method="tools/list", params={"_meta": meta})
    assert one(codec, data).version == version


def test_meta_version_duplicates_and_escapes(codec: ModuleType) -> None:
    escaped_key = b"io.modelcontextprotocol\\/protocolVersion"
    meta = b'{"' + escaped_key + b'":"a","' + VERSION_KEY.encode() + b'":"b"}'
    data = b'{"jsonrpc":"2.0","method":"x","params":{"_meta":' + meta + b"}}"
    assert one(codec, data).version == "b"
    data = b'{"jsonrpc":"2.0","method":"x","params":{"_meta":' + meta + b',"_meta":[]}}'
    assert one(codec, data).version is None


def test_numbers_the_peek_never_converts(codec: ModuleType) -> None:
    params = (
        b'{"name":"t","_meta":{"big":1e400,"'
        + VERSION_KEY.encode()
        + b'":"v"},"uri":'
        + b"9" * 5000
        + b"}"
    )
    data = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":' + params + b"}"
    message = one(codec, data)
    assert (message.name, message.version, message.params) == ("t", "v", params)


def test_last_duplicate_member_wins(codec: ModuleType) -> None:
    data = b'{"id":1,"jsonrpc":"1.0","method":5,"id":"x","jsonrpc":"2.0","method":"m"}'
    assert fields(one(codec, data)) == (REQUEST, "x", "m", None, None, None, None, None)


@pytest.mark.parametrize(
    ("members", "id_", "reason"),
    [
        ({}, None, 'jsonrpc must be "2.0"'),
        ({"jsonrpc": "1.0", "id": 1, "method": "m"}, 1, 'jsonrpc must be "2.0"'),
        ({"jsonrpc": 2.0, "id": "a", "method": "m"}, "a", 'jsonrpc must be "2.0"'),
        ({"jsonrpc": "2.0", "id": 1, "method": 5}, 1, "method must be a string"),
        ({"jsonrpc": "2.0", "id": 1, "method": None}, 1, "method must be a string"),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "m"}, None, "id must be a string or an integer"),
        ({"jsonrpc": "2.0", "id": None, "method": "m"}, None, "id must be a string or an integer"),
        ({"jsonrpc": "2.0", "id": 1, "method": "m", "params": []}, 1, "params must be an object"),
        ({"jsonrpc": "2.0", "method": "m", "params": "x"}, None, "params must be an object"),
        (
            {"jsonrpc": "2.0", "id": 1, "result": 1, "error": {}},
            1,
            "response has both result and error",
        ),
        ({"jsonrpc": "2.0", "result": 1}, None, "id must be a string or an integer"),
        ({"jsonrpc": "2.0", "id": None, "result": 1}, None, "id must be a string or an integer"),
        ({"jsonrpc": "2.0", "id": [1], "error": {}}, None, "id must be a string or an integer"),
        ({"jsonrpc": "2.0", "id": 2, "error": "boom"}, 2, "error must be an object"),
        ({"jsonrpc": "2.0", "error": None}, None, "error must be an object"),
        ({"jsonrpc": "2.0", "id": 1}, 1, "not a request, notification or response"),
        (
            {"jsonrpc": "2.0", "id": "z", "params": {}},
            "z",
            "not a request, notification or response",
        ),
    ],
)
def test_invalid_messages(
    codec: ModuleType, members: dict[str, Any], id_: Any, reason: str
) -> None:
    assert fields(one(codec, body(**members))) == invalid(id_, reason)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b" \n\t",
        b"{",
        b"[",
        b'{"jsonrpc":"2.0"',
        b'{"jsonrpc":"2.0","method":"m"} x',
        b"[] []",
        b'{"a":1,}',
        b"[1,]",
        b'{"a" 1}',
        b"{1:2}",
        b'{"a":01}',
        b'{"a":1.}',
        b'{"a":.5}',
        b'{"a":+1}',
        b'{"a":NaN}',
        b'{"a":tru}',
        b'{"a":"\\x"}',
        b'{"a":"\\u12"}',
        b'{"a":"\\ud800"}',
        b'{"a":"\\udc00"}',
        b'{"a":"\\ud800\\u0041"}',
        b'{"a":"tab\there"}',
        b'{"a":"\x00"}',
        b'{"a":"unterminated}',
        b"\xef\xbb\xbf{}",
        b'{"a":"\xff"}',
        b'{"a":"\xed\xa0\x80"}',
        b'{"a":"\xc0\xaf"}',
        b'{"a":1}\x0c',
        b"tru",
        b"-",
        b"01",
        b'"abc',
        b'"\\ud800"',
        b'[{"id":1e400}, tru]',
    ],
)
def test_parse_errors(codec: ModuleType, data: bytes) -> None:
    assert refused(codec, data) == PARSE_ERROR


@pytest.mark.parametrize(
    "data",
    [
        b"5",
        b"-0",
        b"null",
        b"true",
        b'"text"',
        b"5 x",
        b"5x",
        b"truex",
        b'"a" "b"',
        b"1e400",
        b"1.5.3",
    ],
)
def test_top_level_scalars(codec: ModuleType, data: bytes) -> None:
    # msgspec refuses a scalar's type as soon as it has read it: what follows is not looked at.
    assert refused(codec, data) == invalid_request("not a JSON-RPC message")


@pytest.mark.parametrize(
    "data",
    [
        b'{"jsonrpc":"2.0","method":"m","id":1e400}',
        b'{"jsonrpc":"2.0","method":"m","id":-1.8e308}',
        b'{"jsonrpc":[1e999],"method":"m"}',
        b'{"jsonrpc":"2.0","method":{"a":1e400}}',
        b'{"id":1e400,"then":tru',
    ],
)
def test_numbers_msgspec_cannot_convert(codec: ModuleType, data: bytes) -> None:
    assert refused(codec, data) == invalid_request("not a JSON-RPC message")


def test_numbers_that_are_only_skipped(codec: ModuleType) -> None:
    data = b'{"jsonrpc":"2.0","id":1,"result":[1e400],"x":1e999,"method":"m","params":{"a":-1e400}}'
    message = one(codec, data)
    assert (message.kind, message.id, message.method) == (REQUEST, 1, "m")
    assert refused(codec, b'{"x":tru,"id":1e400}') == PARSE_ERROR


def test_largest_floats(codec: ModuleType) -> None:
    for text, readable in [(b"1.7976931348623157e308", True), (b"1.7976931348623159e308", False)]:
        data = b'{"jsonrpc":"2.0","method":"m","id":' + text + b"}"
        if readable:
            assert fields(one(codec, data)) == invalid(None, "id must be a string or an integer")
        else:
            assert refused(codec, data) == invalid_request("not a JSON-RPC message")


def test_empty_batch(codec: ModuleType) -> None:
    assert refused(codec, b"[]") == invalid_request("empty batch")
    assert refused(codec, b" [ \n ] ") == invalid_request("empty batch")


# ----------------------------------------------------------------------------------------- depth


def nested(depth: int, inner: bytes = b"1") -> bytes:
    return b"[" * depth + inner + b"]" * depth


def test_depth_limit(codec: ModuleType) -> None:
    assert codec.frame(nested(64))[0] is True
    assert refused(codec, nested(65)) == invalid_request("nesting too deep", maxDepth=64)
    assert refused(codec, nested(4), max_depth=3) == invalid_request("nesting too deep", maxDepth=3)
    assert codec.frame(nested(3), 3)[0] is True


def test_depth_counts_brackets_outside_strings_only(codec: ModuleType) -> None:
    inside = b'{"jsonrpc":"2.0","method":"' + b"[{" * 100 + b'\\"[[["}'
    assert one(codec, inside, max_depth=1).method == "[{" * 100 + '"[[['
    # The pre-scan runs before the parse: a deep but broken body is "too deep".
    assert refused(codec, b"[" * 70 + b"tru") == invalid_request("nesting too deep", maxDepth=64)
    # An unterminated string hides the brackets after it.
    assert refused(codec, b'["' + b"[" * 100) == PARSE_ERROR


def test_depth_with_closers_first(codec: ModuleType) -> None:
    assert refused(codec, b"]][", max_depth=-2) == invalid_request("nesting too deep", maxDepth=-2)
    assert refused(codec, b"]][", max_depth=-1) == PARSE_ERROR


def test_very_deep_body(codec: ModuleType) -> None:
    deep = nested(100_000)
    assert refused(codec, deep) == invalid_request("nesting too deep", maxDepth=64)
    assert refused(codec, b"{" * 100_000) == invalid_request("nesting too deep", maxDepth=64)


def test_max_depth_of_other_int_types(codec: ModuleType) -> None:
    assert refused(codec, nested(2), max_depth=True) == invalid_request(
        "nesting too deep", maxDepth=True
    )
    args = refused(codec, nested(2), max_depth=True)
    assert args[2]["maxDepth"] is True
    assert codec.frame(nested(3), 2**70)[0] is True
    assert refused(codec, nested(1), -(2**70)) == invalid_request(
        "nesting too deep", maxDepth=-(2**70)
    )


def test_deep_body_beyond_python_recursion(backends: tuple[ModuleType, ModuleType]) -> None:
    # The one known difference: with a max_depth beyond Python's recursion limit, msgspec (in
    # the twin) recurses and raises RecursionError; the Rust scanner does not recurse.
    rust, python = backends
    batch, messages = rust.frame(nested(100_000), 10**6)
    assert batch is True
    assert [fields(message) for message in messages] == [invalid(None, "message must be an object")]
    assert refused(rust, b"[" * 100_000, max_depth=10**6) == PARSE_ERROR
    with pytest.raises(RecursionError):
        python.frame(nested(100_000), 10**6)


# --------------------------------------------------------------------------------------- headers

ROUTING_FIELD = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
TOOL_ARGUMENTS = {
    "region": "eu-west-1",
    "limit": 25,
    "strict": True,
    "loose": False,
    "nothing": None,
    "ratio": 0.5,
    "big": 10**30,
    "nested": {"deep": {"value": "x"}},
    "list": [1],
    "unicode": "Hello, 世界",
}


def base_headers(**extra: str) -> dict[str, str]:
    headers = {
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "search",
    }
    headers.update(extra)
    return headers


def call_body(
    method: str = "tools/call",
    name: str | None = "search",
    version: str | None = "2026-07-28",
    arguments: Any = TOOL_ARGUMENTS,
) -> bytes:
    """A request whose params route to ``name`` (under the method's routing member, else
    ``name``), carry ``version`` in ``_meta`` and hold ``arguments``."""
    params: dict[str, Any] = {}
    if name is not None:
        params[ROUTING_FIELD.get(method, "name")] = name
    if version is not None:
        params["_meta"] = {VERSION_KEY: version}
    params["arguments"] = arguments
    return body(jsonrpc="2.0", id=1, method=method, params=params)


def raw_call_body(method: str, params: bytes | None) -> bytes:
    """A request with ``params`` as given (absent for None)."""
    data = b'{"jsonrpc":"2.0","id":1,"method":' + json.dumps(method).encode()
    if params is not None:
        data += b',"params":' + params
    return data + b"}"


def call(codec: ModuleType, **kw: Any) -> Any:
    """The framed request ``check`` checks headers against: built by `call_body` from ``method``,
    ``name``, ``version`` and ``arguments``, or from the raw ``params`` (None: no params)."""
    method = kw.get("method", "tools/call")
    if "params" in kw:
        message = one(codec, raw_call_body(method, kw["params"]))
    else:
        name, version = kw.get("name", "search"), kw.get("version", "2026-07-28")
        message = one(codec, call_body(method, name, version, kw.get("arguments", TOOL_ARGUMENTS)))
        routed = name if method in ROUTING_FIELD else None
        assert (message.method, message.name, message.version) == (method, routed, version)
    assert message.kind == REQUEST
    return message


def check(codec: ModuleType, headers: Mapping[str, Any], *param_headers: Any, **kw: Any) -> None:
    codec.check_headers(headers, call(codec, **kw), list(param_headers))


def header_refusal(
    codec: ModuleType, headers: Mapping[str, Any], *param_headers: Any, **kw: Any
) -> tuple[Any, ...]:
    with pytest.raises(CodecError) as caught:
        check(codec, headers, *param_headers, **kw)
    return caught.value.args


def mismatch(header: str, reason: str) -> tuple[Any, ...]:
    return (-32020, f"Header mismatch: {header} {reason}", {"header": header, "reason": reason})


def test_headers_that_mirror_the_body(codec: ModuleType) -> None:
    check(codec, base_headers())
    check(codec, base_headers(**{"mcp-method": " tools/call\t"}))
    check(codec, base_headers(), name=None)
    check(codec, base_headers(), version=None)
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"}
    check(codec, headers, method="tools/list", name=None)


def test_headers_of_a_notification(codec: ModuleType) -> None:
    data = body(
        jsonrpc="2.0", method="notifications/progress", params={"_meta": {VERSION_KEY: "v"}}
    )
    message = one(codec, data)
    assert message.kind == NOTIFICATION
    codec.check_headers(
        {"mcp-protocol-version": "v", "mcp-method": "notifications/progress"}, message, []
    )
    with pytest.raises(CodecError) as caught:
        codec.check_headers({"mcp-protocol-version": "v", "mcp-method": "x"}, message, [])
    assert caught.value.args == mismatch("Mcp-Method", "mismatch")


@pytest.mark.parametrize(
    ("header", "canonical"),
    [
        ("mcp-protocol-version", "MCP-Protocol-Version"),
        ("mcp-method", "Mcp-Method"),
        ("mcp-name", "Mcp-Name"),
    ],
)
def test_required_headers(codec: ModuleType, header: str, canonical: str) -> None:
    headers = base_headers()
    del headers[header]
    assert header_refusal(codec, headers) == mismatch(canonical, "missing")
    headers[header] = "other"
    assert header_refusal(codec, headers) == mismatch(canonical, "mismatch")
    for bad in [
        "caf\u00e9",
        "a\nb",
        "\x7f",
        "=?base64?not base64?=",
        "=?base64?/w==?=",
        "=?base64?QQ?=",
    ]:
        headers[header] = bad
        assert header_refusal(codec, headers) == mismatch(canonical, "invalid")
    headers[header] = None  # type: ignore[assignment]
    assert header_refusal(codec, headers) == mismatch(canonical, "missing")


def test_required_header_order(codec: ModuleType) -> None:
    assert header_refusal(codec, {}) == mismatch("MCP-Protocol-Version", "missing")
    assert header_refusal(codec, {"mcp-protocol-version": "x"}, version=None) == mismatch(
        "Mcp-Method", "missing"
    )


def test_name_only_for_routed_methods(codec: ModuleType) -> None:
    headers = {"mcp-protocol-version": "v", "mcp-method": "resources/read"}
    assert header_refusal(codec, headers, method="resources/read", version="v") == mismatch(
        "Mcp-Name", "missing"
    )
    headers["mcp-name"] = "=?base64?ZmlsZTovLy/DqQ==?="
    check(codec, headers, method="resources/read", name="file:///é", version="v")
    check(
        codec,
        {"mcp-protocol-version": "v", "mcp-method": "ping"},
        method="ping",
        name="x",
        version="v",
    )


def test_name_comes_from_the_routing_member(codec: ModuleType) -> None:
    headers = {"mcp-protocol-version": "v", "mcp-method": "tasks/get", "mcp-name": "t-1"}
    data = body(jsonrpc="2.0", id=1, method="tasks/get", params={"name": "x", "taskId": "t-1"})
    codec.check_headers(headers, one(codec, data), [])
    data = body(jsonrpc="2.0", id=1, method="tasks/get", params={"name": "t-1", "taskId": "x"})
    with pytest.raises(CodecError) as caught:
        codec.check_headers(headers, one(codec, data), [])
    assert caught.value.args == mismatch("Mcp-Name", "mismatch")


def test_version_comes_from_meta(codec: ModuleType) -> None:
    headers = base_headers(**{"mcp-protocol-version": "v"})
    check(codec, headers, version="v")
    assert header_refusal(codec, headers) == mismatch("MCP-Protocol-Version", "mismatch")
    # A version that is not a string in `_meta` is no version: any header text will do.
    params = b'{"name":"search","_meta":{"' + VERSION_KEY.encode() + b'":2026}}'
    check(codec, headers, params=params)


def test_base64_wrapped_values(codec: ModuleType) -> None:
    headers = base_headers(**{"mcp-name": "=?base64?c2VhcmNo?="})
    check(codec, headers)
    headers["mcp-name"] = "=?base64?IHNlYXJjaCA=?="
    assert header_refusal(codec, headers) == mismatch("Mcp-Name", "mismatch")
    check(codec, headers, name=" search ")
    # Too short to be wrapped: read literally.
    check(codec, base_headers(**{"mcp-name": "=?base64?="}), name="=?base64?=")
    check(codec, base_headers(**{"mcp-name": "=?base64??="}), name="")


def test_headers_from_any_mapping(codec: ModuleType) -> None:
    class Headers(Mapping[str, str]):
        def __init__(self, data: dict[str, str]) -> None:
            self.data = data

        def __getitem__(self, key: str) -> str:
            return self.data[key]

        def __iter__(self) -> Iterator[str]:
            return iter(self.data)

        def __len__(self) -> int:
            return len(self.data)

    check(codec, Headers(base_headers()))
    assert header_refusal(codec, Headers({})) == mismatch("MCP-Protocol-Version", "missing")


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (["region"], "eu-west-1"),
        (["region"], "  eu-west-1 "),
        (["limit"], "25"),
        (["limit"], "0025"),
        (["strict"], "true"),
        (["loose"], "false"),
        (["big"], "1" + "0" * 30),
        (["nested", "deep", "value"], "x"),
        (["unicode"], "=?base64?SGVsbG8sIOS4lueVjA==?="),
    ],
)
def test_param_headers_that_mirror(codec: ModuleType, path: list[str], text: str) -> None:
    check(codec, base_headers(**{"mcp-param-value": text}), ("Value", path))


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (["region"], "eu-west-2"),
        (["limit"], "25.0"),
        (["limit"], "+25"),
        (["limit"], "-25"),
        (["strict"], "True"),
        (["strict"], "1"),
        (["ratio"], "0.5"),
        (["list"], "[1]"),
        (["nested"], "{}"),
        ([], "x"),
        (["nothing"], "null"),
        (["absent"], "x"),
        (["region", "deeper"], "x"),
        (["unicode"], "Hello"),
    ],
)
def test_param_headers_that_do_not_mirror(codec: ModuleType, path: list[str], text: str) -> None:
    headers = base_headers(**{"mcp-param-value": text})
    assert header_refusal(codec, headers, ("Value", path)) == mismatch(
        "Mcp-Param-Value", "mismatch"
    )


def test_param_header_missing_and_invalid(codec: ModuleType) -> None:
    assert header_refusal(codec, base_headers(), ("Region", ["region"])) == mismatch(
        "Mcp-Param-Region", "missing"
    )
    headers = base_headers(**{"mcp-param-region": "\x01"})
    assert header_refusal(codec, headers, ("Region", ["region"])) == mismatch(
        "Mcp-Param-Region", "invalid"
    )
    # An absent argument (or null) needs no header.
    check(codec, base_headers(), ("Nothing", ["nothing"]), ("Absent", ["absent"]))
    headers = base_headers(**{"mcp-param-x": "a"})
    assert header_refusal(codec, headers, ("X", ["region"]), params=None) == mismatch(
        "Mcp-Param-X", "mismatch"
    )


def test_param_headers_in_order(codec: ModuleType) -> None:
    headers = base_headers(**{"mcp-param-region": "eu-west-1", "mcp-param-limit": "26"})
    refusal = header_refusal(
        codec, headers, ("Region", ["region"]), ("Limit", ["limit"]), ("Strict", ["strict"])
    )
    assert refusal == mismatch("Mcp-Param-Limit", "mismatch")


def test_param_header_names_are_looked_up_in_lower_case(codec: ModuleType) -> None:
    headers = base_headers(**{"mcp-param-region": "eu-west-1"})
    check(codec, headers, ("REGION", ["region"]), ("Region", ("region",)))
    headers = base_headers(**{"mcp-param-straße": "eu-west-1"})
    check(codec, headers, ("STRAßE", ["region"]))


def test_param_headers_read_arguments_as_raw_json(codec: ModuleType) -> None:
    params = (
        b'{"name":"search","arguments":{"a":1},"other":1e400,"arguments":{"a":"'
        + b"\\u00e9"
        + b'","n":'
        + b"7" * 5000
        + b"}}"
    )
    headers = base_headers(**{"mcp-param-a": "=?base64?w6k=?=", "mcp-param-n": "0" + "7" * 5000})
    check(codec, headers, ("A", ["a"]), ("N", ["n"]), params=params)


def test_param_headers_without_arguments(codec: ModuleType) -> None:
    for params in [
        None,
        b"{}",
        b'{"name":"search"}',
        b'{"arguments":5}',
        b'{"arguments":[1]}',
        b'{"arguments":null}',
    ]:
        check(codec, base_headers(), ("X", ["x"]), params=params)


def test_param_headers_of_each_message_of_a_batch(codec: ModuleType) -> None:
    items = [
        json.loads(call_body(arguments={"region": region, "pad": "x" * size}))
        for region, size in (("eu-west-1", 0), ("us-east-2", 300))
    ]
    batch, messages = codec.frame(json.dumps(items).encode())
    assert batch is True
    for message, region in zip(messages, ("eu-west-1", "us-east-2"), strict=True):
        headers = base_headers(**{"mcp-param-region": region})
        codec.check_headers(headers, message, [("Region", ["region"])])
        with pytest.raises(CodecError) as caught:
            codec.check_headers(headers, message, [("Region", ["pad"])])
        assert caught.value.args == mismatch("Mcp-Param-Region", "mismatch")


def test_header_values_must_be_str(codec: ModuleType) -> None:
    with pytest.raises(TypeError):
        check(codec, base_headers(**{"mcp-name": 5}))  # type: ignore[arg-type]


# ------------------------------------------------------------------------ encode_header_value


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (True, "true"),
        (False, "false"),
        (0, "0"),
        (-12, "-12"),
        (10**40, str(10**40)),
        ("plain text", "plain text"),
        ("", ""),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ("tab\there", "=?base64?dGFiCWhlcmU=?="),
        ("=?base64?=", "=?base64?PT9iYXNlNjQ/PQ==?="),
    ],
)
def test_encode_header_value(codec: ModuleType, value: str | int | bool, text: str) -> None:
    assert codec.encode_header_value(value) == text


def test_encoded_values_check(codec: ModuleType) -> None:
    arguments = {"s": "Hello, 世界", "p": " padded ", "b": "=?base64?x?=", "i": -5, "t": True}
    headers = {
        f"mcp-param-{key}": codec.encode_header_value(value) for key, value in arguments.items()
    }
    headers.update({"mcp-protocol-version": "v", "mcp-method": "m"})
    message = one(codec, call_body("m", None, "v", arguments))
    codec.check_headers(headers, message, [(key, [key]) for key in arguments])


class Color(enum.IntEnum):
    RED = 1


class Text(str):
    pass


@pytest.mark.parametrize("value", [1.5, None, b"bytes", Color.RED, Text("x"), ["x"]])
def test_encode_header_value_refuses_other_types(codec: ModuleType, value: Any) -> None:
    with pytest.raises(TypeError, match=exactly("header values must be str, int or bool")):
        codec.encode_header_value(value)


def test_encode_header_value_errors_from_python(codec: ModuleType) -> None:
    with pytest.raises(UnicodeEncodeError):
        codec.encode_header_value("\ud800")
    with pytest.raises(ValueError, match="Exceeds the limit"):
        codec.encode_header_value(10**5000)


# ---------------------------------------------------------------------------------------- tokens

KEY = b"0123456789abcdef0123456789abcdef"
NOW = 1_780_000_000


def rejection(
    codec: ModuleType, token: str, keys: Mapping[str, bytes], now: int = NOW, max_age: int = 3600
) -> str:
    with pytest.raises(TokenError) as caught:
        codec.verify_token(token, keys, now, max_age)
    assert caught.value.args == (caught.value.reason,)
    return caught.value.reason


def test_token_round_trip(codec: ModuleType) -> None:
    token = codec.mint_token("k1", KEY, b'{"session":"s-1"}', NOW)
    assert token.startswith(f"v1.k1.{NOW}.")
    head, mac = token.rsplit(".", 1)
    assert len(mac) == 43
    assert base64.urlsafe_b64decode(head.split(".")[3] + "==") == b'{"session":"s-1"}'
    assert codec.verify_token(token, {"k1": KEY}, NOW, 10) == (b'{"session":"s-1"}', NOW)
    assert codec.verify_token(codec.mint_token("k", b"", b"", 0), {"k": b""}, 0, 0) == (b"", 0)


def test_token_is_deterministic_and_matches_the_twin_format(codec: ModuleType) -> None:
    # HMAC-SHA256("key", "v1.k.5.eA"), computed with Python's hmac module.
    assert (
        codec.mint_token("k", b"key", b"x", 5)
        == "v1.k.5.eA.X6W8Ixa99OFktXytNx2lQ_y1Ns7JL-NIzsCxLptwsnE"
    )


def test_token_tampering(codec: ModuleType) -> None:
    keys = {"k1": KEY}
    token = codec.mint_token("k1", KEY, b"payload", NOW)
    version, kid, iat, payload, mac = token.split(".")
    assert (
        rejection(codec, f"{version}.{kid}.{int(iat) + 1}.{payload}.{mac}", keys) == "bad_signature"
    )
    assert rejection(codec, f"{version}.{kid}.{iat}.{payload[:-1]}Q.{mac}", keys) == "bad_signature"
    flipped = mac[:10] + ("A" if mac[10] != "A" else "B") + mac[11:]
    assert rejection(codec, f"{version}.{kid}.{iat}.{payload}.{flipped}", keys) == "bad_signature"
    assert rejection(codec, token, {"k1": b"another key"}) == "bad_signature"


def test_token_truncation(codec: ModuleType) -> None:
    token = codec.mint_token("k1", KEY, b"some payload", NOW)
    for cut in range(len(token)):
        assert rejection(codec, token[:cut], {"k1": KEY}) in ("malformed", "bad_signature")


def test_token_age(codec: ModuleType) -> None:
    keys = {"k1": KEY}
    token = codec.mint_token("k1", KEY, b"p", NOW)
    assert codec.verify_token(token, keys, NOW + 60, 60) == (b"p", NOW)
    assert rejection(codec, token, keys, now=NOW + 61, max_age=60) == "expired"
    assert codec.verify_token(token, keys, NOW - 300, 60) == (b"p", NOW)
    assert rejection(codec, token, keys, now=NOW - 301) == "future"
    assert codec.verify_token(token, keys, NOW + 10**30, 10**31)[1] == NOW
    assert codec.verify_token(token, keys, 2**127, 2**127 - NOW) == (b"p", NOW)
    assert rejection(codec, token, keys, now=2**127, max_age=2**127 - NOW - 1) == "expired"
    assert rejection(codec, token, keys, now=-(2**200), max_age=2**300) == "future"
    assert rejection(codec, token, keys, now=NOW, max_age=-(2**200)) == "expired"
    assert codec.verify_token(codec.mint_token("k1", KEY, b"p", 1), keys, True, 0) == (b"p", 1)


def test_token_keys(codec: ModuleType) -> None:
    old = codec.mint_token("2025", b"old key", b"p", NOW)
    new = codec.mint_token("2026", b"new key", b"p", NOW)
    both = {"2025": b"old key", "2026": b"new key"}
    assert codec.verify_token(old, both, NOW, 60) == (b"p", NOW)
    assert codec.verify_token(new, both, NOW, 60) == (b"p", NOW)
    assert rejection(codec, old, {"2026": b"new key"}) == "unknown_key"
    assert rejection(codec, old, {"2025": None}) == "unknown_key"  # type: ignore[dict-item]
    assert codec.verify_token(new, {"2026": bytearray(b"new key")}, NOW, 60) == (b"p", NOW)
    assert codec.verify_token(new, MappingProxyType(both), NOW, 60) == (b"p", NOW)
    with pytest.raises(TypeError):
        codec.verify_token(new, {"2026": "new key"}, NOW, 60)


@pytest.mark.parametrize(
    "token",
    [
        "",
        "v1",
        "v1.k1.1.x",
        "v1.k1.1.x.y.z",
        "v2.k1.1.eA.DVtWzJyIHqbQcJOWTtsZSXpyeC91BIsLuhhlRdw2Vmk",
        "v1..1.eA.DVtWzJyIHqbQcJOWTtsZSXpyeC91BIsLuhhlRdw2Vmk",
        "v1.k1..eA.DVtWzJyIHqbQcJOWTtsZSXpyeC91BIsLuhhlRdw2Vmk",
        "v1.k1.1234567890123456.eA.DVtWzJyIHqbQcJOWTtsZSXpyeC91BIsLuhhlRdw2Vmk",
        "v1.k1.-1.eA.DVtWzJyIHqbQcJOWTtsZSXpyeC91BIsLuhhlRdw2Vmk",
        "v1.k1.1.e=.DVtWzJyIHqbQcJOWTtsZSXpyeC91BIsLuhhlRdw2Vmk",
        "v1.k1.1.eA.DVtWzJyIHqbQcJOWTtsZSXpyeC91BIsLuhhlRdw2Vml",
        "v1.k1.1.eA.DVtWzJyIHqbQcJOWTtsZSXpyeC91BIsLuhhlRdw2Vm",
        "v1.k1.1.eA.DVtWzJyIHqbQcJOWTtsZSXpyeC91BIsLuhhlRdw2VmkAA",
        "v1.k1.1.é.DVtWzJyIHqbQcJOWTtsZSXpyeC91BIsLuhhlRdw2Vmk",
        "v1.k1.1.\ud800.DVtWzJyIHqbQcJOWTtsZSXpyeC91BIsLuhhlRdw2Vmk",
        "v1." + "k" * 33 + ".1.eA.DVtWzJyIHqbQcJOWTtsZSXpyeC91BIsLuhhlRdw2Vmk",
        "v1.k1.1." + "A" * 70000 + ".DVtWzJyIHqbQcJOWTtsZSXpyeC91BIsLuhhlRdw2Vmk",
    ],
)
def test_malformed_tokens(codec: ModuleType, token: str) -> None:
    assert rejection(codec, token, {"k1": KEY}) == "malformed"


def test_non_canonical_payload_is_checked_after_the_signature(codec: ModuleType) -> None:
    import hashlib
    import hmac

    signed = "v1.k1.5.eB"
    mac = base64.urlsafe_b64encode(hmac.new(KEY, signed.encode(), hashlib.sha256).digest()).rstrip(
        b"="
    )
    assert rejection(codec, f"{signed}.{mac.decode()}", {"k1": KEY}, now=5) == "malformed"


def test_long_tokens(codec: ModuleType) -> None:
    payload = b"x" * 49_000  # encodes to 65,334 characters of token
    token = codec.mint_token("k1", KEY, payload, NOW)
    assert len(token) <= 65536
    assert codec.verify_token(token, {"k1": KEY}, NOW, 1) == (payload, NOW)
    too_long = codec.mint_token("k1", KEY, b"x" * 49_200, NOW)
    assert len(too_long) > 65536
    assert rejection(codec, too_long, {"k1": KEY}) == "malformed"


@pytest.mark.parametrize(
    ("key_id", "issued_at", "message"),
    [
        ("", 0, "key id must be 1-32 characters of [A-Za-z0-9_-]"),
        ("k" * 33, 0, "key id must be 1-32 characters of [A-Za-z0-9_-]"),
        ("k.1", 0, "key id must be 1-32 characters of [A-Za-z0-9_-]"),
        ("ké", 0, "key id must be 1-32 characters of [A-Za-z0-9_-]"),
        ("k1\n", 0, "key id must be 1-32 characters of [A-Za-z0-9_-]"),
        ("k1", -1, "issued_at out of range"),
        ("k1", 10**15, "issued_at out of range"),
        ("k1", 10**40, "issued_at out of range"),
        ("k1", -(10**40), "issued_at out of range"),
    ],
)
def test_mint_errors(codec: ModuleType, key_id: str, issued_at: int, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        codec.mint_token(key_id, KEY, b"p", issued_at)
    assert caught.value.args == (message,)


def test_mint_edges(codec: ModuleType) -> None:
    assert codec.mint_token("a" * 32, KEY, b"", 10**15 - 1).startswith(
        "v1." + "a" * 32 + ".999999999999999."
    )
    assert codec.mint_token("k", bytearray(b"key"), bytearray(b"x"), 5) == codec.mint_token(
        "k", b"key", b"x", 5
    )
    # bool is an int: formatted as the twin formats it.
    assert codec.mint_token("k", b"key", b"x", True).startswith("v1.k.True.")
    assert codec.mint_token("k", b"key", b"x", False).startswith("v1.k.False.")
    with pytest.raises(
        ValueError, match=exactly("key id must be 1-32 characters of [A-Za-z0-9_-]")
    ):
        codec.mint_token("k\ud800", KEY, b"p", 0)
    with pytest.raises(TypeError):
        codec.mint_token("k", "key", b"x", 5)
    with pytest.raises(TypeError):
        codec.mint_token("k", b"key", "x", 5)


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("mint_token", (b"k", KEY, b"p", 1)),
        ("mint_token", ("k", memoryview(KEY), b"p", 1)),
        ("mint_token", ("k", KEY, memoryview(b"p"), 1)),
        ("mint_token", ("k", KEY, b"p", 1.0)),
        ("verify_token", (b"v1.k.1.eA.x", {}, NOW, 1)),
        ("verify_token", ("v1.k.1.eA.x", [], NOW, 1)),
        ("verify_token", ("v1.k.1.eA.x", {}, float(NOW), 1)),
        ("verify_token", ("v1.k.1.eA.x", {}, NOW, 60.0)),
    ],
)
def test_token_arguments_of_other_types(
    backends: tuple[ModuleType, ModuleType], name: str, args: tuple[Any, ...]
) -> None:
    # Parity stops at the stub's types: Rust refuses others (the twin does what its code does).
    rust, _ = backends
    with pytest.raises(TypeError):
        getattr(rust, name)(*args)
