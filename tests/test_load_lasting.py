"""`mcpfast.load.lasting.held`: a load user's stream held for its seconds, opened again (after
`protocol.backoff`'s waits, at least each ``Retry-After``) when it ends early or is refused with
what another attempt may change; given up on an answer no attempt changes. On a fake clock."""

from __future__ import annotations

import pytest

pytest.importorskip("gevent", reason="the load extra")

from mcpfast.load.lasting import held
from mcpfast.load.wire import Answer


class Clock:
    """Virtual seconds: `sleep` moves them on, and so does each attempt, by what it holds."""

    def __init__(self) -> None:
        self.now = 0.0
        self.attempts: list[tuple[float, float]] = []
        """(when, seconds left it was given) of each attempt."""

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def run(self, answers: list[tuple[Answer | None, float]]) -> Answer | None:
        """`held` for 20 s through ``answers`` (each with the seconds it holds; the last one
        ever after), with a jitter of 1."""

        def attempt(left: float) -> Answer | None:
            self.attempts.append((round(self.now, 6), round(left, 6)))
            answer, hold = answers[min(len(self.attempts), len(answers)) - 1]
            self.now += min(hold, left)
            return answer

        return held(20.0, attempt, clock=lambda: self.now, sleep=self.sleep, random=lambda: 1.0)


OK = Answer(None, status=200)


def test_a_stream_held_its_seconds_is_opened_once() -> None:
    clock = Clock()
    assert clock.run([(OK, 20.0)]) is OK
    assert clock.attempts == [(0.0, 20.0)]


def test_refusals_wait_as_the_client_does_until_the_seconds_are_up() -> None:
    clock = Clock()
    refused = Answer("HTTP 503", status=503, wait=0.0)
    last = clock.run([(None, 0.0), (refused, 0.0)])  # no answer, then 503s: never given up
    assert last is refused
    times = [t for t, _ in clock.attempts]
    assert times == [0.0, 0.25, 0.75, 1.75, 3.75, 7.75, 15.75]  # 0.25 s doubling
    assert clock.now == 20.0  # the last wait is cut at the end of the seconds


def test_retry_after_is_kept_and_an_open_stream_starts_the_count_again() -> None:
    clock = Clock()
    refused = Answer("HTTP 503", status=503, wait=3.0)
    last = clock.run([(refused, 0.0), (refused, 0.0), (OK, 1.0), (refused, 0.0), (OK, 99.0)])
    assert last is OK
    # 3 s each; open for 1 s, dropped: 0.25 s; refused: 3 s again; then held to the end
    assert clock.attempts == [(0.0, 20.0), (3.0, 17.0), (6.0, 14.0), (7.25, 12.75), (10.25, 9.75)]
    assert clock.now == 20.0


@pytest.mark.parametrize("status", [400, 403, 404, 405])
def test_an_answer_no_attempt_changes_ends_it(status: int) -> None:
    clock = Clock()
    refused = Answer(f"HTTP {status}", status=status)
    assert clock.run([(refused, 0.0)]) is refused
    assert len(clock.attempts) == 1
