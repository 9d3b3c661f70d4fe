"""A malicious server cannot make the client's SSE parser quadratic: the work it does (counted
by ``Parser.scanned``, not timed) is linear in what it is fed, however the bytes are cut; and
through the real stack, a server streaming blank lines gets a bounded answer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio

import mcpfast
from mcpfast.auth._asgi import lifespan
from mcpfast.errors import TransportError
from mcpfast.protocol import sse

from ..helpers import serving

MiB = 1 << 20


def fed(stream: bytes, chunk: int) -> sse.Parser:
    parser = sse.Parser()
    for start in range(0, len(stream), chunk):
        parser.feed(stream[start : start + chunk])
    return parser


@pytest.mark.parametrize("line", [b"\n", b"\r\n", b"\r", b": keep-alive\n"])
@pytest.mark.parametrize("chunk", [4 * MiB, 64 * 1024, 4096, 7])
def test_blank_and_comment_lines_cost_linear_work(line: bytes, chunk: int) -> None:
    stream = line * (4 * MiB // len(line))
    parser = fed(stream, chunk)
    assert parser.scanned <= 3 * len(stream)


@pytest.mark.parametrize("chunk", [64 * 1024, 1000, 1])
def test_an_unended_line_is_not_searched_again(chunk: int) -> None:
    stream = b"data: " + b"x" * (MiB if chunk > 1 else 64 * 1024)
    parser = fed(stream, chunk)
    assert parser.scanned <= 3 * len(stream)


def test_work_grows_with_the_input_not_its_square() -> None:
    small = fed(b"\n" * MiB, 64 * 1024).scanned
    large = fed(b"\n" * (4 * MiB), 64 * 1024).scanned
    assert large <= 4 * small + 64 * 1024


def test_events_do_not_depend_on_how_the_stream_is_cut() -> None:
    stream = b": hi\r\n\r\nid: 1\rdata: a\r\ndata: b\n\n\n\nevent: e\ndata: c\r\r" * 50
    whole = sse.Parser().feed(stream)
    for chunk in (1, 2, 3, 5, 64):
        parser = sse.Parser()
        events: list[sse.Event] = []
        for start in range(0, len(stream), chunk):
            events += parser.feed(stream[start : start + chunk])
        assert events == whole
    assert [e.data for e in whole[:3]] == ["a\nb", "c", "a\nb"]


# -------------------------------------------------------------- through the real stack


@pytest.fixture
async def blank_lines() -> AsyncIterator[tuple[str, list[int]]]:
    """A malicious MCP server on loopback: every POST is answered with an SSE stream of blank
    lines without end; yields its URL and the bytes it sent."""
    sent = [0]

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        piece = b"\n" * (256 * 1024)
        with trio.move_on_after(60):
            while sent[0] < 256 * MiB:
                await send({"type": "http.response.body", "body": piece, "more_body": True})
                sent[0] += len(piece)

    async with serving(app) as url:
        yield url + "/mcp", sent


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_a_server_streaming_blank_lines_gets_a_bounded_answer(
    blank_lines: tuple[str, list[int]], era: str
) -> None:
    url, sent = blank_lines
    with trio.fail_after(60), pytest.raises(TransportError, match="max_message_bytes"):
        async with mcpfast.connect(url, era=era, max_message_bytes=4 * MiB):  # type: ignore[arg-type]
            pass
    assert sent[0] < 4 * MiB + 32 * MiB  # the cap, plus what the sockets hold on the way
