"""``mcpfast serve``'s flags for concurrency caps, deadlines, shedding and stream lifetime
(`cli.governing`): the `Config` fields they set through the real parser; a value not above 0
is refused by the parser, before anything is served."""

from __future__ import annotations

import pytest

from mcpfast.cli import _parser
from mcpfast.cli.governing import governing_settings
from mcpfast.server.config import Config


def test_nothing_given_sets_nothing() -> None:
    assert governing_settings(_parser().parse_args(["serve"])) == {}


def test_flags_set_the_config() -> None:
    args = _parser().parse_args([
        "serve",
        "--tool-timeout", "30",
        "--max-concurrent-per-principal", "8",
        "--concurrency-queue", "16",
        "--queue-timeout", "2.5",
        "--shed-in-flight", "200",
        "--shed-latency-ms", "1500",
        "--max-stream-seconds", "300",
    ])  # fmt: skip
    settings = governing_settings(args)
    assert settings == {
        "tool_timeout_seconds": 30.0,
        "max_concurrent_per_principal": 8,
        "concurrency_queue": 16,
        "queue_timeout_seconds": 2.5,
        "shed_in_flight": 200,
        "shed_latency_ms": 1500.0,
        "max_stream_seconds": 300.0,
    }
    assert Config(**settings).max_stream_seconds == 300.0


@pytest.mark.parametrize("flag", ["--tool-timeout", "--shed-in-flight", "--queue-timeout"])
def test_a_value_not_above_zero_is_a_usage_error(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        _parser().parse_args(["serve", flag, "0"])
    assert exited.value.code == 2 and "must be above 0" in capsys.readouterr().err


def test_no_queue_is_a_value() -> None:
    args = _parser().parse_args(["serve", "--concurrency-queue", "0"])
    assert governing_settings(args) == {"concurrency_queue": 0}


def test_the_config_refuses_them_too() -> None:
    with pytest.raises(ValueError, match="max_stream_seconds must be above 0"):
        Config(max_stream_seconds=0)
    with pytest.raises(ValueError, match="concurrency_queue"):
        Config(concurrency_queue=-1)
