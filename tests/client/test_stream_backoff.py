"""The client's long-lived streams keep trying, on Trio's virtual clock against an
``httpx2.MockTransport``: the legacy GET stream and ``subscriptions/listen`` wait as
`protocol.backoff` says between failed attempts (more than the 5 the GET stream once gave up
after), at least each ``Retry-After``, and the server's ``retry`` after a drop; the GET stream
resumes with the ``Last-Event-ID`` it was given."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import httpx2
import pytest
import trio

from mcpfast.client.get_stream import GetStream
from mcpfast.client.http import MAX_MESSAGE_BYTES, ModernHttp
from mcpfast.client.peer import Peer
from mcpfast.protocol.session import ClientSession
from mcpfast.versions import LATEST_LEGACY

URL = "http://mcp.test/mcp"
SSE = {"content-type": "text/event-stream"}
ACK = b'data: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged"}\n\n'
NOTE = b'data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n'
Answer = Callable[[httpx2.Request], httpx2.Response]


def _answers(*answers: Answer) -> tuple[httpx2.AsyncClient, list[tuple[float, httpx2.Request]]]:
    """A client whose requests get ``answers`` in turn (the last one ever after), and the
    list of (virtual time, request) it fills."""
    seen: list[tuple[float, httpx2.Request]] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append((trio.current_time(), request))
        return answers[min(len(seen), len(answers)) - 1](request)

    return httpx2.AsyncClient(transport=httpx2.MockTransport(handle)), seen


def _status(code: int, **headers: str) -> Answer:
    return lambda request: httpx2.Response(code, headers=headers)


def _events(body: bytes) -> Answer:
    return lambda request: httpx2.Response(200, headers=SSE, content=body)


def _gaps(seen: list[tuple[float, httpx2.Request]]) -> list[float]:
    return [round(b[0] - a[0], 6) for a, b in itertools.pairwise(seen)]


async def _until(seen: list[Any], count: int) -> None:
    with trio.fail_after(120):
        while len(seen) < count:
            await trio.sleep(0.001)


FAILED = 8
"""Attempts refused in a row before the stream opens."""
BACKOFF = [0.025, 0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
"""`protocol.backoff` with a jitter of 0.1: 0.1 of 0.25 s doubled, capped at 10 s."""


@pytest.mark.parametrize("refusal", [503, 502, 429])
async def test_the_get_stream_keeps_trying(autojump_clock: trio.abc.Clock, refusal: int) -> None:
    dropped = b'id: e7\nretry: 2500\ndata: {"jsonrpc":"2.0","method":"m"}\n\n'
    answers = [_status(refusal)] * FAILED + [_status(refusal, **{"retry-after": "4"})]
    client, seen = _answers(*answers, _events(dropped), _status(503))
    state = ClientSession(LATEST_LEGACY)
    state.adopt("s1")
    delivered: list[Any] = []

    async def renew(expired: str | None) -> None:
        raise AssertionError("no 404 here")

    async def deliver(message: Any) -> None:
        delivered.append(message)

    stream = GetStream(client, URL, state, MAX_MESSAGE_BYTES, renew, deliver, lambda: 0.1)
    async with client, trio.open_nursery() as nursery:
        await nursery.start(stream.run)
        await _until(seen, FAILED + 3)
        nursery.cancel_scope.cancel()
    assert _gaps(seen) == [*BACKOFF, 4.0, 2.5]  # then Retry-After, then the stream's retry
    assert delivered == [{"jsonrpc": "2.0", "method": "m"}]
    assert seen[-1][1].headers["last-event-id"] == "e7"  # resumed where it was
    assert not stream.running


async def test_the_get_stream_ends_on_an_answer_no_attempt_changes(
    autojump_clock: trio.abc.Clock,
) -> None:
    client, seen = _answers(_status(503), _status(403))
    state = ClientSession(LATEST_LEGACY)
    state.adopt("s1")

    async def nothing(_: Any) -> None:
        return None

    stream = GetStream(client, URL, state, MAX_MESSAGE_BYTES, nothing, nothing, lambda: 1.0)
    async with client, trio.open_nursery() as nursery:
        await nursery.start(stream.run)
    assert [round(t, 6) for t, _ in seen] == [0.0, 0.25]


async def test_a_listen_stream_is_opened_again(autojump_clock: trio.abc.Clock) -> None:
    refused = [_status(503, **{"retry-after": "3"})] * FAILED
    client, seen = _answers(_events(ACK), *refused, _events(ACK + NOTE))
    modern = ModernHttp(client, URL, Peer(), client_info={"name": "t", "version": "1"})
    modern.random = lambda: 0.1
    methods = []
    async with client, modern.stream("subscriptions/listen", {"notifications": {}}) as events:
        with trio.fail_after(120):
            async for event in events:
                methods.append(event["method"])
                if len(methods) == 3:
                    break
    assert methods == [
        "notifications/subscriptions/acknowledged",  # the first stream, which ended
        "notifications/subscriptions/acknowledged",  # the one opened after 8 refusals
        "notifications/tools/list_changed",
    ]
    assert _gaps(seen) == [0.025] + [3.0] * FAILED  # each Retry-After kept
    ids = [json.loads(request.content)["id"] for _, request in seen]
    assert len(set(ids)) == len(ids)  # each attempt a new request


async def test_a_session_renewed_during_a_wait_is_reconnected_in_at_once(
    autojump_clock: trio.abc.Clock,
) -> None:
    """A request met the 404 and renewed the session while the stream waited: the wait is cut
    short, and the stream starts afresh in the new session (no old ``Last-Event-ID``)."""
    dropped = b'id: e1\nretry: 5000\ndata: {"jsonrpc":"2.0","method":"m"}\n\n'
    client, seen = _answers(_events(dropped), _status(503))
    state = ClientSession(LATEST_LEGACY)
    state.adopt("s1")

    async def nothing(_: Any) -> None:
        return None

    stream = GetStream(client, URL, state, MAX_MESSAGE_BYTES, nothing, nothing, lambda: 1.0)
    async with client, trio.open_nursery() as nursery:
        await nursery.start(stream.run)
        await trio.sleep(1)  # the stream dropped at once; it waits its retry (5 s)
        state.adopt("s2")  # renewed by a request
        assert stream.reconnect()
        await _until(seen, 2)
        nursery.cancel_scope.cancel()
    (first, one), (again, other) = seen
    assert (first, round(again, 6)) == (0.0, 1.0)
    assert other.headers["mcp-session-id"] == "s2"
    assert "last-event-id" not in other.headers and one.headers["mcp-session-id"] == "s1"
