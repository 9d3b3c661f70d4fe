"""`protocol.backoff`: the waits between attempts at a stream (the client's and the load
tester's), which answers are worth another attempt, and ``Retry-After`` in both forms."""

from __future__ import annotations

from email.utils import formatdate

import pytest

from mcpfast.protocol.backoff import CAP, Backoff, retry_after, retryable

NOW = 1_800_000_000.0
"""A Unix time (2027-01-15), the ``now`` HTTP-dates are read against."""


@pytest.mark.parametrize(
    ("random", "floor", "waits"),
    [
        (1.0, 0.0, [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0]),  # doubling, capped
        (0.5, 0.0, [0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0]),  # full jitter: a share
        (0.0, 0.0, [0.0] * 9),
        (0.0, 3.0, [3.0] * 9),  # Retry-After is a floor
        (1.0, 3.0, [3.0, 3.0, 3.0, 3.0, 4.0, 8.0, 10.0, 10.0, 10.0]),
        (1.0, 30.0, [30.0] * 9),  # ... even over the cap
    ],
)
def test_the_waits_in_a_row(random: float, floor: float, waits: list[float]) -> None:
    backoff = Backoff()
    assert [backoff.delay(random, floor) for _ in waits] == waits


def test_it_never_gives_up_and_an_open_stream_starts_again() -> None:
    backoff = Backoff()
    for _ in range(10_000):  # no count ends it, and the power stays finite
        assert backoff.delay(1.0) <= CAP
    backoff.reset()
    assert backoff.delay(1.0) == 0.25
    assert Backoff(base=1.0, cap=3.0).delay(1.0) == 1.0


@pytest.mark.parametrize(
    ("status", "again"),
    [
        (500, True), (502, True), (503, True), (504, True), (408, True), (425, True),
        (429, True), (400, False), (401, False), (403, False), (404, False), (405, False),
        (406, False),
    ],
)  # fmt: skip
def test_which_answers_are_worth_another_attempt(status: int, again: bool) -> None:
    assert retryable(status) is again


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (None, None),
        ("", None),
        ("3", 3.0),
        (" 120 ", 120.0),
        ("0", 0.0),
        ("-1", None),
        ("1.5", None),  # delay-seconds is an integer
        ("soon", None),
        (formatdate(NOW + 7, usegmt=True), 7.0),  # IMF-fixdate
        (formatdate(NOW - 60, usegmt=True), 0.0),  # a date past: at once
        ("Friday, 15-Jan-27 08:00:07 GMT", 7.0),  # RFC 850
        ("Fri Jan 15 08:00:07 2027", 7.0),  # asctime
    ],
)
def test_retry_after_in_seconds_or_as_a_date(value: str | None, seconds: float | None) -> None:
    assert retry_after(value, NOW) == seconds
