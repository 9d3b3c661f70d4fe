"""What outlives a request belongs to the principal who made it, through the real stack (both
engines, real tokens of the development authorization server): another tenant reaches none of
alice's tasks (2026-07-28 and 2025-11-25), answers none of her input requests, follows none of
her task notifications, replays none of her ``requestState``, and is told what an unknown id
gets; a task of a scoped tool needs that scope for every method reaching it; the access log
holds no task id; with the Redis bus, all of it holds across workers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import trio

import mcpfast
from mcpfast import Context
from mcpfast.auth.devserver import DevAuthorizationServer
from mcpfast.protocol import sse

from ..helpers import MODERN, Reply, Wire, meta
from .conftest import Tenant, protected, tenant

TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
CAPABILITIES: dict[str, Any] = {"elicitation": {}, **TASKS}
LEGACY = "2025-11-25"
NAME = {"type": "object", "properties": {"name": {"type": "string"}}}
ADA = {"action": "accept", "content": {"name": "Ada"}}
MALLORY = {"action": "accept", "content": {"name": "Mallory"}}
WAIT = 5.0
"""The bound of every wait on the server."""


def tasks_server() -> mcpfast.Server:
    server = mcpfast.Server("tasks", "1.0")

    @server.tool(task="optional")
    async def ask_name(ctx: Context) -> str:
        answer = await ctx.elicit("Name?", NAME, key="name")
        return f"Hello, {answer['content']['name']}!"

    @server.tool()
    async def pay(ctx: Context) -> str:
        """Two questions, one round trip each: the first answer rides in ``requestState``."""
        consent = await ctx.elicit("Pay 100?", NAME, key="consent")
        payee = await ctx.elicit("To whom?", NAME, key="payee")
        return f"{consent['content']['name']} paid {payee['content']['name']}"

    @server.tool(task="optional")
    async def wait(seconds: float = 30) -> str:
        await trio.sleep(seconds)
        return "waited"

    @server.tool(task="optional", scopes=["admin"])
    async def payroll() -> str:
        return "alice 120k, bob 95k"

    return server


async def modern(
    wire: Wire, who: Tenant, method: str, params: dict[str, Any], caps: dict[str, Any] | None = None
) -> Reply:
    """A 2026-07-28 request of ``who``."""
    headers: dict[str, str | None] = {**who.headers}
    return await wire.modern(method, params, capabilities=caps or CAPABILITIES, headers=headers)


async def initialize(wire: Wire, who: Tenant) -> str:
    """A 2025-11-25 session of ``who``; its id."""
    params = {
        "protocolVersion": LEGACY,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    body = {"jsonrpc": "2.0", "id": wire.next_id(), "method": "initialize", "params": params}
    session: str = (await wire.post(body, who.headers)).headers["mcp-session-id"]
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    await wire.post(done, {**who.headers, **legacy_headers(session)})
    return session


def legacy_headers(session: str) -> dict[str, str]:
    return {"mcp-session-id": session, "mcp-protocol-version": LEGACY}


async def legacy(
    wire: Wire, who: Tenant, session: str, method: str, params: dict[str, Any]
) -> Reply:
    """A 2025-11-25 request of ``who`` in ``session``."""
    body = {"jsonrpc": "2.0", "id": wire.next_id(), "method": method, "params": params}
    return await wire.post(body, {**who.headers, **legacy_headers(session)})


async def until_status(wire: Wire, who: Tenant, task: dict[str, Any], status: str) -> Reply:
    """``tasks/get`` until the task is ``status`` (`WAIT` at most)."""
    with trio.fail_after(WAIT):
        while True:
            got = await modern(wire, who, "tasks/get", task)
            if got.result["status"] == status:
                return got
            await trio.sleep(0.02)


def assert_alike(theirs: Reply, unknown: Reply) -> None:
    """The answer about another's task is the answer about an id that never existed."""
    assert theirs.status == unknown.status
    mine, other = theirs.error, unknown.error
    assert (mine["code"], mine["message"]) == (other["code"], other["message"])
    assert set(mine.get("data") or {}) == set(other.get("data") or {})


async def test_another_tenant_reaches_none_of_her_modern_tasks(
    engine: str, dev: DevAuthorizationServer
) -> None:
    alice, bob = tenant(dev, "alice"), tenant(dev, "bob")
    async with protected(tasks_server(), engine, dev) as (_, wire):
        created = await modern(wire, alice, "tools/call", {"name": "ask_name", "arguments": {}})
        task = {"taskId": created.result["taskId"]}
        await until_status(wire, alice, task, "input_required")
        answer = {"inputResponses": {"name": MALLORY}}
        for method, extra in (("tasks/get", {}), ("tasks/update", answer), ("tasks/cancel", {})):
            theirs = await modern(wire, bob, method, {**task, **extra})
            unknown = await modern(wire, bob, method, {"taskId": "Zm9yZ2VkLXRhc2st", **extra})
            assert theirs.error["code"] == -32602, (method, theirs.messages)
            assert_alike(theirs, unknown)
        waiting = await modern(wire, alice, "tasks/get", task)
        assert waiting.result["status"] == "input_required"  # bob's answer and cancel: nothing
        await modern(wire, alice, "tasks/update", {**task, "inputResponses": {"name": ADA}})
        done = await until_status(wire, alice, task, "completed")
        assert done.result["result"]["content"][0]["text"] == "Hello, Ada!"
        assert_alike(
            await modern(wire, bob, "tasks/get", task),
            await modern(wire, bob, "tasks/get", {"taskId": "Zm9yZ2VkLXRhc2st"}),
        )


@asynccontextmanager
async def listening(
    http: httpx2.AsyncClient, url: str, who: Tenant, task_ids: list[str]
) -> AsyncIterator[trio.MemoryReceiveChannel[dict[str, Any]]]:
    """A ``subscriptions/listen`` stream of ``who`` for ``task_ids`` and tool list changes,
    acknowledged; yields its notifications."""
    notifications = {"toolsListChanged": True, "taskIds": task_ids}
    body = {
        "jsonrpc": "2.0",
        "id": "listen",
        "method": "subscriptions/listen",
        "params": {"_meta": meta(TASKS), "notifications": notifications},
    }
    headers = {
        **who.headers,
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "subscriptions/listen",
    }
    send, receive = trio.open_memory_channel[dict[str, Any]](64)

    async def pump(response: httpx2.Response) -> None:
        parser = sse.Parser()
        async for chunk in response.aiter_bytes():
            for event in parser.feed(chunk):
                if event.data:
                    await send.send(json.loads(event.data))

    async with (
        http.stream("POST", url, content=json.dumps(body).encode(), headers=headers) as response,
        trio.open_nursery() as nursery,
    ):
        assert response.status_code == 200
        nursery.start_soon(pump, response)
        with trio.fail_after(WAIT):
            ack = await receive.receive()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        yield receive
        nursery.cancel_scope.cancel()


def late() -> str:
    return "late"


async def test_another_tenant_follows_none_of_her_task_notifications(
    engine: str, dev: DevAuthorizationServer
) -> None:
    alice, bob = tenant(dev, "alice"), tenant(dev, "bob")
    server = tasks_server()
    async with (
        protected(server, engine, dev) as (url, wire),
        httpx2.AsyncClient(timeout=WAIT) as http,
    ):
        created = await modern(wire, alice, "tools/call", {"name": "ask_name", "arguments": {}})
        task = {"taskId": created.result["taskId"]}
        await until_status(wire, alice, task, "input_required")
        async with (
            listening(http, url, alice, [task["taskId"]]) as hers,
            listening(http, url, bob, [task["taskId"]]) as his,
        ):
            await modern(wire, alice, "tasks/update", {**task, "inputResponses": {"name": ADA}})
            with trio.fail_after(WAIT):
                note = await hers.receive()
                while note["params"]["status"] != "completed":
                    note = await hers.receive()
            assert note["method"] == "notifications/tasks"
            assert note["params"]["result"]["content"][0]["text"] == "Hello, Ada!"
            server.add_tool(late)  # a change both streams follow: the marker
            with trio.fail_after(WAIT):
                first = await his.receive()
            assert first["method"] == "notifications/tools/list_changed"  # nothing of hers


async def test_another_tenant_replays_none_of_her_request_state(
    engine: str, dev: DevAuthorizationServer
) -> None:
    alice, bob = tenant(dev, "alice"), tenant(dev, "bob")
    call = {"name": "pay", "arguments": {}}
    async with protected(tasks_server(), engine, dev) as (_, wire):
        asked = await modern(wire, alice, "tools/call", call)
        consented = await modern(
            wire,
            alice,
            "tools/call",
            {
                **call,
                "inputResponses": {"consent": ADA},
                "requestState": asked.result["requestState"],
            },
        )
        assert list(consented.result["inputRequests"]) == ["payee"]
        state = consented.result["requestState"]  # carries alice's consent
        replayed = await modern(
            wire,
            bob,
            "tools/call",
            {**call, "inputResponses": {"payee": MALLORY}, "requestState": state},
        )
        assert replayed.error["code"] == -32602, replayed.messages
        assert replayed.error["data"] == {"reason": "bound to another request"}
        paid = await modern(
            wire,
            alice,
            "tools/call",
            {**call, "inputResponses": {"payee": MALLORY}, "requestState": state},
        )
        assert paid.result["content"][0]["text"] == "Ada paid Mallory"


def assert_scope_refused(reply: Reply, scope: str) -> None:
    assert reply.status == 403, reply.messages
    challenge = reply.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert scope in challenge


async def test_a_task_of_a_scoped_tool_needs_its_scope(
    engine: str, dev: DevAuthorizationServer
) -> None:
    admin, plain = tenant(dev, "alice", "mcp admin"), tenant(dev, "alice", "mcp")
    bob_admin = tenant(dev, "bob", "mcp admin")
    async with protected(tasks_server(), engine, dev) as (_, wire):
        created = await modern(wire, admin, "tools/call", {"name": "payroll", "arguments": {}})
        task = {"taskId": created.result["taskId"]}
        done = await until_status(wire, admin, task, "completed")
        assert done.result["result"]["content"][0]["text"] == "alice 120k, bob 95k"
        for method in ("tasks/get", "tasks/update", "tasks/cancel"):
            assert_scope_refused(await modern(wire, plain, method, task), "admin")
        listen = {"notifications": {"taskIds": [task["taskId"]]}}
        with trio.fail_after(WAIT):  # its notifications carry its result
            refused = await modern(wire, plain, "subscriptions/listen", listen, TASKS)
        assert_scope_refused(refused, "admin")
        assert_alike(
            await modern(wire, bob_admin, "tasks/get", task),
            await modern(wire, bob_admin, "tasks/get", {"taskId": "Zm9yZ2VkLXRhc2st"}),
        )


async def test_a_legacy_task_needs_its_principal_and_its_tool_s_scope(
    engine: str, dev: DevAuthorizationServer
) -> None:
    admin, plain = tenant(dev, "alice", "mcp admin"), tenant(dev, "alice", "mcp")
    bob = tenant(dev, "bob", "mcp admin")
    async with protected(tasks_server(), engine, dev) as (_, wire):
        session = await initialize(wire, admin)
        payroll = {"name": "payroll", "arguments": {}, "task": {}}
        created = await legacy(wire, admin, session, "tools/call", payroll)
        task = {"taskId": created.result["task"]["taskId"]}
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            assert_scope_refused(await legacy(wire, plain, session, method, task), "admin")
        result = await legacy(wire, admin, session, "tasks/result", task)
        assert result.result["content"][0]["text"] == "alice 120k, bob 95k"
        theirs = await initialize(wire, bob)
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            assert_alike(
                await legacy(wire, bob, theirs, method, task),
                await legacy(wire, bob, theirs, method, {"taskId": "Zm9yZ2VkLXRhc2st"}),
            )
            refused = await legacy(wire, bob, session, method, task)  # her session: not his
            assert refused.status == 404
        assert (await legacy(wire, bob, theirs, "tasks/list", {})).result["tasks"] == []
        stream = await wire.client.get(
            wire.url,
            headers={**bob.headers, **legacy_headers(session), "last-event-id": "0-1"},
        )
        assert stream.status_code == 404  # her stream cannot be resumed


async def test_the_access_log_holds_no_task_id(
    engine: str, dev: DevAuthorizationServer, tmp_path: Path
) -> None:
    alice = tenant(dev, "alice")
    log = tmp_path / "access.log"
    async with protected(tasks_server(), engine, dev, access_log=str(log)) as (_, wire):
        created = await modern(wire, alice, "tools/call", {"name": "wait", "arguments": {}})
        task = {"taskId": created.result["taskId"]}
        await modern(wire, alice, "tasks/get", task)
        await modern(wire, alice, "tasks/update", {**task, "inputResponses": {}})
        await modern(wire, alice, "tasks/cancel", task)
        session = await initialize(wire, alice)
        created = await legacy(
            wire, alice, session, "tools/call", {"name": "wait", "arguments": {}, "task": {}}
        )
        legacy_task = {"taskId": created.result["task"]["taskId"]}
        await legacy(wire, alice, session, "tasks/get", legacy_task)
        await legacy(wire, alice, session, "tasks/cancel", legacy_task)
    text = log.read_text()
    lines = [line for line in text.splitlines() if "method=tasks/" in line]
    assert len(lines) == 5, text
    for task_id in (task["taskId"], legacy_task["taskId"]):
        assert task_id not in text
    named = [line for line in lines if "name=-" not in line]
    assert named and all("name=#" in line for line in named), lines


async def test_ownership_holds_across_workers_sharing_redis(
    engine: str, dev: DevAuthorizationServer, redis_url: str
) -> None:
    alice, bob = tenant(dev, "alice"), tenant(dev, "bob")
    async with AsyncExitStack() as stack:
        wires = [
            (
                await stack.enter_async_context(
                    protected(tasks_server(), engine, dev, bus=redis_url)
                )
            )[1]
            for _ in range(2)
        ]
        a, b = wires
        created = await modern(a, alice, "tools/call", {"name": "ask_name", "arguments": {}})
        task = {"taskId": created.result["taskId"]}
        await until_status(b, alice, task, "input_required")  # her record, seen on b
        answer = {"inputResponses": {"name": MALLORY}}
        for method, extra in (("tasks/get", {}), ("tasks/update", answer), ("tasks/cancel", {})):
            assert_alike(
                await modern(b, bob, method, {**task, **extra}),
                await modern(b, bob, method, {"taskId": "Zm9yZ2VkLXRhc2st", **extra}),
            )
        assert (await modern(a, alice, "tasks/get", task)).result["status"] == "input_required"
        await modern(b, alice, "tasks/update", {**task, "inputResponses": {"name": ADA}})
        done = await until_status(b, alice, task, "completed")
        assert done.result["result"]["content"][0]["text"] == "Hello, Ada!"
