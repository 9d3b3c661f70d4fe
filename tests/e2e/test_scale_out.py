"""Several server processes sharing one Redis (``mcpfast serve --bus redis://...``) behave as one:
whatever two requests must share works when they land on different processes. Each test runs
two real servers on their own ports and steers each request to one of them (raw HTTP), or goes
through the round-robin proxy, which sends consecutive requests to different processes."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio

import mcpfast
from mcpfast.client import EraCache
from mcpfast.protocol import sse

from ..helpers import ENGINE, MODERN, Reply, Wire, meta, session_of
from ..redis_server import RedisServer
from .processes import free_port, mcpfast_command, server_process
from .round_robin import round_robin

KEYS = "k1:" + base64.urlsafe_b64encode(b"scale-out-test-key-32-bytes-ok!!").decode()
LEGACY = "2025-11-25"
TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
WAIT = 10.0
"""The bound of every wait on a server (generous: the machine is shared)."""

SERVER = """
import os
from pathlib import Path

import trio

import mcpfast
from mcpfast import Context

server = mcpfast.Server("scale-out")
MARKS = Path(os.environ["SCALE_OUT_MARKS"])


@server.tool(instant=True)
def pid() -> int:
    return os.getpid()


@server.tool(instant=True)
def add(a: int, b: int) -> int:
    return a + b


@server.tool()
async def ask_name(ctx: Context) -> str:
    answer = await ctx.elicit(
        "Name?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="name"
    )
    return f"hello {answer['content']['name']} from {os.getpid()}"


@server.tool()
async def forever(ctx: Context, mark: str) -> str:
    await ctx.report_progress(0, 1)
    try:
        await trio.sleep_forever()
    finally:
        (MARKS / mark).write_text("cancelled")


@server.tool()
async def touch(uri: str) -> str:
    await server.resource_updated(uri)
    return f"touched {uri}"


@server.tool(task="optional")
async def task_asks(ctx: Context) -> str:
    answer = await ctx.elicit("Sure?", {"type": "object", "properties": {}}, key="sure")
    return f"answer: {answer['action']}"


@server.tool(task="optional")
async def slow(seconds: float = 60) -> str:
    await trio.sleep(seconds)
    return "slow done"


@server.resource("test://doc")
def doc() -> str:
    return "doc"
"""


@asynccontextmanager
async def cluster(tmp_path: Path, bus: str, count: int = 2) -> AsyncIterator[list[str]]:
    """``count`` processes of `SERVER` sharing ``bus`` and the signing keys; yields their URLs."""
    target = tmp_path / "scale_out_server.py"
    target.write_text(SERVER)
    marks = tmp_path / "marks"
    marks.mkdir(exist_ok=True)
    env = {"MCPFAST_KEYS": KEYS, "SCALE_OUT_MARKS": str(marks)}
    async with AsyncExitStack() as stack:
        urls = []
        for _ in range(count):
            port = free_port()
            argv = mcpfast_command(
                "serve", f"{target}:server", "--port", str(port), "--engine", ENGINE, "--bus", bus
            )
            urls.append(await stack.enter_async_context(server_process(argv, port, env)))
        yield urls


@pytest.fixture
async def http() -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(timeout=WAIT) as client:
        yield client


@pytest.fixture
async def two(tmp_path: Path, redis_url: str) -> AsyncIterator[list[str]]:
    async with cluster(tmp_path, redis_url) as urls:
        yield urls


def _headers(session: str, version: str = LEGACY, **extra: str) -> dict[str, str]:
    return {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-session-id": session,
        "mcp-protocol-version": version,
        **extra,
    }


def _wires(http: httpx2.AsyncClient, urls: list[str]) -> list[Wire]:
    return [Wire(http, url) for url in urls]


async def _pid(wire: Wire, session: str) -> int:
    reply = await wire.legacy("tools/call", {"name": "pid"}, session=session, version=LEGACY)
    assert reply.status == 200, reply.messages
    pid: int = reply.result["structuredContent"]["result"]
    return pid


async def _stream_frames(
    response: httpx2.Response, on_frame: Callable[[dict[str, Any]], Awaitable[bool]]
) -> None:
    """Feed each JSON-RPC frame of an SSE ``response`` to ``on_frame`` until it returns True
    or the stream ends."""
    parser = sse.Parser()
    async for chunk in response.aiter_bytes():
        for event in parser.feed(chunk):
            if event.data and await on_frame(json.loads(event.data)):
                return


# ================================================================================== sessions


async def test_a_legacy_session_opened_on_one_is_used_on_the_other(
    two: list[str], http: httpx2.AsyncClient
) -> None:
    one, other = _wires(http, two)
    with trio.fail_after(WAIT):
        session, _ = await one.initialize(LEGACY)
        pids = {await _pid(one, session), await _pid(other, session)}
    assert len(pids) == 2, "the session was served by both processes"


async def test_the_client_behind_the_proxy_keeps_one_session(two: list[str]) -> None:
    async with round_robin(two) as proxy:
        async with mcpfast.connect(
            proxy.url + "/mcp", "legacy", open_get_stream=False, era_cache=EraCache()
        ) as client:
            with trio.fail_after(WAIT):
                session = session_of(client)
                pids = {(await client.call_tool("pid")).structuredContent["result"] for _ in "ab"}
                assert session_of(client) == session
    assert len(pids) == 2
    assert set(proxy.served) == {0, 1}


async def test_a_session_deleted_on_one_is_refused_on_the_other(
    two: list[str], http: httpx2.AsyncClient
) -> None:
    one, other = _wires(http, two)
    with trio.fail_after(WAIT):
        session, _ = await one.initialize(LEGACY)
        assert (await other.legacy("ping", session=session, version=LEGACY)).status == 200
        deleted = await http.delete(one.url, headers=_headers(session))
        assert deleted.status_code == 204
        # the other worker learns of it once the broadcast is applied (a request racing that
        # is still served); a handful of milliseconds, bounded here to 2 s
        with trio.fail_after(2):
            while (await other.legacy("ping", session=session, version=LEGACY)).status != 404:
                await trio.sleep(0.005)
        assert (await one.legacy("ping", session=session, version=LEGACY)).status == 404


# ==================================================================== server-to-client answers


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18"])
async def test_an_elicitation_answered_on_the_other_completes_the_tool(
    two: list[str], http: httpx2.AsyncClient, version: str
) -> None:
    one, other = _wires(http, two)
    frames: list[dict[str, Any]] = []

    async def answer_on_the_other(frame: dict[str, Any]) -> bool:
        frames.append(frame)
        if frame.get("method") == "elicitation/create":
            reply = {
                "jsonrpc": "2.0",
                "id": frame["id"],
                "result": {"action": "accept", "content": {"name": "Ada"}},
            }
            ack = await other.post(reply, _headers(session, version))
            assert ack.status == 202
        return "result" in frame or "error" in frame

    with trio.fail_after(WAIT):
        session, _ = await one.initialize(version, {"elicitation": {}})
        body = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "ask_name", "arguments": {}},
        }
        async with http.stream("POST", one.url, json=body, headers=_headers(session, version)) as r:
            await _stream_frames(r, answer_on_the_other)
        first_pid = await _pid(one, session)
    asked, result = frames
    assert asked["method"] == "elicitation/create"
    assert result["id"] == 7
    assert result["result"]["content"][0]["text"] == f"hello Ada from {first_pid}"


async def test_the_client_behind_the_proxy_answers_an_elicitation(two: list[str]) -> None:
    def on_elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": "Grace"}}

    async with round_robin(two) as proxy:
        async with mcpfast.connect(
            proxy.url + "/mcp",
            "legacy",
            open_get_stream=False,
            era_cache=EraCache(),
            on_elicit=on_elicit,
        ) as client:
            with trio.fail_after(WAIT):
                for _ in range(2):  # one of the two calls has its answer on the other process
                    result = await client.call_tool("ask_name")
                    assert result.content[0].text.startswith("hello Grace")  # type: ignore[union-attr]
    assert set(proxy.served) == {0, 1}


async def test_a_cancellation_sent_to_the_other_cancels_the_handler(
    two: list[str], http: httpx2.AsyncClient, tmp_path: Path
) -> None:
    one, other = _wires(http, two)
    mark = tmp_path / "marks" / "cancel-1"

    async def cancel_on_the_other(frame: dict[str, Any]) -> bool:
        if frame.get("method") == "notifications/progress":
            note = await other.legacy(
                "notifications/cancelled",
                {"requestId": "long-1"},
                session=session,
                version=LEGACY,
                notification=True,
            )
            assert note.status == 202
        assert "result" not in frame, "a cancelled request gets no response"
        return False

    with trio.fail_after(WAIT):
        session, _ = await one.initialize(LEGACY)
        body = {
            "jsonrpc": "2.0",
            "id": "long-1",
            "method": "tools/call",
            "params": {
                "name": "forever",
                "arguments": {"mark": mark.name},
                "_meta": {"progressToken": "p"},
            },
        }
        async with http.stream("POST", one.url, json=body, headers=_headers(session)) as r:
            await _stream_frames(r, cancel_on_the_other)
        while not mark.exists():
            await trio.sleep(0.05)


# ============================================================================ notifications


async def _listen(
    url: str, http: httpx2.AsyncClient, change: Callable[[], Awaitable[None]]
) -> list[dict[str, Any]]:
    """A ``subscriptions/listen`` stream on ``url`` for ``test://doc``: its frames up to the
    first update, ``change`` made once it is acknowledged (none when it is refused)."""
    body = {
        "jsonrpc": "2.0",
        "id": "sub-1",
        "method": "subscriptions/listen",
        "params": {"_meta": meta(), "notifications": {"resourceSubscriptions": ["test://doc"]}},
    }
    headers = {
        "content-type": "application/json",
        "accept": "text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "subscriptions/listen",
    }
    frames: list[dict[str, Any]] = []

    async def on_frame(frame: dict[str, Any]) -> bool:
        frames.append(frame)
        method: str = frame["method"]
        if method == "notifications/subscriptions/acknowledged":
            await change()
        return method == "notifications/resources/updated"

    async with http.stream("POST", url, json=body, headers=headers) as response:
        if response.status_code == 200:
            await _stream_frames(response, on_frame)
    return frames


async def test_a_listen_stream_on_one_gets_a_change_made_through_the_other(
    two: list[str], http: httpx2.AsyncClient
) -> None:
    one, other = _wires(http, two)

    async def touch_on_the_other() -> None:
        reply = await other.modern(
            "tools/call", {"name": "touch", "arguments": {"uri": "test://doc"}}
        )
        assert reply.result["content"][0]["text"] == "touched test://doc"

    with trio.fail_after(WAIT):
        frames = await _listen(one.url, http, touch_on_the_other)
    acknowledged, updated = frames
    assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
    assert updated["params"]["uri"] == "test://doc"


async def _subscribed(wire: Wire) -> str:
    """A new legacy session subscribed to ``test://doc`` (its id after the subscription)."""
    session, _ = await wire.initialize(LEGACY)
    sub = await wire.legacy(
        "resources/subscribe", {"uri": "test://doc"}, session=session, version=LEGACY
    )
    assert sub.status == 200, sub.messages
    return sub.headers.get("mcp-session-id", session)


async def _get_stream(
    http: httpx2.AsyncClient,
    url: str,
    session: str,
    wanted: int,
    opened: Callable[[], Awaitable[None]],
    last: str | None = None,
) -> list[sse.Event]:
    """The events of a legacy GET stream on ``url`` until ``wanted`` of them carry data;
    ``opened`` runs once the stream has answered."""
    headers = {
        "accept": "text/event-stream",
        "mcp-session-id": session,
        "mcp-protocol-version": LEGACY,
    }
    if last is not None:
        headers["last-event-id"] = last
    events: list[sse.Event] = []
    parser = sse.Parser()
    async with http.stream("GET", url, headers=headers) as response:
        assert response.status_code == 200
        await opened()
        async for chunk in response.aiter_bytes():
            events.extend(parser.feed(chunk))
            if sum(1 for e in events if e.data) >= wanted:
                break
    return events


async def test_a_get_stream_on_one_gets_a_change_made_through_the_other(
    two: list[str], http: httpx2.AsyncClient
) -> None:
    one, other = _wires(http, two)

    async def touch_on_the_other() -> None:
        await other.legacy(
            "tools/call",
            {"name": "touch", "arguments": {"uri": "test://doc"}},
            session=session,
            version=LEGACY,
        )

    with trio.fail_after(WAIT):
        session = await _subscribed(other)
        events = await _get_stream(http, one.url, session, 1, touch_on_the_other)
    update = json.loads(next(e for e in events if e.data).data)
    assert update["method"] == "notifications/resources/updated"
    assert update["params"] == {"uri": "test://doc"}


async def test_a_get_stream_dropped_on_one_resumes_on_the_other(
    two: list[str], http: httpx2.AsyncClient
) -> None:
    one, other = _wires(http, two)

    async def touch(wire: Wire, uri: str = "test://doc") -> None:
        await wire.legacy(
            "tools/call",
            {"name": "touch", "arguments": {"uri": uri}},
            session=session,
            version=LEGACY,
        )

    async def nothing() -> None:
        return None

    with trio.fail_after(WAIT):
        session = await _subscribed(one)
        first = await _get_stream(http, one.url, session, 1, lambda: touch(one))
        seen = next(e for e in first if e.data)
        # the stream is dropped; two changes happen meanwhile, one through each process
        await touch(one)
        await touch(other)
        resumed = await _get_stream(http, other.url, session, 2, nothing, last=seen.id)
    data = [json.loads(e.data) for e in resumed if e.data]
    assert [d["method"] for d in data] == ["notifications/resources/updated"] * 2
    assert all(e.id and e.id != seen.id for e in resumed if e.data)


# ===================================================================================== tasks


async def _until_status(
    wire: Wire, get: Callable[[], Awaitable[dict[str, Any]]], status: str
) -> dict[str, Any]:
    while (result := await get())["status"] != status:
        assert result["status"] in ("working", "input_required"), result
        await trio.sleep(0.05)
    return result


async def test_a_modern_task_started_on_one_is_driven_through_the_other(
    two: list[str], http: httpx2.AsyncClient
) -> None:
    one, other = _wires(http, two)
    caps = {**TASKS, "elicitation": {}}

    def getter(wire: Wire, task_id: str) -> Callable[[], Awaitable[dict[str, Any]]]:
        async def get() -> dict[str, Any]:
            reply = await wire.modern("tasks/get", {"taskId": task_id}, capabilities=caps)
            assert "result" in reply.message, reply.message
            result: dict[str, Any] = reply.result
            return result

        return get

    with trio.fail_after(WAIT):
        created = await one.modern(
            "tools/call", {"name": "task_asks", "arguments": {}}, capabilities=caps
        )
        assert created.result["resultType"] == "task"
        task_id = created.result["taskId"]
        asking = await _until_status(other, getter(other, task_id), "input_required")
        assert list(asking["inputRequests"]) == ["sure"]
        ack = await other.modern(
            "tasks/update",
            {"taskId": task_id, "inputResponses": {"sure": {"action": "accept"}}},
            capabilities=caps,
        )
        assert "result" in ack.message, ack.message
        done = await _until_status(one, getter(one, task_id), "completed")
        assert done["result"]["content"][0]["text"] == "answer: accept"

        slow = await one.modern("tools/call", {"name": "slow", "arguments": {}}, capabilities=TASKS)
        slow_id = slow.result["taskId"]
        cancel = await other.modern("tasks/cancel", {"taskId": slow_id}, capabilities=TASKS)
        assert "result" in cancel.message, cancel.message
        await _until_status(one, getter(one, slow_id), "cancelled")
        await _until_status(other, getter(other, slow_id), "cancelled")


async def test_a_legacy_task_started_on_one_is_driven_through_the_other(
    two: list[str], http: httpx2.AsyncClient
) -> None:
    one, other = _wires(http, two)

    def getter(wire: Wire, task_id: str) -> Callable[[], Awaitable[dict[str, Any]]]:
        async def get() -> dict[str, Any]:
            reply = await wire.legacy(
                "tasks/get", {"taskId": task_id}, session=session, version=LEGACY
            )
            assert "result" in reply.message, reply.message
            result: dict[str, Any] = reply.result
            return result

        return get

    frames: list[dict[str, Any]] = []

    async def answer_on_the_first(frame: dict[str, Any]) -> bool:
        frames.append(frame)
        if frame.get("method") == "elicitation/create":
            reply = {"jsonrpc": "2.0", "id": frame["id"], "result": {"action": "accept"}}
            assert (await one.post(reply, _headers(session))).status == 202
        return "result" in frame or "error" in frame

    with trio.fail_after(WAIT):
        session, _ = await one.initialize(LEGACY, {"elicitation": {}})
        created = await one.legacy(
            "tools/call",
            {"name": "task_asks", "arguments": {}, "task": {}},
            session=session,
            version=LEGACY,
        )
        task_id = created.result["task"]["taskId"]
        await _until_status(other, getter(other, task_id), "input_required")
        body = {"jsonrpc": "2.0", "id": 9, "method": "tasks/result", "params": {"taskId": task_id}}
        async with http.stream("POST", other.url, json=body, headers=_headers(session)) as r:
            await _stream_frames(r, answer_on_the_first)
        assert frames[0]["method"] == "elicitation/create"
        assert frames[-1]["result"]["content"][0]["text"] == "answer: accept"
        await _until_status(one, getter(one, task_id), "completed")
        listed = await other.legacy("tasks/list", {}, session=session, version=LEGACY)
        assert task_id in [t["taskId"] for t in listed.result["tasks"]]

        slow = await one.legacy(
            "tools/call",
            {"name": "slow", "arguments": {}, "task": {}},
            session=session,
            version=LEGACY,
        )
        slow_id = slow.result["task"]["taskId"]
        cancelled = await other.legacy(
            "tasks/cancel", {"taskId": slow_id}, session=session, version=LEGACY
        )
        assert cancelled.result["status"] == "cancelled"
        await _until_status(one, getter(one, slow_id), "cancelled")


# ================================================================================ Redis away


async def _add(wire: Wire) -> int:
    reply = await wire.modern("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert reply.status == 200, reply.messages
    total: int = reply.result["structuredContent"]["result"]
    return total


def _assert_unavailable(reply: Reply) -> None:
    """``reply`` refuses the request for want of Redis: 503 and a JSON-RPC error saying so."""
    assert reply.status == 503, reply.messages
    assert reply.error["code"] == -32603
    assert "unavailable" in reply.error["message"]


async def _listened(url: str, other: Wire, http: httpx2.AsyncClient) -> bool:
    """Whether a listen stream on ``url`` gets a change made through ``other`` now (False when
    either is refused, or nothing comes within a few seconds)."""

    async def touch() -> None:
        await other.modern("tools/call", {"name": "touch", "arguments": {"uri": "test://doc"}})

    frames: list[dict[str, Any]] = []
    with trio.move_on_after(3):
        frames = await _listen(url, http, touch)
    return bool(frames) and frames[-1]["method"] == "notifications/resources/updated"


async def test_redis_killed_and_restarted_mid_test(
    tmp_path: Path, redis_server: RedisServer, http: httpx2.AsyncClient
) -> None:
    async with cluster(tmp_path, redis_server.url) as urls:
        one, other = _wires(http, urls)
        with trio.fail_after(WAIT):
            session, _ = await one.initialize(LEGACY)
            assert [await _add(one), await _add(other)] == [5, 5]

        redis_server.stop()
        with trio.fail_after(WAIT):  # what needs no Redis goes on, on both
            assert [await _add(one), await _add(other)] == [5, 5]
        with trio.fail_after(WAIT):  # what needs it is a clear error, soon
            refused = await one.modern(
                "tools/call", {"name": "slow", "arguments": {}}, capabilities=TASKS
            )
        _assert_unavailable(refused)
        with trio.fail_after(WAIT):  # a session whose id proves it by itself goes on too
            for wire in (one, other):
                reply = await wire.legacy("ping", session=session, version=LEGACY)
                assert reply.status == 200, reply.response.text

        redis_server.start()
        # it comes back without a restart: both ways, a change through one process reaches a
        # listen stream on the other (each has its pub/sub connection again)
        with trio.fail_after(3 * WAIT):
            while not await _listened(one.url, other, http):
                await trio.sleep(0.2)
            while not await _listened(other.url, one, http):
                await trio.sleep(0.2)
        # each worker's own signal listeners (answers, task operations) listen again soon
        # after; until then a cross-worker operation is a prompt 503, never a lost one
        with trio.fail_after(WAIT):  # a task started on one is cancelled through the other
            created = await one.modern(
                "tools/call", {"name": "slow", "arguments": {}}, capabilities=TASKS
            )
            task_id = created.result["taskId"]
            seen = await other.modern("tasks/get", {"taskId": task_id}, capabilities=TASKS)
            assert seen.result["status"] == "working"
            cancel = await other.modern("tasks/cancel", {"taskId": task_id}, capabilities=TASKS)
            while cancel.status == 503:  # until its worker listens again: refused, not lost
                _assert_unavailable(cancel)
                await trio.sleep(0.05)
                cancel = await other.modern("tasks/cancel", {"taskId": task_id}, capabilities=TASKS)
            assert "result" in cancel.message, cancel.message
            got = await one.modern("tasks/get", {"taskId": task_id}, capabilities=TASKS)
            assert got.result["status"] == "cancelled"
            assert await _pid(one, session) != await _pid(other, session)

        frames: list[dict[str, Any]] = []

        async def answer_on_the_other(frame: dict[str, Any]) -> bool:
            frames.append(frame)
            if frame.get("method") == "elicitation/create":
                reply = {
                    "jsonrpc": "2.0",
                    "id": frame["id"],
                    "result": {"action": "accept", "content": {"name": "Ada"}},
                }
                assert (await other.post(reply, _headers(asker))).status == 202
            return "result" in frame or "error" in frame

        with trio.fail_after(WAIT):  # a server-to-client answer crosses processes again
            asker, _ = await one.initialize(LEGACY, {"elicitation": {}})
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "ask_name", "arguments": {}},
            }
            async with http.stream("POST", one.url, json=body, headers=_headers(asker)) as r:
                await _stream_frames(r, answer_on_the_other)
        assert frames[-1]["result"]["content"][0]["text"].startswith("hello Ada")


async def test_three_processes_behind_the_proxy(tmp_path: Path, redis_url: str) -> None:
    async with cluster(tmp_path, redis_url, count=3) as urls, round_robin(urls) as proxy:
        async with mcpfast.connect(
            proxy.url + "/mcp", "legacy", open_get_stream=False, era_cache=EraCache()
        ) as client:
            with trio.fail_after(WAIT):
                pids = {
                    (await client.call_tool("pid")).structuredContent["result"] for _ in range(3)
                }
    assert len(pids) == 3
