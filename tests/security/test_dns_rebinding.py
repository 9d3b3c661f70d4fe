"""DNS rebinding against a server bound beyond the loopback names (``0.0.0.0`` as in a container,
``127.0.0.2``, a host name resolving to loopback), both engines, real HTTP: a page of
``attacker.example`` whose name now resolves to the server sends ``Host: attacker.example``
and an ``Origin`` equal to it. Refused by default; clients without an ``Origin`` (curl, SDKs)
still work; ``allowed_hosts`` / ``allowed_origins`` admit what they list."""

from __future__ import annotations

import logging
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest

import mcpfast

from ..helpers import Wire, running

ATTACKER = "attacker.example"


def rebinding_server() -> mcpfast.Server:
    server = mcpfast.Server("rebinding", "1")

    @server.tool(instant=True)
    def secret() -> str:
        return "the developer's data"

    return server


@asynccontextmanager
async def bound(bind: str, engine: str, **config: Any) -> AsyncIterator[tuple[Wire, int]]:
    """Serve on ``bind``; a `Wire` reaching it (over loopback) and its port."""
    async with running(rebinding_server(), engine=engine, host=bind, **config) as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        target = "127.0.0.1" if bind == "0.0.0.0" else socket.gethostbyname(bind)
        async with httpx2.AsyncClient(timeout=10) as client:
            yield Wire(client, f"http://{target}:{port}/mcp"), port


async def call(wire: Wire, host: str | None = None, origin: str | None = None) -> int:
    """The status of a ``tools/call`` with these ``Host`` and ``Origin`` headers."""
    headers = {"host": host, "origin": origin}
    reply = await wire.modern(
        "tools/call",
        {"name": "secret", "arguments": {}},
        headers={k: v for k, v in headers.items() if v is not None},
    )
    return reply.status


BINDS = pytest.mark.parametrize("bind", ["0.0.0.0", "127.0.0.2"])


@BINDS
async def test_another_host_name_is_refused(engine: str, bind: str) -> None:
    async with bound(bind, engine) as (wire, port):
        assert await call(wire, f"{ATTACKER}:{port}") == 403
        assert await call(wire, f"{ATTACKER}:{port}", f"http://{ATTACKER}:{port}") == 403
        assert await call(wire, f"[::1]x.{ATTACKER}:{port}") == 403


@BINDS
async def test_an_origin_equal_to_the_host_is_not_enough(engine: str, bind: str) -> None:
    """The rebinding page's Origin and Host are the same name: on a name the server answers
    (its own address, the machine's name), and with the Host check open (``["*"]``, behind a
    proxy), it is refused unless ``allowed_origins`` lists it."""
    own = socket.gethostname()
    address = "127.0.0.1" if bind == "0.0.0.0" else bind
    async with bound(bind, engine) as (wire, port):
        assert await call(wire, f"{own}:{port}") == 200
        assert await call(wire, f"{own}:{port}", f"http://{own}:{port}") == 403
        assert await call(wire, f"{address}:{port}") == 200
        if bind != "0.0.0.0":
            assert await call(wire, f"{address}:{port}", f"http://{address}:{port}") == 403
        assert await call(wire, f"{address}:{port}", "null") == 403
    async with bound(bind, engine, allowed_hosts=["*"]) as (wire, port):
        assert await call(wire, f"{ATTACKER}:{port}") == 200  # told to answer any Host
        assert await call(wire, f"{ATTACKER}:{port}", f"http://{ATTACKER}:{port}") == 403
    origin = f"http://{ATTACKER}:{port}"
    async with bound(bind, engine, allowed_hosts=["*"], allowed_origins=[origin]) as (wire, _):
        assert await call(wire, f"{ATTACKER}:{port}", origin) == 200


@BINDS
async def test_clients_without_an_origin_and_listed_names_are_served(
    engine: str, bind: str
) -> None:
    address = "127.0.0.1" if bind == "0.0.0.0" else bind
    async with bound(bind, engine) as (wire, port):
        assert await call(wire) == 200  # curl, SDKs: Host is the address they dialled
        assert await call(wire, f"localhost:{port}") == 200
        assert await call(wire, f"{address}:{port}", f"http://localhost:{port}") == 200
    app = "https://app.example"
    async with bound(bind, engine, allowed_hosts=["mcp.example"], allowed_origins=[app]) as (
        wire,
        port,
    ):
        assert await call(wire, "mcp.example") == 200
        assert await call(wire, f"MCP.example:{port}", app) == 200
        assert await call(wire, f"{address}:{port}") == 403  # only what is listed
        assert await call(wire, "mcp.example", f"http://{ATTACKER}") == 403
    async with bound(bind, engine, allowed_hosts=["mcp.example"]) as (wire, port):
        # the Host is checked against the operator's list: its own Origin is safe
        assert await call(wire, "mcp.example", "https://mcp.example") == 200
        assert await call(wire, "mcp.example", f"http://{ATTACKER}") == 403


async def test_a_host_name_resolving_to_loopback_binds_as_loopback(engine: str) -> None:
    """Debian maps the machine's name to 127.0.1.1: a bind to it is a loopback bind."""
    own = socket.gethostname()
    try:
        address = socket.gethostbyname(own)
    except OSError:
        pytest.skip("the host name does not resolve")
    if not address.startswith("127."):
        pytest.skip("the host name does not resolve to loopback here")
    async with bound(own, engine) as (wire, port):
        assert await call(wire, f"{ATTACKER}:{port}") == 403
        assert await call(wire, f"{own}:{port}") == 200


async def test_an_open_host_check_is_announced(
    engine: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, "mcpfast.serve"):
        async with bound("127.0.0.1", engine):
            pass
        assert not caplog.records
        async with bound("127.0.0.1", engine, allowed_hosts=["*"]):
            pass
    assert "any Host is answered" in caplog.text
