"""`protocol.sse`'s one reader of JSON-RPC messages from an event stream (`Decoder`, `messages`):
what a body yields, fed whole or byte by byte, and the bounds of one event."""

from __future__ import annotations

from typing import Any

import pytest

from mcpfast.protocol import sse

A = {"jsonrpc": "2.0", "method": "a"}
B = {"jsonrpc": "2.0", "id": 1, "result": {}}


@pytest.mark.parametrize(
    ("body", "found"),
    [
        (b'data: {"jsonrpc":"2.0","method":"a"}\n\n', [A]),
        (b'id: 1\ndata: \n\ndata: {"jsonrpc":"2.0","method":"a"}\n\n', [A]),  # priming event
        (b": keep-alive\n\n", []),
        (
            b'data: [{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":1,"result":{}}]\n\n',
            [A, B],
        ),
        (b"data: 5\n\ndata: [1, null]\n\n", []),  # not objects: dropped
        (b'data: {"jsonrpc":"2.0",\ndata: "method":"a"}\n\n', [A]),  # data lines joined
        (b'event: message\r\ndata: {"jsonrpc":"2.0","method":"a"}\r\n\r\n', [A]),
        (b'data: {"jsonrpc":"2.0","method":"a"}\n', []),  # not ended: no event yet
        (b"", []),
    ],
)
def test_messages_of_a_body(body: bytes, found: list[dict[str, Any]]) -> None:
    assert sse.messages(body) == found
    decoder = sse.Decoder()
    assert [m for i in range(len(body)) for m in decoder.feed(body[i : i + 1])] == found


def test_the_decoder_keeps_what_the_stream_said() -> None:
    decoder = sse.Decoder()
    assert decoder.feed(b"id: 7\nretry: 250\ndata: ") == []
    assert decoder.feed(b'{"jsonrpc":"2.0","method":"a"}\n\n') == [A]
    assert (decoder.parser.last_event_id, decoder.parser.retry_ms) == ("7", 250)


@pytest.mark.parametrize(
    "chunks",
    [
        [b"data: " + b"x" * 20],  # one line over the bound
        [b"data: " + b"x" * 20 + b"\n\n"],  # one event's data over it
        [b"data: 1234\n"] * 3,  # short lines, but no event ends within the bound
    ],
)
def test_an_event_over_the_bound_is_refused(chunks: list[bytes]) -> None:
    decoder = sse.Decoder(limit=16)
    with pytest.raises(sse.TooLarge):
        for chunk in chunks:
            decoder.feed(chunk)


def test_events_within_the_bound_pass() -> None:
    decoder = sse.Decoder(limit=16)
    for _ in range(5):
        assert decoder.feed(b"data: {}\n\n") == [{}]


def test_data_that_is_not_json_raises_value_error() -> None:
    with pytest.raises(ValueError) as raised:
        sse.messages(b"data: {oops\n\n")
    assert not isinstance(raised.value, sse.TooLarge)


@pytest.mark.parametrize(
    ("event", "found"),
    [
        (sse.Event(data=""), []),
        (sse.Event(data='{"jsonrpc":"2.0","method":"a"}', id="1"), [A]),
        (sse.Event(data='"text"'), []),
    ],
)
def test_messages_of_an_event(event: sse.Event, found: list[dict[str, Any]]) -> None:
    assert sse.messages_of(event) == found
