"""The fast engine's pure rules: the histogram buckets (`mcpfast.load.hdr`, which
``rust/loadgen.rs`` follows: its unit tests pin the same values), an exact merge, the open
loop's schedule, ``--rate`` and the options the fast engine refuses and runs."""

from __future__ import annotations

import argparse
import random

import pytest

from mcpfast.load.engine_trio import answer_key, arrival
from mcpfast.load.fast import parse_rate
from mcpfast.load.hdr import Histogram, bucket, highest
from mcpfast.load.runner import UsageError, add_arguments, check_usage


def test_buckets_are_contiguous_and_keep_three_digits() -> None:
    assert [bucket(v) for v in (0, 2047, 2048, 4095, 4096)] == [0, 2047, 2048, 3071, 3072]
    previous = 0
    for value in range(0, 5_000_000, 37):
        index = bucket(value)
        assert index >= previous
        assert value <= highest(index) <= value + value // 1024 + 1
        previous = index


def test_merged_histograms_give_the_percentiles_of_all_requests() -> None:
    rng = random.Random(7)
    values = [rng.randrange(50, 300_000) for _ in range(20_000)]
    whole, parts = Histogram(), [Histogram() for _ in range(4)]
    for i, value in enumerate(values):
        whole.record(value)
        parts[i % 4].record(value)
    merged = Histogram().merge(parts)
    for q in (50, 99, 99.9, 99.99):
        assert merged.percentile(q) == whole.percentile(q)
    again = Histogram.of(
        {int(k): v for k, v in merged.document()["counts"].items()},  # type: ignore[attr-defined]
        merged.sum_us,
        merged.max_us,
    )
    assert again.percentile(99.99) == whole.percentile(99.99)
    assert merged.max_us == max(values) and Histogram().percentile(50) is None


def test_the_schedule_follows_the_stages() -> None:
    stages = [(1.0, 10.0), (1.0, 100.0)]
    assert [arrival(n, stages) for n in (0, 5, 10, 60, 210)] == pytest.approx(
        [0.0, 0.5, 1.0, 1.5, 3.0]
    )


def test_sse_event_ids_do_not_split_answers() -> None:
    sse = "text/event-stream"
    assert answer_key(200, sse, b"id: 1\ndata: {}\n\n") == answer_key(
        200, sse, b"id: 2\ndata: {}\n\n"
    )
    json_ = "application/json"
    assert answer_key(200, json_, b"id: 1") != answer_key(200, json_, b"id: 2")


def test_rate_stages() -> None:
    assert parse_rate("1000", 30.0) == [(30.0, 1000.0)]
    assert parse_rate("500:10s,2000:5s", 30.0) == [(10.0, 500.0), (20.0, 2000.0)]
    for bad in ("fast", "0", "-5", "100:soon"):
        with pytest.raises(ValueError):
            parse_rate(bad, 10.0)


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(["http://127.0.0.1:1/mcp", *argv])


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("--rate", "100"), "--rate needs --engine fast"),
        (("--engine", "fast", "--user-class", "listen"), "not a fast workload: 'listen'"),
        (("--engine", "fast", "--mix", "tools=1,churn=1"), "unknown user class 'churn'"),
        (("--engine", "fast", "--mix", "tools=1,lists=1", "-u", "1"), "2 workloads need"),
        (("--engine", "fast", "--shape", "ramp"), "--shape needs --rate"),
        (("--engine", "fast", "--shape", "ramp", "--rate", "1:1s,2"), "scales one rate"),
        (("--engine", "fast", "--shape", "spike:base=0", "--rate", "9"), "base=0 sends nothing"),
        (("--engine", "fast", "--web"), "--web is locust's web UI"),
        (
            ("--engine", "fast", "--master", "--expect-workers", "3", "-u", "2"),
            "each worker needs a connection",
        ),
        (("--engine", "fast", "--client-id", "c"), "--client-id needs --client-secret-env"),
        (
            ("--engine", "fast", "--client-id", "c", "--client-secret-env", "V", "--dpop"),
            "--dpop signs every request anew",
        ),
        (("--engine", "fast", "--rate", "many"), "--rate: not a rate"),
        (("--engine", "fast", "-u", "0"), "--users must be at least 1"),
    ],
)
def test_what_the_fast_engine_refuses(argv: tuple[str, ...], says: str) -> None:
    with pytest.raises(UsageError, match=says.replace("-", r"\-")):
        check_usage(_args(*argv))


def test_what_the_fast_engine_runs() -> None:
    check_usage(_args("--engine", "fast", "--user-class", "session", "--rate", "10:1s,20"))
    check_usage(_args("--engine", "fast", "--processes", "2", "--fail-on", "p99>5ms"))
    check_usage(_args("--engine", "fast", "--mix", "tools=4,lists=1,session=2"))
    check_usage(_args("--engine", "fast", "--user-class", "tools", "--user-class", "lists"))
    check_usage(_args("--engine", "fast", "--shape", "spike:base=2", "--rate", "100"))
    check_usage(_args("--engine", "fast", "--master", "--expect-workers", "2", "-u", "2"))
    check_usage(_args("--engine", "fast", "--worker", "--processes", "2"))
