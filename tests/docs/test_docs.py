"""Every code block of the documentation runs or is checked against the code it names:

- Python: each page's blocks run in order as one session (`page_session`), the page's own
  server served on loopback where a block needs ``url``;
- shell: each ``mcpfast`` command line is parsed by the CLI's own parser (a renamed or removed
  flag fails), each ``make`` target exists, each script or file a line runs exists; the client
  lines of the pages about a server (``inspect``, ``call``, ``read``, ``prompt``) also run
  against it (`test_command_lines`);
- YAML and JSON parse; configuration files (nginx, haproxy) are shown from deploy/, which
  tests/deploy runs, never copied;
- every file the pages show (``--8<--``) is an example that tests/examples runs, or a deploy
  configuration.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mcpfast.cli import _parser

from ..helpers import REPO
from .blocks import DOCS, Block, blocks, commands, pages

ALL = [block for page in pages() for block in blocks(page)]
LANGUAGES = {"python", "bash", "sh", "text", "yaml", "json", "nginx", "haproxy"}
PYTHON_PAGES = sorted({b.page for b in ALL if b.language == "python"})
OTHER_COMMANDS = {"curl", "git", "grep", "pip", "pytest", "source"}


def test_the_pages_have_blocks() -> None:
    assert len(PYTHON_PAGES) >= 8 and len(ALL) >= 40


@pytest.mark.parametrize("block", ALL, ids=lambda b: f"{b.page}:{b.language}")
def test_each_block_is_of_a_known_kind(block: Block) -> None:
    assert block.language in LANGUAGES, f"{block.page}: a ```{block.language} block"
    if block.language in ("nginx", "haproxy"):
        assert block.included and all(p.startswith("deploy/") for p in block.included)
    if block.language == "yaml":
        yaml.safe_load(block.code)
    if block.language == "json":
        json.loads(block.code)


def test_every_file_shown_is_run() -> None:
    tests = (REPO / "tests/examples/test_examples.py").read_text()
    for block in ALL:
        for path in block.included:
            assert path.startswith(("examples/", "deploy/")), (block.page, path)
            assert (REPO / path).is_file(), path
    for file in (REPO / "examples").rglob("*"):
        if file.is_file() and file.name != "README.md" and "__pycache__" not in file.parts:
            assert str(file.relative_to(REPO)) in tests, f"{file} is run by no test"


SHELL = [b for b in ALL if b.language in ("bash", "sh") and not b.included]
"""Shell blocks written in the pages (an included script is run by tests/examples)."""


@pytest.mark.parametrize("block", SHELL, ids=lambda b: b.page)
def test_shell_lines(block: Block) -> None:
    makefile = (REPO / "Makefile").read_text()
    for words in commands(block.code):
        head = words[0]
        if head == "mcpfast":
            try:
                _parser().parse_args(words[1:])
            except SystemExit as exit:  # --help, --version: 0
                if exit.code == 0:
                    continue
                pytest.fail(f"{block.page}: the CLI refuses {shlex.join(words)}")
        elif head == "make":
            for target in (w for w in words[1:] if "=" not in w):
                assert re.search(rf"^{re.escape(target)}:", makefile, re.M), (block.page, target)
        elif head in ("python", "bash", ".venv/bin/python", "python3"):
            script = next(w for w in words[1:] if not w.startswith("-"))
            named = f"`{script}`" in (DOCS / block.page).read_text()  # "save that as `files.py`"
            assert (REPO / script).exists() or named, (block.page, script)
        else:
            assert head in OTHER_COMMANDS, f"{block.page}: what runs {shlex.join(words)}?"


PYTHONPATH = [str(REPO / "python"), str(REPO / "examples/weather")]
"""mcpfast, and the weather example as ``server`` (a test file beside it imports it so)."""
PATH = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
"""The venv's commands: a page's stdio block starts ``mcpfast``."""


@pytest.mark.timeout(150)  # a page may start servers and clients of its own
@pytest.mark.slow  # a process of its own, serving on loopback
@pytest.mark.parametrize("page", PYTHON_PAGES)
def test_python_blocks_run(page: str, tmp_path: Path) -> None:
    code = [b.code for b in ALL if b.page == page and b.language == "python"]
    (tmp_path / "blocks.json").write_text(json.dumps(code))
    run = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("page_session.py")), "blocks.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(PYTHONPATH), "PATH": PATH},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split("\n")[-2] == f"ok {len(code)}", run.stdout
