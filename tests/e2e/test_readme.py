"""The README's examples, run as written (only the port changes): the server example as a
script, the client example against it over HTTP and over the stdio command it names, the curl
line and every `mcpfast` client line against the demo server; and the headless `mcpfast load`
lines of the manual's load-testing page (docs/load-testing.md), which no other test runs."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from ..helpers import ENGINE, REPO
from ..manual import block, page, section
from .processes import free_port, mcpfast_command, server_process

README = page("README.md")
BIN = Path(sys.executable).parent


def _block(heading: str, language: str) -> str:
    """The first fenced block of ``language`` after the README's ``heading``."""
    return block(README, heading, language)


def _env() -> dict[str, str]:
    """The user's shell: the venv's commands on PATH; ``weather:server`` is found from the
    current directory by ``mcpfast serve`` itself."""
    path = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path, "PYTHONPATH": str(REPO / "python")}


def _run(argv: list[str], cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout
    )


def _client_output(run: subprocess.CompletedProcess[str]) -> list[str]:
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    return run.stdout.splitlines()


async def test_the_server_and_client_examples(tmp_path: Path) -> None:
    port = free_port()
    server = _block("## A server", "python").replace("port=8000", f"port={port}")
    assert "port=" in server and "host=" in server
    (tmp_path / "weather.py").write_text(server)
    client = _block("## A client", "python").replace(":8000/", f":{port}/")
    async with server_process([sys.executable, "weather.py"], port, cwd=tmp_path):
        (tmp_path / "client.py").write_text(client)
        lines = _client_output(_run([sys.executable, "client.py"], tmp_path))
    assert lines[0].split() == ["modern", "2026-07-28", "weather"]
    assert lines[1] == "['add', 'forecast']"
    assert lines[2] == "{'result': 42}"
    assert lines[3] == "progress 1 of 2"
    assert lines[4] == "Porto: 21 degrees Fahrenheit"
    # the stdio command the example names, in place of the URL
    command = re.search(r"# or (\[.*?\])", client)
    assert command is not None
    url = f'"http://127.0.0.1:{port}/mcp",'
    (tmp_path / "client.py").write_text(client.replace(url, command.group(1) + ","))
    lines = _client_output(_run([sys.executable, "client.py"], tmp_path))
    assert lines[0].split()[0] == "modern" and lines[-1] == "Porto: 21 degrees Fahrenheit"


@pytest.fixture
async def demo() -> object:
    port = free_port()
    argv = mcpfast_command("serve", "--port", str(port), "--engine", ENGINE)
    async with server_process(argv, port) as url:
        yield port, url


async def test_the_curl_line_and_the_cli_lines(demo: tuple[int, str], tmp_path: Path) -> None:
    port, _ = demo
    shown = re.search(r"```bash\n(curl .*?)```", README, re.S)
    assert shown is not None, "README.md shows no curl line"
    curl = shown.group(1).replace(":8000/", f":{port}/").replace("\\\n", " ")
    run = _run(shlex.split(curl), tmp_path)
    assert run.returncode == 0 and '"text":"hello"' in run.stdout.replace(" ", "")
    cli = block(section(README, "## A client"), "From the shell, against the demo", "bash")
    lines = [line.split("  #")[0] for line in cli.splitlines() if line.startswith("mcpfast ")]
    assert len(lines) >= 3
    for line in lines:
        run = _run(shlex.split(line.replace(":8000/", f":{port}/")), tmp_path)
        assert run.returncode == 0, (line, run.stderr)
        assert "Traceback" not in run.stderr and run.stdout.strip(), line


async def test_the_load_lines(demo: tuple[int, str], tmp_path: Path) -> None:
    """Each headless `mcpfast load` line of docs/load-testing.md, shortened to two seconds."""
    _, url = demo
    shown = block(page("load-testing.md"), "## Load testing any MCP server", "bash")
    lines = [line.split("  #")[0] for line in shown.splitlines() if "--web" not in line]
    assert len(lines) >= 2
    for line in lines:
        argv = shlex.split(
            line.replace("http://127.0.0.1:8000/mcp", url).replace(" URL ", f" {url} ")
        )
        argv = [*argv, "-t", "2s"] if "-t" not in argv else argv
        argv[argv.index("-t") + 1] = "2s"
        run = _run(argv, tmp_path, timeout=90)
        assert run.returncode == 0, (line, run.stdout[-2000:], run.stderr[-2000:])
        assert "Traceback" not in run.stderr and "0 failures" in run.stdout, line
