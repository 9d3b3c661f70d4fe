"""The fast engine's mix and shape as pure decisions: connections shared by weight
(`mcpfast.load.fastmix`), load processes one workload's each, and ``--shape`` as stages of the
arrival rate (`mcpfast.load.shapes.Shape.rates`); `tests/e2e/test_load_fast_mix.py` runs them."""

from __future__ import annotations

import argparse
import random

import pytest

from mcpfast.load.fast import rate_stages
from mcpfast.load.fastmix import apportion, connections, process_shares
from mcpfast.load.runner import add_arguments
from mcpfast.load.shapes import RAMP_STEPS, parse_shape


@pytest.mark.parametrize(
    ("total", "weights", "shares"),
    [
        (7, [4, 1, 2], [4, 1, 2]),
        (14, [4, 1, 2], [8, 2, 4]),
        (10, [1, 1, 1], [4, 3, 3]),  # a tie goes to the first
        (3, [100, 1, 1], [1, 1, 1]),  # at least one each, taken from the largest
        (5, [8, 1], [4, 1]),
    ],
)
def test_apportion(total: int, weights: list[int], shares: list[int]) -> None:
    assert apportion(total, weights) == shares


def test_apportion_keeps_the_total_and_the_order_of_the_weights() -> None:
    rng = random.Random(3)
    for _ in range(500):
        weights = [rng.randint(1, 9) for _ in range(rng.randint(1, 5))]
        total = rng.randint(len(weights), 60)
        shares = apportion(total, weights)
        assert sum(shares) == total and min(shares) >= 1
        for i, w in enumerate(weights):
            exact = total * w / sum(weights)
            assert shares[i] < exact + 1 or shares[i] == 1  # never more than its quota allows
    with pytest.raises(ValueError, match="at least 1 each"):
        apportion(2, [1, 1, 1])


def test_connections_of_a_mix_or_of_user_classes() -> None:
    assert connections("tools=4,lists=1,session=2", None, 14) == [
        ["tools", 8],
        ["lists", 2],
        ["session", 4],
    ]
    assert connections("", ["lists", "tools"], 5) == [["lists", 3], ["tools", 2]]
    assert connections("", None, 3) == [["tools", 3]]
    with pytest.raises(ValueError, match="not a fast workload"):
        connections("", ["churn"], 3)


def test_each_process_runs_one_workloads_connections() -> None:
    for groups, processes in (([8, 2, 4], 1), ([8, 2, 4], 4), ([8, 2, 4], 99), ([5], 2)):
        shares = process_shares(groups, processes)
        assert len(shares) == max(min(processes, sum(groups)), len(groups))
        starts = [sum(groups[:g]) for g in range(len(groups))]
        first = 0
        for group, at, count in shares:  # contiguous, each inside its group
            assert at == first and count >= 1
            assert starts[group] <= at and at + count <= starts[group] + groups[group]
            first += count
        assert first == sum(groups)
    assert process_shares([8, 2, 4], 4) == [(0, 0, 4), (0, 4, 4), (1, 8, 2), (2, 10, 4)]


def _requests(stages: list[tuple[float, float]], seconds: float) -> float:
    """The requests the stages schedule in a run of ``seconds``."""
    total, start = 0.0, 0.0
    for length, rate in stages:
        total += max(min(length, seconds - start), 0.0) * rate
        start += length
    return total


def test_a_ramp_of_the_rate() -> None:
    stages = parse_shape("ramp:over=10s").rates(100.0, 20.0, 8)
    assert len(stages) == 11 and stages[-1] == (10.0, 100.0)
    rates = [r for _, r in stages]
    assert rates == sorted(rates) and rates[0] == pytest.approx(5.0)
    assert all(s == pytest.approx(1.0) for s, _ in stages[:-1])
    assert _requests(stages, 20.0) == pytest.approx(100 * 10 / 2 + 100 * 10)
    whole = parse_shape("ramp").rates(100.0, 4.0, 8)  # over the whole run
    assert _requests(whole, 4.0) == pytest.approx(200.0) and whole[-1] == (0.0, 100.0)
    long = parse_shape("ramp").rates(10.0, 3600.0, 8)
    assert len(long) == RAMP_STEPS + 1 and long[0][0] == pytest.approx(30.0)


def test_a_spike_of_the_rate() -> None:
    assert parse_shape("spike:base=2,at=10s,for=5s").rates(100.0, 30.0, 10) == [
        (10.0, 20.0),
        (5.0, 100.0),
        (15.0, 20.0),
    ]
    # defaults: a fifth of the users, at a third of the run, for a fifth of it
    assert parse_shape("spike").rates(100.0, 30.0, 10) == [
        (10.0, 20.0),
        (6.0, 100.0),
        (14.0, 20.0),
    ]
    assert parse_shape("spike:base=50").rates(100.0, 30.0, 10)[0] == (10.0, 100.0)
    with pytest.raises(ValueError, match="base=0 sends nothing"):
        parse_shape("spike:base=0").rates(100.0, 30.0, 10)


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(["http://127.0.0.1:1/mcp", "--engine", "fast", *argv])


def test_rate_stages_of_the_options() -> None:
    assert rate_stages(_args(), 10.0) == []  # a closed loop
    assert rate_stages(_args("--rate", "50"), 10.0) == [(10.0, 50.0)]
    assert rate_stages(_args("--rate", "5:2s,50"), 10.0) == [(2.0, 5.0), (8.0, 50.0)]
    shaped = rate_stages(_args("--rate", "50", "--shape", "ramp:over=2s"), 10.0)
    assert shaped == [(1.0, 12.5), (1.0, 37.5), (8.0, 50.0)]
    with pytest.raises(ValueError, match="scales one rate"):
        rate_stages(_args("--rate", "5:2s,50", "--shape", "ramp"), 10.0)
