"""The access log through the real stack, both engines: a protected server, a request with a
bearer token and a secret among its arguments; the log has one line per request with its
fields, and neither the token nor the secret; JSON lines parse, text lines are ``key=value``."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

import mcpfast
from mcpfast.server.config import AuthConfig

from ..helpers import MODERN, Wire, meta, running

devserver = pytest.importorskip("mcpfast.auth.devserver")

RESOURCE = "http://mcp.test/mcp"
SECRET = "hunter2-do-not-log"
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"


def keeper() -> mcpfast.Server:
    server = mcpfast.Server("keeper", "1.0")

    @server.tool()
    async def keep(secret: str) -> str:
        return f"kept {len(secret)} characters"

    return server


@pytest.mark.parametrize("engine", ["hypercorn", "native"])
@pytest.mark.parametrize("form", ["json", "text"])
async def test_the_access_log_has_the_fields_and_no_secrets(
    tmp_path: Path, engine: str, form: str
) -> None:
    log = tmp_path / "access.log"
    async with devserver.dev_authorization_server(scopes_supported=["mcp"]) as dev:
        token = dev.mint("alice", scope="mcp", audience=RESOURCE)
        auth = AuthConfig(issuer=dev.issuer, resource=RESOURCE, jwks_url=dev.jwks_uri)
        config = {"engine": engine, "auth": auth, "access_log": str(log), "log_format": form}
        async with running(keeper(), **config) as url, httpx2.AsyncClient(timeout=10) as http:
            wire = Wire(http, url)
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "keep", "arguments": {"secret": SECRET}, "_meta": meta()},
            }
            headers = {
                "mcp-protocol-version": MODERN,
                "mcp-method": "tools/call",
                "mcp-name": "keep",
                "traceparent": f"00-{TRACE_ID}-b7ad6b7169203331-01",
            }
            refused = await wire.post(body, headers)
            assert refused.status == 401
            reply = await wire.post(body, {**headers, "authorization": f"Bearer {token}"})
            assert reply.status == 200, reply.response.text
            assert reply.result["content"][0]["text"] == f"kept {len(SECRET)} characters"
    text = log.read_text()
    assert token not in text and token[-20:] not in text
    assert SECRET not in text
    lines = text.splitlines()
    assert len(lines) == 2
    records = [json.loads(line) if form == "json" else _pairs(line) for line in lines]
    for record, status in zip(records, (401, 200), strict=True):
        assert str(record["status"]) == str(status)
        assert record["era"] == "modern"
        assert record["method"] == "tools/call"
        assert record["name"] == "keep"
        assert record["trace_id"] == TRACE_ID
        assert float(record["duration_ms"]) >= 0
        assert record["time"].endswith("Z")


def _pairs(line: str) -> dict[str, str]:
    """A text line's ``key=value`` pairs (values here have no spaces)."""
    return dict(part.split("=", 1) for part in line.split(" "))


async def test_off_by_default_the_endpoint_answers_directly() -> None:
    """No access log: `Endpoint.handle` is the endpoint's own method, nothing in between."""
    from mcpfast.server.core.endpoint import Endpoint
    from mcpfast.server.state.keys import KeyRing

    keys = KeyRing(keys={"k": b"0" * 32}, signing="k")
    plain = Endpoint(keeper(), mcpfast.Config(), keys)
    assert plain.handle == plain._answer
    logged = Endpoint(keeper(), mcpfast.Config(access_log="-"), keys)
    assert logged.handle != logged._answer
