"""``mcpfast serve``'s rate-limit flags and their ``MCPFAST_*`` variables (`cli.limiting`):
the `Config` fields they set; a bad value is refused before anything is served."""

from __future__ import annotations

import argparse

import pytest

from mcpfast.cli.limiting import add_limit_arguments, limit_settings
from mcpfast.server.config import Config


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_limit_arguments(parser)
    return parser.parse_args(argv)


def test_nothing_given_sets_nothing() -> None:
    assert limit_settings(_parse(), {}) == {}


def test_flags_set_the_config() -> None:
    args = _parse(
        "--rate-limit", "100/min burst=20",
        "--tool-rate-limit", "search=10/min",
        "--tool-rate-limit", "fetch=1/s burst=5",
        "--method-rate-limit", "tools/list=5/s",
        "--rate-limit-scope", "worker",
        "--rate-limit-failure", "closed",
        "--trusted-proxy-hops", "1",
    )  # fmt: skip
    settings = limit_settings(args, {"MCPFAST_RATE_LIMIT": "1/s"})  # a flag wins
    assert settings == {
        "rate_limit": "100/min burst=20",
        "tool_rate_limits": {"search": "10/min", "fetch": "1/s burst=5"},
        "method_rate_limits": {"tools/list": "5/s"},
        "rate_limit_scope": "worker",
        "rate_limit_failure": "closed",
        "trusted_proxy_hops": 1,
    }
    Config(**settings)


def test_variables_when_no_flag() -> None:
    environ = {
        "MCPFAST_RATE_LIMIT": "50/min",
        "MCPFAST_TOOL_RATE_LIMITS": "a=1/s, b=2/min",
        "MCPFAST_RATE_LIMIT_FAILURE": "closed",
        "MCPFAST_TRUSTED_PROXY_HOPS": "2",
    }
    assert limit_settings(_parse(), environ) == {
        "rate_limit": "50/min",
        "tool_rate_limits": {"a": "1/s", "b": "2/min"},
        "rate_limit_failure": "closed",
        "trusted_proxy_hops": 2,
    }


@pytest.mark.parametrize(
    ("argv", "environ"),
    [
        (["--rate-limit", "lots"], {}),
        (["--tool-rate-limit", "search"], {}),
        (["--tool-rate-limit", "=1/s"], {}),
        ([], {"MCPFAST_RATE_LIMIT_SCOPE": "galaxy"}),
        (["--trusted-proxy-hops", "-1"], {}),
    ],
)
def test_bad_values_are_refused(argv: list[str], environ: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        limit_settings(_parse(*argv), environ)
