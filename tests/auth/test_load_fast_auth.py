"""``mcpfast load --engine fast --client-id`` against a protected server, through the real stack:
the development authorization server and an mcpfast server protected by `AuthConfig` on
loopback (`tests/auth/test_load_auth.protected`), the load run as the CLI runs it, on the Rust
engine and its Trio twin. The plan process obtains one ``client_credentials`` token and builds
every request with it; a token that would expire before the run's end is refused before any
load."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from ..helpers import REPO
from .test_load_auth import SECRET, SECRET_VAR, Protected, protected

pytestmark = [pytest.mark.slow, pytest.mark.serial]


async def _fast(
    setup: Protected, out: Path, *extra: str, python: bool = False, expect: int = 0
) -> tuple[str, dict[str, Any]]:
    """``mcpfast load --engine fast`` as the registered client, 2 s with 4 connections: what it
    printed (and logged) and its ``summary.json`` (empty when it wrote none)."""
    if importlib.util.find_spec("locust") is None:
        pytest.skip("locust (mcpfast[load]) is not installed")
    argv = [sys.executable, "-m", "mcpfast", "load", setup.url, "--engine", "fast"]
    argv += ["-t", "2s", "-u", "4", "--out", str(out), "--client-id", setup.client_id]
    argv += ["--client-secret-env", SECRET_VAR, "--auth-issuer", setup.issuer, *extra]
    env = {**os.environ, "PYTHONPATH": str(REPO / "python"), SECRET_VAR: SECRET}
    env["MCPFAST_NO_EXTENSIONS"] = "1" if python else ""
    with trio.fail_after(150):  # a busy machine: the token, the probe, the processes, the run
        done = await trio.run_process(
            argv, capture_stdout=True, capture_stderr=True, check=False, env=env
        )
    log = out / "locust.log"
    output = done.stdout.decode() + done.stderr.decode() + (log.read_text() if log.exists() else "")
    assert done.returncode == expect, output
    path = out / "summary.json"
    return output, json.loads(path.read_text()) if path.exists() else {}


@pytest.mark.parametrize("python", [False, True], ids=["rust", "trio"])
async def test_one_token_for_every_request(python: bool, tmp_path: Path) -> None:
    """Stateless calls and legacy sessions (opened with the token), none refused: one token
    request, after discovery; the secret is never printed or logged."""
    async with protected() as setup:
        output, summary = await _fast(
            setup, tmp_path, "--mix", "tools=1,session=1", "--tool", "echo", python=python
        )
    rows = {r["name"]: r for r in summary["requests"]}
    assert set(rows) == {"tools/call echo", "legacy tools/call echo"}, rows
    assert all(r["requests"] > 0 for r in rows.values()), rows
    assert summary["total"]["failures"] == 0, summary["errors"]
    assert summary["engine"]["backend"] == ("python" if python else "rust")
    assert setup.tokens == 1, setup.paths
    assert setup.from_load == ["/.well-known/oauth-authorization-server", "/token"]
    assert SECRET not in output
    assert (tmp_path / "plan.json").stat().st_mode & 0o777 == 0o600  # it holds the token


async def test_a_token_expiring_before_the_run_ends_is_refused(tmp_path: Path) -> None:
    """A token of 5 s for a 2 s run (and up to 10 s to start): refused, saying why and what to
    do, before the probe (exit 3)."""
    async with protected(access_token_lifetime=5.0) as setup:
        output, summary = await _fast(setup, tmp_path, expect=3)
    assert "the access token expires in" in output, output
    assert "--engine locust (which renews tokens)" in output, output
    assert summary["total"] is None and summary["requests"] == [], summary
    assert setup.tokens == 1, setup.paths
    assert setup.from_load == ["/.well-known/oauth-authorization-server", "/token"]
