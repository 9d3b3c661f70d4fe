"""Shared fixtures: ``codec`` runs a test once per codec backend (Rust and the Python twin);
hooks that keep a Trio test's skip reason and report schema checks passed over (from every
pytest-xdist worker too); `tests.isolation` (``slow``, the socket guard, the process reaper)."""

from __future__ import annotations

import importlib
import os
from collections.abc import AsyncIterator, Generator
from types import ModuleType
from typing import Any

import httpx2
import pytest
from _pytest.outcomes import Skipped

from . import isolation
from .helpers import SHARED_MISSING, SKIPPED_VALIDATIONS
from .redis_server import redis_server, redis_session_server, redis_url  # noqa: F401 (fixtures)

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
async def http() -> AsyncIterator[httpx2.AsyncClient]:
    """An HTTP client that reads redirects rather than following them (an authorization
    server's answers are the tests' subject)."""
    async with httpx2.AsyncClient(timeout=10, follow_redirects=False) as client:
        yield client


@pytest.fixture
def backends() -> tuple[ModuleType, ModuleType]:
    """Both backends, Rust first, for differential tests."""
    return load_backend("rust"), load_backend("python")


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.is_registered(isolation):
        config.pluginmanager.register(isolation, "mcpfast-isolation")


def _skip_reason(error: BaseException) -> str | None:
    """The message of the `Skipped` a Trio test raised: pytest-trio re-raises it with no
    message, keeping the original (inside an exception group) as the context."""
    context = error.__context__
    while isinstance(context, BaseExceptionGroup):
        context = context.exceptions[0] if len(context.exceptions) == 1 else None
    return context.msg if isinstance(context, Skipped) and context.msg else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.skipped and call.excinfo is not None and isinstance(report.longrepr, tuple):
        reason = _skip_reason(call.excinfo.value)
        if reason is not None:
            path, line, _ = item.location
            report.longrepr = (path, (line or 0) + 1, f"Skipped: {reason}")
    return report


_WORKER_SKIPPED = "mcpfast_skipped_validations"


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An xdist worker hands its passed-over validations to the controller, which reports them."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[_WORKER_SKIPPED] = list(SKIPPED_VALIDATIONS)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """(pytest-xdist, in the controller) collect a finished worker's passed-over validations."""
    SKIPPED_VALIDATIONS.extend(getattr(node, "workeroutput", {}).get(_WORKER_SKIPPED, ()))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if SKIPPED_VALIDATIONS:
        terminalreporter.write_line(
            f"mcpfast: {len(SKIPPED_VALIDATIONS)} schema validations passed over: "
            f"{SHARED_MISSING} (the tests' own assertions ran)"
        )
