"""The fenced code blocks of the documentation (docs/**/*.md), as the site shows them: a block
holding ``--8<-- "path"`` lines shows those files (pymdownx.snippets, relative to the repository),
so the tests run the very text a reader sees."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import msgspec

from ..helpers import REPO

DOCS = REPO / "docs"
FENCE = re.compile(
    r"^(?P<indent> *)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```$", re.M | re.S
)
SNIPPET = re.compile(r'^--8<-- "(?P<path>[^"]+)"$', re.M)


class Block(msgspec.Struct, frozen=True):
    page: str
    language: str
    code: str
    included: tuple[str, ...]
    """The repository files the block shows (``--8<--``), if any."""


def pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.parts)


def blocks(page: Path) -> list[Block]:
    found = []
    for match in FENCE.finditer(page.read_text()):
        indent = len(match["indent"])
        body = "\n".join(line[indent:] for line in match["body"].splitlines())
        included = tuple(m["path"] for m in SNIPPET.finditer(body))
        code = SNIPPET.sub(lambda m: (REPO / m["path"]).read_text().rstrip("\n"), body)
        language = match["info"].split()[0] if match["info"].split() else ""
        found.append(Block(str(page.relative_to(DOCS)), language, code, included))
    return found


def _lines(code: str) -> list[str]:
    """The block's command lines: continuations joined, and a quote left open (a JSON body)
    closed by the lines after it."""
    lines: list[str] = []
    pending = ""
    for line in code.replace("\\\n", " ").splitlines():
        pending = f"{pending}\n{line}" if pending else line
        try:
            shlex.split(pending, comments=True)
        except ValueError:
            continue
        lines.append(pending)
        pending = ""
    assert not pending, f"a quote never closed: {pending[:80]}"
    return lines


def commands(code: str) -> list[list[str]]:
    """Each command of a shell block, comments, pipes, ``&`` and leading ``NAME=value``
    assignments taken off."""
    commands = []
    for line in _lines(code):
        for part in re.split(r"\s(?:\||&&|;)\s", line):
            words = shlex.split(part.strip().rstrip("&"), comments=True)
            while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
                words.pop(0)
            if words:
                commands.append(words)
    return commands
