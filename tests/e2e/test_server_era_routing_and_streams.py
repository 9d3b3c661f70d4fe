"""The server's era routing and streams through the real stack (loopback, the engine under test; stdio in a
subprocess): era routing of ``initialize`` and of version headers, legacy error codes, tasks
bound to their session, server requests withdrawn when their stream goes away, one GET stream
per notification, the end of a listen stream at shutdown, and notifications over stdio."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio

import mcpfast
from mcpfast import Context
from mcpfast.protocol import sse
from mcpfast.protocol.capabilities import InputRequest

from ..helpers import ENGINE, MODERN, TEST_KEYS, Wire, meta, running, validate, validate_message
from .processes import mcpfast_command

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}}
TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


def _server(outcome: list[str] | None = None, done: trio.Event | None = None) -> mcpfast.Server:
    server = mcpfast.Server("corners", "1.0")

    @server.tool()
    async def ask_name(ctx: Context) -> str:
        try:
            answer = await ctx.elicit("Name?", NAME_SCHEMA, key="name")
        except mcpfast.MCPError as exc:
            if outcome is not None:
                outcome.append(exc.message)
            raise
        finally:
            if done is not None:
                done.set()
        return f"Hello, {answer['content']['name']}!"

    @server.tool()
    async def ask_two(ctx: Context) -> str:
        """Two questions at once: two server requests on one call's stream."""
        form = {"message": "Name?", "requestedSchema": NAME_SCHEMA}
        try:
            answers = await ctx.ask(
                {
                    "first": InputRequest(method="elicitation/create", params=form),
                    "second": InputRequest(method="elicitation/create", params=form),
                }
            )
        except mcpfast.MCPError as exc:
            if outcome is not None:
                outcome.append(exc.message)
            raise
        finally:
            if done is not None:
                done.set()
        return f"{answers['first']['content']['name']} and {answers['second']['content']['name']}"

    @server.tool(task="optional")
    async def background(seconds: float = 30) -> str:
        await trio.sleep(seconds)
        return "done"

    @server.tool()
    def login() -> str:
        raise mcpfast.UrlElicitationRequired(
            [{"message": "Log in", "url": "https://example.com/login", "elicitationId": "l-1"}]
        )

    @server.prompt()
    async def interview(ctx: Context) -> str:
        answer = await ctx.elicit("Name?", NAME_SCHEMA)
        return f"Interview {answer['content']['name']}"

    @server.resource("test://doc", mime_type="text/plain")
    def doc() -> str:
        return "doc"

    return server


@asynccontextmanager
async def _wire(server: mcpfast.Server, **config: Any) -> AsyncIterator[Wire]:
    async with running(server, **config) as url, httpx2.AsyncClient(timeout=10) as client:
        yield Wire(client, url)


# --------------------------------------------------------------------- 3: era routing


async def test_initialize_always_opens_a_legacy_session() -> None:
    """Seed 000: whatever its ``MCP-Protocol-Version`` header or its params' ``_meta`` say."""
    async with _wire(_server()) as wire:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "tests", "version": "1"},
                "_meta": meta(),
            },
        }
        reply = await wire.post(body, {"mcp-protocol-version": MODERN, "mcp-method": "initialize"})
        assert reply.status == 200, reply.messages
        assert reply.result["protocolVersion"] == "2025-11-25"
        validate_message("2025-11-25", "initialize", reply.message)
        session = reply.headers["mcp-session-id"]
        ping = await wire.legacy("ping", session=session, version="2025-11-25")
        assert ping.status == 200 and ping.result == {}


@pytest.mark.parametrize("header", ["1999-01-01", MODERN])
async def test_a_session_request_with_a_version_of_no_session_is_32022(header: str) -> None:
    async with _wire(_server()) as wire:
        session, _ = await wire.initialize("2025-11-25")
        reply = await wire.legacy("ping", session=session, version=header)
        assert reply.status == 400
        assert reply.error["code"] == -32022
        assert reply.error["data"] == {
            "supported": ["2025-11-25", "2025-06-18", "2025-03-26"],
            "requested": header,
        }
        got = await wire.client.get(
            wire.url,
            headers={
                "accept": "text/event-stream",
                "mcp-session-id": session,
                "mcp-protocol-version": header,
            },
        )
        assert got.status_code == 400 and got.json()["error"]["code"] == -32022


async def test_a_different_legacy_version_header_is_served_as_the_session() -> None:
    """The spec refuses only an invalid or unsupported version (the client SHOULD send the
    negotiated one): the session's own revision governs, as with the official SDKs."""
    async with _wire(_server()) as wire:
        session, _ = await wire.initialize("2025-06-18", {"elicitation": {}})
        reply = await wire.legacy(
            "tools/call", {"name": "login", "arguments": {}}, session=session, version="2025-11-25"
        )
        assert reply.status == 200
        assert reply.result["isError"] is True  # 2025-06-18 has no -32042


# ----------------------------------------------------------------- 4: legacy error codes


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26"])
async def test_legacy_sessions_get_their_revision_s_codes(version: str) -> None:
    async with _wire(_server()) as wire:
        session, _ = await wire.initialize(version)  # declares no elicitation
        prompt = await wire.legacy(
            "prompts/get", {"name": "interview"}, session=session, version=version
        )
        assert prompt.status == 200
        assert prompt.error["code"] == -32603  # not 2026-07-28's -32021
        assert prompt.error["data"] == {"requiredCapabilities": {"elicitation": {}}}
        validate_message(version, "prompts/get", prompt.message)
        login = await wire.legacy(
            "tools/call", {"name": "login", "arguments": {}}, session=session, version=version
        )
        if version == "2025-11-25":
            assert login.error["code"] == -32042
        else:  # no URL-mode elicitation, no -32042: a tool error naming the URL
            assert login.result["isError"] is True
            assert "https://example.com/login" in login.result["content"][0]["text"]
        validate_message(version, "tools/call", login.message)


# ------------------------------------------------------------- 1c: tasks bound by owner


async def test_2025_11_25_tasks_belong_to_their_session() -> None:
    version = "2025-11-25"
    async with _wire(_server()) as wire:
        mine, _ = await wire.initialize(version)
        other, _ = await wire.initialize(version)
        created = await wire.legacy(
            "tools/call",
            {"name": "background", "arguments": {}, "task": {}},
            session=mine,
            version=version,
        )
        task_id = created.result["task"]["taskId"]
        modern = await wire.modern(
            "tools/call", {"name": "background", "arguments": {}}, capabilities=TASKS
        )
        modern_id = modern.result["taskId"]
        listed = await wire.legacy("tasks/list", {}, session=mine, version=version)
        assert [t["taskId"] for t in listed.result["tasks"]] == [task_id]  # not the modern one
        assert (await wire.legacy("tasks/list", {}, session=other, version=version)).result[
            "tasks"
        ] == []
        unknown = await wire.legacy(
            "tasks/get", {"taskId": "no-such-task"}, session=other, version=version
        )
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            for session, tid in ((other, task_id), (mine, modern_id)):
                reply = await wire.legacy(method, {"taskId": tid}, session=session, version=version)
                assert reply.error["code"] == unknown.error["code"] == -32602, method
                assert reply.error["message"] == "Unknown task"  # no id: spans keep messages
                assert reply.error["data"] == {"taskId": tid}
        still = await wire.legacy("tasks/get", {"taskId": task_id}, session=mine, version=version)
        assert still.result["status"] == "working"  # the other session could not cancel it
        cancelled = await wire.legacy(
            "tasks/cancel", {"taskId": task_id}, session=mine, version=version
        )
        assert cancelled.result["status"] == "cancelled"
        await wire.modern("tasks/cancel", {"taskId": modern_id}, capabilities=TASKS)


# ------------------------------------------------------- 1a: server requests withdrawn


@pytest.mark.parametrize(
    ("version", "tool"),
    [("2025-06-18", "ask_name"), ("2025-11-25", "ask_name"), ("2025-11-25", "ask_two")],
)
async def test_a_server_request_is_withdrawn_when_its_stream_goes_away(
    version: str, tool: str
) -> None:
    outcome: list[str] = []
    done = trio.Event()
    async with _wire(_server(outcome, done), sse_retry_ms=100) as wire:
        session, _ = await wire.initialize(version, {"elicitation": {}})
        body = {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": tool, "arguments": {}},
        }
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-session-id": session,
            "mcp-protocol-version": version,
        }
        parser = sse.Parser()
        events: list[sse.Event] = []
        with trio.fail_after(10):
            async with wire.client.stream("POST", wire.url, json=body, headers=headers) as response:
                async for chunk in response.aiter_bytes():
                    events.extend(parser.feed(chunk))
                    if any(e.data for e in events):
                        break  # the elicitation came: the client goes away without answering
        asked = json.loads(next(e.data for e in events if e.data))
        assert asked["method"] == "elicitation/create"
        with trio.fail_after(20):  # the resume grace (5 s), far from the 600 s timeout
            await done.wait()
        assert outcome == ["The client went away before answering elicitation/create"]
        # a client resuming now finds the request withdrawn, then the call's answer
        resumed = await wire.client.get(
            wire.url,
            headers={
                "accept": "text/event-stream",
                "mcp-session-id": session,
                "mcp-protocol-version": version,
                "last-event-id": events[0].id or "",
            },
        )
        messages = [json.loads(e.data) for e in sse.Parser().feed(resumed.content) if e.data]
        cancelled = [m for m in messages if m.get("method") == "notifications/cancelled"]
        assert asked["id"] in {c["params"]["requestId"] for c in cancelled}
        assert messages[-1]["id"] == 5 and messages[-1]["result"]["isError"] is True


# ----------------------------------------------------------- 2b: one GET stream each


async def test_each_notification_goes_on_one_get_stream() -> None:
    version = "2025-11-25"
    server = _server()
    async with _wire(server) as wire:
        session, _ = await wire.initialize(version)
        assert (
            await wire.legacy(
                "resources/subscribe", {"uri": "test://doc"}, session=session, version=version
            )
        ).status == 200
        headers = {
            "accept": "text/event-stream",
            "mcp-session-id": session,
            "mcp-protocol-version": version,
        }
        received: list[list[dict[str, Any]]] = [[], []]
        primed = [trio.Event(), trio.Event()]
        arrived = trio.Event()
        total = 4

        async def follow(index: int) -> None:
            parser = sse.Parser()
            async with wire.client.stream("GET", wire.url, headers=headers) as response:
                assert response.status_code == 200
                async for chunk in response.aiter_bytes():
                    for event in parser.feed(chunk):
                        if not event.data:
                            primed[index].set()  # subscribed: the priming event follows that
                        else:
                            received[index].append(json.loads(event.data))
                            if sum(map(len, received)) >= total:
                                arrived.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(follow, 0)
            nursery.start_soon(follow, 1)
            with trio.fail_after(10):
                for event in primed:
                    await event.wait()
                for _ in range(total):
                    await server.resource_updated("test://doc")
                await arrived.wait()
            with trio.move_on_after(0.5):  # a duplicate would follow at once
                while sum(map(len, received)) == total:
                    await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
        everything = received[0] + received[1]
        assert len(everything) == total, received
        assert all(m["method"] == "notifications/resources/updated" for m in everything)


# --------------------------------------------------------- 2c: listen ends at shutdown


async def test_shutdown_ends_a_listen_stream_with_cancelled_and_its_result() -> None:
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(
            lambda task_status: mcpfast.serve(
                _server(),
                mcpfast.Config(port=0, engine="native" if ENGINE == "native" else "hypercorn"),
                keys=TEST_KEYS,
                shutdown_trigger=stop.wait,
                task_status=task_status,
            )
        )
        url = urls[0] + "/mcp"
        body = {
            "jsonrpc": "2.0",
            "id": "listen-1",
            "method": "subscriptions/listen",
            "params": {"notifications": {"toolsListChanged": True}, "_meta": meta()},
        }
        headers = {
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": MODERN,
            "mcp-method": "subscriptions/listen",
        }
        messages: list[dict[str, Any]] = []
        parser = sse.Parser()
        with trio.fail_after(10):
            async with httpx2.AsyncClient(timeout=10) as client:
                async with client.stream("POST", url, json=body, headers=headers) as response:
                    async for chunk in response.aiter_bytes():
                        for event in parser.feed(chunk):
                            if event.data:
                                messages.append(json.loads(event.data))
                        if messages and not stop.is_set():
                            stop.set()  # acknowledged: now the server shuts down
    methods = [m.get("method") for m in messages]
    assert methods == ["notifications/subscriptions/acknowledged", "notifications/cancelled", None]
    tag = {"io.modelcontextprotocol/subscriptionId": "listen-1"}
    cancelled, final = messages[1], messages[2]
    assert cancelled["params"]["requestId"] == "listen-1"
    assert cancelled["params"]["_meta"] == tag
    validate(MODERN, "CancelledNotification", cancelled)
    assert final["id"] == "listen-1"
    assert final["result"]["resultType"] == "complete"
    assert final["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-1"
    validate(MODERN, "SubscriptionsListenResultResponse", final)


# ------------------------------------------------------------------ 2a: stdio notifications

STDIO_SERVER = """
import mcpfast
server = mcpfast.Server("stdio-corners")

@server.resource("test://doc", mime_type="text/plain")
def doc() -> str:
    return "doc"

@server.tool()
async def change() -> str:
    await server.resource_updated("test://doc")
    server.add_tool(lambda: "new", name="fresh")
    return "changed"
"""


async def test_a_legacy_stdio_session_gets_change_notifications(tmp_path: Path) -> None:
    target = tmp_path / "stdio_corners.py"
    target.write_text(STDIO_SERVER)
    argv = mcpfast_command("serve", "--stdio", f"{target}:server")
    version = "2025-06-18"
    process = await trio.lowlevel.open_process(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=tmp_path
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        buffer = b""

        async def send(message: dict[str, Any]) -> None:
            assert process.stdin is not None
            await process.stdin.send_all(json.dumps(message).encode() + b"\n")

        async def read() -> dict[str, Any]:
            nonlocal buffer
            assert process.stdout is not None
            while b"\n" not in buffer:
                chunk = await process.stdout.receive_some()
                assert chunk, "the server closed its stdout"
                buffer += chunk
            line, buffer = buffer.split(b"\n", 1)
            loaded: dict[str, Any] = json.loads(line)
            return loaded

        with trio.fail_after(20):
            await send(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": version,
                        "capabilities": {},
                        "clientInfo": {"name": "tests", "version": "1"},
                    },
                }
            )
            assert (await read())["result"]["protocolVersion"] == version
            await send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            await send(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "resources/subscribe",
                    "params": {"uri": "test://doc"},
                }
            )
            assert (await read()) == {"jsonrpc": "2.0", "id": 2, "result": {}}
            await send(
                {
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "tools/call",
                    "params": {"name": "change", "arguments": {}},
                }
            )
            seen: dict[str, dict[str, Any]] = {}
            while len(seen) < 3:
                message = await read()
                seen[message.get("method") or "response"] = message
            await process.stdin.aclose()
            await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert seen["notifications/resources/updated"]["params"] == {"uri": "test://doc"}
    assert "notifications/tools/list_changed" in seen
    assert seen["response"]["result"]["content"][0]["text"] == "changed"
    for method in ("notifications/resources/updated", "notifications/tools/list_changed"):
        validate_message(version, "", seen[method])
