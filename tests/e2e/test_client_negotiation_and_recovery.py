"""The mcpfast client in its corners, through the real stack: real servers on loopback (the
engine under test, or a stand-in around a real endpoint that answers some requests its own
way), real stdio subprocesses: negotiation, recovery from dropped answers, declarations."""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import struct
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio

import mcpfast
from mcpfast import Context
from mcpfast.client import EraCache
from mcpfast.client.connect import EraChoice
from mcpfast.demo import server as demo
from mcpfast.server.config import Config
from mcpfast.server.core.endpoint import Endpoint
from mcpfast.server.engines.asgi import App

from ..helpers import DEMO_TOOLS, TEST_KEYS, replay, running, session_of
from .test_client import _serve_asgi

corner = mcpfast.Server("corners", "1.0")


@corner.tool()
def add(a: int, b: int) -> int:
    return a + b


@corner.tool()
async def logs(ctx: Context) -> str:
    for level in ("debug", "info", "warning"):
        await ctx.log(level, f"at {level}")
    return "logged"


@corner.tool()
async def pick(ctx: Context) -> str:
    tools = [{"name": "look", "inputSchema": {"type": "object"}}]
    answer = await ctx.sample("Pick a tool", tools=tools)
    return f"sampled: {answer['content']['text']}"


@corner.resource("corner://doc", mime_type="text/plain")
def doc() -> str:
    return "doc"


def _keeping(seen: list[Any]) -> Callable[[Any], bool]:
    """An ``on_discover`` hook that keeps what it is given and accepts the server."""

    def accept(discovered: Any) -> bool:
        seen.append(discovered)
        return True

    return accept


# ----------------------------------------------------------------------------- the stand-in

Answer = tuple[int, bytes, list[bytes]]
"""A scripted answer: status, content type, body chunks."""
Script = Callable[["StandIn", dict[str, Any]], Awaitable[Answer | None]]


class StandIn:
    """A real mcpfast endpoint for ``server``, but a POST that ``script`` answers (not None)
    gets that answer; records every request (method, JSON-RPC message or None)."""

    def __init__(self, server: mcpfast.Server, script: Script | None = None) -> None:
        self.inner = App(Endpoint(server, Config(), TEST_KEYS))
        self.script = script
        self.seen: list[tuple[str, Any]] = []

    def methods(self) -> list[str]:
        return [m.get("method", "") for kind, m in self.seen if kind == "POST" and m]

    def messages(self, method: str) -> list[dict[str, Any]]:
        return [m for kind, m in self.seen if kind == "POST" and m and m.get("method") == method]

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            if scope["type"] == "http":
                self.seen.append((scope["method"], None))
            await self.inner(scope, receive, send)
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        message = json.loads(body)
        self.seen.append(("POST", message))
        answer = await self.script(self, message) if self.script is not None else None
        if answer is None:
            await self.inner(scope, replay(body, receive), send)
            return
        status, kind, chunks = answer
        headers = [(b"content-type", kind)] if kind else []
        await send({"type": "http.response.start", "status": status, "headers": headers})
        for index, chunk in enumerate(chunks):
            last = index == len(chunks) - 1
            await send({"type": "http.response.body", "body": chunk, "more_body": not last})
        if not chunks:
            await send({"type": "http.response.body", "body": b""})

    async def forward(self, message: dict[str, Any]) -> tuple[int, list[Any], dict[str, Any]]:
        """What the real endpoint answers ``message`` (a JSON answer): status, headers, body."""
        out: dict[str, Any] = {"body": b""}

        async def capture(event: dict[str, Any]) -> None:
            if event["type"] == "http.response.start":
                out["status"], out["headers"] = event["status"], event["headers"]
            else:
                out["body"] += event.get("body", b"")

        scope = {
            "type": "http",
            "method": "POST",
            "path": "/mcp",
            "raw_path": b"/mcp",
            "query_string": b"",
            "headers": [
                (b"host", b"127.0.0.1"),
                (b"content-type", b"application/json"),
                (b"accept", b"application/json"),
                (b"mcp-protocol-version", b"2026-07-28"),
                (b"mcp-method", message["method"].encode()),
            ],
            "http_version": "1.1",
            "scheme": "http",
            "server": ("127.0.0.1", 80),
            "client": ("127.0.0.1", 1),
        }
        await self.inner(scope, replay(json.dumps(message).encode()), capture)
        return out["status"], out["headers"], json.loads(out["body"])


def _json(message: dict[str, Any], status: int = 200) -> Answer:
    return status, b"application/json", [json.dumps(message).encode()]


def _event(message: dict[str, Any]) -> bytes:
    return b"event: message\ndata: " + json.dumps(message).encode() + b"\n\n"


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(_serve_asgi, app)
        yield urls[0] + "/mcp"
        nursery.cancel_scope.cancel()


# ---------------------------------------------------------------------- 1. tasks per request


async def test_call_tool_after_a_task_gets_the_tool_result(demo_url: str) -> None:
    bodies: list[dict[str, Any]] = []

    async def record(request: httpx2.Request) -> None:
        if request.headers.get("mcp-method") == "tools/call":
            bodies.append(json.loads(request.content))

    async with (
        httpx2.AsyncClient(event_hooks={"request": [record]}) as http,
        mcpfast.connect(demo_url, "modern", era_cache=EraCache(), http_client=http) as client,
    ):
        task = await client.start_task("slow", {"steps": 1, "delay": 0.01})
        assert task["resultType"] == "task" and task["taskId"]
        result = await client.call_tool("slow", {"steps": 1, "delay": 0.01})
        assert result.content[0].text == "done after 1 steps"  # type: ignore[union-attr]
    declared = [b["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] for b in bodies]
    assert "io.modelcontextprotocol/tasks" in declared[0]["extensions"]
    assert "extensions" not in declared[1]


async def _odd_results(app: StandIn, message: dict[str, Any]) -> Answer | None:
    if message.get("method") != "tools/call":
        return None
    name = message["params"]["name"]
    result: dict[str, Any] = {"resultType": "bogus", "content": []}
    if name == "sneaky":
        result = {
            "resultType": "task",
            "taskId": "t1",
            "status": "working",
            "createdAt": "2026-01-01T00:00:00Z",
            "lastUpdatedAt": "2026-01-01T00:00:00Z",
            "ttlMs": None,
        }
    return _json({"jsonrpc": "2.0", "id": message["id"], "result": result})


@pytest.mark.parametrize(("tool", "kind"), [("odd", "'bogus'"), ("sneaky", "'task'")])
async def test_a_result_type_the_request_did_not_allow_is_an_error(tool: str, kind: str) -> None:
    async with (
        serving(StandIn(demo, _odd_results)) as url,
        mcpfast.connect(url, "modern", era_cache=EraCache()) as client,
    ):
        with pytest.raises(mcpfast.TransportError, match=f"resultType {kind}"):
            await client.call_tool(tool)


# ---------------------------------------------------------------- 2a. renewing a session


async def test_a_renewed_session_restores_its_log_level_subscriptions_and_get_stream() -> None:
    logs: list[str] = []
    updates: list[str] = []
    updated = trio.Event()

    async def note(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/resources/updated":
            updates.append(params["uri"])
            updated.set()

    async with (
        running(corner) as url,
        mcpfast.connect(
            url,
            "legacy",
            on_log=lambda p: logs.append(p["level"]),
            on_notification=note,
            era_cache=EraCache(),
        ) as client,
    ):
        await client.set_log_level("warning")
        await client.subscribe("corner://doc")
        old = session_of(client)
        async with httpx2.AsyncClient() as http:
            ended = await http.delete(
                url,
                headers={"mcp-session-id": old or "", "mcp-protocol-version": "2025-11-25"},
            )
            assert ended.status_code < 300
        assert (await client.call_tool("logs")).content[0].text == "logged"  # type: ignore[union-attr]
        assert session_of(client) not in (None, old)
        assert logs == ["warning"]
        with trio.fail_after(10):
            while not updated.is_set():  # the GET stream may still be reconnecting: ask again
                await corner.resource_updated("corner://doc")
                with trio.move_on_after(0.2):
                    await updated.wait()
    assert updates[0] == "corner://doc"


# ------------------------------------------------------------ 2b. a revision it does not speak


async def _old_initialize(app: StandIn, message: dict[str, Any]) -> Answer | None:
    if message.get("method") != "initialize":
        return None
    status, headers, answer = await app.forward(message)
    answer["result"]["protocolVersion"] = "2024-11-05"
    session = [v for k, v in headers if k == b"mcp-session-id"]
    body = json.dumps(answer).encode()
    _ = session
    return status, b"application/json", [body]


async def test_a_negotiated_revision_the_client_does_not_speak_is_refused() -> None:
    app = StandIn(corner, _old_initialize)
    async with serving(app) as url:
        with pytest.raises(mcpfast.TransportError, match="'2024-11-05'"):
            async with mcpfast.connect(url, "legacy", era_cache=EraCache()):
                pass
    assert "tools/list" not in app.methods() and "notifications/initialized" not in app.methods()


OLD_STDIO = r"""
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": "2024-11-05",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "old", "version": "1"}}}), flush=True)
"""


async def test_a_stdio_server_negotiating_an_unknown_revision_is_refused() -> None:
    with pytest.raises(mcpfast.TransportError, match="'2024-11-05'"):
        async with mcpfast.connect(
            [sys.executable, "-c", OLD_STDIO], "legacy", timeout=5, era_cache=EraCache()
        ):
            pass


# ------------------------------------------------------------- 2c. a dropped modern response


def _dropping(times: int) -> Script:
    async def script(app: StandIn, message: dict[str, Any]) -> Answer | None:
        if message.get("method") != "tools/call" or len(app.messages("tools/call")) > times:
            return None
        progress = {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": "none", "progress": 1},
        }
        return 200, b"text/event-stream", [_event(progress)]

    return script


async def test_a_dropped_modern_response_is_reissued_with_a_new_id() -> None:
    app = StandIn(demo, _dropping(1))
    async with (
        serving(app) as url,
        mcpfast.connect(url, "modern", era_cache=EraCache()) as client,
    ):
        assert (await client.call_tool("add", {"a": 1, "b": 2})).structuredContent == {"result": 3}
    first, second = app.messages("tools/call")
    assert first["id"] != second["id"] and first["params"] == second["params"]


async def test_a_response_that_drops_twice_is_a_transport_error() -> None:
    app = StandIn(demo, _dropping(5))
    async with (
        serving(app) as url,
        mcpfast.connect(url, "modern", era_cache=EraCache()) as client,
    ):
        with pytest.raises(mcpfast.TransportError, match="broke off"):
            await client.call_tool("add", {"a": 1, "b": 2})
    assert len(app.messages("tools/call")) == 2


# ------------------------------------------------------------------ 2d. roots list_changed


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_notify_roots_changed(era: EraChoice) -> None:
    app = StandIn(corner)
    async with (
        serving(app) as url,
        mcpfast.connect(
            url, era, on_roots=lambda: [{"uri": "file:///w"}], era_cache=EraCache()
        ) as client,
    ):
        await client.notify_roots_changed()
        await client.call_tool("add", {"a": 1, "b": 1})
    sent = app.methods().count("notifications/roots/list_changed")
    if era == "legacy":
        (initialize,) = app.messages("initialize")
        assert initialize["params"]["capabilities"]["roots"] == {"listChanged": True}
        assert sent == 1
    else:
        assert sent == 0


# ------------------------------------------------------------------- 2e. sampling with tools


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_connect_can_declare_sampling_tools(era: EraChoice) -> None:
    seen: list[dict[str, Any]] = []

    def sample(params: dict[str, Any]) -> dict[str, Any]:
        seen.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "look"}, "model": "m"}

    async with (
        running(corner) as url,
        mcpfast.connect(
            url, era, on_sample=sample, sampling_tools=True, era_cache=EraCache()
        ) as client,
    ):
        assert (await client.call_tool("pick")).content[0].text == "sampled: look"  # type: ignore[union-attr]
    assert seen[0]["tools"][0]["name"] == "look"


# ------------------------------------------------------------------------ 3. era detection


async def test_a_cached_or_forced_modern_connection_has_its_discover_result(demo_url: str) -> None:
    seen: list[Any] = []
    probes: list[str] = []

    async def count(request: httpx2.Request) -> None:
        if request.headers.get("mcp-method") == "server/discover":
            probes.append(str(request.url))

    cache = EraCache()
    async with httpx2.AsyncClient(event_hooks={"request": [count]}) as http:
        for era in ("auto", "auto", "modern"):
            async with mcpfast.connect(
                demo_url,
                era,
                era_cache=cache,
                http_client=http,
                on_discover=_keeping(seen),
            ) as client:
                assert client.discover_result is not None
                assert client.server_info["name"] == "mcpfast-demo"
    assert len(seen) == 3
    assert len(probes) == 1  # the cached result (ttlMs 60 s, public) serves the other two
    with pytest.raises(mcpfast.TransportError, match="discover hook"):
        async with mcpfast.connect(demo_url, era_cache=cache, on_discover=lambda d: False):
            pass


RECORDING_STDIO = r"""
import json, sys
log = open(sys.argv[1], "a")
for line in sys.stdin:
    msg = json.loads(line)
    method = msg.get("method")
    log.write(str(method) + "\n"); log.flush()
    if "id" not in msg:
        continue
    if method == "server/discover":
        if sys.argv[2] == "fail":
            out = {"error": {"code": -32603, "message": "internal trouble"}}
        else:
            out = {"result": {"resultType": "complete", "supportedVersions": ["2026-07-28"],
                   "capabilities": {"tools": {}}, "ttlMs": 60000, "cacheScope": "public",
                   "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "rec", "version": "1"}}}}
    elif method == "initialize":
        out = {"result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
               "serverInfo": {"name": "rec", "version": "1"}}}
    elif method == "tools/list":
        out = {"result": {"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "public"}}
    else:
        out = {"error": {"code": -32601, "message": "no"}}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], **out}), flush=True)
"""


async def test_stdio_caches_the_modern_verdict(tmp_path: Path) -> None:
    record = tmp_path / "methods"
    command = [sys.executable, "-c", RECORDING_STDIO, str(record), "ok"]
    cache = EraCache()
    seen: list[Any] = []
    for _ in range(2):
        async with mcpfast.connect(
            command, era_cache=cache, timeout=5, on_discover=_keeping(seen)
        ) as client:
            assert client.era == "modern"
            assert client.discover_result is not None and client.server_info["name"] == "rec"
            assert await client.list_tools() == []
    assert cache.get(" ".join(command)) == ("modern", "2026-07-28")
    assert record.read_text().split() == ["server/discover", "tools/list", "tools/list"]
    assert len(seen) == 2


async def test_stdio_does_not_fall_back_on_other_errors(tmp_path: Path) -> None:
    record = tmp_path / "methods"
    command = [sys.executable, "-c", RECORDING_STDIO, str(record), "fail"]
    with pytest.raises(mcpfast.TransportError, match="-32603"):
        async with mcpfast.connect(command, era_cache=EraCache(), timeout=5):
            pass
    assert "initialize" not in record.read_text().split()


async def _legacy_only(app: StandIn, message: dict[str, Any]) -> Answer | None:
    if message.get("method") != "server/discover":
        return None
    error = {
        "code": -32022,
        "message": "Unsupported protocol version",
        "data": {"supported": ["2025-06-18", "2025-03-26"], "requested": "2026-07-28"},
    }
    return _json({"jsonrpc": "2.0", "id": message["id"], "error": error}, status=400)


async def test_a_legacy_only_32022_makes_initialize_ask_for_the_highest_common() -> None:
    app = StandIn(corner, _legacy_only)
    async with (
        serving(app) as url,
        mcpfast.connect(url, era_cache=EraCache()) as client,
    ):
        assert client.era == "legacy"
        assert client.protocol_version == "2025-06-18"
        assert (await client.call_tool("add", {"a": 1, "b": 1})).structuredContent == {"result": 2}
    (initialize,) = app.messages("initialize")
    assert initialize["params"]["protocolVersion"] == "2025-06-18"


BAD_TOOLS = [
    {
        "name": "in_items",
        "inputSchema": {
            "type": "object",
            "properties": {
                "a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}
            },
        },
    },
    {
        "name": "in_any_of",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"anyOf": [{"type": "string", "x-mcp-header": "A"}]}},
        },
    },
    {
        "name": "in_defs",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/A"}},
            "$defs": {"A": {"type": "string", "x-mcp-header": "A"}},
        },
    },
]


async def _bad_tools(app: StandIn, message: dict[str, Any]) -> Answer | None:
    if message.get("method") != "tools/list":
        return None
    _, _, answer = await app.forward(message)
    answer["result"]["tools"].extend(BAD_TOOLS)
    answer["id"] = message["id"]
    return _json(answer)


async def test_tools_with_unreachable_headers_are_dropped_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="mcpfast.client")
    async with (
        serving(StandIn(demo, _bad_tools)) as url,
        mcpfast.connect(url, "modern", era_cache=EraCache()) as client,
    ):
        names = {tool.name for tool in await client.list_tools()}
        assert names == DEMO_TOOLS
        assert set(client.dropped_tools) == {"in_items", "in_any_of", "in_defs"}
    warned = [r.getMessage() for r in caplog.records if r.name == "mcpfast.client"]
    for tool in ("in_items", "in_any_of", "in_defs"):
        assert any(f"MCP tool {tool!r} ignored" in w and "statically" in w for w in warned)


# ------------------------------------------------------------ 4. an undeclared elicitation mode


class UrlAsker:
    """A scripted 2025-11-25 server whose one tool asks for URL-mode elicitation on its call's
    stream and reports the client's answer."""

    def __init__(self) -> None:
        self.replies: list[dict[str, Any]] = []
        self.replied = trio.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                event = await receive()
                await send({"type": event["type"] + ".complete"})
                if event["type"] == "lifespan.shutdown":
                    return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break

        async def answer(status: int, chunks: list[bytes], kind: bytes, extra: Any = ()) -> None:
            headers = [(b"content-type", kind), *extra]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            for index, chunk in enumerate(chunks):
                more = index < len(chunks) - 1
                await send({"type": "http.response.body", "body": chunk, "more_body": more})

        if scope["method"] != "POST":
            await answer(405, [b""], b"text/plain")
            return
        message = json.loads(body)
        method = message.get("method")
        if method == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "asker", "version": "1"},
            }
            reply = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
            await answer(200, [reply.encode()], b"application/json", [(b"mcp-session-id", b"s1")])
        elif method is None:  # the client's answer to our request
            self.replies.append(message)
            self.replied.set()
            await answer(202, [b""], b"text/plain")
        elif method == "tools/call":
            ask = {
                "jsonrpc": "2.0",
                "id": "e1",
                "method": "elicitation/create",
                "params": {
                    "mode": "url",
                    "message": "go",
                    "url": "https://x",
                    "elicitationId": "x",
                },
            }
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")],
                }
            )
            await send({"type": "http.response.body", "body": _event(ask), "more_body": True})
            with trio.fail_after(5):
                await self.replied.wait()
            text = json.dumps(self.replies[-1].get("error") or self.replies[-1].get("result"))
            done = {
                "jsonrpc": "2.0",
                "id": message["id"],
                "result": {"content": [{"type": "text", "text": text}]},
            }
            await send({"type": "http.response.body", "body": _event(done), "more_body": False})
        else:
            await answer(202, [b""], b"text/plain")


@pytest.mark.parametrize("url_mode", [False, True])
async def test_an_undeclared_elicitation_mode_is_answered_with_32602(url_mode: bool) -> None:
    app = UrlAsker()
    asked: list[dict[str, Any]] = []

    def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept"}

    async with (
        serving(app) as url,
        mcpfast.connect(
            url,
            "legacy",
            on_elicit=elicit,
            elicitation_url=url_mode,
            era_cache=EraCache(),
            open_get_stream=False,
        ) as client,
    ):
        result = await client.call_tool("visit")
    (reply,) = app.replies
    assert reply["id"] == "e1"
    if url_mode:
        assert reply["result"] == {"action": "accept"} and len(asked) == 1
    else:
        assert reply["error"]["code"] == -32602 and asked == []
        assert "-32602" in result.content[0].text  # type: ignore[union-attr]


@asynccontextmanager
async def _resetting_first(target: str) -> AsyncIterator[tuple[str, list[int]]]:
    """A TCP relay on loopback in front of ``target`` (an MCP URL) whose first connection is
    reset (RST) once the request has arrived, unanswered, as a server closing a kept-alive
    connection does; later connections are relayed. Yields its URL and the count of resets."""
    host, port = target.split("//")[1].split("/")[0].split(":")
    resets: list[int] = []

    async def pump(source: trio.SocketStream, sink: trio.SocketStream) -> None:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            async for chunk in source:
                await sink.send_all(chunk)
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await sink.send_eof()

    async def handle(client: trio.SocketStream) -> None:
        if not resets:
            resets.append(1)
            await client.receive_some(65536)
            client.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.socket.close()
            return
        async with client, await trio.open_tcp_stream(host, int(port)) as upstream:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(pump, client, upstream)
                nursery.start_soon(pump, upstream, client)

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, handle, 0, host="127.0.0.1"))
        relay_port = listeners[0].socket.getsockname()[1]
        yield f"http://127.0.0.1:{relay_port}/mcp", resets
        nursery.cancel_scope.cancel()


async def test_an_initialize_reset_before_any_answer_is_sent_once_more() -> None:
    """A kept-alive connection the server had just closed resets ``initialize`` before any
    answer: the client sends it once more, on a new connection, and the session opens."""
    async with running(demo) as url, _resetting_first(url) as (relay, resets):
        async with mcpfast.connect(relay, era="legacy", era_cache=EraCache()) as client:
            assert session_of(client) is not None
            assert (await client.call_tool("add", {"a": 1, "b": 2})).structuredContent == {
                "result": 3
            }
    assert resets == [1]
