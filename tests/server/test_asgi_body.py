"""The ASGI adapter's body, as Hypercorn's trio worker hands it over: ``receive`` is a Trio
memory channel's, fed one message per h11 event (the body's chunks with ``more_body``, then an
empty message that ends it). A body of ``Content-Length`` bytes is whole with its last byte;
one without a length (chunked) ends with the message that says so; both within
``read_timeout_seconds`` of the head. Time is Trio's (``autojump_clock``)."""

from __future__ import annotations

import json
from typing import Any

import trio
import trio.testing

from mcpfast.demo import server as demo
from mcpfast.server.config import Config
from mcpfast.server.core.endpoint import Endpoint
from mcpfast.server.engines.asgi import App

from ..helpers import MODERN, TEST_KEYS, meta

TIMEOUT = 5.0
BODY = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "whole"}, "_meta": meta()},
    }
).encode()


def _scope(length: int | None) -> dict[str, Any]:
    headers = {
        "host": "127.0.0.1",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "echo",
    }
    if length is not None:
        headers["content-length"] = str(length)
    else:
        headers["transfer-encoding"] = "chunked"
    return {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
    }


def _chunk(body: bytes, more: bool) -> dict[str, Any]:
    return {"type": "http.request", "body": body, "more_body": more}


async def _answer(
    length: int | None,
    first: list[dict[str, Any]],
    later: list[dict[str, Any]],
    max_body: int = 1 << 20,
) -> tuple[int | None, bytes, float]:
    """Status (None: nothing was answered), body and the Trio time of the app's answer: the
    ``first`` messages are in the channel when the app starts, the ``later`` ones come one
    second after; the channel stays open (a client still connected)."""
    config = Config(read_timeout_seconds=TIMEOUT, max_body=max_body)
    app = App(Endpoint(demo, config, TEST_KEYS))
    feed, receive = trio.open_memory_channel[dict[str, Any]](10)
    for message in first:
        feed.send_nowait(message)
    sent: list[dict[str, Any]] = []

    async def send(event: dict[str, Any]) -> None:
        sent.append(event)

    async def trickle() -> None:
        await trio.sleep(1)
        for message in later:
            await feed.send(message)

    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trickle)
        await app(_scope(length), receive.receive, send)
        elapsed = trio.current_time() - start
        nursery.cancel_scope.cancel()
    if not sent:
        return None, b"", elapsed
    return sent[0]["status"], b"".join(e.get("body", b"") for e in sent[1:]), elapsed


def _text(body: bytes) -> str:
    text: str = json.loads(body)["result"]["content"][0]["text"]
    return text


async def test_a_body_of_its_length_is_answered_without_its_end_message(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Every byte the head announced is in: the answer does not wait for the worker's empty
    last message (which here never comes), nor for the read timeout."""
    status, body, elapsed = await _answer(len(BODY), [_chunk(BODY, True)], [])
    assert (status, _text(body), elapsed) == (200, "whole", 0)


async def test_a_body_of_its_length_in_two_chunks_is_read_whole(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Half the body now, half a second later: the answer comes with the second half."""
    half = len(BODY) // 2
    first, second = [_chunk(BODY[:half], True)], [_chunk(BODY[half:], True)]
    status, body, elapsed = await _answer(len(BODY), first, second)
    assert (status, _text(body), elapsed) == (200, "whole", 1)


async def test_a_body_without_a_length_ends_with_the_message_that_says_so(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Chunked: every byte may be in, but only the final message says the body is over."""
    status, body, elapsed = await _answer(None, [_chunk(BODY, True)], [_chunk(b"", False)])
    assert (status, _text(body), elapsed) == (200, "whole", 1)


async def test_a_body_short_of_its_length_is_408_after_the_read_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A byte short of the announced length, and nothing more: 408 once the read timeout is
    out, never an answer to a truncated body."""
    status, body, elapsed = await _answer(len(BODY) + 1, [_chunk(BODY, True)], [])
    assert status == 408
    assert json.loads(body)["error"]["code"] == -32600
    assert elapsed == TIMEOUT


async def test_a_body_whose_chunks_are_all_in_is_read_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Both halves are held already: the answer comes at once, no wait for more."""
    half = len(BODY) // 2
    first = [_chunk(BODY[:half], True), _chunk(BODY[half:], True)]
    status, body, elapsed = await _answer(len(BODY), first, [])
    assert (status, _text(body), elapsed) == (200, "whole", 0)


async def test_a_chunked_body_over_the_limit_in_one_message_is_413_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """No length to refuse it by, but the one message that is all of it passes ``max_body``:
    413, nothing served."""
    status, body, elapsed = await _answer(None, [_chunk(BODY, False)], [], len(BODY) - 1)
    assert (status, elapsed) == (413, 0)
    assert json.loads(body)["error"]["code"] == -32600


async def test_a_client_gone_before_its_body_is_not_answered(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The first message says the client went away: nothing is served or written."""
    status, body, elapsed = await _answer(len(BODY), [{"type": "http.disconnect"}], [])
    assert (status, body, elapsed) == (None, b"", 0)
