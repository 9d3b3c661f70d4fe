"""``mcpfast serve`` as a user runs it: a port already in use is one line before anything is
announced (both engines, one process or several); ``module:attr`` and ``file.py:attr``
import from the current directory; a target that is not there is one line."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import trio

import mcpfast
from mcpfast.cli.exits import Exit
from mcpfast.client import EraCache

from ..helpers import REPO
from .processes import free_port, server_process


def mcpfast_script(*args: str) -> list[str]:
    """The installed ``mcpfast`` console script (whose sys.path does not hold the current
    directory, unlike ``python -m``), or ``python -P -m mcpfast``, which behaves the same."""
    script = Path(sys.executable).with_name("mcpfast")
    if script.exists():
        return [str(script), *args]
    return [sys.executable, "-P", "-m", "mcpfast", *args]


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    return subprocess.run(
        mcpfast_script(*args),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        stdin=subprocess.DEVNULL,
        cwd=cwd,
    )


def failure_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one line a failure prints; nothing was announced, no traceback."""
    assert "Traceback" not in result.stderr, result.stderr
    assert "serving" not in result.stderr, result.stderr
    lines = [
        line
        for line in result.stderr.splitlines()
        if line.startswith("mcpfast: ") and "development signing key" not in line
    ]
    assert len(lines) == 1, result.stderr
    return lines[0]


@contextmanager
def occupied_port() -> Iterator[int]:
    """A port on 127.0.0.1 that something else listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


def several_workers(request: pytest.FixtureRequest, workers: str) -> tuple[str, ...]:
    """``--workers N``, with ``--bus`` (a real Redis) when N is above 1."""
    if workers == "1":
        return ("--workers", "1")
    return ("--workers", workers, "--bus", request.getfixturevalue("redis_url"))


@pytest.mark.parametrize("engine", ["hypercorn", "native"])
@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_port_in_use_is_one_line_before_serving(
    request: pytest.FixtureRequest, engine: str, workers: str
) -> None:
    options = several_workers(request, workers)
    with occupied_port() as port:
        result = run("serve", "--port", str(port), "--engine", engine, *options)
    assert result.returncode == Exit.CANNOT_SERVE
    line = failure_line(result)
    assert f"cannot listen on 127.0.0.1:{port}" in line and "already in use" in line


@pytest.mark.parametrize("engine", ["hypercorn", "native"])
def test_a_second_multi_worker_server_does_not_share_the_port(engine: str, redis_url: str) -> None:
    """SO_REUSEPORT (several workers) must not let a second server join the first's port."""
    port = free_port()
    first = ["serve", "--port", str(port), "--engine", engine, "--workers", "2", "--bus", redis_url]

    async def main() -> None:
        async with server_process(mcpfast_script(*first), port):
            result = await trio.to_thread.run_sync(lambda: run(*first))
        assert result.returncode == Exit.CANNOT_SERVE
        assert "already in use" in failure_line(result)

    trio.run(main)


APP = """
import mcpfast
from helper import GREETING

app = mcpfast.Server("from-cwd")
not_a_server = 42

@app.tool()
def hello() -> str:
    return GREETING
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A directory holding ``myapp.py`` (Server ``app``, which imports a sibling module)."""
    (tmp_path / "myapp.py").write_text(APP)
    (tmp_path / "helper.py").write_text("GREETING = 'hello from the current directory'\n")
    return tmp_path


@pytest.mark.parametrize(
    ("target", "options"),
    [
        ("myapp:app", ()),
        ("myapp.py:app", ()),
        ("./myapp.py:app", ("--engine", "native")),
        ("myapp:app", ("--workers", "2")),  # Hypercorn's workers import it again
        ("myapp.py:app", ("--workers", "2", "--engine", "native")),
    ],
)
async def test_serve_imports_from_the_current_directory(
    request: pytest.FixtureRequest, project: Path, target: str, options: tuple[str, ...]
) -> None:
    if "--workers" in options:
        options = (*options, "--bus", request.getfixturevalue("redis_url"))
    port = free_port()
    argv = mcpfast_script("serve", target, "--port", str(port), *options)
    async with server_process(argv, port, cwd=project) as url:
        async with mcpfast.connect(url, era_cache=EraCache()) as client:
            assert client.server_info["name"] == "from-cwd"
            result = await client.call_tool("hello")
    assert result.content[0].text == "hello from the current directory"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("target", "said"),
    [
        ("nosuch:app", "no module named 'nosuch'"),
        ("nosuch.py:app", "no such file: nosuch.py"),
        ("myapp:missing", "myapp has no attribute 'missing' (its Servers: app)"),
        ("myapp:not_a_server", "myapp:not_a_server is not an mcpfast.Server (but an int)"),
        ("myapp.py:missing", "myapp.py has no attribute 'missing'"),
    ],
)
def test_a_target_that_is_not_there_is_one_line(project: Path, target: str, said: str) -> None:
    result = run("serve", target, "--port", str(free_port()), cwd=project)
    assert result.returncode == Exit.USAGE
    assert said in failure_line(result)


@pytest.mark.parametrize("engine", ["hypercorn", "native"])
def test_several_workers_without_a_bus_is_a_usage_error_naming_it(
    monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    monkeypatch.delenv("MCPFAST_BUS", raising=False)
    result = run("serve", "--port", str(free_port()), "--engine", engine, "--workers", "2")
    assert result.returncode == Exit.USAGE
    line = failure_line(result)
    assert "--workers" in line and "--bus" in line
