"""The README's Deploying section shows the very configurations the deployment test runs."""

from __future__ import annotations

import re

import pytest

from ..helpers import REPO


@pytest.mark.parametrize(
    ("language", "name"), [("nginx", "nginx.conf"), ("haproxy", "haproxy.cfg")]
)
def test_the_readme_shows_the_configuration_the_test_runs(language: str, name: str) -> None:
    readme = (REPO / "README.md").read_text()
    shown = re.search(rf"```{language}\n(.*?)\n```", readme, re.S)
    assert shown is not None, f"README.md shows no {language} configuration"
    assert shown.group(1).strip() == (REPO / "deploy" / name).read_text().strip()
