"""The mcpfast client's limits, cancellation and resumption, through the real stack: a real mcpfast server on loopback
(the engine under test), or a stand-in around a real endpoint where a test must cut a stream,
or a real stdio subprocess. The size cap on what a server sends (``max_message_bytes``: JSON
bodies, SSE events, stdio lines), and behaviours that had no test of their own: DELETE on
close, ``notifications/cancelled`` (legacy HTTP, stdio), resuming a dropped POST stream and
the GET stream, -32020 → refresh ``tools/list`` and retry, the cache (``ttlMs``, list_changed),
the ``""`` cursor, ``on_sample`` / ``on_roots``, the task methods, URL-mode elicitation and its
completion notice, and the stdio probe falling back on an error answer."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import httpx2
import pytest
import trio

import mcpfast
from mcpfast import Context, Header
from mcpfast.client import EraCache
from mcpfast.client.cache import ResponseCache
from mcpfast.client.connect import EraChoice

from ..helpers import running, session_of
from .processes import mcpfast_command
from .test_client_negotiation_and_recovery import Answer, StandIn, _json, serving

ERAS: list[EraChoice] = ["modern", "legacy"]
BIG = 4000


def build() -> mcpfast.Server:
    server = mcpfast.Server("gaps", "1.0")

    @server.tool()
    def big(size: int = BIG) -> str:
        return "x" * size

    @server.tool()
    async def big_streamed(ctx: Context, size: int = BIG) -> str:
        await ctx.report_progress(1, 1)
        return "x" * size

    @server.tool()
    async def sample_and_roots(ctx: Context) -> str:
        answer = await ctx.sample("Say hi")
        roots = await ctx.list_roots()
        return f"{answer['content']['text']} in {roots[0]['uri']}"

    @server.tool()
    async def bad_sampling(ctx: Context) -> str:
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": {"type": "text", "text": "weather?"}},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "c1", "name": "w", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "toolUseId": "c1", "content": []},
                    {"type": "text", "text": "and more"},
                ],
            },
        ]
        tools = [{"name": "w", "inputSchema": {"type": "object"}}]
        try:
            answer = await ctx.sample(messages, tools=tools)
        except mcpfast.MCPError as exc:
            return f"refused {exc.code}: {exc.message}"
        return f"sampled {answer}"

    @server.tool()
    def region(where: Annotated[str, Header("Region")]) -> str:
        return f"in {where}"

    @server.tool()
    async def visit(ctx: Context) -> str:
        answer = await ctx.elicit_url(
            "Consent, please", "https://example.com/ok", elicitation_id="e7"
        )
        await ctx.complete_elicitation("e7")
        return f"visited: {answer['action']}"

    @server.tool(task="optional")
    async def ask_task(ctx: Context) -> str:
        answer = await ctx.elicit(
            "Name?", {"type": "object", "properties": {"n": {"type": "string"}}}, key="n"
        )
        return f"hello {answer['content']['n']}"

    @server.tool(task="optional")
    async def forever() -> str:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    return server


# ----------------------------------------------------------------------- max_message_bytes


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("tool", ["big", "big_streamed"])
async def test_a_body_or_event_over_max_message_bytes_is_a_transport_error(
    era: EraChoice, tool: str
) -> None:
    """JSON (``big``) and SSE (``big_streamed``: progress makes it a stream)."""
    async with (
        running(build()) as url,
        mcpfast.connect(url, era, max_message_bytes=2000, era_cache=EraCache()) as client,
    ):
        small = await client.call_tool(tool, {"size": 10}, progress=lambda p: None)
        assert small.content[0].text == "x" * 10  # type: ignore[union-attr]
        with trio.fail_after(5), pytest.raises(mcpfast.TransportError) as info:
            await client.call_tool(tool, {"size": BIG}, progress=lambda p: None)
        assert "max_message_bytes (2,000 bytes)" in str(info.value)
        what = "an SSE event" if tool == "big_streamed" else "a response body"
        assert what in str(info.value)


async def test_the_default_cap_lets_a_large_answer_through() -> None:
    async with (
        running(build()) as url,
        mcpfast.connect(url, "modern", era_cache=EraCache()) as client,
    ):
        result = await client.call_tool("big", {"size": 1 << 20})
        assert len(result.content[0].text or "") == 1 << 20  # type: ignore[union-attr]


LONG_LINE_STDIO = r"""
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg.get("method") == "initialize":
        out = {"result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
               "serverInfo": {"name": "long", "version": "1"}}}
    elif msg.get("method") == "tools/list":
        out = {"result": {"tools": [{"name": "t" * int(sys.argv[1]),
               "inputSchema": {"type": "object"}}]}}
    else:
        out = {"error": {"code": -32601, "message": "no"}}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], **out}), flush=True)
"""


async def test_a_stdio_line_over_the_limit_fails_at_once_naming_it() -> None:
    command = [sys.executable, "-c", LONG_LINE_STDIO, "50000"]
    async with mcpfast.connect(
        command, "legacy", timeout=30, max_message_bytes=10_000, era_cache=EraCache()
    ) as client:
        with trio.fail_after(5), pytest.raises(mcpfast.TransportError) as info:
            await client.list_tools()  # before: dropped silently, waited for the 30 s timeout
        assert "max_message_bytes (10,000 bytes)" in str(info.value)
        assert "a line on stdout" in str(info.value)
        with pytest.raises(mcpfast.TransportError, match="max_message_bytes"):
            await client.ping()  # the connection is over


async def test_a_stdio_line_over_the_default_16_mib_fails_at_once() -> None:
    command = [sys.executable, "-c", LONG_LINE_STDIO, str(17 << 20)]
    async with mcpfast.connect(command, "legacy", timeout=60, era_cache=EraCache()) as client:
        with trio.fail_after(20), pytest.raises(mcpfast.TransportError) as info:
            await client.list_tools()
    assert "max_message_bytes (16,777,216 bytes)" in str(info.value)


async def test_a_stdio_line_under_the_limit_is_read() -> None:
    command = [sys.executable, "-c", LONG_LINE_STDIO, "50000"]
    async with mcpfast.connect(command, "legacy", timeout=10, era_cache=EraCache()) as client:
        (tool,) = await client.list_tools()
        assert len(tool.name) == 50000


# ---------------------------------------------------------------------- sampling tool rules


@pytest.mark.parametrize("era", ERAS)
async def test_sampling_messages_that_break_the_tool_rules_are_refused(era: EraChoice) -> None:
    asked: list[Any] = []

    def sample(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}

    async with (
        running(build()) as url,
        mcpfast.connect(
            url, era, on_sample=sample, sampling_tools=True, era_cache=EraCache()
        ) as client,
    ):
        if era == "legacy":  # the server's request is answered -32602
            result = await client.call_tool("bad_sampling")
            text = result.content[0].text or ""  # type: ignore[union-attr]
            assert text.startswith("refused -32602") and "mixes tool_result" in text
        else:  # the input request cannot be answered: the call raises
            with pytest.raises(mcpfast.MCPError) as info:
                await client.call_tool("bad_sampling")
            assert info.value.code == -32602 and "mixes tool_result" in info.value.message
    assert asked == []


# ------------------------------------------------------------------------ on_sample, on_roots


@pytest.mark.parametrize("era", ERAS)
async def test_on_sample_and_on_roots_answer_the_server(era: EraChoice) -> None:
    def sample(params: dict[str, Any]) -> dict[str, Any]:
        said = params["messages"][0]["content"]["text"]
        return {"role": "assistant", "content": {"type": "text", "text": f"<{said}>"}, "model": "m"}

    async with (
        running(build()) as url,
        mcpfast.connect(
            url,
            era,
            on_sample=sample,
            on_roots=lambda: [{"uri": "file:///work", "name": "work"}],
            era_cache=EraCache(),
        ) as client,
    ):
        result = await client.call_tool("sample_and_roots")
    assert result.content[0].text == "<Say hi> in file:///work"  # type: ignore[union-attr]


# ------------------------------------------------------------------------- DELETE on close


async def test_closing_a_legacy_client_deletes_its_session() -> None:
    seen: list[tuple[str, str | None]] = []

    async def record(request: httpx2.Request) -> None:
        seen.append((request.method, request.headers.get("mcp-session-id")))

    async with running(build()) as url:
        async with (
            httpx2.AsyncClient(event_hooks={"request": [record]}) as http,
            mcpfast.connect(url, "legacy", http_client=http, era_cache=EraCache()) as client,
        ):
            await client.call_tool("big", {"size": 1})
            session = session_of(client)
        assert ("DELETE", session) in seen
        async with httpx2.AsyncClient() as http:  # the server ended it
            after = await http.post(
                url,
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                headers={
                    "mcp-session-id": session or "",
                    "mcp-protocol-version": "2025-11-25",
                    "accept": "application/json, text/event-stream",
                },
            )
        assert after.status_code == 404


# ----------------------------------------------------------------------------- cancellation


async def test_cancelling_a_legacy_request_sends_notifications_cancelled() -> None:
    """Legacy HTTP: a dropped connection is not a cancellation, so the server's handler
    ends only because the client said so."""
    server = mcpfast.Server("cancel", "1.0")
    started, cancelled = trio.Event(), trio.Event()

    @server.tool()
    async def block() -> str:
        started.set()
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()
        raise AssertionError("unreachable")

    sent: list[dict[str, Any]] = []

    async def record(request: httpx2.Request) -> None:
        if request.content:
            sent.append(json.loads(request.content))

    async with (
        running(server) as url,
        httpx2.AsyncClient(event_hooks={"request": [record]}) as http,
        mcpfast.connect(url, "legacy", http_client=http, era_cache=EraCache()) as client,
    ):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.call_tool, "block")
            with trio.fail_after(5):
                await started.wait()
            nursery.cancel_scope.cancel()
        with trio.fail_after(5):
            await cancelled.wait()
    (call,) = [m for m in sent if m.get("method") == "tools/call"]
    (notice,) = [m for m in sent if m.get("method") == "notifications/cancelled"]
    assert notice["params"]["requestId"] == call["id"]


STDIO_BLOCKER = """
import trio
import mcpfast

server = mcpfast.Server("blocker", "1.0")


@server.tool()
async def block(mark: str) -> str:
    try:
        await trio.sleep_forever()
    finally:
        open(mark, "w").write("cancelled")
    return "never"
"""


@pytest.mark.parametrize("era", ["auto", "legacy"])
async def test_cancelling_a_stdio_request_cancels_the_handler(
    tmp_path: Path, era: EraChoice
) -> None:
    module = tmp_path / "blocker.py"
    module.write_text(STDIO_BLOCKER)
    mark = tmp_path / f"mark-{era}"
    command = mcpfast_command("serve", "--stdio", f"{module}:server")
    async with mcpfast.connect(command, era, timeout=20, era_cache=EraCache()) as client:
        assert client.era == ("modern" if era == "auto" else "legacy")
        with trio.move_on_after(1) as scope:
            await client.call_tool("block", {"mark": str(mark)})
        assert scope.cancelled_caught
        with trio.fail_after(10):
            while not mark.exists():
                await trio.sleep(0.05)
    assert mark.read_text() == "cancelled"


# -------------------------------------------------------------------------------- resuming


async def test_a_dropped_legacy_post_stream_is_resumed() -> None:
    """The handler ends its HTTP response (SSE polling); the client resumes with GET and
    ``Last-Event-ID`` and gets the rest, result included."""
    server = mcpfast.Server("polls", "1.0")

    @server.tool()
    async def polled(ctx: Context) -> str:
        await ctx.report_progress(1, 2)
        await ctx.close_stream()
        await ctx.report_progress(2, 2)
        return "polled done"

    progress: list[Any] = []
    gets: list[str | None] = []

    async def record(request: httpx2.Request) -> None:
        if request.method == "GET":
            gets.append(request.headers.get("last-event-id"))

    async with (
        running(server) as url,
        httpx2.AsyncClient(event_hooks={"request": [record]}) as http,
        mcpfast.connect(
            url, "legacy", http_client=http, open_get_stream=False, era_cache=EraCache()
        ) as client,
    ):
        with trio.fail_after(10):
            result = await client.call_tool(
                "polled", progress=lambda p: progress.append(p["progress"])
            )
    assert result.content[0].text == "polled done"  # type: ignore[union-attr]
    assert progress == [1, 2]
    assert gets and all(gets)


class CutsGet(StandIn):
    """A real endpoint whose first GET stream is cut after its first notification."""

    def __init__(self, server: mcpfast.Server) -> None:
        super().__init__(server)
        self.gets: list[str | None] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "GET":
            await super().__call__(scope, receive, send)
            return
        headers = dict(scope["headers"])
        last = headers.get(b"last-event-id")
        self.gets.append(last.decode() if last else None)
        if len(self.gets) > 1:
            await self.inner(scope, receive, send)
            return
        cut = trio.Event()

        async def cutting(event: dict[str, Any]) -> None:
            await send(
                {**event, "more_body": False}
                if b"notifications/" in event.get("body", b"")
                else event
            )
            if b"notifications/" in event.get("body", b""):
                cut.set()

        async with trio.open_nursery() as nursery:

            async def serve() -> None:
                await self.inner(scope, receive, cutting)

            nursery.start_soon(serve)
            await cut.wait()
            nursery.cancel_scope.cancel()


async def test_a_dropped_get_stream_is_resumed_with_last_event_id() -> None:
    server = build()

    @server.resource("gaps://doc", mime_type="text/plain")
    def doc() -> str:
        return "doc"

    updates: list[str] = []
    changed = trio.Event()

    async def note(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/resources/updated":
            updates.append(params["uri"])
            changed.set()

    app = CutsGet(server)
    async with (
        serving(app) as url,
        mcpfast.connect(url, "legacy", on_notification=note, era_cache=EraCache()) as client,
    ):
        await client.subscribe("gaps://doc")
        with trio.fail_after(10):
            while not updates:  # the first update goes out, and its stream is cut
                await server.resource_updated("gaps://doc")
                with trio.move_on_after(0.2):
                    await changed.wait()
            await server.resource_updated("gaps://doc")  # sent while the client reconnects
            while len(updates) < 2:
                changed = trio.Event()
                await changed.wait()
    assert len(app.gets) >= 2 and app.gets[0] is None
    assert app.gets[1] is not None  # the reconnect resumed from the last event


# ------------------------------------------------------------------ -32020 → refresh, retry


async def test_a_header_mismatch_refreshes_tools_list_and_retries() -> None:
    sent: list[tuple[str, str | None]] = []

    async def record(request: httpx2.Request) -> None:
        method = request.headers.get("mcp-method", "")
        sent.append((method, request.headers.get("mcp-param-region")))

    async with (
        running(build()) as url,
        httpx2.AsyncClient(event_hooks={"request": [record]}) as http,
        mcpfast.connect(url, "modern", http_client=http, era_cache=EraCache()) as client,
    ):
        # no list_tools() first: the client does not know the tool mirrors ``where``
        result = await client.call_tool("region", {"where": "eu-west"})
    assert result.content[0].text == "in eu-west"  # type: ignore[union-attr]
    calls = [s for s in sent if s[0] in ("tools/call", "tools/list")]
    assert calls == [("tools/call", None), ("tools/list", None), ("tools/call", "eu-west")]


# -------------------------------------------------------------------------------- the cache


async def test_results_are_cached_for_ttl_ms_and_emptied_by_list_changed() -> None:
    server = mcpfast.Server("cached", "1.0", cache_ttl_ms=1500)

    @server.tool()
    def one() -> str:
        return "1"

    lists: list[int] = []

    async def record(request: httpx2.Request) -> None:
        if request.headers.get("mcp-method") == "tools/list":
            lists.append(1)

    async with (
        running(server) as url,
        httpx2.AsyncClient(event_hooks={"request": [record]}) as http,
        mcpfast.connect(url, "modern", http_client=http, era_cache=EraCache()) as client,
        client.listen(tools=True) as events,
    ):
        now = 0.0
        client.cache = ResponseCache(lambda: now)
        assert (await anext(events))["method"] == "notifications/subscriptions/acknowledged"
        assert [t.name for t in await client.list_tools()] == ["one"]
        assert [t.name for t in await client.list_tools()] == ["one"]
        assert len(lists) == 1  # the second came from the cache
        server.add_tool(lambda: "2", name="two")
        with trio.fail_after(5):
            assert (await anext(events))["method"] == "notifications/tools/list_changed"
        assert [t.name for t in await client.list_tools()] == ["one", "two"]
        assert len(lists) == 2  # list_changed emptied it
        now += 1.5  # ttlMs later
        await client.list_tools()
        assert len(lists) == 3


async def _empty_cursor(app: StandIn, message: dict[str, Any]) -> Answer | None:
    if message.get("method") != "tools/list":
        return None
    tool = {"inputSchema": {"type": "object"}}
    if "cursor" not in message["params"]:
        result = {"tools": [{"name": "first", **tool}], "nextCursor": ""}
    else:
        result = {"tools": [{"name": f"after-{message['params']['cursor']!r}", **tool}]}
    return _json({"jsonrpc": "2.0", "id": message["id"], "result": result})


async def test_an_empty_next_cursor_is_a_cursor() -> None:
    app = StandIn(build(), _empty_cursor)
    async with (
        serving(app) as url,
        mcpfast.connect(url, "modern", era_cache=EraCache()) as client,
    ):
        assert [t.name for t in await client.list_tools()] == ["first", "after-''"]
    pages = [m["params"].get("cursor") for m in app.messages("tools/list")]
    assert pages == [None, ""]


# -------------------------------------------------------------------------------- the tasks


async def test_update_task_cancel_task_and_listen_for_task_ids() -> None:
    async with (
        running(build()) as url,
        mcpfast.connect(
            url, "modern", on_elicit=lambda p: {"action": "decline"}, era_cache=EraCache()
        ) as client,
    ):
        task = await client.start_task("ask_task")
        assert task["resultType"] == "task"
        task_id = task["taskId"]
        async with client.listen(task_ids=[task_id]) as events:
            ack = await anext(events)
            assert ack["params"]["notifications"] == {"taskIds": [task_id]}
            with trio.fail_after(5):
                while (got := await client.get_task(task_id))["status"] != "input_required":
                    await trio.sleep(0.02)
            assert set(got["inputRequests"]) == {"n"}
            await client.update_task(task_id, {"n": {"action": "accept", "content": {"n": "Ada"}}})
            with trio.fail_after(5):
                while True:
                    event = await anext(events)
                    if event["method"] == "notifications/tasks":
                        if event["params"]["status"] == "completed":
                            break
            assert event["params"]["taskId"] == task_id
            assert event["params"]["result"]["content"][0]["text"] == "hello Ada"

        forever = await client.start_task("forever")
        await client.cancel_task(forever["taskId"])
        with trio.fail_after(5):
            while (got := await client.get_task(forever["taskId"]))["status"] != "cancelled":
                await trio.sleep(0.02)


# ------------------------------------------------------------------- URL-mode elicitation


@pytest.mark.parametrize("era", ERAS)
async def test_url_mode_elicitation_and_its_completion_notice(era: EraChoice) -> None:
    asked: list[dict[str, Any]] = []
    completed: list[dict[str, Any]] = []
    done = trio.Event()

    def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept"}

    async def note(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/elicitation/complete":
            completed.append(params)
            done.set()

    async with (
        running(build()) as url,
        mcpfast.connect(
            url,
            era,
            on_elicit=elicit,
            elicitation_url=True,
            on_notification=note,
            era_cache=EraCache(),
        ) as client,
    ):
        result = await client.call_tool("visit")
        assert result.content[0].text == "visited: accept"  # type: ignore[union-attr]
        if era == "legacy":  # 2025-11-25: the notice comes on the GET stream
            with trio.fail_after(5):
                await done.wait()
    assert asked[0]["mode"] == "url" and asked[0]["url"] == "https://example.com/ok"
    if era == "legacy":
        assert asked[0]["elicitationId"] == "e7"
        assert completed == [{"elicitationId": "e7"}]
    else:  # the modern era has no completion notice
        assert completed == []


# ------------------------------------------------------------- stdio probe, error answer


ERROR_PROBE_STDIO = r"""
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg.get("method") == "server/discover":
        out = {"error": {"code": int(sys.argv[1]), "message": "not here"}}
    elif msg.get("method") == "initialize":
        out = {"result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
               "serverInfo": {"name": "old", "version": "1"}}}
    elif msg.get("method") == "tools/list":
        out = {"result": {"tools": []}}
    else:
        out = {"error": {"code": -32601, "message": "no"}}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], **out}), flush=True)
"""


@pytest.mark.parametrize("code", [-32601, -32020, -32021, -32022])
async def test_stdio_falls_back_to_legacy_on_an_error_answer(code: int) -> None:
    command = [sys.executable, "-c", ERROR_PROBE_STDIO, str(code)]
    cache = EraCache()
    with trio.fail_after(10):  # an answer, not the 5 s probe timeout
        async with mcpfast.connect(command, timeout=10, era_cache=cache) as client:
            assert client.era == "legacy" and client.protocol_version == "2025-06-18"
            assert await client.list_tools() == []
    assert cache.get(" ".join(command)) == ("legacy", "2025-06-18")


LATE_MODERN_STDIO = r"""
import json, sys, time
modern = False
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg.get("method") == "server/discover":
        if not modern:
            time.sleep(float(sys.argv[1]))  # the first: slower than the client's probe wait
        modern = True
        out = {"result": {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
               "serverInfo": {"name": "late", "version": "1"}, "resultType": "complete"}}
    elif msg.get("method") == "initialize" and modern:
        out = {"error": {"code": -32022, "message": "this connection speaks 2026-07-28",
               "data": {"supported": ["2026-07-28"], "requested": "2025-11-25"}}}
    elif msg.get("method") == "tools/list" and modern:
        out = {"result": {"tools": [], "resultType": "complete"}}
    else:
        out = {"error": {"code": -32601, "message": "no"}}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], **out}), flush=True)
"""


async def test_a_late_probe_answer_then_32022_on_initialize_goes_modern() -> None:
    # The probe waits min(5 s, timeout) = 1 s; the server answers it after 1.5 s and from then
    # on serves the modern era only (as the official SDK's stdio server does): the initialize
    # that followed the timed-out probe gets -32022 listing 2026-07-28, and the client retries
    # once in the modern era (seed 002) instead of failing.
    command = [sys.executable, "-c", LATE_MODERN_STDIO, "1.5"]
    with trio.fail_after(20):
        async with mcpfast.connect(command, "auto", timeout=1, era_cache=EraCache()) as client:
            assert client.era == "modern"
            assert await client.list_tools() == []
