"""What a test may open, and what it must not leave behind (pytest hooks, imported by
``tests/conftest.py``).

- **slow** is decided here, in one place: a test is ``slow`` when it uses a fixture in
  `SOCKET_FIXTURES` (directly, through other fixtures or as a parameter), or lives under
  `SLOW_PATHS`, or says so itself (``@pytest.mark.slow``, in a module mixing both kinds).
- **The guard** makes forgetting impossible: a test *not* marked ``slow`` that binds or
  connects a socket, or starts a process, fails naming what it opened (in every run, so
  ``make test-fast`` never opens one).
- **The reaper**: a process a test started and left running after its teardown is killed and
  the test errors naming it; at the end of the run, any child of the pytest process still alive
  (a session fixture's, say) is killed and the run fails naming it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Generator, Iterable
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent

SOCKET_FIXTURES = frozenset(
    {
        "demo_url",  # tests/e2e: the demo server on loopback
        "auth_server",  # tests/auth: the stand-in authorization server
        "dev",  # tests/security: the development authorization server
        "engine",  # an HTTP engine under test: its tests serve it on loopback
        "redis_url",
        "redis_server",
        "redis_session_server",
    }
)
"""Fixtures that open sockets or start processes: every test using one is ``slow``."""

SLOW_PATHS = tuple(
    HERE / path
    for path in (
        "e2e",
        "examples",  # examples/ run as their users would: servers, clients, Redis, locust
        "security",
        "telemetry",  # real servers, to see the spans and metrics of real requests
        "auth/test_client_oauth.py",
        "auth/test_dpop_nonce_success.py",
        "server/test_sockets.py",
        "test_backend.py",  # a fresh interpreter per case
        "test_isolation.py",  # a pytest of its own
        "test_shared_bundle.py",  # a pytest of its own
    )
)
"""Directories and modules where (nearly) every test serves sockets or runs processes."""

GRACE = 5.0
"""Seconds a test's leftover process gets to exit on its own before it is killed."""


def is_slow(item: pytest.Item) -> bool:
    """The rule: a socket fixture in the test's closure, a slow area, or its own mark."""
    if item.get_closest_marker("slow") is not None:
        return True
    if SOCKET_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return True
    return any(item.path.is_relative_to(path) for path in SLOW_PATHS)


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects on the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if is_slow(item):
            item.add_marker(pytest.mark.slow)


# --- the guard ---------------------------------------------------------------------------------

_OPENED = pytest.StashKey[list[str]]()


def _guarded(opened: list[str], what: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        opened.append(f"{what}{args[1:]!r}"[:200])
        raise OSError(f"a test not marked slow must not {what} (tests/isolation.py)")

    refuse.__wrapped__ = original  # type: ignore[attr-defined]
    return refuse


_PATCHED: tuple[tuple[type, str, str], ...] = (
    (socket.socket, "bind", "bind a socket"),
    (socket.socket, "connect", "connect a socket"),
    (socket.socket, "connect_ex", "connect a socket"),
    (subprocess.Popen, "_execute_child", "start a process"),
)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """Run a test not marked ``slow`` with sockets and processes refused."""
    if item.get_closest_marker("slow") is not None:
        return (yield)
    opened = item.stash.setdefault(_OPENED, [])
    saved = [(owner, name, owner.__dict__.get(name)) for owner, name, _ in _PATCHED]
    for owner, name, what in _PATCHED:
        setattr(owner, name, _guarded(opened, what, getattr(owner, name)))
    try:
        return (yield)
    finally:
        for owner, name, original in saved:
            if original is None:
                delattr(owner, name)  # inherited (socket.socket's from _socket.socket)
            else:
                setattr(owner, name, original)


# --- the reaper --------------------------------------------------------------------------------

_BEFORE = pytest.StashKey[set[int]]()
_AFTER_SETUP = pytest.StashKey[set[int]]()
_LEFT = pytest.StashKey[list[str]]()
LEFT_BEHIND: list[str] = []
"""Processes the run left behind (this process's, or its xdist workers'), as descriptions."""
_FIXTURES_OWN: set[int] = set()
"""Processes started by a fixture that outlives a test (session or module scope), whenever it
was set up: before a test or on the fly (``request.getfixturevalue``) in its body."""


def _children(pid: int) -> list[int]:
    """The children of ``pid``, from ``/proc/<pid>/task/*/children`` (empty where there is no
    such file: the reaper then sees nothing)."""
    found: list[int] = []
    try:
        for task in os.scandir(f"/proc/{pid}/task"):
            with open(f"{task.path}/children") as children:
                found.extend(int(child) for child in children.read().split())
    except OSError:  # gone meanwhile, or no /proc
        pass
    return found


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead and waiting for its parent's wait, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def descendants() -> set[int]:
    """The live descendants of this process."""
    found: set[int] = set()
    pending = _children(os.getpid())
    while pending:
        pid = pending.pop()
        if _alive(pid):
            found.add(pid)
        pending.extend(_children(pid))
    return found


def describe(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            command = cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        command = "?"
    return f"pid {pid}: {command[:200]}"


def _wait(pids: Iterable[int], seconds: float) -> list[int]:
    """Those of ``pids`` still alive after at most ``seconds``."""
    deadline = time.monotonic() + seconds
    alive = [pid for pid in pids if _alive(pid)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [pid for pid in alive if _alive(pid)]
    return alive


def reap(pids: Iterable[int], grace: float) -> list[str]:
    """Wait ``grace`` seconds for ``pids`` to exit, kill the rest; describes those killed."""
    alive = _wait(pids, grace)
    killed = [describe(pid) for pid in alive]
    for pid in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _wait(alive, grace)
    return killed


def _long_lived(item: pytest.Item) -> bool:
    """Whether the test uses a fixture that outlives it (whose processes may stay), counting
    those requested on the fly (``request.getfixturevalue``, which only pytest's private
    ``_fixture_defs`` records)."""
    request = getattr(item, "_request", None)
    definitions = getattr(request, "_fixture_defs", {})
    return any(definition.scope != "function" for definition in definitions.values())


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any]) -> Generator[None, Any, Any]:
    """A fixture that outlives the test owns the processes its setup starts."""
    if fixturedef.scope == "function":
        return (yield)
    before = descendants()
    try:
        return (yield)
    finally:
        _FIXTURES_OWN.update(descendants() - before)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_BEFORE] = descendants()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    item.stash[_AFTER_SETUP] = descendants()


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Kill what the test started and left running; the test then errors (see makereport).

    Processes started while setting up a fixture that outlives the test (session or module
    scope) are that fixture's: they are left to it, and to the end-of-run reaper."""
    left = descendants() - _FIXTURES_OWN
    for known in (_BEFORE, _AFTER_SETUP) if _long_lived(item) else (_BEFORE,):
        if known in item.stash:
            pids: set[int] = item.stash[known]
            left -= pids
    if left:
        item.stash[_LEFT] = reap(left, GRACE)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A refused socket or process fails the test; so does a process left behind."""
    report = yield
    opened = item.stash[_OPENED] if _OPENED in item.stash else []
    if call.when != "teardown" and opened and not report.failed:
        report.outcome = "failed"
        report.longrepr = f"not marked slow, yet tried to {'; '.join(opened)} (tests/isolation.py)"
    left = item.stash[_LEFT] if _LEFT in item.stash else []
    if call.when == "teardown" and left:
        report.outcome = "failed"
        report.longrepr = "left processes running (killed): " + "; ".join(left)
    return report


_WORKER_LEFT = "mcpfast_left_behind"


def _controller(config: pytest.Config) -> bool:
    """Whether this is pytest-xdist's controller (its children are the workers, not leftovers)."""
    return config.pluginmanager.getplugin("dsession") is not None


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """After the session fixtures' teardown: kill every descendant still alive. A worker hands
    what it killed to the controller; otherwise the run fails here."""
    if not _controller(session.config):
        LEFT_BEHIND.extend(reap(descendants(), GRACE))
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[_WORKER_LEFT] = list(LEFT_BEHIND)
    elif LEFT_BEHIND:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """(pytest-xdist, in the controller) collect what a finished worker left behind."""
    LEFT_BEHIND.extend(getattr(node, "workeroutput", {}).get(_WORKER_LEFT, ()))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for process in LEFT_BEHIND:
        terminalreporter.write_line(f"mcpfast: the run left a process running (killed): {process}")
