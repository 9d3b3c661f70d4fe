"""Sessions are signed tokens: a server process restarted mid-session goes on serving it, and
the client does not notice."""

from __future__ import annotations

import base64
from pathlib import Path

import httpx2
import pytest
import trio

import mcpfast
from mcpfast.client import EraCache

from ..helpers import session_of
from .processes import free_port, mcpfast_command, server_process

KEYS = "k1:" + base64.urlsafe_b64encode(b"restart-test-key-32-bytes-long!!").decode()


ENGINES = pytest.mark.parametrize("engine", ["hypercorn", "native"])


@ENGINES
async def test_restart_mid_session_is_invisible_to_the_client(engine: str) -> None:
    port = free_port()
    argv = mcpfast_command("serve", "--port", str(port), "--engine", engine)
    env = {"MCPFAST_KEYS": KEYS}
    async with server_process(argv, port, env) as url:
        client_cm = mcpfast.connect(url, "legacy", open_get_stream=False, era_cache=EraCache())
        client = await client_cm.__aenter__()
        try:
            assert (await client.call_tool("add", {"a": 1, "b": 1})).structuredContent == {
                "result": 2
            }
            session = session_of(client)
        # the first server is gone here; the same port gets a fresh process with the same keys
        except BaseException:
            await client_cm.__aexit__(None, None, None)
            raise
    try:
        async with server_process(argv, port, env):
            result = await client.call_tool("add", {"a": 20, "b": 22})
            assert result.structuredContent == {"result": 42}
            assert session_of(client) == session, "the session survived, no re-initialize"
    finally:
        await client_cm.__aexit__(None, None, None)


PID_SERVER = """
import os
import mcpfast
server = mcpfast.Server("pids")
@server.tool()
def pid() -> int:
    return os.getpid()
"""


@ENGINES
async def test_several_workers_serve_any_session(
    tmp_path: Path, engine: str, redis_url: str
) -> None:
    target = tmp_path / "pids.py"
    target.write_text(PID_SERVER)
    port = free_port()
    argv = mcpfast_command(
        "serve",
        f"{target}:server",
        "--port",
        str(port),
        "--workers",
        "2",
        "--engine",
        engine,
        "--bus",
        redis_url,
    )
    no_reuse = httpx2.Limits(max_keepalive_connections=0)
    async with server_process(argv, port, {"MCPFAST_KEYS": KEYS}) as url:
        async with httpx2.AsyncClient(limits=no_reuse) as http:
            async with mcpfast.connect(
                url, "legacy", open_get_stream=False, era_cache=EraCache(), http_client=http
            ) as client:
                pids: set[int] = set()
                # the second worker may still be booting when the first answers: keep asking
                # (fresh connection each time) until both have served the session, or give up
                with trio.move_on_after(20):
                    while len(pids) < 2:
                        result = await client.call_tool("pid")
                        pids.add(result.structuredContent["result"])
                        await trio.sleep(0.02)
                session = session_of(client)
    assert len(pids) == 2, "one session, served by both worker processes"
    assert session is not None
