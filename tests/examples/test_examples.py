"""Every program in examples/, run as its docstring says (only the ports change): real servers on
loopback on both HTTP engines, real clients in their own processes, the development
authorization server, a real Redis behind several workers, and the load gate's verdicts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..e2e.processes import free_port, mcpfast_command, server_process
from ..helpers import REPO

EXAMPLES = REPO / "examples"
ENGINES = ["hypercorn", "native"]
WEATHER_OUTPUT = [
    "['add', 'forecast']",
    "{'result': 42}",
    "progress 1 of 2",
    "Porto: 21 degrees Fahrenheit",
    '{"city":"Porto","country":"Portugal"}',
    "Plan a day out in Porto, given tomorrow's forecast.",
    "['Paris', 'Porto', 'Prague']",
]


def _env(**extra: str) -> dict[str, str]:
    """A user's shell: the venv's commands on PATH, mcpfast importable."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path, "PYTHONPATH": str(REPO / "python"), **extra}


def _run(*argv: str, timeout: float = 60, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, env=_env(**env), capture_output=True, text=True, timeout=timeout, cwd=REPO
    )


def _lines(run: subprocess.CompletedProcess[str]) -> list[str]:
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    return run.stdout.splitlines()


def _weather(url: str, era: str) -> list[str]:
    return _lines(_run(sys.executable, "examples/weather/client.py", url, era))


@pytest.mark.timeout(120)
@pytest.mark.both_engines
@pytest.mark.parametrize("engine", ENGINES)
async def test_weather_in_both_eras(engine: str) -> None:
    """Each feature, and the elicitation both ways: a live request (legacy), a round (modern)."""
    port = free_port()
    argv = mcpfast_command("serve", "examples/weather/server.py:server", "--port", str(port))
    async with server_process([*argv, "--engine", engine], port, cwd=REPO) as url:
        for era, version in (("modern", "2026-07-28"), ("legacy", "2025-11-25")):
            lines = _weather(url, era)
            assert lines[0] == f"{era} {version} weather"
            assert lines[1:] == WEATHER_OUTPUT


async def test_weather_as_a_script() -> None:
    port = free_port()
    argv = [sys.executable, "examples/weather/server.py", str(port)]
    async with server_process(argv, port, cwd=REPO) as url:
        assert _weather(url, "auto")[1:] == WEATHER_OUTPUT


@pytest.mark.timeout(120)
@pytest.mark.both_engines
@pytest.mark.parametrize("engine", ENGINES)
async def test_protected_server_with_the_dev_authorization_server(engine: str) -> None:
    issuer_port, port = free_port(), free_port()
    issuer = f"http://127.0.0.1:{issuer_port}"
    dev = mcpfast_command(
        "auth-server", "--port", str(issuer_port), "--client", "svc:s3cret",
        "--scope", "mcp", "--scope", "files:write",
    )  # fmt: skip
    async with server_process(dev, issuer_port, cwd=REPO):
        serve = [sys.executable, "examples/protected/server.py", str(port), issuer, engine]
        async with server_process(serve, port, cwd=REPO) as url:
            refused = _run(
                sys.executable, "examples/protected/client.py", url, issuer, SVC_SECRET="wrong"
            )
            assert refused.returncode != 0 and "invalid_client" in refused.stderr
            run = _run(
                sys.executable, "examples/protected/client.py", url, issuer, SVC_SECRET="s3cret"
            )
            assert _lines(run) == ["svc saved notes.txt"]


@pytest.mark.timeout(180)  # two workers to start, three clients in processes of their own
@pytest.mark.both_engines
@pytest.mark.parametrize("engine", ENGINES)
async def test_workers_on_a_redis_bus(engine: str, redis_url: str) -> None:
    """Two workers on one port and one Redis (`examples/workers/serve.sh`): each client opens a
    legacy session on a connection of its own, whichever worker the kernel hands it to, and
    answers an elicitation in it."""
    port = free_port()
    argv = ["bash", "examples/workers/serve.sh", "--engine", engine]
    env = {"PORT": str(port), "REDIS_URL": redis_url, "PATH": _env()["PATH"]}
    async with server_process(argv, port, env=env, cwd=REPO) as url:
        for _ in range(3):
            assert _weather(url, "legacy")[1:] == WEATHER_OUTPUT


@pytest.mark.timeout(300)  # two runs of locust
@pytest.mark.serial  # locust: the machine to itself
async def test_the_load_gate(tmp_path: Path) -> None:
    """Exit 0 when every threshold holds; 4 naming the threshold when one fails."""
    port = free_port()
    argv = mcpfast_command("serve", "examples/weather/server.py:server", "--port", str(port))
    async with server_process([*argv, "--engine", "native"], port, cwd=REPO) as url:
        gate = ["bash", "examples/load-gate/ci-load.sh", url]
        common = {"DURATION": "3s", "USERS": "2"}
        passed = _run(*gate, timeout=120, OUT=str(tmp_path / "ok"), MIN_RPS="1", **common)
        assert passed.returncode == 0, passed.stdout[-2000:] + passed.stderr[-2000:]
        assert (tmp_path / "ok" / "load.json").exists()
        failed = _run(*gate, timeout=120, OUT=str(tmp_path / "no"), MIN_RPS="1000000", **common)
        assert failed.returncode == 4, failed.stdout[-2000:] + failed.stderr[-2000:]
        assert "rps<1000000" in failed.stdout + failed.stderr
