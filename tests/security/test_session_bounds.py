"""What a legacy session carries in its signed ``Mcp-Session-Id`` is bounded before it is kept:
a subscribed URI (`MAX_URI_BYTES`), the subscriptions together (`MAX_SUBSCRIPTION_BYTES`,
`MAX_SUBSCRIPTIONS`), the client's capabilities; a URI must name a served resource. A refusal
is -32602 (-32002 for an unknown resource) and changes nothing: no id is re-minted, and the
next id carries only what was accepted. No response head passes ``max_header_bytes``, on an
open server and on a protected one, on both engines."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import msgspec
import pytest

import mcpfast
from mcpfast.auth.devserver import DevAuthorizationServer
from mcpfast.server.state import sessions
from mcpfast.server.state.sessions import (
    MAX_ID_BYTES,
    MAX_SUBSCRIPTION_BYTES,
    MAX_SUBSCRIPTIONS,
    MAX_URI_BYTES,
    Session,
)

from ..helpers import Reply, Wire, raw_http, running
from .conftest import auth_config, protected, tenant

VERSION = "2025-11-25"
PAGES = "docs://pages/"
"""The template ``docs://pages/{page}``: every URI under it names a served resource."""


def docs_server() -> mcpfast.Server:
    server = mcpfast.Server("docs", "1.0")

    @server.resource("docs://readme")
    def readme() -> str:
        return "read me"

    @server.resource(PAGES + "{page}")
    def page(page: str) -> str:
        return page

    return server


class Client:
    """Raw legacy requests of one user (``auth``: its headers; empty on an open server)."""

    def __init__(self, wire: Wire, auth: dict[str, str]) -> None:
        self.wire = wire
        self.auth = auth

    async def initialize(self, capabilities: dict[str, Any] | None = None) -> Reply:
        params = {
            "protocolVersion": VERSION,
            "capabilities": capabilities or {},
            "clientInfo": {"name": "bounds", "version": "1"},
        }
        body = {"jsonrpc": "2.0", "id": self.wire.next_id(), "method": "initialize"}
        return await self.wire.post({**body, "params": params}, self.auth)

    async def call(self, session: str, method: str, params: dict[str, Any]) -> Reply:
        body = {"jsonrpc": "2.0", "id": self.wire.next_id(), "method": method, "params": params}
        headers = {**self.auth, "mcp-protocol-version": VERSION, "mcp-session-id": session}
        return await self.wire.post(body, headers)

    async def open(self) -> str:
        reply = await self.initialize()
        assert reply.status == 200, reply.messages
        return reply.headers["mcp-session-id"]


@pytest.fixture(params=["open", "protected"])
async def client(
    request: pytest.FixtureRequest, engine: str, dev: DevAuthorizationServer
) -> AsyncIterator[Client]:
    """A user of the docs server: unauthenticated on an open server, a tenant with a real
    token on a protected one."""
    if request.param == "open":
        async with running(docs_server(), engine=engine) as url:
            async with httpx2.AsyncClient(timeout=10) as http:
                yield Client(Wire(http, url), {})
    else:
        async with protected(docs_server(), engine, dev) as (_, wire):
            yield Client(wire, tenant(dev, "alice").headers)


def carried(session_id: str) -> Session:
    """What a session id carries (its payload; the signature is the server's business)."""
    payload = session_id.split(".")[3]
    return msgspec.json.decode(
        base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)), type=Session
    )


def refused(reply: Reply, code: int = -32602) -> bool:
    """A JSON-RPC error ``code`` that re-mints no session id (nothing changed)."""
    return reply.error["code"] == code and "mcp-session-id" not in reply.headers


async def test_a_long_uri_is_refused_and_nothing_is_kept(client: Client) -> None:
    session = await client.open()
    for size in (MAX_URI_BYTES + 1, 256 * 1024):
        uri = PAGES + "x" * (size - len(PAGES))
        reply = await client.call(session, "resources/subscribe", {"uri": uri})
        assert refused(reply), reply.messages
        assert reply.error["data"] == {"limit": MAX_URI_BYTES, "size": size}
    accepted = await client.call(session, "resources/subscribe", {"uri": "docs://readme"})
    assert accepted.result == {}
    assert carried(accepted.headers["mcp-session-id"]).subscriptions == ["docs://readme"]


async def test_subscriptions_are_bounded_in_bytes_and_count(client: Client) -> None:
    session = await client.open()
    long = MAX_URI_BYTES - len(PAGES) - 4
    kept: list[str] = []
    while True:  # URIs of 2 KiB until their total would pass the bound
        uri = f"{PAGES}{len(kept):04}{'x' * long}"
        reply = await client.call(session, "resources/subscribe", {"uri": uri})
        if sum(len(u) for u in [*kept, uri]) > MAX_SUBSCRIPTION_BYTES:
            break
        assert reply.result == {}, reply.messages
        session = reply.headers["mcp-session-id"]
        assert len(session) <= MAX_ID_BYTES
        kept.append(uri)
    assert refused(reply)
    assert reply.error["data"]["limit"] == MAX_SUBSCRIPTION_BYTES
    assert carried(session).subscriptions == kept

    session = await client.open()  # short URIs: the count bounds them
    for n in range(MAX_SUBSCRIPTIONS):
        reply = await client.call(session, "resources/subscribe", {"uri": f"{PAGES}p{n}"})
        assert reply.result == {}, reply.messages
        session = reply.headers["mcp-session-id"]
    over = await client.call(session, "resources/subscribe", {"uri": f"{PAGES}over"})
    assert refused(over)
    assert over.error["data"] == {"limit": MAX_SUBSCRIPTIONS, "size": MAX_SUBSCRIPTIONS + 1}
    assert len(carried(session).subscriptions) == MAX_SUBSCRIPTIONS


async def test_only_a_served_resource_is_subscribed(client: Client) -> None:
    session = await client.open()
    reply = await client.call(session, "resources/subscribe", {"uri": "docs://nowhere"})
    assert refused(reply, -32002)
    assert reply.error["data"] == {"uri": "docs://nowhere"}
    ok = await client.call(session, "resources/subscribe", {"uri": PAGES + "intro"})
    assert carried(ok.headers["mcp-session-id"]).subscriptions == [PAGES + "intro"]


async def test_capabilities_too_large_for_an_id_open_no_session(client: Client) -> None:
    reply = await client.initialize({"experimental": {"blob": {"x": "a" * 48 * 1024}}})
    assert refused(reply)
    assert reply.error["data"]["limit"] == MAX_ID_BYTES
    fitting = await client.initialize({"experimental": {"blob": {"x": "a" * 16 * 1024}}})
    assert fitting.status == 200
    assert len(fitting.headers["mcp-session-id"]) <= MAX_ID_BYTES


async def test_the_bound_follows_max_header_bytes(engine: str) -> None:
    async with running(docs_server(), engine=engine, max_header_bytes=8192) as url:
        async with httpx2.AsyncClient(timeout=10) as http:
            client = Client(Wire(http, url), {})
            reply = await client.initialize({"experimental": {"blob": {"x": "a" * 4096}}})
            assert refused(reply)
            assert reply.error["data"]["limit"] == 4096
            session = await client.open()
            for n in range(MAX_SUBSCRIPTIONS):
                uri = f"{PAGES}{n:02}{'x' * 400}"
                reply = await client.call(session, "resources/subscribe", {"uri": uri})
                if "error" in reply.messages[0]:
                    break
                session = reply.headers["mcp-session-id"]
                assert len(session) <= 4096
            assert refused(reply)
            assert reply.error["data"]["limit"] == 4096


async def test_no_response_head_passes_max_header_bytes(
    engine: str, dev: DevAuthorizationServer
) -> None:
    """A header that echoes the request (the challenge's metadata URL names the Host when no
    ``resource`` is configured) is never written past the limit: the engine answers 500."""
    auth = auth_config(dev, resource=None, audience="http://mcp.test/mcp")
    limit = 2048
    config: dict[str, Any] = {"auth": auth, "max_header_bytes": limit, "allowed_hosts": ["*"]}
    async with running(docs_server(), engine=engine, **config) as url:
        host = "h" * 1200 + ".test"
        request = (
            f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            "Content-Length: 2\r\nConnection: close\r\n\r\n{}"
        ).encode()
        reply = await raw_http(url, request)
    head = reply.partition(b"\r\n\r\n")[0]
    assert reply.startswith(b"HTTP/1.1 500"), head[:200]
    assert len(head) <= limit


async def test_large_ids_are_not_remembered(client: Client) -> None:
    """Verified ids are remembered (`sessions._VERIFIED`) only when short: thousands of
    sessions with ids near `MAX_ID_BYTES` cannot fill the worker's memory through it."""
    large = await client.initialize({"experimental": {"blob": {"x": "a" * 16 * 1024}}})
    small = await client.initialize()
    for reply in (large, small):
        session = reply.headers["mcp-session-id"]
        assert (await client.call(session, "ping", {})).result == {}
    assert large.headers["mcp-session-id"] not in sessions._VERIFIED
    assert small.headers["mcp-session-id"] in sessions._VERIFIED
