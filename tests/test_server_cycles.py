"""No two modules of `mcpfast.server` import each other, however indirectly, counting every
import: lazy ones in functions and ``if TYPE_CHECKING:`` ones too."""

from __future__ import annotations

from .test_layers import GRAPH

SERVER = "mcpfast.server"


def _edges() -> dict[str, set[str]]:
    return {
        module: {dep for dep, _ in deps if dep.startswith(SERVER + ".") and dep != module}
        for module, deps in GRAPH.items()
        if module.startswith(SERVER + ".")
    }


def _cycle(edges: dict[str, set[str]], start: str) -> list[str] | None:
    stack = [(start, [start])]
    seen: set[str] = set()
    while stack:
        node, path = stack.pop()
        for dep in edges.get(node, ()):
            if dep == start:
                return [*path, dep]
            if dep not in seen:
                seen.add(dep)
                stack.append((dep, [*path, dep]))
    return None


def test_no_cycles_within_the_server_counting_every_import() -> None:
    edges = _edges()
    cycles = [c for m in sorted(edges) if (c := _cycle(edges, m)) is not None]
    assert not cycles, cycles[0]
