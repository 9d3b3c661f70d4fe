"""Honest load reports (issue 29): the summary shows what a failing tool said (its ``isError``
text, a JSON-RPC error's message: bounded); ``--processes 2`` keeps its live progress and
prints no traceback. ``mcpfast load`` in its own process against a real server on the engine
under test."""

from __future__ import annotations

import os
from pathlib import Path

import trio

from ..helpers import ENGINE, REPO
from .processes import free_port, mcpfast_command, server_process
from .test_load import _require

SERVER = """
import itertools
import mcpfast

server = mcpfast.Server("failing", "1.0")
calls = itertools.count()


@server.tool()
def convert(value: float) -> str:
    if next(calls) % 2:
        raise mcpfast.ProtocolError(-32099, "the converter is out of coffee")
    raise ValueError("units must be metric, not " + "kelvin" * 40)
"""


async def test_the_summary_shows_what_the_tool_said(tmp_path: Path) -> None:
    _require("locust", "the load extra")
    (tmp_path / "failing.py").write_text(SERVER)
    port = free_port()
    serve = mcpfast_command("serve", "failing:server", "--port", str(port), "--engine", ENGINE)
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    async with server_process(serve, port, cwd=tmp_path):
        url = f"http://127.0.0.1:{port}/mcp"
        argv = mcpfast_command(
            "load", url, "-t", "2s", "-u", "2", "--user-class", "tools", "--tool", "convert",
            "--out", str(tmp_path / "out"), "-q",
        )  # fmt: skip
        with trio.fail_after(60):
            done = await trio.run_process(
                argv, capture_stdout=True, capture_stderr=True, check=False, env=env, cwd=tmp_path
            )
    output = done.stdout.decode()
    assert "Traceback" not in done.stderr.decode(), done.stderr.decode()
    errors = output[output.index("errors by HTTP status and JSON-RPC code:") :]
    lines = {line.split()[1]: line for line in errors.splitlines()[3:] if line.strip()}
    assert "the converter is out of coffee" in lines["-32099"], errors
    tool_error = lines["-"]
    assert "tool error (isError): units must be metric, not kelvin" in tool_error, errors
    assert "kelvin" * 20 not in tool_error  # bounded


async def test_two_processes_keep_the_live_progress_and_no_bare_traceback(tmp_path: Path) -> None:
    _require("locust", "the load extra")
    port = free_port()
    serve = mcpfast_command("serve", "--port", str(port), "--engine", ENGINE)
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    async with server_process(serve, port):
        url = f"http://127.0.0.1:{port}/mcp"
        argv = mcpfast_command(
            "load", url, "-t", "3s", "-u", "4", "--processes", "2", "--out", str(tmp_path)
        )
        with trio.fail_after(90):
            done = await trio.run_process(
                argv, capture_stdout=True, capture_stderr=True, check=False, env=env
            )
    output = done.stdout.decode() + done.stderr.decode()
    assert done.returncode == 0, output
    assert "Traceback" not in output, output
    progress = [line for line in output.splitlines() if "req/s" in line and "users" in line]
    assert progress, output


async def test_the_compare_chart_carries_the_run_parameters(tmp_path: Path) -> None:
    _require("locust", "the load extra")
    _require("matplotlib", "the load extra")
    port = free_port()
    serve = mcpfast_command("serve", "--port", str(port), "--engine", ENGINE)
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    async with server_process(serve, port) as url:
        argv = mcpfast_command(
            "load", "--compare", f"a={url}", f"b={url}", "--rounds", "1", "-t", "1s", "-u", "2",
            "--user-class", "tools", "--tool", "echo", "--out", str(tmp_path),
        )  # fmt: skip
        with trio.fail_after(90):
            done = await trio.run_process(
                argv, capture_stdout=True, capture_stderr=True, check=False, env=env
            )
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()
    from PIL import Image

    with Image.open(tmp_path / "compare.png") as image:
        text = dict(image.text)  # type: ignore[attr-defined]
    assert text["Title"] == "mcpfast load --compare: a vs b"
    described = text["Description"]
    assert described.startswith("2 users, 1s x 1 round, era auto, user classes tools, tool echo, ")
    assert described.endswith(" UTC")
