"""Shared fixtures: ``codec`` runs a test once per codec backend (Rust and the Python twin)."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

BACKENDS = ("rust", "python")
_MODULES = {"rust": "mcpfast._rust", "python": "mcpfast._codec_py"}


def load_backend(name: str) -> ModuleType:
    """The backend module, or a skip when the Rust extension is unavailable.

    The Rust backend is skipped when ``MCPFAST_NO_EXTENSIONS`` disables extensions, or when the
    extension is not built -- except under ``CI=true``, where a missing extension is a failure.
    """
    if name == "rust":
        if os.environ.get("MCPFAST_NO_EXTENSIONS", "") not in ("", "0"):
            pytest.skip("MCPFAST_NO_EXTENSIONS is set: the Rust extension is disabled")
        try:
            return importlib.import_module(_MODULES[name])
        except ImportError as error:
            reason = (
                f"the Rust extension mcpfast._rust is not built ({error}); "
                "build it with `.venv/bin/maturin develop --release -q`"
            )
            if os.environ.get("CI") == "true":
                pytest.fail(reason)
            pytest.skip(reason)
    return importlib.import_module(_MODULES[name])


@pytest.fixture(params=BACKENDS)
def codec(request: pytest.FixtureRequest) -> ModuleType:
    """One codec backend: ``mcpfast._rust`` or its twin ``mcpfast._codec_py``."""
    return load_backend(request.param)


@pytest.fixture
def backends() -> tuple[ModuleType, ModuleType]:
    """Both backends, Rust first, for differential tests."""
    return load_backend("rust"), load_backend("python")
