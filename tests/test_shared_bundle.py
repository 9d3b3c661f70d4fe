"""Without the shared bundle a user's clone still runs the behaviour assertions (schema checks
are passed over and counted); under ``CI=true`` its absence fails. Skips keep their reasons."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .helpers import REPO

VALIDATING_TEST = "tests/e2e/test_legacy.py::test_handshake_and_calls_validate_against_the_revision"


def _pytest(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "CI"}
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *args],
        cwd=REPO,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_behaviour_runs_without_the_schemas(tmp_path: Path) -> None:
    run = _pytest([VALIDATING_TEST], MCPFAST_SHARED=str(tmp_path / "absent"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "3 passed" in run.stdout
    assert "schema validations passed over: the shared spec bundle" in run.stdout


def test_ci_requires_the_bundle(tmp_path: Path) -> None:
    run = _pytest([VALIDATING_TEST], MCPFAST_SHARED=str(tmp_path / "absent"), CI="true")
    assert run.returncode == 1
    assert "CI=true requires it" in run.stdout


def test_a_trio_test_keeps_its_skip_reason(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text("from tests.conftest import *  # noqa: F403\n")
    (tmp_path / "test_skips.py").write_text(
        "import pytest\n\n\n"
        "async def test_async_skip():\n"
        '    pytest.skip("the peer is not installed")\n'
    )
    run = _pytest(["-o", "trio_mode=true", str(tmp_path)], PYTHONPATH=str(REPO))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "test_skips.py:4: the peer is not installed" in run.stdout
