"""The manual's Deploying page (docs/deploying.md) shows the very configurations the deployment
test runs: each block of that language shows its file from deploy/ (``--8<--``), never a copy."""

from __future__ import annotations

import pytest

from ..docs.blocks import DOCS, blocks
from ..helpers import REPO


@pytest.mark.parametrize(
    ("language", "name"), [("nginx", "nginx.conf"), ("haproxy", "haproxy.cfg")]
)
def test_the_manual_shows_the_configuration_the_test_runs(language: str, name: str) -> None:
    shown = [b for b in blocks(DOCS / "deploying.md") if b.language == language]
    assert shown, f"docs/deploying.md shows no {language} configuration"
    for block in shown:
        assert block.included == (f"deploy/{name}",), block.included
        assert block.code.strip() == (REPO / "deploy" / name).read_text().strip()
