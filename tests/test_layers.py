"""The package's layers, read from its import statements: the sans-IO core imports no I/O
library, the client and the load tester use no server (nor the load tester the client), and no
two modules import each other, however indirectly or lazily."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import mcpfast

PACKAGE = Path(mcpfast.__file__).parent
IO_LIBRARIES = ("trio", "httpx2", "hypercorn", "socket", "ssl", "anyio", "locust", "gevent")


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> Iterator[str]:
    """Each module ``path`` imports, absolute: at module level, in functions or under
    ``if TYPE_CHECKING:`` alike."""
    module = _module(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                name = f"{base}.{alias.name}"
                yield name if _is_module(name) else base


def _is_module(name: str) -> bool:
    relative = Path(*name.split(".")[1:])
    return (PACKAGE / relative).with_suffix(".py").exists() or (PACKAGE / relative).is_dir()


GRAPH = {
    _module(path): sorted(set(_imports(path)))
    for path in PACKAGE.rglob("*.py")
    if "__pycache__" not in path.parts
}


def _under(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def _within(prefix: str) -> dict[str, list[str]]:
    return {m: deps for m, deps in GRAPH.items() if m == prefix or m.startswith(prefix + ".")}


def test_the_core_imports_no_io() -> None:
    for module, deps in _within("mcpfast.protocol").items():
        for dep in deps:
            assert dep.split(".")[0] not in IO_LIBRARIES, f"{module} imports {dep}"
            assert not _under(dep, ("mcpfast.server", "mcpfast.client", "mcpfast.load")), (
                f"{module} imports {dep}"
            )


def test_http_is_httpx2_never_httpx() -> None:
    """The package's HTTP client is ``httpx2``, the maintained continuation of ``httpx``: no
    module imports ``httpx`` (nor its ``httpcore``), at module level or lazily. Peers such as
    the official SDK may bring ``httpx`` along; that is theirs."""
    offenders = [
        f"{module} imports {dep}"
        for module, deps in GRAPH.items()
        for dep in deps
        if dep.split(".")[0] in ("httpx", "httpcore")
    ]
    assert not offenders, offenders
    assert any(dep.split(".")[0] == "httpx2" for deps in GRAPH.values() for dep in deps)


OAUTH = ("mcpfast.client.oauth",)
"""The OAuth client: a public package whose discovery, scope choice and grants are coroutines
over any HTTP callable, so the load tester (on gevent) uses them as they are."""


@pytest.mark.parametrize(
    ("layer", "forbidden", "allowed"),
    [
        ("mcpfast.client", ("mcpfast.server", "mcpfast.load", "mcpfast.cli"), ()),
        ("mcpfast.load", ("mcpfast.server", "mcpfast.client", "mcpfast.cli"), OAUTH),
        ("mcpfast.server", ("mcpfast.client", "mcpfast.load"), ()),
    ],
)
def test_layers_import_only_downwards(
    layer: str, forbidden: tuple[str, ...], allowed: tuple[str, ...]
) -> None:
    for module, deps in _within(layer).items():
        for dep in deps:
            assert not _under(dep, forbidden) or _under(dep, allowed), f"{module} imports {dep}"


SERVER = "mcpfast.server"
FACE = frozenset(f"{SERVER}{name}" for name in ("", ".access", ".config", ".serve", ".seams"))
"""The server's face (`Server`, `Config`, `serve`, `asgi_app`), its seams and who is asking:
every module of the server is one of these or in a wing."""
LEAVES = (f"{SERVER}.access", f"{SERVER}.config", f"{SERVER}.seams")
"""Imported by any wing: who is asking, plain settings, and the Protocols every wing sees."""

WINGS: list[tuple[str, tuple[str, ...], dict[str, set[str]]]] = [
    # (wing, the wings and modules it may import, the arrows that remain (module: deps))
    ("state", ("state",), {}),
    ("framework", ("framework",), {}),
    ("auth", ("auth", "state", "framework"), {}),
    ("core", ("core", "state", "framework", "auth"), {}),
    # the engines see the core's two entries: HTTP requests and line connections
    ("engines", ("engines", "core.endpoint", "core.lines"), {}),
]
"""The server's wings, bottom up: ``state`` (what outlives a request) imports nothing above
it; ``framework`` (what an author touches) is a declaration with no core, engine or ops
behind it; ``auth`` (the resource server) sees no core; the ``core`` no engine and no ops;
the ``engines`` only the core's entries (the endpoint, line connections). ``ops`` may import
every wing."""


def _server_deps(module: str) -> list[str]:
    return [d for d in GRAPH[module] if _under(d, (SERVER,)) and d != SERVER]


def test_every_server_module_has_its_wing() -> None:
    wings = tuple(f"{SERVER}.{w}" for w in ("state", "framework", "auth", "core", "engines", "ops"))
    homeless = [m for m in _within(SERVER) if m not in FACE and not _under(m, wings)]
    assert not homeless, homeless


def test_the_leaves_import_nothing_of_the_server() -> None:
    for leaf in LEAVES:
        assert not _server_deps(leaf), f"{leaf} imports {_server_deps(leaf)}"


@pytest.mark.parametrize(("wing", "allowed", "remaining"), WINGS, ids=[w[0] for w in WINGS])
def test_wings_import_only_downwards(
    wing: str, allowed: tuple[str, ...], remaining: dict[str, set[str]]
) -> None:
    packages = (*(f"{SERVER}.{a}" for a in allowed), *LEAVES)
    for module in _within(f"{SERVER}.{wing}"):
        kept = remaining.get(module.removeprefix(SERVER + "."), set())
        for dep in _server_deps(module):
            assert _under(dep, packages) or dep in kept, f"{module} imports {dep}"


def test_the_remaining_arrows_still_exist() -> None:
    """An arrow cut leaves its wing's list (so it cannot grow back unnoticed)."""
    for _, _, remaining in WINGS:
        for module, deps in remaining.items():
            gone = deps - set(GRAPH[f"{SERVER}.{module}"])
            assert not gone, f"{module} no longer imports {gone}: remove it from WINGS"


def test_no_import_cycles() -> None:
    """Counting every import: module-level, lazy ones in functions, ``if TYPE_CHECKING:`` ones
    (a package counts as its ``__init__``, which its modules may import)."""
    edges = {
        m: {d for d in deps if d.startswith("mcpfast.") and d != m} for m, deps in GRAPH.items()
    }

    def cycle_from(start: str) -> list[str] | None:
        stack = [(start, [start])]
        seen = set()
        while stack:
            node, path = stack.pop()
            for dep in edges.get(node, ()):
                if dep == start and not start.startswith(dep + "."):
                    return [*path, dep]
                if dep not in seen and not start.startswith(dep + "."):
                    seen.add(dep)
                    stack.append((dep, [*path, dep]))
        return None

    cycles = [c for m in sorted(edges) if (c := cycle_from(m)) is not None]
    assert not cycles, cycles[0]


MAX_LINES = 450
"""No module longer: one concept to a file (issue 25)."""

STILL_TO_SPLIT: set[str] = set()
"""Modules over `MAX_LINES` that are still to be split; the list only shrinks."""


def _lengths() -> dict[str, int]:
    return {
        path.relative_to(PACKAGE).as_posix(): len(path.read_text().splitlines())
        for path in PACKAGE.rglob("*.py")
        if "__pycache__" not in path.parts
    }


def test_no_module_is_over_450_lines() -> None:
    over = {name: n for name, n in _lengths().items() if n > MAX_LINES}
    assert over.keys() <= STILL_TO_SPLIT, {k: over[k] for k in over.keys() - STILL_TO_SPLIT}


def test_the_modules_still_to_split_are_still_over() -> None:
    """A module split below `MAX_LINES` leaves `STILL_TO_SPLIT` (so it cannot grow back)."""
    lengths = _lengths()
    done = {name for name in STILL_TO_SPLIT if lengths.get(name, 0) <= MAX_LINES}
    assert not done, f"remove from STILL_TO_SPLIT: {sorted(done)}"
