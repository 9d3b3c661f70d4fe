"""What the server sends and refuses per revision, through the real stack: loopback HTTP on
the engine under test with raw `Wire` exchanges or the real client, and stdio in a
subprocess."""

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
import trio.testing

import mcpfast
from mcpfast import Context
from mcpfast.client import EraCache
from mcpfast.types import ToolResult

from ..helpers import Wire, running, validate, validate_message
from .processes import mcpfast_command

TASKS_EXT: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
NESTED = {
    "type": "object",
    "properties": {"address": {"type": "object", "properties": {"city": {"type": "string"}}}},
}


def _server(release: trio.Event | None = None) -> mcpfast.Server:
    server = mcpfast.Server("gaps", "1.0", title="Gaps", website_url="https://example.com")

    @server.tool()
    def login() -> str:
        raise mcpfast.UrlElicitationRequired(
            [{"message": "Log in", "url": "https://example.com/login", "elicitationId": "l-1"}]
        )

    @server.tool()
    async def nested_form(ctx: Context) -> str:
        answer = await ctx.elicit("Where?", NESTED)
        return str(answer)

    @server.tool()
    async def with_context(ctx: Context) -> str:
        answer = await ctx.sample("Summarise", includeContext="thisServer", key="s")
        return str(answer["content"]["text"])

    @server.tool()
    def own_meta() -> ToolResult:
        return ToolResult(
            content=[mcpfast.types.TextContent(text="hi")], meta={"example.com/trace": "t-1"}
        )

    @server.tool(task="optional")
    async def failing() -> str:
        if release is not None:
            await release.wait()
        raise RuntimeError("the backend is down")

    @server.tool(task="optional")
    async def fine() -> str:
        return "fine"

    @server.tool(title="Adder")
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    def liar() -> int:
        return "not a number"  # type: ignore[return-value]

    @server.tool(output_schema={"type": "object", "properties": {"n": {"type": "integer"}}})
    def declared() -> dict[str, Any]:
        return {"n": "one"}

    return server


@asynccontextmanager
async def _wire(server: mcpfast.Server, **config: Any) -> AsyncIterator[Wire]:
    async with running(server, **config) as url, httpx2.AsyncClient(timeout=10) as client:
        yield Wire(client, url)


# --------------------------------------------------------------- 17: elicitation edges


async def test_url_elicitation_needs_the_client_s_url_mode() -> None:
    async with _wire(_server()) as wire:
        refused = await wire.modern(
            "tools/call",
            {"name": "login", "arguments": {}},
            capabilities={"elicitation": {"form": {}}},
        )
        assert refused.status == 400
        assert refused.error["code"] == -32021
        assert refused.error["data"] == {"requiredCapabilities": {"elicitation": {"url": {}}}}
        validate_message("2026-07-28", "tools/call", refused.message)
        asked = await wire.modern(
            "tools/call",
            {"name": "login", "arguments": {}},
            capabilities={"elicitation": {"url": {}}},
        )
        assert asked.result["resultType"] == "input_required"
        request = asked.result["inputRequests"]["l-1"]
        assert request["params"]["mode"] == "url"
        assert asked.result["_meta"][SERVER_INFO]["name"] == "gaps"
        validate_message("2026-07-28", "tools/call", asked.message)


async def test_a_nested_form_is_refused_before_it_is_sent() -> None:
    asked: list[Any] = []

    def on_elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "cancel"}

    async with _wire(_server()) as wire:
        modern = await wire.modern(
            "tools/call",
            {"name": "nested_form", "arguments": {}},
            capabilities={"elicitation": {"form": {}}},
        )
        assert modern.result["resultType"] == "complete"  # not input_required
        assert modern.result["isError"] is True
        text = modern.result["content"][0]["text"]
        assert "refused before sending" in text and "'address'" in text
        async with mcpfast.connect(
            wire.url,
            "legacy",
            legacy_version="2025-06-18",
            on_elicit=on_elicit,
            era_cache=EraCache(),
        ) as client:
            legacy = await client.call_tool("nested_form", {})
    assert legacy.isError is True and "flat primitives" in legacy.content[0].text  # type: ignore[union-attr]
    assert asked == []  # the client was never asked


# ------------------------------------------------------------------ 18: sampling context


async def test_sampling_with_context_needs_sampling_context() -> None:
    async with _wire(_server()) as wire:
        refused = await wire.modern(
            "tools/call",
            {"name": "with_context", "arguments": {}},
            capabilities={"sampling": {}},
        )
        assert refused.status == 400 and refused.error["code"] == -32021
        assert refused.error["data"] == {"requiredCapabilities": {"sampling": {"context": {}}}}
        asked = await wire.modern(
            "tools/call",
            {"name": "with_context", "arguments": {}},
            capabilities={"sampling": {"context": {}}},
        )
        assert asked.result["resultType"] == "input_required"
        params = asked.result["inputRequests"]["s"]["params"]
        assert params["includeContext"] == "thisServer"
        # 2025-11-25 gates it too (a legacy session: a tool error naming the capability)
        session, _ = await wire.initialize("2025-11-25", {"sampling": {}})
        legacy = await wire.legacy(
            "tools/call",
            {"name": "with_context", "arguments": {}},
            session=session,
            version="2025-11-25",
        )
        assert legacy.result["isError"] is True
        assert "sampling" in legacy.result["content"][0]["text"]


# ------------------------------------------------------------ 19: 2025-11-25 tasks edges


async def test_a_2025_11_25_task_whose_tool_errors_fails_and_notifies() -> None:
    release = trio.Event()
    statuses: list[dict[str, Any]] = []
    ended = trio.Event()

    async def note(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/tasks/status":
            statuses.append(params)
            if params["status"] in ("completed", "failed", "cancelled"):
                ended.set()

    async with running(_server(release), task_max_ttl_ms=120_000) as url:
        async with mcpfast.connect(
            url, "legacy", legacy_version="2025-11-25", on_notification=note, era_cache=EraCache()
        ) as client:
            created = await client.request(
                "tools/call", {"name": "failing", "arguments": {}, "task": {"ttl": 10**12}}
            )
            validate("2025-11-25", "CreateTaskResult", created)
            task = created["task"]
            assert task["ttl"] == 120_000  # the server's maximum, not the 10**12 asked for
            await trio.testing.wait_all_tasks_blocked()  # the GET stream is open
            release.set()
            with trio.fail_after(10):
                await ended.wait()
            got = await client.request("tasks/get", {"taskId": task["taskId"]})
            result = await client.request("tasks/result", {"taskId": task["taskId"]})
    assert got["status"] == "failed"
    assert got["statusMessage"] == "the backend is down"
    assert result["isError"] is True  # tasks/result: what the call would have returned
    assert statuses[-1]["taskId"] == task["taskId"] and statuses[-1]["status"] == "failed"
    assert statuses[-1]["ttl"] == 120_000
    assert "_meta" not in statuses[-1]  # SHOULD NOT carry related-task
    for status in statuses:
        validate("2025-11-25", "TaskStatusNotificationParams", status)


async def test_a_2025_11_25_task_ttl_in_bounds_is_kept() -> None:
    async with _wire(_server()) as wire:
        session, _ = await wire.initialize("2025-11-25")
        created = await wire.legacy(
            "tools/call",
            {"name": "fine", "arguments": {}, "task": {"ttl": 5000}},
            session=session,
            version="2025-11-25",
        )
        assert created.result["task"]["ttl"] == 5000


# --------------------------------------------------------------------- 20: result _meta


async def test_a_tool_s_own_result_meta_is_merged_with_server_info() -> None:
    async with _wire(_server()) as wire:
        reply = await wire.modern("tools/call", {"name": "own_meta", "arguments": {}})
        meta = reply.result["_meta"]
        assert meta["example.com/trace"] == "t-1"
        assert meta[SERVER_INFO] == {"name": "gaps", "version": "1.0"}
        task = await wire.modern(
            "tools/call", {"name": "fine", "arguments": {}}, capabilities=TASKS_EXT
        )
        assert task.result["resultType"] == "task"
        assert task.result["_meta"][SERVER_INFO] == {"name": "gaps", "version": "1.0"}


# ------------------------------------------------------------------- 24: capabilities


async def test_a_server_advertises_only_what_it_has() -> None:
    empty = mcpfast.Server("empty")
    tools_only = mcpfast.Server("tools-only")
    tools_only.add_tool(lambda: "x", name="x")
    async with _wire(empty) as wire:
        discovered = await wire.modern("server/discover")
        assert discovered.result["capabilities"] == {"logging": {}}
        for version in ("2025-11-25", "2025-06-18", "2025-03-26"):
            _, reply = await wire.initialize(version)
            assert reply.result["capabilities"] == {"logging": {}}, version
    async with _wire(tools_only) as wire:
        discovered = await wire.modern("server/discover")
        assert discovered.result["capabilities"] == {
            "tools": {"listChanged": True},
            "logging": {},
        }
        _, reply = await wire.initialize("2025-11-25")
        assert reply.result["capabilities"] == {"tools": {"listChanged": True}, "logging": {}}
    async with _wire(_server()) as wire:  # task tools: the tasks capability of each era
        discovered = await wire.modern("server/discover")
        assert discovered.result["capabilities"]["extensions"] == {
            "io.modelcontextprotocol/tasks": {}
        }
        _, reply = await wire.initialize("2025-11-25")
        assert "tasks" in reply.result["capabilities"]
        assert "resources" not in reply.result["capabilities"]


# ------------------------------------------- conformance: a 2026-07-28 initialize (SEP-2575)


async def test_a_2026_07_28_initialize_is_a_removed_method() -> None:
    """An ``initialize`` that is a 2026-07-28 request (no ``protocolVersion``, modern
    ``_meta``) gets what the modern era gives a method it lacks; one naming a legacy
    ``protocolVersion`` still opens a session (`test_server_era_routing_and_streams`)."""
    async with _wire(_server()) as wire:
        reply = await wire.modern("initialize", {})
        assert reply.status == 404
        assert reply.error["code"] == -32601
        assert "mcp-session-id" not in reply.headers
        validate_message("2026-07-28", "tools/call", reply.message)


# ------------------------------------------------------------------ 26: smaller SHOULDs


async def test_structured_content_must_match_the_output_schema() -> None:
    async with _wire(_server()) as wire:
        good = await wire.modern("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
        assert good.result["structuredContent"] == {"result": 3}
        for name in ("liar", "declared"):
            bad = await wire.modern("tools/call", {"name": name, "arguments": {}})
            assert bad.result["isError"] is True, name
            assert "structuredContent" not in bad.result
            text = bad.result["content"][0]["text"]
            assert "does not match its outputSchema" in text and repr(name) in text
            validate_message("2026-07-28", "tools/call", bad.message)


# ----------------------------------------------------------- per-revision result fields


async def test_each_revision_gets_only_its_own_fields() -> None:
    async with _wire(_server()) as wire:
        for version in ("2025-03-26", "2025-06-18", "2025-11-25"):
            session, init = await wire.initialize(version)
            info = init.result["serverInfo"]
            listed = await wire.legacy("tools/list", {}, session=session, version=version)
            add = next(t for t in listed.result["tools"] if t["name"] == "add")
            fine = next(t for t in listed.result["tools"] if t["name"] == "fine")
            called = await wire.legacy(
                "tools/call",
                {"name": "add", "arguments": {"a": 1, "b": 2}},
                session=session,
                version=version,
            )
            if version == "2025-03-26":
                assert "title" not in info and "websiteUrl" not in info
                assert "title" not in add and "outputSchema" not in add
                assert "structuredContent" not in called.result
                assert called.result["content"][0]["text"] == '{"result":3}'
            else:
                assert info["title"] == "Gaps" and add["title"] == "Adder"
                assert "outputSchema" in add
                assert called.result["structuredContent"] == {"result": 3}
            if version == "2025-11-25":
                assert info["websiteUrl"] == "https://example.com"
                assert fine["execution"] == {"taskSupport": "optional"}
            else:
                assert "websiteUrl" not in info and "execution" not in fine
            validate(version, "InitializeResult", init.result)
            validate_message(version, "tools/list", listed.message)
            validate_message(version, "tools/call", called.message)


# ------------------------------------------------------------------ 22: stdio edges

STDIO_SERVER = """
import mcpfast
server = mcpfast.Server("stdio-gaps")

@server.tool()
def noisy(text: str) -> str:
    print("a handler's print, for the log")
    return text
"""


class _Pipe:
    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.buffer = b""

    async def send(self, message: Any) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send_all(json.dumps(message).encode() + b"\n")

    async def read(self) -> Any:
        assert self.process.stdout is not None
        while b"\n" not in self.buffer:
            chunk = await self.process.stdout.receive_some()
            assert chunk, "the server closed its stdout"
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)  # every stdout line is a JSON-RPC message


def _initialize(id_: int, version: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id_,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "tests", "version": "1"},
        },
    }


def _call(id_: int, text: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id_,
        "method": "tools/call",
        "params": {"name": "noisy", "arguments": {"text": text}},
    }


@asynccontextmanager
async def _stdio(tmp_path: Path) -> AsyncIterator[_Pipe]:
    target = tmp_path / "stdio_gaps.py"
    target.write_text(STDIO_SERVER)
    process = await trio.lowlevel.open_process(
        mcpfast_command("serve", "--stdio", f"{target}:server"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    try:
        with trio.fail_after(20):
            yield _Pipe(process)
    finally:
        process.kill()
        await process.wait()


async def _open(pipe: _Pipe, version: str) -> None:
    await pipe.send(_initialize(1, version))
    assert (await pipe.read())["result"]["protocolVersion"] == version
    await pipe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


async def test_stdio_answers_ping_before_initialize(tmp_path: Path) -> None:
    async with _stdio(tmp_path) as pipe:
        await pipe.send({"jsonrpc": "2.0", "id": "early", "method": "ping"})
        assert await pipe.read() == {"jsonrpc": "2.0", "id": "early", "result": {}}
        await _open(pipe, "2025-06-18")
        await pipe.send({"jsonrpc": "2.0", "id": 5, "method": "ping"})
        assert await pipe.read() == {"jsonrpc": "2.0", "id": 5, "result": {}}


async def test_a_handler_s_print_stays_off_the_stdio_stream(tmp_path: Path) -> None:
    async with _stdio(tmp_path) as pipe:
        await _open(pipe, "2025-06-18")
        await pipe.send(_call(2, "alone"))  # prints: to stderr only
        alone = await pipe.read()  # the next stdout line is the answer, not the print
        assert alone["id"] == 2 and alone["result"]["content"][0]["text"] == "alone"


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18"])
async def test_stdio_batches_only_under_2025_03_26_as_one_line(
    tmp_path: Path, version: str
) -> None:
    async with _stdio(tmp_path) as pipe:
        await _open(pipe, version)
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await pipe.send([_call(3, "one"), note, _call(4, "two")])
        answer = await pipe.read()
        if version == "2025-03-26":
            assert isinstance(answer, list)  # one batch line
            assert sorted(m["id"] for m in answer) == [3, 4]
            validate(version, "JSONRPCBatchResponse", answer)
        else:
            # refused as over HTTP: one id-less -32600, and nothing of the batch ran
            assert "id" not in answer and answer["error"]["code"] == -32600
            assert answer["error"]["data"] == {"reason": "batches need 2025-03-26"}
        await pipe.send({"jsonrpc": "2.0", "id": 5, "method": "ping"})
        assert await pipe.read() == {"jsonrpc": "2.0", "id": 5, "result": {}}
