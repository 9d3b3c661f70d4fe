"""The manual's "Protecting a server" example (docs/authorization.md), run as written (only the issuer and the port
change): 401 without a token, the metadata, 403 without the tool's scope, 200 with it."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx2

from ..e2e.processes import free_port, server_process
from ..helpers import meta
from ..manual import block, page
from .conftest import AuthServer


def example() -> str:
    return block(page("authorization.md"), "## Protecting a server", "python")


async def test_the_protecting_a_server_example(auth_server: AuthServer, tmp_path: Path) -> None:
    port = free_port()
    source = example()
    assert source.count("http://127.0.0.1:9000") == 1 and source.count("8000") == 2
    source = source.replace("http://127.0.0.1:9000", auth_server.issuer)
    (tmp_path / "files.py").write_text(
        source.replace(":8000", f":{port}").replace("8000", str(port))
    )
    resource = f"http://127.0.0.1:{port}/mcp"
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "save", "arguments": {"path": "a.txt"}, "_meta": meta()},
    }
    headers = {
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "save",
        "accept": "application/json, text/event-stream",
    }
    async with server_process([sys.executable, "files.py"], port, cwd=tmp_path) as url:
        async with httpx2.AsyncClient(timeout=10) as client:
            reply = await client.post(url, json=body, headers=headers)
            assert reply.status_code == 401
            assert reply.headers.get_list("www-authenticate")[0] == (
                f'Bearer scope="mcp", resource_metadata="http://127.0.0.1:{port}'
                '/.well-known/oauth-protected-resource/mcp"'
            )
            document = (
                await client.get(f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource")
            ).json()
            assert document["resource"] == resource
            assert document["authorization_servers"] == [auth_server.issuer]
            narrow = auth_server.token(aud=resource, scope="mcp")
            reply = await client.post(
                url, json=body, headers={**headers, "authorization": f"Bearer {narrow}"}
            )
            assert reply.status_code == 403
            challenge = reply.headers.get_list("www-authenticate")[0]
            assert challenge.startswith('Bearer error="insufficient_scope"')
            assert 'scope="files:write mcp"' in challenge
            wide = auth_server.token(aud=resource, scope="mcp files:write")
            reply = await client.post(
                url, json=body, headers={**headers, "authorization": f"Bearer {wide}"}
            )
            assert reply.status_code == 200, reply.text
            assert reply.json()["result"]["content"][0]["text"] == "user-1 saved a.txt"
