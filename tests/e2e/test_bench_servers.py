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


def test_a_legacy_request_carries_the_same_head_to_a_bare_baseline_as_to_mcpfast(
    bench_http: ModuleType,
) -> None:
    """A bare baseline keeps no sessions, so it mints no id; its legacy request still carries one
    of the size mcpfast mints (`bench_http.STAND_IN_SESSION`): both HTTP stacks parse the same
    head, and the rows differ only by what the application does."""
    found = {t.name: t for t in bench_http.targets()}
    if "mcpfast hypercorn engine" not in found:
        pytest.skip("the Rust extension is not installed")
    heads = {}
    for name in ("bare (hypercorn-trio)", "mcpfast hypercorn engine"):
        port = bench_http.free_port()
        process = bench_http.start(found[name], port)
        try:
            heads[name] = bench_http.request_for("legacy", f"http://127.0.0.1:{port}/mcp")[1]
        finally:
            bench_http.stop(process)
    bare, ours = heads["bare (hypercorn-trio)"], heads["mcpfast hypercorn engine"]
    assert bare["mcp-session-id"] == bench_http.STAND_IN_SESSION
    assert ours["mcp-session-id"] != bench_http.STAND_IN_SESSION  # minted by the server
    assert sorted(bare) == sorted(ours)
    # the id mcpfast mints varies by a few bytes (its key id, the issue time)
    assert abs(len(bare["mcp-session-id"]) - len(ours["mcp-session-id"])) <= 8
