"""`tests.isolation` at work, in a pytest of its own: an unmarked test that opens a socket or
starts a process fails naming it; a process a test leaves running is killed and the test
errors; one left by a session fixture is killed and fails the run, naming it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from .helpers import REPO

CONFTEST = "from tests.conftest import *  # noqa: F403\n"


def _pytest(directory: Path, source: str) -> subprocess.CompletedProcess[str]:
    (directory / "conftest.py").write_text(CONFTEST)
    (directory / "test_it.py").write_text(source)
    environ = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(directory)],
        cwd=REPO,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_an_unmarked_test_that_opens_a_socket_or_a_process_fails_naming_it(
    tmp_path: Path,
) -> None:
    run = _pytest(
        tmp_path,
        "import socket, subprocess\n\n\n"
        "def test_binds():\n"
        "    try:\n"
        "        socket.socket().bind(('127.0.0.1', 0))\n"
        "    except OSError:\n"
        "        pass  # swallowed: the test fails all the same\n\n\n"
        "def test_starts():\n"
        "    subprocess.run(['true'])\n",
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "not marked slow, yet tried to bind a socket" in run.stdout
    assert "a test not marked slow must not start a process" in run.stdout
    assert "2 failed" in run.stdout


def test_a_process_a_test_leaves_running_is_killed_and_the_test_errors(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    run = _pytest(
        tmp_path,
        "import subprocess\nimport pytest\n\n\n"
        "@pytest.mark.slow\n"
        "def test_leaves():\n"
        "    process = subprocess.Popen(['sleep', '300'])\n"
        f"    open({str(pid_file)!r}, 'w').write(str(process.pid))\n",
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "left processes running (killed)" in run.stdout and "sleep 300" in run.stdout
    assert "1 passed" in run.stdout and "1 error" in run.stdout
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid)


def test_a_process_left_by_a_session_fixture_fails_the_run_naming_it(tmp_path: Path) -> None:
    run = _pytest(
        tmp_path,
        "import subprocess\nimport pytest\n\n\n"
        "@pytest.fixture(scope='session')\n"
        "def leaky():\n"
        "    yield subprocess.Popen(['sleep', '301'])\n\n\n"
        "@pytest.mark.slow\n"
        "def test_uses_it(leaky):\n"
        "    pass\n",
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 passed" in run.stdout
    assert "the run left a process running (killed)" in run.stdout
    assert "sleep 301" in run.stdout
