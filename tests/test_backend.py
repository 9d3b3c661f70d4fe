"""The facade says which codec is active, and the environment variable forces the twin."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .helpers import REPO


def backend(**env: str) -> str:
    full = {k: v for k, v in os.environ.items() if k != "MCPFAST_NO_EXTENSIONS"}
    full.update(env)
    full["PYTHONPATH"] = str(REPO / "python")
    code = "import mcpfast; print(mcpfast.BACKEND)"
    return subprocess.run(
        [sys.executable, "-c", code], env=full, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_the_variable_forces_the_python_twin() -> None:
    assert backend(MCPFAST_NO_EXTENSIONS="1") == "python"


def test_the_rust_extension_is_active_after_setup() -> None:
    try:
        import mcpfast._rust  # noqa: F401
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("CI builds the extension (make setup); it must be importable")
        pytest.skip("the Rust extension is not built here (run make setup)")
    assert backend() == "rust"


def test_the_reason_says_why_and_what_the_twin_costs() -> None:
    from mcpfast._fallback import COST

    env = {**os.environ, "MCPFAST_NO_EXTENSIONS": "1"}
    code = "import mcpfast; print(mcpfast.BACKEND_REASON)"
    forced = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert forced.startswith("MCPFAST_NO_EXTENSIONS is set: ") and COST in forced
