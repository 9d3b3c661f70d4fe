"""The configuration reference the site generates (docs/hooks/reference.py) from `Config`,
`AuthConfig` and the CLI's parsers: every field is there with its docstring, every command
with every argument."""

from __future__ import annotations

import importlib.util
import re
from types import ModuleType

import pytest

from mcpfast.server.config import AuthConfig, Config

from ..helpers import REPO

pytest.importorskip("griffe")  # the docs extra (make setup installs it)


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reference", REPO / "docs/hooks/reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("cls", [Config, AuthConfig], ids=lambda c: c.__name__)
def test_every_field_is_documented(cls: type) -> None:
    table = _hook().on_page_markdown(f"<!-- generated: config {cls.__name__} -->")
    rows = {m[1]: m[2] for m in re.finditer(r"^\| `(\w+)` \|.*\| (.*) \|$", table, re.M)}
    assert set(rows) == set(cls.__struct_fields__)  # type: ignore[attr-defined]
    undocumented = [name for name, text in rows.items() if not text.strip()]
    assert not undocumented, f"{cls.__name__} fields without a docstring: {undocumented}"


def test_every_command_and_argument_is_listed() -> None:
    text = _hook().on_page_markdown("<!-- generated: cli -->")
    for command in ("serve", "inspect", "call", "auth-server", "load"):
        assert f"### `mcpfast {command}`" in text
    for flag in ("--engine", "--bus", "--no-login", "--fail-on", "--client"):
        assert f"| `{flag}" in text or f", {flag}" in text, flag
