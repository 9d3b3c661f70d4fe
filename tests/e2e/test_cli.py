"""The `mcpfast` command as a user runs it: serve, inspect, call (HTTP and stdio)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import trio

from ..helpers import REPO, meta
from .processes import free_port, mcpfast_command, server_process


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    return subprocess.run(
        mcpfast_command(*args), capture_output=True, text=True, env=env, timeout=60
    )


async def test_serve_answers_the_readme_curl_then_inspect_and_call() -> None:
    port = free_port()
    async with server_process(mcpfast_command("serve", "--port", str(port)), port) as url:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hello"}, "_meta": meta()},
        }
        headers = {
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": "echo",
        }
        async with httpx.AsyncClient() as client:
            response = await client.post(url, json=body, headers=headers)
        assert response.json()["result"]["content"] == [{"type": "text", "text": "hello"}]
        inspected = await trio.to_thread.run_sync(run, "inspect", url)
        report = json.loads(inspected.stdout)
        assert report["era"] == "modern" and report["serverInfo"]["name"] == "mcpfast-demo"
        assert {t["name"] for t in report["tools"]} == {"echo", "add", "slow", "greet"}
        legacy = await trio.to_thread.run_sync(run, "inspect", "--era", "legacy", url)
        assert json.loads(legacy.stdout)["protocolVersion"] == "2025-11-25"
        added = await trio.to_thread.run_sync(run, "call", url, "add", "a=2", "b=40")
        assert added.returncode == 0 and json.loads(added.stdout) == {"result": 42}
        failed = await trio.to_thread.run_sync(run, "call", url, "add", "a=x", "b=1")
        assert failed.returncode == 1 and "$.a" in failed.stdout
        unknown = await trio.to_thread.run_sync(run, "call", url, "nope")
        assert unknown.returncode == 2 and "Unknown tool" in unknown.stderr


def test_call_over_stdio() -> None:
    server = f"{sys.executable} -m mcpfast serve --stdio"
    result = run("call", "--stdio", server, "echo", "text=over stdio")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "over stdio"
