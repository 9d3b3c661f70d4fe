"""Where the manual's text lives, for the tests that check it: README.md is the landing page,
docs/ the manual (every page). A block looked up by heading fails when the heading or the block
is gone, so a moved or renamed section never leaves a check with nothing to check."""

from __future__ import annotations

import re

from .helpers import REPO

DOCS = REPO / "docs"


def page(name: str) -> str:
    """The text of ``docs/<name>`` (``"authorization.md"``), or README.md for ``"README.md"``."""
    return (REPO / name if name == "README.md" else DOCS / name).read_text()


def manual() -> str:
    """README.md, then every page of docs/ (the hooks excepted): the whole manual, for the
    checks that every name, flag, default or path it gives is real."""
    pages = sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.parts)
    return "\n\n".join([page("README.md"), *(p.read_text() for p in pages)])


def section(text: str, heading: str) -> str:
    """``text`` from the first line that begins with ``heading`` (``## Protecting a server``)."""
    match = re.search(rf"^{re.escape(heading)}", text, re.M)
    assert match is not None, f"no heading {heading!r}"
    return text[match.start() :]


def block(text: str, heading: str, language: str) -> str:
    """The first fenced ``language`` block after ``heading`` (see `section`)."""
    match = re.search(rf"```{language}\n(.*?)```", section(text, heading), re.S)
    assert match is not None, f"no {language} block under {heading!r}"
    return match.group(1)
