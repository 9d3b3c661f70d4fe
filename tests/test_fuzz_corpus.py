"""The cargo-fuzz corpora (``fuzz/corpus/<target>/``) replayed through both codec backends, and
the HTTP head and chunk-size parsers against h11's verdicts.

Each corpus file is one input of its fuzz target, read as that target reads it; the Rust backend
and its twin must give the same verdict and the same error for it. After ``make fuzz``, the
inputs a run added (``fuzz/corpus-run/<target>/``, not committed) are replayed as well.

h11 (the Hypercorn engine's parser) and the native engine's parser agree on accepting or
refusing every head, except where the native engine is deliberately stricter: `STRICTER` names
each such rule, and a disagreement no rule explains fails.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import h11
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mcpfast.errors import HttpError
from mcpfast.protocol.http11 import chunk_size

from .conftest import load_backend
from .test_codec_parity import FAST, HEAD_PIECES, agree, check_alike, head_outcome

FUZZ = Path(__file__).resolve().parent.parent / "fuzz"
TOKEN_KEYS = {"k1": b"fuzz-key-0123456789", "k2": b""}  # as fuzz_targets/verify_token.rs
TOKEN_NOW, TOKEN_MAX_AGE = 1_700_000_000, 600


@pytest.fixture(scope="module")
def pair() -> tuple[ModuleType, ModuleType]:
    return load_backend("rust"), load_backend("python")


def corpus(target: str) -> list[bytes]:
    """The inputs of one fuzz target: the committed seeds, then what a local run added."""
    files = sorted((FUZZ / "corpus" / target).iterdir())
    run = FUZZ / "corpus-run" / target
    if run.is_dir():
        files += sorted(run.iterdir())
    return [path.read_bytes() for path in files if path.is_file()]


def test_every_target_has_seeds() -> None:
    for target in ("frame", "check_headers", "verify_token", "parse_head"):
        assert corpus(target), target


# ------------------------------------------------------------------------------ codec replays


def test_frame_corpus(pair: tuple[ModuleType, ModuleType]) -> None:
    for data in corpus("frame"):
        agree(pair, "frame", data)
        agree(pair, "frame", data, 3)


def header_case(data: bytes) -> tuple[bytes, dict[str, str], list[tuple[str, list[str]]]]:
    """A `check_headers` fuzz input as fuzz_targets/check_headers.rs reads it: NUL-separated
    parts, the body, then pairs of a header key and value, or ``@Name`` and a ``/``-separated
    path. Bytes that are not UTF-8 become lone surrogates (a str with no UTF-8 form)."""

    def text(raw: bytes) -> str:
        return raw.decode("utf-8", "surrogateescape")

    body, *rest = data.split(b"\0")
    headers: dict[str, str] = {}
    params: list[tuple[str, list[str]]] = []
    for key, value in zip(rest[::2], rest[1::2], strict=False):
        if key.startswith(b"@"):
            params.append(
                (text(key[1:]), [text(part) for part in value.split(b"/")] if value else [])
            )
        else:
            headers.pop(text(key), None)
            headers[text(key)] = text(value)
    return body, headers, params


def test_header_case_reading() -> None:
    data = b'{"x":1}\0mcp-method\0a\0@N\0a/b\0mcp-method\0\xff\0@M\0\0dangling'
    assert header_case(data) == (
        b'{"x":1}',
        {"mcp-method": "\udcff"},
        [("N", ["a", "b"]), ("M", [])],
    )


def test_check_headers_corpus(pair: tuple[ModuleType, ModuleType]) -> None:
    for data in corpus("check_headers"):
        check_alike(pair, *header_case(data))


def test_verify_token_corpus(pair: tuple[ModuleType, ModuleType]) -> None:
    for data in corpus("verify_token"):
        for token in {data.decode("utf-8", "replace"), data.decode("latin-1")}:
            agree(pair, "verify_token", token, TOKEN_KEYS, TOKEN_NOW, TOKEN_MAX_AGE)


def test_parse_head_corpus(pair: tuple[ModuleType, ModuleType]) -> None:
    rust, python = pair
    for data in corpus("parse_head"):
        assert head_outcome(rust, data) == head_outcome(python, data), data


# -------------------------------------------------------------------------- heads against h11


def h11_accepts(head: bytes) -> bool:
    """Whether h11, as the Hypercorn engine's server side, reads ``head`` as a request."""
    connection = h11.Connection(h11.SERVER)
    connection.receive_data(head + b"\r\n\r\n")
    try:
        return isinstance(connection.next_event(), h11.Request)
    except h11.RemoteProtocolError:
        return False


def native_accepts(codec: ModuleType, head: bytes) -> bool:
    try:
        codec.parse_head(head)
    except HttpError:
        return False
    return True


def _lines(head: bytes) -> list[bytes]:
    return head.split(b"\r\n")


def _content_length(head: bytes) -> list[bytes]:
    fields = (line.partition(b":") for line in _lines(head)[1:])
    return [value.strip(b" \t") for name, _, value in fields if name.lower() == b"content-length"]


def _has_field(head: bytes, name: bytes) -> bool:
    return any(line.partition(b":")[0].lower() == name for line in _lines(head)[1:])


# The rules on which the native engine refuses what h11 accepts, each a predicate on the head
# (see docs/reference/limits.md and HARDENING.md). h11 is lenient where RFC 9112 lets a
# server be: the native engine refuses anything that could frame a request two ways.
STRICTER: dict[str, Callable[[bytes], bool]] = {
    # RFC 9112 §2.2: a bare CR or LF may be read as a line end; the native engine refuses it.
    "bare CR or LF": lambda head: re.search(rb"\r(?!\n)|(?<!\r)\n", head) is not None,
    # §5.2: obs-fold may be unfolded; the native engine refuses it (a line not `name:`).
    "obsolete line folding": lambda head: any(
        line[:1] in (b" ", b"\t") for line in _lines(head)[1:]
    ),
    # Only HTTP/1.x (another major is 505; a higher 1.x is served as 1.1); h11 reads any
    # `HTTP/d.d`.
    "HTTP major version other than 1": lambda head: (
        re.match(rb"[^ ]* [^ ]* HTTP/(?!1\.[0-9](?:\r\n|$))", head) is not None
    ),
    # §6.1: Transfer-Encoding overrides Content-Length, and a server may refuse both (smuggling).
    "both Content-Length and Transfer-Encoding": lambda head: (
        _has_field(head, b"content-length") and _has_field(head, b"transfer-encoding")
    ),
    # A Content-Length beyond 18 digits (no body is that large; it could not be counted).
    "Content-Length over 18 digits": lambda head: any(
        len(value) > 18 for text in _content_length(head) for value in text.split(b",")
    ),
}


def stricter_rules(head: bytes) -> list[str]:
    return [name for name, applies in STRICTER.items() if applies(head)]


def assert_agrees_with_h11(codec: ModuleType, head: bytes) -> None:
    native, theirs = native_accepts(codec, head), h11_accepts(head)
    if native != theirs:
        assert not native and stricter_rules(head), (head, native, theirs)


def test_parse_head_corpus_against_h11(pair: tuple[ModuleType, ModuleType]) -> None:
    for data in corpus("parse_head"):
        for codec in pair:
            assert_agrees_with_h11(codec, data)


@settings(FAST, max_examples=2000)
@given(st.lists(HEAD_PIECES, max_size=24).map(b"".join) | st.binary(max_size=120))
@example(b"GET / HTTP/1.1\r\nHost: h\r\n Folded: x")
@example(b"GET / HTTP/1.1\nHost: h")
@example(b"GET / HTTP/2.0\r\nHost: h")
@example(b"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked")
@example(b"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 12345678901234567890")
@example(b"POST /\xff/h\x07mcp HTTP/1.1\r\nHost: h")  # found: targets must be visible ASCII
@example(b"GET / HTTP/1.1\r\nHost: h\r\nX: a\x0bb")  # found: no VT or FF in a value
def test_parse_head_against_h11(pair: tuple[ModuleType, ModuleType], head: bytes) -> None:
    for codec in pair:
        assert_agrees_with_h11(codec, head)


@pytest.mark.parametrize(
    ("head", "rule"),
    [
        (b"GET / HTTP/1.1\r\nHost: h\r\n Folded: x", "obsolete line folding"),
        (b"GET / HTTP/1.1\nHost: h", "bare CR or LF"),
        (b"GET / HTTP/2.0\r\nHost: h", "HTTP major version other than 1"),
        (
            b"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked",
            "both Content-Length and Transfer-Encoding",
        ),
        (
            b"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 1234567890123456789",
            "Content-Length over 18 digits",
        ),
    ],
)
def test_each_stricter_rule_is_a_real_difference(codec: ModuleType, head: bytes, rule: str) -> None:
    assert h11_accepts(head)
    assert not native_accepts(codec, head)
    assert rule in stricter_rules(head)


# ------------------------------------------------------------------------ chunk sizes (Python)


def h11_chunk_accepts(line: bytes) -> bool:
    """Whether h11 reads ``line`` (without its CRLF) as the size line of a chunked body."""
    connection = h11.Connection(h11.SERVER)
    connection.receive_data(
        b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n" + line + b"\r\n"
    )
    assert isinstance(connection.next_event(), h11.Request)
    try:
        connection.next_event()
    except h11.RemoteProtocolError:
        return False
    return True


def our_chunk(line: bytes) -> int | None:
    try:
        return chunk_size(line)
    except HttpError as error:
        assert (error.status, error.reason) == (400, "malformed chunk size")
        return None


CHUNK_PIECES = st.sampled_from(
    [
        b"0",
        b"5",
        b"a",
        b"F",
        b"ff",
        b"g",
        b"0" * 15,
        b"f" * 16,
        b" ",
        b"\t",
        b";",
        b"x=y",
        b"=",
        b'"q"',
        b"\r",
        b"\n",
        b"\x00",
        b"\xff",
        b"-",
        b"+",
        b"0x",
    ]
)


@settings(FAST, max_examples=2000)
@given(st.lists(CHUNK_PIECES, max_size=8).map(b"".join) | st.binary(max_size=24))
@example(b"1234567890abcdef")
@example(b"5 ;ext")
@example(b"5;ext ")
def test_chunk_size_against_h11(line: bytes) -> None:
    # chunk_size is Python only (both codecs share it). It reads `HEXDIG{1,15} [ \t]* (; ...)?`;
    # h11 reads `HEXDIG{1,20} (; ...)? [ \t]*`. Where they differ, ours is the stricter by
    # length (16 to 20 digits) and the more lenient by one rule: RFC 9112's chunk-ext allows
    # whitespace (BWS) before `;`, which h11 refuses.
    line = line.split(b"\r\n")[0]  # a size line ends at its CRLF
    ours, theirs = our_chunk(line), h11_chunk_accepts(line)
    digits = re.match(rb"[0-9A-Fa-f]*", line)
    assert digits is not None
    if ours is not None:
        assert ours == int(digits.group(), 16)
    if (ours is not None) != theirs:
        rest = line[digits.end() :]
        if ours is None:
            assert 16 <= digits.end() <= 20, line
        else:
            assert re.fullmatch(rb"[ \t]+;[^\n]*", rest), line
