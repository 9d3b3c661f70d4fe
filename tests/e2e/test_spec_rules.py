"""Spec rules, each through the real stack (a served `Server` on loopback with the
engine under test, the real client or the raw `Wire`): the client's 2025-11-25 task API
(TJ1), a -32022 raised as it came (E10), server requests on modern connections (T4), the
re-probe after a failed cached legacy verdict (E8), the versions named in the refusal of a
2026-shaped ``initialize`` (L8), and rules already implemented that had no test of their own."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
import trio

import mcpfast
from mcpfast import Server
from mcpfast.client import EraCache
from mcpfast.client.connect import EraChoice
from mcpfast.demo import server as demo
from mcpfast.errors import MCPError
from mcpfast.server.config import Config
from mcpfast.server.core.endpoint import Endpoint
from mcpfast.server.engines.asgi import App
from mcpfast.types import (
    AudioContent,
    EmbeddedResource,
    ImageContent,
    ResourceContents,
    ResourceLink,
    TextContent,
    ToolResult,
)
from mcpfast.versions import ALL_VERSIONS

from ..helpers import MODERN, TEST_KEYS, Wire, meta, replay, running
from .test_client import _serve_asgi

LEGACY = "2025-11-25"


@asynccontextmanager
async def wired(server: Server, **config: Any) -> AsyncIterator[Wire]:
    async with running(server, **config) as url, httpx2.AsyncClient(timeout=10) as http:
        yield Wire(http, url)


@asynccontextmanager
async def asgi(app: Any) -> AsyncIterator[str]:
    """Serve an ASGI app (a test double in front of a real mcpfast app) on loopback."""
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(_serve_asgi, app)
        yield urls[0] + "/mcp"
        nursery.cancel_scope.cancel()


async def _read_body(receive: Any) -> bytes:
    body = b""
    while True:
        event: dict[str, Any] = await receive()
        body += bytes(event.get("body", b""))
        if not event.get("more_body"):
            return body


async def _send_json(send: Any, status: int, message: Any, content_type: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", content_type)],
        }
    )
    await send({"type": "http.response.body", "body": message})


# ------------------------------------------------------------------ TJ1: 2025-11-25 task API


async def test_the_2025_11_25_task_api_against_the_real_server(demo_url: str) -> None:
    async with mcpfast.connect(demo_url, "legacy", era_cache=EraCache()) as client:
        assert client.protocol_version == LEGACY
        started = await client.start_task("slow", {"steps": 1, "delay": 0.01}, ttl=60_000)
        task = started["task"]
        assert task["status"] in ("working", "completed") and task["ttl"] == 60_000
        assert (await client.get_task(task["taskId"]))["taskId"] == task["taskId"]
        assert task["taskId"] in {t["taskId"] for t in await client.list_tasks()}
        result = await client.task_result(task["taskId"])
        assert result["content"][0]["text"] == "done after 1 steps"
        assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task["taskId"]}
        long = (await client.start_task("slow", {"steps": 100, "delay": 0.1}))["task"]
        cancelled = await client.cancel_task(long["taskId"])
        assert cancelled["status"] == "cancelled"
        with pytest.raises(MCPError) as again:
            await client.cancel_task(long["taskId"])
        assert again.value.code == -32602
        with pytest.raises(MCPError) as unknown:
            await client.get_task("no-such-task")
        assert unknown.value.code == -32602


async def test_the_legacy_task_api_sends_nothing_the_server_did_not_advertise() -> None:
    server = Server("no-tasks", "1.0")

    @server.tool()
    def echo(text: str) -> str:
        return text

    async with running(server) as url:
        async with mcpfast.connect(url, "legacy", era_cache=EraCache()) as client:
            assert "tasks" not in client.server_capabilities
            for call in (
                client.start_task("echo", {"text": "x"}),
                client.list_tasks(),
                client.cancel_task("t"),
            ):
                with pytest.raises(MCPError) as caught:
                    await call
                assert caught.value.code == -32601 and "was not sent" in caught.value.message


# ---------------------------------------------------------- E10: -32022 raised, sent once


class Unsupported:
    """Answers every modern ``tools/call`` -32022 (listing only 2026-07-28); the rest goes to
    a real mcpfast app. Counts the refused calls."""

    def __init__(self) -> None:
        self.inner = App(Endpoint(demo, Config(), TEST_KEYS))
        self.calls = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"mcp-method") == b"tools/call":
            body = await _read_body(receive)
            self.calls += 1
            error = {
                "code": -32022,
                "message": "Unsupported protocol version",
                "data": {"supported": [MODERN], "requested": MODERN},
            }
            reply = {"jsonrpc": "2.0", "id": json.loads(body)["id"], "error": error}
            await _send_json(send, 400, json.dumps(reply).encode(), b"application/json")
            return
        await self.inner(scope, receive, send)


async def test_a_minus_32022_to_a_request_is_raised_and_not_retried() -> None:
    app = Unsupported()
    async with asgi(app) as url, mcpfast.connect(url, "modern", era_cache=EraCache()) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("add", {"a": 1, "b": 2})
    assert caught.value.code == -32022
    assert app.calls == 1


# ------------------------------------------- T4: server requests on a modern connection

MODERN_STDIO = r"""
import json, sys
DISCOVER = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern-only", "version": "1"}}}
def send(message):
    print(json.dumps(message), flush=True)
lines = iter(sys.stdin)
for line in lines:
    msg = json.loads(line)
    method, id_ = msg.get("method"), msg.get("id")
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": id_, "result": {"resultType": "complete", **DISCOVER}})
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601,
              "message": "Method not found: initialize", "data": {"supported": ["2026-07-28"]}}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": "s1", "method": "elicitation/create",
              "params": {"message": "Name?", "requestedSchema": {"type": "object",
                         "properties": {"name": {"type": "string"}}}}})
        for answer in lines:
            reply = json.loads(answer)
            if reply.get("id") == "s1":
                break
        send({"jsonrpc": "2.0", "id": id_, "result": {"resultType": "complete",
              "content": [{"type": "text", "text": json.dumps(reply)}]}})
"""


async def test_stdio_modern_server_requests_are_refused_minus_32601() -> None:
    """T4 (stdio): a server-to-client request on a modern connection is answered -32601 and
    the handlers are not asked (as over HTTP, where they are never asked either)."""
    asked: list[Any] = []

    def on_elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"name": "Ada"}}

    command = [sys.executable, "-c", MODERN_STDIO]
    async with mcpfast.connect(
        command, on_elicit=on_elicit, timeout=10, era_cache=EraCache()
    ) as client:
        assert client.era == "modern"
        result = await client.call_tool("anything")
    reply = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert reply["error"]["code"] == -32601
    assert asked == []


class AsksOverHttp:
    """Answers a modern ``tools/call`` with an SSE stream holding a server request, then the
    result; every other request goes to a real mcpfast app. Records any POSTed reply."""

    def __init__(self) -> None:
        self.inner = App(Endpoint(demo, Config(), TEST_KEYS))
        self.replies: list[Any] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            body = await _read_body(receive)
            message = json.loads(body)
            if isinstance(message, dict) and "method" not in message:
                self.replies.append(message)
            if isinstance(message, dict) and message.get("method") == "tools/call":
                ask = {"jsonrpc": "2.0", "id": "s1", "method": "roots/list"}
                done = {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "result": {
                        "resultType": "complete",
                        "content": [{"type": "text", "text": "ok"}],
                    },
                }
                events = f"data: {json.dumps(ask)}\n\ndata: {json.dumps(done)}\n\n".encode()
                await _send_json(send, 200, events, b"text/event-stream")
                return
            receive = replay(body, receive)
        await self.inner(scope, receive, send)


async def test_http_modern_server_requests_are_ignored() -> None:
    asked: list[Any] = []
    app = AsksOverHttp()

    def on_roots() -> list[Any]:
        asked.append(1)
        return []

    async with (
        asgi(app) as url,
        mcpfast.connect(url, "modern", on_roots=on_roots, era_cache=EraCache()) as client,
    ):
        result = await client.call_tool("anything")
    assert result.content[0].text == "ok"  # type: ignore[union-attr]
    assert asked == [] and app.replies == []


# --------------------------------------------- E8: a failed cached legacy verdict, re-probed


class ModernOnly:
    """A modern-only server in front of a real mcpfast app: ``initialize`` is refused (404,
    -32601), everything else is the app's."""

    def __init__(self) -> None:
        self.inner = App(Endpoint(demo, Config(), TEST_KEYS))
        self.initializes = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            body = await _read_body(receive)
            message = json.loads(body)
            if isinstance(message, dict) and message.get("method") == "initialize":
                self.initializes += 1
                error = {"code": -32601, "message": "Method not found: initialize"}
                reply = {"jsonrpc": "2.0", "id": message["id"], "error": error}
                await _send_json(send, 404, json.dumps(reply).encode(), b"application/json")
                return
            receive = replay(body, receive)
        await self.inner(scope, receive, send)


async def test_http_a_failed_cached_legacy_verdict_is_probed_again() -> None:
    app = ModernOnly()
    cache = EraCache()
    async with asgi(app) as url:
        cache.put(url, "legacy", LEGACY)
        async with mcpfast.connect(url, era_cache=cache) as client:
            assert client.era == "modern"
            assert (await client.call_tool("add", {"a": 1, "b": 2})).structuredContent == {
                "result": 3
            }
        assert cache.get(url) == ("modern", MODERN)
    assert app.initializes == 1


async def test_stdio_a_failed_cached_legacy_verdict_is_probed_again() -> None:
    command = [sys.executable, "-c", MODERN_STDIO]
    key = " ".join(command)
    cache = EraCache()
    cache.put(key, "legacy", LEGACY)
    async with mcpfast.connect(command, timeout=10, era_cache=cache) as client:
        assert client.era == "modern"
        assert client.server_info["name"] == "modern-only"
    assert cache.get(key) == ("modern", MODERN)


# ------------------------------------------- L8: the refusal of a 2026-shaped initialize


async def test_a_2026_shaped_initialize_names_the_supported_versions(wire: Wire) -> None:
    reply = await wire.modern("initialize", {})
    assert reply.status == 404
    assert reply.error["code"] == -32601
    assert reply.error["data"]["supported"] == list(ALL_VERSIONS)


# ------------------------------------------------------ C: implemented rules, now tested


async def test_l6_initialize_inside_a_batch_is_refused(wire: Wire) -> None:
    session, _ = await wire.initialize("2025-03-26")
    batch = [
        {
            "jsonrpc": "2.0",
            "id": 101,
            "method": "initialize",
            "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {}},
        },
        {"jsonrpc": "2.0", "id": 102, "method": "ping"},
    ]
    reply = await wire.post(
        batch, {"mcp-session-id": session, "mcp-protocol-version": "2025-03-26"}
    )
    by_id = {m.get("id"): m for m in reply.messages}
    assert by_id[101]["error"]["code"] == -32600
    assert by_id[102]["result"] == {}


async def test_a_batch_whose_reply_streams_gets_its_answers_as_separate_events(
    wire: Wire,
) -> None:
    """The manual's batch sentence (docs/eras.md): one JSON batch, unless the reply turned into SSE."""
    version = "2025-03-26"
    session, _ = await wire.initialize(version)
    headers = {"mcp-session-id": session, "mcp-protocol-version": version}
    plain = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    reply = await wire.post(plain, headers)
    assert reply.headers["content-type"].startswith("application/json")
    assert isinstance(json.loads(reply.response.content), list)
    assert {m["id"] for m in reply.messages} == {1, 2}
    slow = {
        "name": "slow",
        "arguments": {"steps": 1, "delay": 0.01},
        "_meta": {"progressToken": "p"},
    }
    streaming = [
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": slow},
    ]
    reply = await wire.post(streaming, headers)
    assert reply.headers["content-type"].startswith("text/event-stream")
    answers = [m for m in reply.messages if "id" in m and "method" not in m]
    assert sorted(m["id"] for m in answers) == [3, 4]  # each its own event
    assert any(m.get("method") == "notifications/progress" for m in reply.messages)


async def test_r5_modern_responses_carry_no_sse_ids(demo_url: str) -> None:
    params = {"name": "slow", "arguments": {"steps": 2, "delay": 0.01}}
    params["_meta"] = meta(progressToken="p1")
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "slow",
    }
    async with httpx2.AsyncClient(timeout=10) as http:
        response = await http.post(demo_url, content=json.dumps(body).encode(), headers=headers)
    assert response.headers["content-type"].startswith("text/event-stream")
    lines = response.text.splitlines()
    assert any(line.startswith("data:") for line in lines)
    assert not any(line.startswith("id:") for line in lines)
    assert "mcp-session-id" not in response.headers


def iconic() -> Server:
    server = Server("icons", "1.0")
    icon = {"src": "https://example.com/i.png", "mimeType": "image/png", "sizes": ["48x48"]}

    @server.tool(icons=[icon])
    def shiny() -> str:
        return "x"

    @server.resource("memo://shiny", icons=[icon])
    def shiny_resource() -> str:
        return "x"

    @server.prompt(icons=[icon])
    def shiny_prompt() -> str:
        return "x"

    return server


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_tl6_icons_reach_the_client(era: EraChoice) -> None:
    async with running(iconic()) as url, mcpfast.connect(url, era, era_cache=EraCache()) as c:
        for items in (await c.list_tools(), await c.list_resources(), await c.list_prompts()):
            (item,) = items
            icon = item.icons[0]  # type: ignore[index]
            assert (icon.src, icon.mimeType, icon.sizes) == (
                "https://example.com/i.png",
                "image/png",
                ["48x48"],
            )


def changing() -> Server:
    server = Server("changing", "1.0")

    @server.resource("memo://first")
    def first() -> str:
        return "1"

    @server.prompt()
    def hello() -> str:
        return "hello"

    return server


async def test_re5_resources_list_changed_reaches_a_legacy_get_stream() -> None:
    server = changing()
    heard = trio.Event()
    methods: list[str] = []

    def note(method: str, params: dict[str, Any]) -> None:
        methods.append(method)
        if method == "notifications/resources/list_changed":
            heard.set()

    async with (
        running(server) as url,
        mcpfast.connect(url, "legacy", on_notification=note, era_cache=EraCache()) as client,
    ):
        assert [r.uri for r in await client.list_resources()] == ["memo://first"]
        server.resource("memo://second")(lambda: "2")
        with trio.fail_after(5):
            await heard.wait()
        assert sorted(r.uri for r in await client.list_resources()) == [
            "memo://first",
            "memo://second",
        ]


@pytest.mark.parametrize("kind", ["resources", "prompts"])
async def test_re5_p3_list_changed_empties_the_cached_list(kind: str) -> None:
    server = changing()
    method = f"{kind}/list"
    async with (
        running(server) as url,
        mcpfast.connect(url, "modern", era_cache=EraCache()) as client,
    ):
        lister = client.list_resources if kind == "resources" else client.list_prompts
        assert len(await lister()) == 1
        assert client.cache.get(method, {}) is not None  # kept for its ttlMs
        listening = client.listen(resources=kind == "resources", prompts=kind == "prompts")
        async with listening as events:
            await events.__anext__()  # the acknowledgement
            if kind == "resources":
                server.resource("memo://second")(lambda: "2")
            else:
                server.prompt(name="bye")(lambda: "bye")
            with trio.fail_after(5):
                change = await events.__anext__()
        assert change["method"] == f"notifications/{kind}/list_changed"
        assert client.cache.get(method, {}) is None
        assert len(await lister()) == 2


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_p2_unknown_prompt_and_bad_arguments_are_minus_32602(
    demo_url: str, era: EraChoice
) -> None:
    async with mcpfast.connect(demo_url, era, era_cache=EraCache()) as client:
        with pytest.raises(MCPError) as unknown:
            await client.get_prompt("no-such-prompt")
        assert unknown.value.code == -32602
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("describe")  # its required argument "city" is missing
        assert missing.value.code == -32602
        assert "Porto" in str(await client.get_prompt("describe", {"city": "Porto"}))


async def test_ls3_several_listens_at_once_on_one_client() -> None:
    server = changing()
    async with (
        running(server) as url,
        mcpfast.connect(url, "modern", era_cache=EraCache()) as client,
        client.listen(resources=True) as resources,
        client.listen(prompts=True) as prompts,
        client.listen(prompts=True, resources=True) as both,
    ):
        for events in (resources, prompts, both):
            ack = await events.__anext__()
            assert ack["method"] == "notifications/subscriptions/acknowledged"
        server.prompt(name="bye")(lambda: "bye")
        with trio.fail_after(5):
            assert (await prompts.__anext__())["method"] == "notifications/prompts/list_changed"
            assert (await both.__anext__())["method"] == "notifications/prompts/list_changed"
        server.resource("memo://second")(lambda: "2")
        with trio.fail_after(5):
            got = (await resources.__anext__())["method"]
            assert got == "notifications/resources/list_changed"
            assert (await both.__anext__())["method"] == "notifications/resources/list_changed"


@pytest.mark.parametrize("verb", ["GET", "DELETE"])
@pytest.mark.parametrize(
    "guard", [{"origin": "http://evil.example"}, {"host": "evil.example"}], ids=["origin", "host"]
)
async def test_the_origin_and_host_guard_on_get_and_delete(
    wire: Wire, verb: str, guard: dict[str, str]
) -> None:
    session, _ = await wire.initialize(LEGACY)
    headers = {
        "mcp-session-id": session,
        "mcp-protocol-version": LEGACY,
        "accept": "text/event-stream",
        **guard,
    }
    response = await wire.client.request(verb, wire.url, headers=headers)
    assert response.status_code == 403
    # the session is still there: the refused DELETE ended nothing
    assert (await wire.legacy("ping", {}, session=session, version=LEGACY)).result == {}


async def test_max_subscriptions_per_session(wire: Wire) -> None:
    session, _ = await wire.initialize(LEGACY)
    for n in range(64):
        reply = await wire.legacy(
            "resources/subscribe", {"uri": f"demo://cities/c{n}"}, session=session, version=LEGACY
        )
        assert reply.result == {}, reply.messages
    again = await wire.legacy(
        "resources/subscribe", {"uri": "demo://cities/c0"}, session=session, version=LEGACY
    )
    assert again.result == {}  # the same URI again is no new subscription
    over = await wire.legacy(
        "resources/subscribe", {"uri": "demo://cities/c64"}, session=session, version=LEGACY
    )
    assert over.error["code"] == -32602


async def test_modern_replies_carry_no_session_id(wire: Wire) -> None:
    for method, params in (
        ("server/discover", {}),
        ("tools/list", {}),
        ("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}),
    ):
        reply = await wire.modern(method, params)
        assert reply.status == 200 and "result" in reply.message
        assert "mcp-session-id" not in reply.headers


async def test_t7_a_modern_request_with_a_session_id_is_served_statelessly(wire: Wire) -> None:
    legacy_session, _ = await wire.initialize(LEGACY)
    for session in ("not-a-session", legacy_session):
        reply = await wire.modern(
            "tools/call",
            {"name": "add", "arguments": {"a": 2, "b": 3}},
            headers={"mcp-session-id": session, "last-event-id": "0"},
        )
        assert reply.status == 200
        assert reply.result["structuredContent"] == {"result": 5}
        assert "mcp-session-id" not in reply.headers


async def test_m3_lo3_bad_log_levels_are_minus_32602(wire: Wire) -> None:
    bad = meta(**{"io.modelcontextprotocol/logLevel": "loud"})
    reply = await wire.modern("tools/list", {"_meta": bad})
    assert reply.error["code"] == -32602
    session, _ = await wire.initialize(LEGACY)
    reply = await wire.legacy(
        "logging/setLevel", {"level": "loud"}, session=session, version=LEGACY
    )
    assert reply.error["code"] == -32602


PIXEL = base64.b64encode(b"\x89PNG fake").decode()
SOUND = base64.b64encode(b"RIFF fake").decode()


def contentful() -> Server:
    server = Server("content", "1.0")

    @server.tool()
    def everything() -> ToolResult:
        return ToolResult(
            content=[
                ImageContent(data=PIXEL, mimeType="image/png"),
                AudioContent(data=SOUND, mimeType="audio/wav"),
                EmbeddedResource(
                    resource=ResourceContents(uri="memo://a", mimeType="text/plain", text="A")
                ),
                EmbeddedResource(resource=ResourceContents(uri="memo://b", blob=PIXEL)),
                ResourceLink(uri="memo://c", name="c", mimeType="text/plain", description="see c"),
                TextContent(text="done"),
            ]
        )

    return server


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_tl4_every_content_kind_reaches_the_client_intact(era: EraChoice) -> None:
    async with (
        running(contentful()) as url,
        mcpfast.connect(url, era, era_cache=EraCache()) as client,
    ):
        result = await client.call_tool("everything")
    image, audio, text_resource, blob_resource, link, text = result.content
    assert isinstance(image, ImageContent) and (image.data, image.mimeType) == (PIXEL, "image/png")
    assert isinstance(audio, AudioContent) and (audio.data, audio.mimeType) == (SOUND, "audio/wav")
    assert isinstance(text_resource, EmbeddedResource)
    assert text_resource.resource == ResourceContents(
        uri="memo://a", mimeType="text/plain", text="A"
    )
    assert isinstance(blob_resource, EmbeddedResource)
    assert blob_resource.resource == ResourceContents(uri="memo://b", blob=PIXEL)
    assert link == ResourceLink(
        uri="memo://c", name="c", mimeType="text/plain", description="see c"
    )
    assert text == TextContent(text="done")


class NotFound:
    """Answers ``resources/read`` with the given not-found code; the rest is a real app's."""

    def __init__(self, code: int) -> None:
        self.code = code
        self.inner = App(Endpoint(demo, Config(), TEST_KEYS))

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            body = await _read_body(receive)
            message = json.loads(body)
            uri = (message.get("params") or {}).get("uri") if isinstance(message, dict) else None
            if uri == "demo://nowhere":
                error = {
                    "code": self.code,
                    "message": "Resource not found",
                    "data": {"uri": message["params"]["uri"]},
                }
                reply = {"jsonrpc": "2.0", "id": message["id"], "error": error}
                await _send_json(send, 200, json.dumps(reply).encode(), b"application/json")
                return
            receive = replay(body, receive)
        await self.inner(scope, receive, send)


@pytest.mark.parametrize("era", ["modern", "legacy"])
@pytest.mark.parametrize("code", [-32002, -32602])
async def test_re3_the_client_accepts_either_not_found_code(era: EraChoice, code: int) -> None:
    async with asgi(NotFound(code)) as url, mcpfast.connect(url, era, era_cache=EraCache()) as c:
        with pytest.raises(MCPError) as caught:
            await c.read_resource("demo://nowhere")
        assert caught.value.code == code
        assert caught.value.data == {"uri": "demo://nowhere"}
        assert (await c.read_resource("demo://readme")).contents  # the client goes on


async def test_re3_the_real_server_answers_a_not_found_code(demo_url: str) -> None:
    eras: list[EraChoice] = ["modern", "legacy"]
    for era in eras:
        async with mcpfast.connect(demo_url, era, era_cache=EraCache()) as client:
            with pytest.raises(MCPError) as caught:
                await client.read_resource("nowhere://at-all")
            assert caught.value.code == {"modern": -32602, "legacy": -32002}[era]
