"""`core.refusal` in memory: a `BusUnavailable` says "retry later" only before a request
started, and a reply's recording is best-effort (the e2e twin, with a real Redis frozen and
killed on both engines, is ``tests/e2e/test_refusals.py``)."""

from __future__ import annotations

import pytest

from mcpfast import jsonrpc
from mcpfast.errors import BusUnavailable, ProtocolError
from mcpfast.server.core.emission import Emission, Resumable
from mcpfast.server.core.refusal import UNFINISHED, settled

from .conftest import Recorder


class _AwayStore:
    """An event store whose bus is away: every call raises."""

    async def open_stream(self, owner: str, max_events: int, epitaph: bytes = b"") -> str:
        raise BusUnavailable("away")

    async def record(self, stream: str, data: bytes, *, final: bool = False) -> str:
        raise BusUnavailable("away")

    async def interrupt(self, stream: str) -> None:
        raise BusUnavailable("away")


def test_a_bus_refusal_says_retry_only_before_the_request_started() -> None:
    away = BusUnavailable("away")
    assert settled(away, False) is away
    after = settled(away, True)
    assert not isinstance(after, BusUnavailable)
    assert (after.code, after.message, after.http_status) == (
        jsonrpc.INTERNAL_ERROR,
        UNFINISHED,
        200,
    )
    other = ProtocolError(jsonrpc.INVALID_PARAMS, "bad")
    assert settled(other, True) is other


@pytest.mark.parametrize("retry_ms", [None, 1000], ids=["resumable", "pollable"])
async def test_a_stream_whose_bus_is_away_still_ends_with_its_answer(retry_ms: int | None) -> None:
    responder = Recorder()
    resumable = Resumable(_AwayStore(), "session", 10, retry_ms)
    emission = Emission(responder, resumable=lambda: resumable)
    await emission.emit(b'{"jsonrpc":"2.0","method":"notifications/progress"}')
    await emission.close_stream()  # unrecorded: nothing to resume, so it stays attached
    await emission.finish(b'{"jsonrpc":"2.0","id":1,"result":{}}')
    assert [event.id for event in responder.events] == [None, None]
    assert responder.message == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert responder.closed.is_set()


class _FlakyStore(_AwayStore):
    """Opens streams, fails its first record, records the rest."""

    def __init__(self) -> None:
        self.recorded: list[bytes] = []

    async def open_stream(self, owner: str, max_events: int, epitaph: bytes = b"") -> str:
        return "s"

    async def record(self, stream: str, data: bytes, *, final: bool = False) -> str:
        self.recorded.append(data)
        if len(self.recorded) == 1:
            raise BusUnavailable("away")
        return f"s-{len(self.recorded)}"


async def test_after_a_failed_record_only_the_final_event_is_tried_again() -> None:
    """One failure makes the rest of the stream unrecorded (no wait of the bus's bound per
    event), but the final event is recorded once the bus is back: a follower sees the end."""
    responder, store = Recorder(), _FlakyStore()
    emission = Emission(responder, resumable=lambda: Resumable(store, "session", 10, None))
    for n in (1, 2):
        await emission.emit(b'{"jsonrpc":"2.0","method":"notifications/message","n":%d}' % n)
    await emission.finish(b'{"jsonrpc":"2.0","id":1,"result":{}}')
    assert [event.id for event in responder.events] == [None, None, "s-2"]
    assert len(store.recorded) == 2 and b'"id":1' in store.recorded[1]
