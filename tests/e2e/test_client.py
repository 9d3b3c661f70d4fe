"""The mcpfast client against real servers: its own in every era, the official SDK's, and small
deliberately broken servers that answer the era probe in each way the detection rules name."""

from __future__ import annotations

import json
import sys
from typing import Any

import httpx2
import pytest
import trio
import trio.testing

import mcpfast
from mcpfast.client import EraCache
from mcpfast.client.connect import EraChoice
from mcpfast.demo import server as demo
from mcpfast.server.config import Config
from mcpfast.server.core.endpoint import Endpoint
from mcpfast.server.engines.asgi import App
from mcpfast.types import LOG_LEVEL_KEY

from ..helpers import DEMO_TOOLS, TEST_KEYS, running
from .processes import free_port, mcpfast_command, server_process
from .test_legacy import app as legacy_app


def _accept(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada"}}


@pytest.mark.parametrize("era", ["auto", "modern", "legacy"])
async def test_every_call_in_every_era(demo_url: str, era: EraChoice) -> None:
    progress: list[dict[str, Any]] = []
    async with mcpfast.connect(demo_url, era, on_elicit=_accept, era_cache=EraCache()) as client:
        assert client.era == ("legacy" if era == "legacy" else "modern")
        assert client.protocol_version == ("2025-11-25" if era == "legacy" else "2026-07-28")
        assert {t.name for t in await client.list_tools()} == DEMO_TOOLS
        assert (await client.call_tool("add", {"a": 2, "b": 3})).structuredContent == {"result": 5}
        assert (await client.call_tool("greet")).content[0].text == "Hello, Ada!"  # type: ignore[union-attr]
        slow = await client.call_tool("slow", {"steps": 3, "delay": 0.01}, progress=progress.append)
        assert slow.content[0].text == "done after 3 steps"  # type: ignore[union-attr]
        assert [p["progress"] for p in progress] == [1, 2, 3]
        assert {r.uri for r in await client.list_resources()} == {
            "demo://readme",
            "ui://demo/clock",
        }
        assert [t.uriTemplate for t in await client.list_resource_templates()] == [
            "demo://cities/{city}"
        ]
        assert "mcpfast demo" in (
            (await client.read_resource("demo://readme")).contents[0].text or ""
        )
        assert [p.name for p in await client.list_prompts()] == ["describe"]
        prompt = await client.get_prompt("describe", {"city": "Rome"})
        assert "Rome" in prompt.messages[0].content.text  # type: ignore[union-attr]
        done = await client.complete(
            {"type": "ref/prompt", "name": "describe"}, {"name": "city", "value": "P"}
        )
        assert done.values == ["Paris", "Porto", "Prague"]
        await client.ping()
        with pytest.raises(mcpfast.MCPError) as info:
            await client.call_tool("nope")
        assert info.value.code == -32602


async def test_discover_result_and_hook(demo_url: str) -> None:
    async with mcpfast.connect(demo_url, era_cache=EraCache()) as client:
        assert client.discover_result is not None
        assert client.server_info == {"name": "mcpfast-demo", "version": "0.1.0"}
        assert client.instructions and "demo" in client.instructions
    with pytest.raises(mcpfast.TransportError, match="discover hook"):
        async with mcpfast.connect(demo_url, on_discover=lambda d: False, era_cache=EraCache()):
            pass


async def test_era_is_cached_per_endpoint(demo_url: str) -> None:
    probes: list[str] = []

    async def count(request: httpx2.Request) -> None:
        if request.headers.get("mcp-method") == "server/discover":
            probes.append(str(request.url))

    cache = EraCache()
    async with httpx2.AsyncClient(event_hooks={"request": [count]}) as http:
        for _ in range(3):
            async with mcpfast.connect(demo_url, era_cache=cache, http_client=http) as client:
                assert client.era == "modern"
                await client.call_tool("echo", {"text": "x"})
    assert len(probes) == 1


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_log_level_in_both_eras(era: EraChoice) -> None:
    """``log_level=``: ``logging/setLevel`` in a legacy session, ``_meta`` logLevel on every
    modern request; then `Client.set_log_level` changes it."""
    logs: list[dict[str, Any]] = []
    sent: list[Any] = []

    async def record(request: httpx2.Request) -> None:
        if request.content and request.headers.get("mcp-method") == "tools/call":
            sent.append(json.loads(request.content)["params"]["_meta"].get(LOG_LEVEL_KEY))

    async with (
        running(legacy_app) as url,
        httpx2.AsyncClient(event_hooks={"request": [record]}) as http,
        mcpfast.connect(
            url,
            era,
            on_log=logs.append,
            log_level="warning",
            http_client=http,
            era_cache=EraCache(),
        ) as client,
    ):
        await client.call_tool("logs")
        await client.set_log_level("info")
        await client.call_tool("logs")
    assert [entry["level"] for entry in logs] == ["warning", "info", "warning"]
    assert sent == (["warning", "info"] if era == "modern" else [])


async def test_legacy_batch_and_subscription_updates() -> None:
    updates: list[tuple[str, dict[str, Any]]] = []
    arrived = trio.Event()

    async def note(method: str, params: dict[str, Any]) -> None:
        updates.append((method, params))
        arrived.set()

    async with running(legacy_app) as url:
        async with mcpfast.connect(
            url, "legacy", legacy_version="2025-03-26", on_notification=note, era_cache=EraCache()
        ) as client:
            assert client.protocol_version == "2025-03-26"
            results = await client.batch(
                [("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}}), ("ping", None)]
            )
            # 2025-03-26 has no structuredContent: the text carries it
            assert results[0]["content"][0]["text"] == '{"result":2}' and results[1] == {}
            await client.subscribe("test://doc")
            # the GET stream is open and follows the subscription once this process is idle
            await trio.testing.wait_all_tasks_blocked()
            await legacy_app.resource_updated("test://doc")
            with trio.fail_after(5):
                await arrived.wait()
    assert updates[0] == ("notifications/resources/updated", {"uri": "test://doc"})


async def test_modern_listen_stream(demo_url: str) -> None:
    async with mcpfast.connect(demo_url, "modern", era_cache=EraCache()) as client:
        async with client.listen(tools=True) as events:
            ack = await events.__anext__()
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            demo.add_tool(lambda: "x", name="temporary")
            demo.remove_tool("temporary")
            change = await events.__anext__()
            assert change["method"] == "notifications/tools/list_changed"


async def test_modern_tasks(demo_url: str) -> None:
    async with mcpfast.connect(demo_url, "modern", era_cache=EraCache()) as client:
        task = await client.start_task("slow", {"steps": 1, "delay": 0.01})
        assert task["resultType"] == "task"
        with trio.fail_after(5):
            while (got := await client.get_task(task["taskId"]))["status"] != "completed":
                await trio.sleep(0.02)
        assert got["result"]["content"][0]["text"] == "done after 1 steps"


async def test_leaving_the_block_cancels_the_request(demo_url: str) -> None:
    async with mcpfast.connect(demo_url, "modern", era_cache=EraCache()) as client:
        with trio.move_on_after(0.3) as scope:
            await client.call_tool("slow", {"steps": 100, "delay": 0.1}, progress=lambda p: None)
        assert scope.cancelled_caught


# ------------------------------------------------------------------------- broken servers


class Broken:
    """Answers ``server/discover`` as configured; everything else goes to a real mcpfast app."""

    def __init__(
        self,
        status: int,
        body: bytes,
        content_type: bytes = b"application/json",
        hang: bool = False,
    ) -> None:
        self.status, self.body, self.content_type, self.hang = status, body, content_type, hang
        self.inner = App(Endpoint(legacy_app, Config(), TEST_KEYS))

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            headers = dict(scope["headers"])
            if headers.get(b"mcp-method") == b"server/discover":
                while (await receive()).get("more_body"):
                    pass
                if self.hang:
                    await trio.sleep_forever()
                await send(
                    {
                        "type": "http.response.start",
                        "status": self.status,
                        "headers": [(b"content-type", self.content_type)],
                    }
                )
                await send({"type": "http.response.body", "body": self.body})
                return
        await self.inner(scope, receive, send)


async def _serve_asgi(app: Any, task_status: Any) -> None:
    from hypercorn.config import Config as HConfig
    from hypercorn.trio import serve

    config = HConfig()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    await serve(app, config, task_status=task_status)


async def _detect(app: Broken, timeout: float = 10) -> str | Exception:
    """The era detected against ``app`` (after one call), or what connecting raised."""
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(_serve_asgi, app)
        try:
            async with mcpfast.connect(
                urls[0] + "/mcp", timeout=timeout, era_cache=EraCache()
            ) as client:
                era = client.era
                await client.call_tool("add", {"a": 1, "b": 1})
            outcome: str | Exception = era
        except Exception as exc:
            outcome = exc
        nursery.cancel_scope.cancel()
    return outcome


def _error(code: int, data: Any = None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": "no"}
    if data is not None:
        error["data"] = data
    return json.dumps({"jsonrpc": "2.0", "id": 0, "error": error}).encode()


@pytest.mark.parametrize(
    ("status", "body", "content_type"),
    [
        (400, b"", b"text/plain"),
        (404, b"<html><body><h1>Not Found</h1></body></html>", b"text/html"),
        (405, b"", b"text/plain"),
        (200, _error(-32601), b"application/json"),
        (400, _error(-32020), b"application/json"),
        (400, _error(-32021), b"application/json"),
        (
            400,
            _error(-32022, {"supported": ["2025-11-25"], "requested": "2026-07-28"}),
            b"application/json",
        ),
    ],
)
async def test_probe_answers_that_fall_back_to_legacy(
    status: int, body: bytes, content_type: bytes
) -> None:
    assert await _detect(Broken(status, body, content_type)) == "legacy"


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (401, b'{"error":"unauthorized"}'),
        (403, b"forbidden " * 40),
        (500, b"boom"),
        (503, b""),
        (200, b"not json at all"),
    ],
)
async def test_probe_answers_that_never_fall_back(status: int, body: bytes) -> None:
    outcome = await _detect(Broken(status, body, b"text/plain"))
    assert isinstance(outcome, mcpfast.TransportError), outcome
    text = str(outcome)
    assert text.startswith(f"HTTP {status}")
    assert len(text) <= len(f"HTTP {status}: ") + 200
    if body:
        assert body.decode()[:20] in text


async def test_probe_that_hangs_times_out() -> None:
    outcome = await _detect(Broken(200, b"", hang=True), timeout=0.5)
    assert isinstance(outcome, trio.TooSlowError)


class Trimmed:
    """A real legacy server whose ``initialize`` advertises only ``tools`` and ``resources``
    (no subscribe), recording every method it is sent."""

    def __init__(self) -> None:
        self.inner = App(Endpoint(legacy_app, Config(), TEST_KEYS))
        self.methods: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.inner(scope, receive, send)
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        message = json.loads(body)
        self.methods.append(message.get("method", ""))

        async def replay() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        async def trim(event: dict[str, Any]) -> None:
            if event["type"] == "http.response.body" and message.get("method") == "initialize":
                answer = json.loads(event["body"])
                answer["result"]["capabilities"] = {"tools": {}, "resources": {}}
                event = {**event, "body": json.dumps(answer).encode()}
            if event["type"] == "http.response.start" and message.get("method") == "initialize":
                kept = [(k, v) for k, v in event["headers"] if k != b"content-length"]
                event = {**event, "headers": kept}
            await send(event)

        await self.inner(scope, replay, trim)


async def test_the_client_sends_nothing_the_server_did_not_advertise() -> None:
    app = Trimmed()
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(_serve_asgi, app)
        async with mcpfast.connect(
            urls[0] + "/mcp", "legacy", era_cache=EraCache(), open_get_stream=False
        ) as client:
            assert (await client.call_tool("add", {"a": 1, "b": 2})).structuredContent == {
                "result": 3
            }
            for refused, words in (
                (client.set_log_level("info"), "the logging capability"),
                (client.subscribe("test://doc"), "resources.subscribe"),
                (client.list_prompts(), "the prompts capability"),
            ):
                with pytest.raises(mcpfast.MCPError) as info:
                    await refused
                assert info.value.code == -32601 and words in info.value.message
        nursery.cancel_scope.cancel()
    sent = set(app.methods)
    assert {"initialize", "tools/call"} <= sent
    assert not sent & {"logging/setLevel", "resources/subscribe", "prompts/list"}


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_connect_on_progress_reaches_tool_calls(demo_url: str, era: EraChoice) -> None:
    progress: list[dict[str, Any]] = []
    async with mcpfast.connect(
        demo_url, era, on_progress=progress.append, era_cache=EraCache()
    ) as client:
        await client.call_tool("slow", {"steps": 2, "delay": 0.01})
    assert [(p["progress"], p["total"]) for p in progress] == [(1, 2), (2, 2)]


# ------------------------------------------------------------------------------ official SDK


@pytest.mark.parametrize("mode", ["stateless", "session"])
async def test_against_the_official_sdk_server(mode: str) -> None:
    pytest.importorskip("mcp", reason="the official SDK (pip install mcp) is not installed")
    port = free_port()
    argv = [
        sys.executable,
        str(__import__("pathlib").Path(__file__).with_name("sdk_server.py")),
        str(port),
        mode,
    ]
    async with server_process(argv, port) as url:
        eras: tuple[EraChoice, ...] = (
            ("auto", "modern") if mode == "stateless" else ("auto", "legacy")
        )
        for era in eras:
            async with mcpfast.connect(url, era, era_cache=EraCache()) as client:
                assert {"echo", "add"} <= {t.name for t in await client.list_tools()}
                assert (await client.call_tool("add", {"a": 40, "b": 2})).structuredContent == {
                    "result": 42
                }
                assert (await client.call_tool("echo", {"text": "hi"})).content[0].text == "hi"  # type: ignore[union-attr]
            if era == "legacy":
                assert client.era == "legacy"


# ----------------------------------------------------------------------------------- stdio


@pytest.mark.parametrize("era", ["auto", "legacy"])
async def test_stdio_both_eras(era: EraChoice) -> None:
    async with mcpfast.connect(
        mcpfast_command("serve", "--stdio"), era, on_elicit=_accept, era_cache=EraCache()
    ) as client:
        assert client.era == ("modern" if era == "auto" else "legacy")
        assert (await client.call_tool("add", {"a": 1, "b": 2})).structuredContent == {"result": 3}
        assert (await client.call_tool("greet")).content[0].text == "Hello, Ada!"  # type: ignore[union-attr]


SILENT_LEGACY = r"""
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": "2025-06-18",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "silent", "version": "1"}}}), flush=True)
    elif msg.get("method") == "tools/list":
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": []}}), flush=True)
"""


async def test_stdio_probe_timeout_means_legacy() -> None:
    cache = EraCache()
    command = [sys.executable, "-c", SILENT_LEGACY]
    async with mcpfast.connect(command, timeout=1.0, era_cache=cache) as client:
        assert client.era == "legacy" and client.protocol_version == "2025-06-18"
        assert await client.list_tools() == []
    assert cache.get(" ".join(command)) == ("legacy", "2025-06-18")
