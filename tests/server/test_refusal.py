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
    emission = Emission(responder, resumable=Resumable(_AwayStore(), "session", 10, retry_ms))
    await emission.emit(b'{"jsonrpc":"2.0","method":"notifications/progress"}')
    await emission.close_stream()  # unrecorded: nothing to resume, so it stays attached
    await emission.finish(b'{"jsonrpc":"2.0","id":1,"result":{}}')
    assert [event.id for event in responder.events] == [None, None]
    assert responder.message == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert responder.closed.is_set()
