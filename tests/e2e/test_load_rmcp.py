"""``mcpfast load --engine fast`` against rmcp, the official Rust SDK (``benches/rmcp_echo``,
built with cargo by `make test`, or here when it is not built yet): stateless 2026-07-28 ``tools/call``, the
``server/discover`` lists, and legacy-session calls on sessions opened beforehand; every answer
judged a success, by the Rust engine and by its Trio twin. Skipped without cargo, unless
CI=true."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import trio

from ..helpers import REPO
from .processes import free_port, server_process
from .test_load_fast import _fast, _names

RMCP_ECHO = REPO / "benches" / "rmcp_echo"
BUILDS = (
    RMCP_ECHO / "target" / "release" / "rmcp-echo",
    RMCP_ECHO / "target" / "debug" / "rmcp-echo",
)
"""The binaries: `make bench-servers`'s release build, else `make test`'s debug one (a cold
debug build takes about a minute on two cores, a release one with thin LTO about three)."""
BUILD_SECONDS = 600
"""A cold debug build (crates fetched and compiled) on a busy two-core machine."""


async def _rmcp_echo() -> Path:
    """The rmcp echo server's binary, built now (``cargo build``, debug) when neither build is
    there; skips (fails under CI=true) when cargo is absent."""
    for binary in BUILDS:
        if binary.exists():
            return binary
    if shutil.which("cargo") is None:
        reason = "cargo is not installed: cannot build benches/rmcp_echo"
        if os.environ.get("CI") == "true":
            pytest.fail(reason + " and CI=true requires it")
        pytest.skip(reason)
    env = {**os.environ, "CARGO_TARGET_DIR": str(RMCP_ECHO / "target")}
    with trio.fail_after(BUILD_SECONDS):
        await trio.run_process(["cargo", "build", "--quiet"], cwd=RMCP_ECHO, env=env)
    return BUILDS[1]


@pytest.mark.timeout(BUILD_SECONDS + 60)  # the first may build the server
@pytest.mark.parametrize("python", [False, True], ids=["rust", "trio"])
@pytest.mark.parametrize(
    ("workload", "extra", "names", "era"),
    [
        ("tools", (), {"tools/call echo"}, "modern"),
        ("lists", (), {"server/discover", "tools/list"}, "modern"),
        ("session", ("--era", "legacy"), {"legacy tools/call echo"}, "legacy"),
    ],
)
async def test_fast_engine_against_rmcp(
    workload: str, extra: tuple[str, ...], names: set[str], era: str, python: bool, tmp_path: Path
) -> None:
    """Each workload's requests, none failed, from the Rust engine and its Trio twin: rmcp's
    answers (JSON in 2026-07-28, SSE in its legacy sessions) pass the locust users' rule."""
    binary = await _rmcp_echo()
    port = free_port()
    async with server_process([str(binary), str(port)], port) as url:
        summary = await _fast(url, tmp_path, "--user-class", workload, *extra, no_extensions=python)
    assert set(_names(summary)) >= names, summary["requests"]
    assert summary["total"]["requests"] > 0
    assert summary["total"]["failures"] == 0, summary["errors"]
    assert summary["era"]["era"] == era, summary["era"]
