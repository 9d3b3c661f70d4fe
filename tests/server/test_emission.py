"""`core.emission.Emission` in memory, on a real `LocalBus`: a reply makes its `Resumable` only
once it becomes a stream (a request answered with plain JSON never pays for one), and once."""

from __future__ import annotations

from mcpfast.server.core.emission import Emission, Resumable
from mcpfast.server.state.local_bus import LocalBus

from .conftest import Recorder

ANSWER = b'{"jsonrpc":"2.0","id":1,"result":{}}'
PROGRESS = b'{"jsonrpc":"2.0","method":"notifications/progress"}'


class _Made:
    """Makes the `Resumable` of one reply on a real `LocalBus`, counting the times it is asked."""

    def __init__(self, retry_ms: int | None = None) -> None:
        self.bus = LocalBus()
        self.retry_ms = retry_ms
        self.times = 0

    def __call__(self) -> Resumable:
        self.times += 1
        return Resumable(self.bus, "session", 10, self.retry_ms)


async def test_a_plain_json_answer_never_makes_its_resumable() -> None:
    made, responder = _Made(), Recorder()
    emission = Emission(responder, resumable=made)
    await emission.finish(ANSWER)
    assert (responder.status, responder.body, made.times) == (200, ANSWER, 0)


async def test_a_stream_makes_its_resumable_once_and_records_each_event() -> None:
    made, responder = _Made(retry_ms=1000), Recorder()
    emission = Emission(responder, resumable=made)
    assert emission.pollable  # asking makes it
    await emission.emit(PROGRESS)
    await emission.emit(PROGRESS)
    await emission.finish(ANSWER)
    assert made.times == 1
    ids = [event.id or "" for event in responder.events]
    assert [event.retry for event in responder.events] == [1000, None, None, None]  # priming
    assert all(ids) and len(set(ids)) == 4
    async with made.bus.follow("session", ids[1]) as events:  # resumable where it was recorded
        assert events is not None
        assert [(event_id, data) async for event_id, data in events] == [
            (ids[2], PROGRESS),
            (ids[3], ANSWER),
        ]
