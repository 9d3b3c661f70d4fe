"""The load tester's one option table: what ``mcpfast load`` is given reaches the locust suite
unchanged, and the suite reads no option the table does not declare."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pytest

from mcpfast.load import LOCUSTFILE
from mcpfast.load.command import add_suite_options, locust_command
from mcpfast.load.options import OPTIONS
from mcpfast.load.runner import add_arguments


class SuiteParser(argparse.ArgumentParser):
    """locust's parser as far as the suite's options go (its extra keywords accepted)."""

    env_vars: dict[str, str | None]
    web_ui: dict[str, bool]

    def add_argument(self, *args: Any, **kwargs: Any) -> Any:
        if args[0].startswith("--mcp-"):
            self.env_vars = {**getattr(self, "env_vars", {}), args[0]: kwargs.pop("env_var", None)}
            self.web_ui = {**getattr(self, "web_ui", {}), args[0]: kwargs.pop("include_in_web_ui")}
        return super().add_argument(*args, **kwargs)


def _suite_values(command: list[str]) -> dict[str, Any]:
    """What the suite parses from the ``--mcp-*`` part of a locust command line."""
    parser = SuiteParser()
    add_suite_options(parser)
    ours, _ = parser.parse_known_args(command)
    return vars(ours)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--tool", "echo", "--arguments", '{"text": "hi"}', "--stream-seconds", "2.5"],
        ["--protocol-version", "2025-06-18", "--shape", "ramp:over=5s"],
        ["--era", "modern", "--resume-tool", "slow", "--resume-arguments", "{}"],
        ["--notify-tool", "touch", "--notify-uri", "demo://{process}", "--notify-interval", "2"],
        ["--elicit-tool", "greet", "--elicit-arguments", '{"name": "x"}', "--notify-timeout", "1"],
        ["--bearer-env", "TOKEN_VAR"],
        [
            *("--client-id", "svc", "--client-secret-env", "SECRET_VAR", "--scope", "a b"),
            *("--token-url", "http://as/token", "--auth-issuer", "http://as", "--dpop"),
        ],
    ],
)
def test_what_mcpfast_load_is_given_reaches_the_suite(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOKEN_VAR", "t")
    monkeypatch.setenv("SECRET_VAR", "s")
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    given = vars(parser.parse_args(["http://h/mcp", *argv]))
    suite = _suite_values(locust_command(argparse.Namespace(**given), tmp_path))
    pinned = {"2025-06-18": "legacy"}.get(given["protocol_version"], given["era"])
    for row in OPTIONS:
        if row.suite and row.flags:
            expected = pinned if row.name == "era" else given[row.name]
            assert suite[row.suite[2:].replace("-", "_")] == expected, row.suite


def test_the_suite_reads_only_declared_options() -> None:
    """Every ``option(environment, "mcp_...")`` the suite's modules read is a row's."""
    declared = {row.suite[2:].replace("-", "_") for row in OPTIONS if row.suite}
    read: set[str] = set()
    for path in LOCUSTFILE.parent.glob("*.py"):
        read |= set(re.findall(r"option\(\s*[\w.]+,\s*\"(mcp_\w+)\"", path.read_text()))
    assert read and read <= declared, read - declared


def test_secrets_variables_stay_out_of_the_web_ui_and_the_environment() -> None:
    parser = SuiteParser()
    add_suite_options(parser)
    for flag in ("--mcp-bearer-env", "--mcp-client-secret-env", "--mcp-client-id"):
        assert parser.env_vars[flag] is None and not parser.web_ui[flag]
    assert parser.env_vars["--mcp-tool"] == "MCPFAST_LOAD_TOOL"
    assert parser.env_vars["--mcp-version"] == "MCPFAST_LOAD_VERSION"
    assert parser.web_ui["--mcp-tool"] and not parser.web_ui["--mcp-progress"]
