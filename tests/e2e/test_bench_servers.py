"""The baselines of ``benches/bench_http.py`` answer what the benchmark sends them (a row whose
server crashed on every request would be read as a broken benchmark, or not at all): each server
started as the benchmark starts it, each workload's request checked as the benchmark checks it."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from types import ModuleType

import pytest

from ..helpers import REPO


@pytest.fixture(scope="module")
def bench_http() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("bench_http", REPO / "benches" / "bench_http.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_http"] = module  # its dataclasses look their module up
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules["bench_http"]


@pytest.mark.parametrize(
    "name",
    [
        "bare (hypercorn-trio)",
        "bare (uvicorn+httptools)",
        "bare (trio, raw sockets)",
        "mcpfast native engine",
    ],
)
def test_a_baseline_answers_the_benchmarks_requests(bench_http: ModuleType, name: str) -> None:
    target = next((t for t in bench_http.targets() if t.name == name), None)
    if target is None:
        pytest.skip(f"{name}: the bench extra or the Rust extension is not installed")
    port = bench_http.free_port()
    process = bench_http.start(target, port)
    try:
        for workload in target.workloads:
            # raises unless the answer carries the echoed text
            bench_http.request_for(workload, f"http://127.0.0.1:{port}/mcp")
    finally:
        bench_http.stop(process)


def test_a_round_runs_each_cells_servers_back_to_back_in_alternating_order(
    bench_http: ModuleType,
) -> None:
    """The servers of one workload and connection count run one after the other, in the
    opposite order every other round; a ratio is the median of the rounds' own ratios."""
    cells = [
        (server, workload, c)
        for workload in ("legacy", "modern")
        for c in (16, 64)
        for server in ("bare", "ours")
    ]
    assert bench_http._alternated(cells, 0) == cells
    flipped = bench_http._alternated(cells, 1)
    assert flipped[:2] == [("ours", "legacy", 16), ("bare", "legacy", 16)]
    assert sorted(flipped) == sorted(cells)
    ours = {0: 90.0, 1: 50.0, 2: 99.0}
    base = {0: 100.0, 1: 100.0, 2: 100.0}
    assert bench_http._rounds_ratio(ours, base) == "0.90x"
    assert bench_http._rounds_ratio(ours, {}) == "-"
