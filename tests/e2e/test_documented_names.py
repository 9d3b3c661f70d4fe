"""The words, checked where a machine can check them: every ``mcpfast.X`` the manual (README.md
and every page of docs/) or a docstring names exists, and the top-level names the manual uses
are in ``mcpfast.__all__``; the keywords, attributes, ``Config`` fields and defaults, CLI
flags, environment variables, ``make`` targets and repository paths the manual names are real. (Claims of behaviour are the
other tests' business; this file catches names that drift from the code.)"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

import mcpfast
from mcpfast.client import Client
from mcpfast.server import Context
from mcpfast.server.config import Config

from ..helpers import REPO
from ..manual import manual

README = manual()
"""The whole manual: README.md, then every page of docs/."""
PACKAGE = REPO / "python" / "mcpfast"
DOTTED = re.compile(r"(?<![\w/])mcpfast(?:\.[A-Za-z_]\w*)+")
TELEMETRY = PACKAGE / "telemetry"
OTEL_NAMES = {
    node.value
    for module in ("semconv.py", "metrics.py")
    for node in ast.walk(ast.parse((TELEMETRY / module).read_text()))
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and "." in node.value
}
"""The OpenTelemetry metric and attribute names mcpfast emits (``mcpfast.server.requests``,
``mcp.client.operation.duration``): names of data, not of code, so not checked as such."""


def _module_file(parts: list[str]) -> Path | None:
    """The source of module ``parts`` (``["mcpfast", "server", "bus"]``), None if none."""
    base = PACKAGE.parent.joinpath(*parts)
    for candidate in (base / "__init__.py", base.with_suffix(".py"), base.with_suffix(".pyi")):
        if candidate.is_file():
            return candidate
    return None


def _defines(body: list[ast.stmt], name: str) -> ast.stmt | None:
    """The statement of ``body`` that binds ``name`` at its top level (None: none)."""
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == name:
                return node
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return node
        elif isinstance(node, ast.Import | ast.ImportFrom):
            if any((a.asname or a.name.split(".")[0]) == name for a in node.names):
                return node
        elif isinstance(node, ast.If | ast.Try):  # TYPE_CHECKING blocks, fallbacks
            found = _defines(node.body, name)
            if found is not None:
                return found
    return None


def _resolve(dotted: str) -> bool:
    """Whether ``dotted`` names something: the longest module prefix, then names bound in it
    (and, for a class, in its body), read from the source without importing anything (some
    modules, such as the locust file, patch the interpreter when imported)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        source = _module_file(parts[:cut])
        if source is None:
            continue
        body = ast.parse(source.read_text()).body
        for index, name in enumerate(parts[cut:]):
            if index == 0 and _module_file([*parts[:cut], name]) is not None:
                return _resolve(".".join([*parts[: cut + 1], *parts[cut + 1 :]]))
            node = _defines(body, name)
            if node is None:
                return False
            body = node.body if isinstance(node, ast.ClassDef) else []
        return True
    return any(PACKAGE.glob(f"{parts[-1]}*.so")) if parts[:-1] == ["mcpfast"] else False


def _docstrings() -> dict[str, str]:
    """Every module, class and function docstring of the package, by where it is."""
    out: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        nodes = [tree, *ast.walk(tree)]
        for node in nodes:
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node, clean=False)
                if doc:
                    where = getattr(node, "name", "<module>")
                    out[f"{path.relative_to(REPO)}:{where}"] = doc
    return out


def _named(text: str) -> set[str]:
    """The ``mcpfast.X`` names of ``text``; a module's own attributes (``mcpfast.__file__``)
    are every module's, not mcpfast's."""
    named = {m.rstrip(".") for m in DOTTED.findall(text)} - OTEL_NAMES
    return {n for n in named if not re.fullmatch(r"__\w+__", n.rsplit(".", 1)[1])}


def test_every_mcpfast_name_in_the_readme_exists() -> None:
    missing = [dotted for dotted in sorted(_named(README)) if not _resolve(dotted)]
    assert not missing, f"the manual names what does not exist: {missing}"


def test_every_mcpfast_name_in_a_docstring_exists() -> None:
    missing: list[str] = []
    for where, doc in _docstrings().items():
        missing.extend(f"{where}: {d}" for d in sorted(_named(doc)) if not _resolve(d))
    assert not missing, f"docstrings name what does not exist: {missing}"


def test_the_top_level_names_the_readme_uses_are_exported() -> None:
    """``mcpfast.X`` for a name that is not a submodule (``mcpfast.testing``) is in
    ``__all__``."""
    used = {dotted.split(".")[1] for dotted in _named(README)}
    names = {n for n in used if _module_file(["mcpfast", n]) is None or n == "codec"}
    assert names and names <= set(mcpfast.__all__), names - set(mcpfast.__all__)


def _keywords(call: str) -> set[str]:
    """The keywords the README passes to ``call(...)``."""
    return set(re.findall(rf"\b{call}\([^)]*?\b(\w+)=", README)) | {
        k
        for args in re.findall(rf"\b{call}\(([^)]*)\)", README)
        for k in re.findall(r"(\w+)=", args)
    }


@pytest.mark.parametrize(
    ("call", "target"),
    [
        ("connect", mcpfast.connect),
        ("serve", mcpfast.serve),
        ("Config", Config),
        ("Server", mcpfast.Server),
        ("tool", mcpfast.Server.tool),
    ],
)
def test_the_keywords_the_readme_passes_exist(call: str, target: Any) -> None:
    accepted = set(inspect.signature(target).parameters)
    if call == "tool":
        from mcpfast.server.framework.registry import ToolOptions

        accepted |= set(ToolOptions.__annotations__)
    used = _keywords(call) - {"ARGS"}
    assert used <= accepted, f"{call}() has no {sorted(used - accepted)}"


def test_the_client_and_context_members_the_readme_names_exist() -> None:
    client_init = inspect.getsource(Client.__init__)
    for name in set(re.findall(r"(?<![/\w.])client\.(?!py\b)(\w+)", README)):
        set_up = re.search(rf"self\.{name}\b\s*[:=]", client_init)
        assert hasattr(Client, name) or set_up, f"Client.{name}"
    for name in set(re.findall(r"\bctx\.(\w+)", README)):
        assert hasattr(Context, name), f"Context.{name}"


def _config_rows() -> list[tuple[str, str]]:
    """(field, default) of the README's ``Config`` tables (a row naming one field)."""
    rows = []
    for line in README.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3:
            continue
        for index, cell in enumerate(cells[:-1]):
            field = re.fullmatch(r"`([a-z_]+)`", cell)
            if field and hasattr(Config(), field.group(1)) and index + 1 < len(cells):
                rows.append((field.group(1), cells[index + 1]))
                break
    return rows


UNITS = {"bytes": 1, "s": 1, "h": 3600, "days": 86400, "MiB": 1 << 20, "": 1}


def _amount(text: str) -> float | None:
    match = re.match(r"([\d,.]+)\s*(bytes|s|h|days|MiB|)\b", text)
    if match is None:
        return None
    return float(match.group(1).replace(",", "")) * UNITS[match.group(2)]


def test_the_config_fields_and_defaults_the_readme_gives_are_the_code_s() -> None:
    rows = _config_rows()
    assert len(rows) >= 10
    defaults = Config()
    for field, default in rows:
        amount = _amount(default)
        if amount is not None:
            assert getattr(defaults, field) == amount, f"Config.{field}: README says {default}"
    for field, default in re.findall(r"`Config\.(\w+)` \(([^)]*)\)", README):
        assert hasattr(defaults, field), f"Config.{field}"
        amount = _amount(default)
        if amount is not None:
            assert getattr(defaults, field) == amount, f"Config.{field}: README says {default}"
    for field in re.findall(r"`Config\.(\w+)`", README):
        assert hasattr(defaults, field), f"Config.{field}"


def _source(*folders: str) -> str:
    return "\n".join(
        path.read_text() for folder in folders for path in sorted((PACKAGE / folder).rglob("*.py"))
    )


OTHER_TOOL = re.compile(r"^\s*(?:\$ )?(?:\S*/)?(?:pip|python -m pip|cargo|docker)\s")
"""A line of the README that runs another tool (``pip wheel --no-deps``): its flags are not ours."""


def test_the_cli_flags_the_readme_names_exist() -> None:
    cli = _source("cli", "load")
    ours = "\n".join(line for line in README.splitlines() if not OTHER_TOOL.search(line))
    flags = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", ours)) - {"--help"}
    assert flags
    missing = sorted(f for f in flags if f'"{f}"' not in cli)
    assert not missing, f"no such flag in the CLI: {missing}"


def test_the_environment_variables_the_readme_names_are_read() -> None:
    code = _source(".") + (REPO / "tests" / "helpers.py").read_text()
    for name in set(re.findall(r"\bMCPFAST_[A-Z_]+", README)):
        assert f'"{name}"' in code, name


def test_the_make_targets_the_readme_names_exist() -> None:
    makefile = (REPO / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z-]+):", makefile, re.M))
    named = set(re.findall(r"`make ([a-z-]+)", README))
    named |= {
        t.strip("`") for t in re.findall(r"`(\w[\w-]*)`", README.split("`make help`")[1][:300])
    }
    named &= {n for n in named if not n.startswith("cargo")} - {
        "ruff",
        "mypy",
        "stubtest",
        "clippy",
    }
    assert {"serve", "test", "test-fast"} <= named
    assert named <= targets, named - targets


def test_the_paths_the_readme_names_exist() -> None:
    roots = [REPO, REPO / "python", PACKAGE, REPO / "docs"]  # a page links relative to docs/
    paths = set(re.findall(r"(?<![\w./-])((?:[\w-]+/)+[\w-]+\.(?:py|md|sh))\b", README))
    assert len(paths) >= 10
    missing = sorted(p for p in paths if not any((root / p).exists() for root in roots))
    assert not missing, f"the manual names files that are not there: {missing}"


def test_the_readme_states_no_test_counts_or_durations() -> None:
    """Counts of tests and minutes drift with every change: the README gives none."""
    assert not re.search(r"~\s*[\d,]+ tests|\(~[\d,]+|about \d+(\.\d+)? minutes", README)


def test_this_file_reads_real_paths() -> None:
    assert Path(__file__).name == "test_documented_names.py" and PACKAGE.is_dir()
