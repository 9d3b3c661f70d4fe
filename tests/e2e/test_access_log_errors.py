"""The access log writes a JSON-RPC error as an error (issue 29): its code in ``error``, even
when HTTP said 200 (an unknown tool, a streamed answer that ends in an error); a result has
none. A real server on both engines, the real client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import mcpfast
from mcpfast import Context

from ..helpers import running


def failing() -> mcpfast.Server:
    server = mcpfast.Server("failing", "1.0")

    @server.tool()
    async def fine() -> str:
        return "ok"

    @server.tool()
    async def slow_failure(ctx: Context) -> str:
        await ctx.report_progress(1, 2)  # a stream: the error comes after a notification
        raise mcpfast.ProtocolError(-32099, "the tool gave up")

    return server


@pytest.mark.parametrize("engine", ["hypercorn", "native"])
async def test_a_json_rpc_error_is_logged_with_its_code(tmp_path: Path, engine: str) -> None:
    log = tmp_path / "access.log"
    config = {"engine": engine, "access_log": str(log), "log_format": "json"}
    async with running(failing(), **config) as url, mcpfast.connect(url) as client:
        assert not (await client.call_tool("fine", {})).isError
        with pytest.raises(mcpfast.MCPError) as unknown:
            await client.call_tool("missing", {})
        with pytest.raises(mcpfast.MCPError) as gave_up:
            await client.call_tool("slow_failure", {}, progress=lambda *_: None)
    assert gave_up.value.code == -32099
    records = [json.loads(line) for line in log.read_text().splitlines()]
    calls = {r["name"]: r for r in records if r["method"] == "tools/call"}
    assert calls["fine"]["error"] is None
    assert calls["missing"]["error"] == unknown.value.code
    assert calls["slow_failure"]["error"] == -32099
    assert all(r["error"] is None for r in records if r["method"] != "tools/call")
