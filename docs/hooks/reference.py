"""MkDocs hook: the configuration reference, generated at build time from the code itself.

A page line ``<!-- generated: config Config -->`` becomes the table of that class of
`mcpfast.server.config` (each field, its type, its default and its attribute docstring, read
by griffe as mkdocstrings reads them); ``<!-- generated: cli -->`` becomes one section per
``mcpfast`` command with every argument of its argparse parser (flags, value, default, help).
Nothing is copied by hand, so the reference cannot drift from `Config` or the CLI.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any

import griffe

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^<!-- generated: (config (\w+)|cli) -->$", re.M)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Replace each marker of the page with what it names."""
    return MARKER.sub(_generate, markdown)


def _generate(match: re.Match[str]) -> str:
    return _config_table(match.group(2)) if match.group(2) else _cli_sections()


def _cell(text: str) -> str:
    """Markdown table cell: one line, pipes escaped, reST double backticks as code."""
    return " ".join(text.replace("``", "`").replace("|", "\\|").split())


def _config_table(name: str) -> str:
    source = ROOT / "python/mcpfast/server/config.py"
    module = griffe.visit("mcpfast.server.config", filepath=source, code=source.read_text())
    cls = module[name]
    rows = ["| field | type | default | meaning |", "|---|---|---|---|"]
    for field, attribute in cls.attributes.items():
        if field.startswith("_") or attribute.labels & {"property"}:
            continue
        value = str(attribute.value) if attribute.value is not None else "required"
        value = re.sub(r"msgspec\.field\(default_factory=(lambda: )?(.*)\)$", r"\2", value)
        doc = attribute.docstring.value if attribute.docstring else ""
        rows.append(
            f"| `{field}` | `{_cell(str(attribute.annotation))}` | `{_cell(value)}` "
            f"| {_cell(doc)} |"
        )
    summary = cls.docstring.value.split("\n\n")[0] if cls.docstring else ""
    return f"{_cell(summary)}\n\n" + "\n".join(rows)


def _cli_sections() -> str:
    sys.path.insert(0, str(ROOT / "python"))
    from mcpfast.cli import _parser

    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("MCPFAST_")}
    try:  # defaults as documented, not this machine's $MCPFAST_BUS and the like
        parser = _parser()
    finally:
        os.environ.update(saved)
    (commands,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help or "" for choice in commands._choices_actions}
    sections = []
    for name, sub in commands.choices.items():
        usage = " ".join(sub.format_usage().split())
        sections.append(
            f"### `mcpfast {name}`\n\n{_cell(helps.get(name, ''))}\n\n"
            f"```text\n{usage}\n```\n\n{_arguments(sub)}"
        )
    return "\n\n".join(sections)


def _arguments(parser: argparse.ArgumentParser) -> str:
    rows = ["| argument | value | default | meaning |", "|---|---|---|---|"]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        name = ", ".join(action.option_strings) or action.dest
        if action.choices is not None:
            value = " \\| ".join(str(c) for c in action.choices)
        elif action.nargs == 0:
            value = ""
        else:
            value = str(action.metavar or action.dest.upper())
        default = action.default
        shown = "" if default in (None, False, [], argparse.SUPPRESS) else f"`{default}`"
        rows.append(
            f"| `{name}` | {value and f'`{value}`'} | {shown} | {_cell(action.help or '')} |"
        )
    return "\n".join(rows)
