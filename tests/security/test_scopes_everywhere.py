"""Every declared scope holds on every method that reaches its object: a token without a
resource's, a resource template's or a prompt's scope cannot read it, subscribe to it or
unsubscribe from it, get it, or run its completer (``completion/complete`` of the prompt or of
the template), in both eras and inside a 2025-03-26 batch: 403 ``insufficient_scope`` naming
the scopes, as a ``tools/call`` of a scoped tool is, and the completer never runs. With the
scopes, each succeeds. (That the method table states what each method reaches, so the check
cannot miss a method: ``tests/test_methods.py``.)"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import trio

import mcpfast
from mcpfast.auth.devserver import DevAuthorizationServer
from mcpfast.protocol import sse
from mcpfast.protocol.auth import parse_challenges

from ..helpers import MODERN, Reply, Wire, meta
from .conftest import Tenant, protected, tenant

ADMIN = ["admin", "mcp"]
"""The scopes a 403 names for a payroll resource, template or tool (the server's ``mcp`` too)."""
PROMPTS = ["mcp", "prompts"]
"""The scopes a 403 names for the payroll prompt."""
WAIT = 10


def payroll_server(completed: list[str]) -> mcpfast.Server:
    """A fixed resource, a template and a tool that need ``admin``, a prompt that needs
    ``prompts``; the template and the prompt have completers, recording into ``completed``."""
    server = mcpfast.Server("payroll", "1")

    @server.resource("payroll://summary", scopes=["admin"], instant=True)
    def summary() -> str:
        return "total 215k"

    @server.resource("payroll://people/{who}", scopes=["admin"], instant=True)
    def person(who: str) -> str:
        return f"salary of {who}"

    @server.completion(template="payroll://people/{who}", instant=True)
    def people(argument: str, value: str, context: dict[str, Any]) -> list[str]:
        completed.append("template")
        return ["alice", "bob"]

    @server.prompt(scopes=["prompts"], instant=True)
    def payroll(who: str) -> str:
        return f"pay {who}"

    @server.completion(prompt="payroll", instant=True)
    def payees(argument: str, value: str, context: dict[str, Any]) -> list[str]:
        completed.append("prompt")
        return ["alice (120k)", "bob (95k)"]

    @server.tool(scopes=["admin"], instant=True)
    def raise_salary(who: str) -> str:
        return f"raised {who}"

    return server


def complete(ref: dict[str, str]) -> dict[str, Any]:
    return {"ref": ref, "argument": {"name": "who", "value": "a"}}


PROMPT_REF = {"type": "ref/prompt", "name": "payroll"}
TEMPLATE_REF = {"type": "ref/resource", "uri": "payroll://people/{who}"}

REACHING: list[tuple[str, dict[str, Any], list[str]]] = [
    ("resources/read", {"uri": "payroll://summary"}, ADMIN),
    ("resources/read", {"uri": "payroll://people/alice"}, ADMIN),
    ("prompts/get", {"name": "payroll", "arguments": {"who": "alice"}}, PROMPTS),
    ("completion/complete", complete(PROMPT_REF), PROMPTS),
    ("completion/complete", complete(TEMPLATE_REF), ADMIN),
    ("tools/call", {"name": "raise_salary", "arguments": {"who": "bob"}}, ADMIN),
]
"""Requests reaching a scoped object in both eras, and the scopes their 403 names."""

SUBSCRIBING: list[tuple[str, dict[str, Any], list[str]]] = [
    ("resources/subscribe", {"uri": "payroll://people/alice"}, ADMIN),
    ("resources/subscribe", {"uri": "payroll://summary"}, ADMIN),
    ("resources/unsubscribe", {"uri": "payroll://summary"}, ADMIN),
]
"""The legacy era's subscriptions (the modern one's: ``subscriptions/listen``)."""


def assert_insufficient(reply: Reply, scopes: list[str], id_: int | None) -> None:
    """A 403 whose Bearer challenge is ``insufficient_scope`` naming ``scopes``."""
    assert reply.status == 403, (reply.status, reply.response.text)
    (bearer,) = [
        c
        for c in parse_challenges(reply.headers.get_list("www-authenticate"))
        if c.scheme.lower() == "bearer"
    ]
    assert bearer.error == "insufficient_scope", bearer
    assert bearer.scopes == scopes, bearer
    assert reply.message.get("id") == id_
    assert reply.message["error"]["data"]["requiredScopes"] == scopes


def assert_served(method: str, reply: Reply) -> None:
    assert reply.status == 200, (method, reply.status, reply.response.text)
    assert "result" in reply.message, (method, reply.message)


async def legacy_session(wire: Wire, who: Tenant, version: str) -> str:
    """A legacy session of ``who`` (initialize, then ``notifications/initialized``)."""
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t"}}
    body = {"jsonrpc": "2.0", "id": wire.next_id(), "method": "initialize", "params": params}
    reply = await wire.post(body, who.headers)
    assert reply.status == 200, reply.response.text
    session: str = reply.headers["mcp-session-id"]
    headers = {**who.headers, "mcp-protocol-version": version, "mcp-session-id": session}
    await wire.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
    return session


def legacy_headers(who: Tenant, version: str, session: str) -> dict[str, str]:
    return {**who.headers, "mcp-protocol-version": version, "mcp-session-id": session}


async def test_modern_requests_need_the_scopes_of_what_they_reach(
    engine: str, dev: DevAuthorizationServer
) -> None:
    narrow = tenant(dev, "bob", "mcp")
    wide = tenant(dev, "alice", "mcp admin prompts")
    completed: list[str] = []
    async with protected(payroll_server(completed), engine, dev) as (_, wire):
        with trio.fail_after(WAIT):
            for method, params, scopes in REACHING:
                id_ = wire.next_id()
                reply = await wire.modern(method, params, headers={**narrow.headers}, id=id_)
                assert_insufficient(reply, scopes, id_)
            assert completed == []
            for method, params, _ in REACHING:
                assert_served(method, await wire.modern(method, params, headers={**wide.headers}))
    assert completed == ["prompt", "template"]


async def test_legacy_requests_need_the_scopes_of_what_they_reach(
    engine: str, dev: DevAuthorizationServer
) -> None:
    version = "2025-11-25"
    narrow = tenant(dev, "bob", "mcp")
    wide = tenant(dev, "alice", "mcp admin prompts")
    completed: list[str] = []
    async with protected(payroll_server(completed), engine, dev) as (_, wire):
        with trio.fail_after(WAIT):
            for who in (narrow, wide):
                session = await legacy_session(wire, who, version)
                for method, params, scopes in SUBSCRIBING + REACHING:
                    id_ = wire.next_id()
                    body = {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}
                    reply = await wire.post(body, legacy_headers(who, version, session))
                    if who is narrow:
                        assert_insufficient(reply, scopes, id_)
                    else:
                        assert_served(method, reply)
                assert completed == ([] if who is narrow else ["prompt", "template"])


async def test_a_batch_needs_the_scopes_of_everything_it_reaches(
    engine: str, dev: DevAuthorizationServer
) -> None:
    """2025-03-26: one 403 naming the union of the scopes of what its requests reach."""
    version = "2025-03-26"
    completed: list[str] = []
    batch = [
        {"jsonrpc": "2.0", "id": id_, "method": "completion/complete", "params": complete(ref)}
        for id_, ref in ((1, PROMPT_REF), (2, TEMPLATE_REF))
    ]
    async with protected(payroll_server(completed), engine, dev) as (_, wire):
        with trio.fail_after(WAIT):
            for scope in ("mcp", "mcp admin", "mcp prompts"):
                who = tenant(dev, "bob", scope)
                session = await legacy_session(wire, who, version)
                reply = await wire.post(batch, legacy_headers(who, version, session))
                assert_insufficient(reply, ["admin", "mcp", "prompts"], None)
            assert completed == []
            who = tenant(dev, "alice", "mcp admin prompts")
            session = await legacy_session(wire, who, version)
            reply = await wire.post(batch, legacy_headers(who, version, session))
            assert reply.status == 200, reply.response.text
            values = {m["id"]: m["result"]["completion"]["values"][0] for m in reply.messages}
            assert values == {1: "alice (120k)", 2: "alice"}
    assert sorted(completed) == ["prompt", "template"]


async def listen(wire: Wire, who: Tenant, uris: list[str]) -> tuple[int, Any]:
    """A ``subscriptions/listen`` for ``uris``: its status, and its error body or first frame."""
    params = {"_meta": meta(), "notifications": {"resourceSubscriptions": uris}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": params}
    headers = {
        **who.headers,
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "subscriptions/listen",
    }
    client: httpx2.AsyncClient = wire.client
    async with client.stream("POST", wire.url, json=body, headers=headers) as response:
        if response.status_code != 200:
            await response.aread()
            return response.status_code, (response.headers, response.json())
        parser = sse.Parser()
        async for chunk in response.aiter_bytes():
            for event in parser.feed(chunk):
                if event.data:
                    return 200, json.loads(event.data)
    raise AssertionError("the stream ended without a frame")


async def test_a_listen_stream_needs_the_scopes_of_its_resources(
    engine: str, dev: DevAuthorizationServer
) -> None:
    """The modern era's subscribe: ``subscriptions/listen`` naming a scoped resource."""
    narrow = tenant(dev, "bob", "mcp")
    wide = tenant(dev, "alice", "mcp admin")
    uris = ["memo://open", "payroll://people/alice"]
    async with protected(payroll_server([]), engine, dev) as (_, wire):
        with trio.fail_after(WAIT):
            status, refused = await listen(wire, narrow, uris)
            assert status == 403, refused
            headers, body = refused
            (bearer,) = [
                c
                for c in parse_challenges(headers.get_list("www-authenticate"))
                if c.scheme.lower() == "bearer"
            ]
            assert bearer.error == "insufficient_scope" and bearer.scopes == ADMIN
            assert body["error"]["data"]["requiredScopes"] == ADMIN
            status, frame = await listen(wire, narrow, ["memo://open"])
            assert status == 200, frame
            status, frame = await listen(wire, wide, uris)
            assert status == 200, frame
            assert frame["method"] == "notifications/subscriptions/acknowledged"
            assert frame["params"]["notifications"]["resourceSubscriptions"] == uris
