"""The codec's Python-facing types, alike in both backends (`Kind`, the parsed `Head`), and the
twin's layout: one module per Rust file."""

from __future__ import annotations

import enum
from pathlib import Path
from types import ModuleType

import pytest

import mcpfast._codec_py

from .helpers import REPO

HEAD = b"POST /mcp?x=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nX-A: 1\r\nx-a: 2"
HEAD_MEMBERS = ("method", "target", "minor", "headers", "content_length", "chunked")


def test_kinds_are_an_int_enum(codec: ModuleType) -> None:
    assert issubclass(codec.Kind, enum.IntEnum)
    assert [(kind.name, kind.value) for kind in codec.Kind] == [
        ("REQUEST", 0),
        ("NOTIFICATION", 1),
        ("RESULT", 2),
        ("ERROR", 3),
        ("INVALID", 4),
    ]
    assert codec.KIND_REQUEST is codec.Kind.REQUEST
    assert codec.KIND_INVALID is codec.Kind.INVALID


def test_a_message_kind_is_the_int_value(codec: ModuleType) -> None:
    _, (message,) = codec.frame(b'{"jsonrpc":"2.0","method":"ping"}')
    assert type(message.kind) is int
    assert message.kind == codec.KIND_NOTIFICATION


def test_head_members(codec: ModuleType) -> None:
    head = codec.parse_head(HEAD)
    assert isinstance(head, codec.Head)
    assert (head.method, head.target, head.minor, head.content_length, head.chunked) == (
        "POST",
        "/mcp?x=1",
        1,
        5,
        False,
    )
    assert head.headers == {"host": "h", "content-length": "5", "x-a": "2"}
    chunked = codec.parse_head(b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked")
    assert (chunked.minor, chunked.content_length, chunked.chunked) == (0, None, True)


def test_heads_are_frozen_and_compare_by_identity(codec: ModuleType) -> None:
    head = codec.parse_head(HEAD)
    for member in HEAD_MEMBERS:
        with pytest.raises(AttributeError):
            setattr(head, member, None)
    assert head == head
    assert head != codec.parse_head(HEAD)


def test_head_repr(codec: ModuleType) -> None:
    assert repr(codec.parse_head(b"GET / HTTP/1.1\r\nHost: caf\xe9")) == (
        "Head(method='GET', target='/', minor=1, headers={'host': 'café'}, "
        "content_length=None, chunked=False, keep_alive=True, expect_continue=False)"
    )


ELSEWHERE = {"loadgen": "load/engine_trio.py"}
"""Rust files whose twin is not a codec module: the fast load engine's is a Trio one."""


def test_the_twin_mirrors_the_rust_files() -> None:
    glue = {"lib", "args", "errors"}  # registration, argument reading, mcpfast.errors' classes
    rust = {path.stem for path in (REPO / "rust").glob("*.rs")} - glue
    twin = {path.stem for path in Path(mcpfast._codec_py.__file__).parent.glob("*.py")}
    assert twin - {"__init__"} == rust - set(ELSEWHERE)
    package = Path(mcpfast.__file__).parent
    assert all((package / path).is_file() for path in ELSEWHERE.values())
