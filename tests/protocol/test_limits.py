"""The token bucket's arithmetic (`protocol.limits.take`, `judge`) over an explicit clock."""

from __future__ import annotations

import pytest

from mcpfast.protocol.limits import Bucket, parse_rate, take


def test_a_full_bucket_admits_its_burst_then_refuses_until_a_token_refills() -> None:
    rate = parse_rate("60/min burst=3")  # a token a second
    bucket: Bucket | None = None
    for left in (2, 1, 0):
        verdict, stored = take([rate], [bucket], 100.0)
        assert verdict.admitted and verdict.remaining == left and verdict.retry_after_ms == 0
        assert verdict.limit == 60
        bucket = stored[0]
    verdict, stored = take([rate], [bucket], 100.0)
    assert not verdict.admitted and verdict.remaining == 0 and stored == []
    assert verdict.retry_after_ms == 1000
    verdict, _ = take([rate], [bucket], 100.25)
    assert not verdict.admitted and verdict.retry_after_ms == 750
    verdict, stored = take([rate], [bucket], 101.0)
    assert verdict.admitted and stored[0] == Bucket(0.0, 101.0)
    verdict, stored = take([rate], [stored[0]], 1000.0)  # refills to the burst, no further
    assert verdict.remaining == 2


def test_several_buckets_take_all_or_none_and_the_tightest_speaks() -> None:
    wide, narrow = parse_rate("100/min"), parse_rate("1/min")
    verdict, stored = take([wide, narrow], [None, None], 0.0)
    assert verdict.admitted and verdict.which == 1 and verdict.limit == 1
    assert verdict.remaining == 0
    verdict, again = take([wide, narrow], stored, 1.0)
    assert not verdict.admitted and verdict.which == 1 and again == []
    assert verdict.retry_after_ms == 59_000
    assert stored[0].tokens == 99.0  # the wide bucket lost nothing to the refusal


def test_a_clock_gone_back_adds_nothing() -> None:
    rate = parse_rate("1/s burst=1")
    _, stored = take([rate], [None], 10.0)
    verdict, _ = take([rate], stored, 5.0)
    assert not verdict.admitted and verdict.retry_after_ms == 1000


@pytest.mark.parametrize("text", ["0/min", "5/0s", "ten/min", "5/fortnight"])
def test_bad_rates_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="rate"):
        parse_rate(text)
