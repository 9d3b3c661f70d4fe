"""Plain-``def`` handlers run on worker threads, bounded by `Config.thread_limit`, so that one
that blocks stalls nothing else; ``instant=True`` runs one on the event loop. Real time here (no
``autojump_clock``: a thread is not a Trio task, and the virtual clock would jump past it), every
wait bounded."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import trio
import trio.testing

from mcpfast import Context, Server
from mcpfast.server.config import Config

from ..helpers import meta
from .conftest import Recorder, Wire, encode, serving, session_headers

NEWEST = "2025-11-25"
LIMIT = 5.0
"""Seconds any one wait of a test may take."""


class Blocker:
    """What a blocking handler does: says it entered, then waits (on a real thread lock) until
    the test opens the gate, at most 10 s (inline, on the loop, it would hold up everything,
    the test too, for that long, then answer ``timed out``)."""

    def __init__(self) -> None:
        self.entered = threading.Semaphore(0)
        self.gate = threading.Semaphore(0)
        self.threads: list[int] = []

    def __call__(self) -> str:
        self.threads.append(threading.get_ident())
        self.entered.release()
        return "released" if self.gate.acquire(timeout=10) else "timed out"

    async def wait_entered(self, count: int = 1) -> None:
        for _ in range(count):
            ok = await trio.to_thread.run_sync(
                self.entered.acquire, True, LIMIT, abandon_on_cancel=True
            )
            assert ok, "the handler did not start"

    def release_all(self) -> None:
        self.gate.release(100)


@pytest.fixture
def blocker() -> Iterator[Blocker]:
    made = Blocker()
    yield made
    made.release_all()  # no thread outlives the test waiting


def _register(server: Server, kind: str, blocker: Blocker, **options: Any) -> None:
    """A blocking handler of ``kind``, registered on ``server``."""
    if kind == "tool":

        @server.tool(**options)
        def block() -> str:
            return blocker()

    elif kind == "resource":

        @server.resource("test://block", **options)
        def block_resource() -> str:
            return blocker()

    elif kind == "template":

        @server.resource("test://block/{n}", **options)
        def block_template(n: str) -> str:
            return blocker()

    elif kind == "prompt":

        @server.prompt(**options)
        def block_prompt() -> str:
            return blocker()

    else:

        @server.completion(prompt="describe", **options)
        def block_completion(argument: str, value: str, context: dict[str, Any]) -> list[str]:
            return [blocker()]


REQUESTS: dict[str, tuple[str, dict[str, Any], Callable[[Any], str]]] = {
    "tool": (
        "tools/call",
        {"name": "block", "arguments": {}},
        lambda r: r["content"][0]["text"],
    ),
    "resource": ("resources/read", {"uri": "test://block"}, lambda r: r["contents"][0]["text"]),
    "template": (
        "resources/read",
        {"uri": "test://block/1"},
        lambda r: r["contents"][0]["text"],
    ),
    "prompt": (
        "prompts/get",
        {"name": "block_prompt"},
        lambda r: r["messages"][0]["content"]["text"],
    ),
    "completion": (
        "completion/complete",
        {
            "ref": {"type": "ref/prompt", "name": "describe"},
            "argument": {"name": "city", "value": "R"},
        },
        lambda r: r["completion"]["values"][0],
    ),
}


async def _spawn(wire: Wire, era: str, method: str, params: dict[str, Any]) -> Recorder:
    """The request in the background, in ``era`` (a fresh legacy session)."""
    if era == "modern":
        body, headers = wire.modern_body(method, params)
        return wire.spawn("POST", headers, encode(body))
    session, _ = await wire.initialize(NEWEST)
    body = wire.legacy_body(method, params)
    return wire.spawn("POST", session_headers(session, NEWEST), encode(body))


@pytest.mark.parametrize("era", ["modern", "legacy"])
@pytest.mark.parametrize("kind", list(REQUESTS))
async def test_a_blocking_handler_stalls_no_other_request(
    server: Server, wire: Wire, blocker: Blocker, kind: str, era: str
) -> None:
    _register(server, kind, blocker)
    method, params, text = REQUESTS[kind]
    with trio.fail_after(LIMIT):
        slow = await _spawn(wire, era, method, params)
        await blocker.wait_entered()
        other = await wire.modern("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        assert other.result["content"][0]["text"] == "hi"
        assert not slow.closed.is_set()
        blocker.gate.release()
        await slow.closed.wait()
    assert text(slow.result) == "released"
    assert blocker.threads[0] != threading.get_ident()


@pytest.mark.parametrize("kind", list(REQUESTS))
async def test_instant_handlers_run_on_the_event_loop(
    server: Server, wire: Wire, kind: str
) -> None:
    ran: list[int] = []

    class Quick(Blocker):
        def __call__(self) -> str:
            ran.append(threading.get_ident())
            return "quick"

    _register(server, kind, Quick(), instant=True)
    method, params, text = REQUESTS[kind]
    with trio.fail_after(LIMIT):
        reply = await wire.modern(method, params)
    assert text(reply.result) == "quick"
    assert ran == [threading.get_ident()]


async def test_a_coroutine_handler_stays_on_the_event_loop(server: Server, wire: Wire) -> None:
    ran: list[int] = []

    @server.tool()
    async def coro() -> str:
        ran.append(threading.get_ident())
        return "coro"

    with trio.fail_after(LIMIT):
        reply = await wire.modern("tools/call", {"name": "coro", "arguments": {}})
    assert reply.result["content"][0]["text"] == "coro"
    assert ran == [threading.get_ident()]
    assert server.tools["coro"].signature.waits and not server.tools["coro"].signature.on_thread
    assert not server.tools["add"].signature.is_async and server.tools["add"].signature.on_thread


def test_the_thread_limit_is_a_config_field() -> None:
    assert Config().thread_limit == 40
    with pytest.raises(ValueError, match="thread_limit must be at least 1"):
        Config(thread_limit=0)


async def test_the_thread_limit_bounds_concurrent_handlers(
    server: Server, blocker: Blocker
) -> None:
    _register(server, "tool", blocker)
    async with serving(server, Config(thread_limit=2)) as wire:
        limiter = wire.endpoint.runtime.threads
        assert limiter.total_tokens == 2
        with trio.fail_after(LIMIT):
            calls = []
            for _ in range(3):
                body, headers = wire.modern_body("tools/call", REQUESTS["tool"][1])
                calls.append(wire.spawn("POST", headers, encode(body)))
            await blocker.wait_entered(2)
            await trio.testing.wait_all_tasks_blocked()
            stats = limiter.statistics()
            assert (stats.borrowed_tokens, stats.tasks_waiting) == (2, 1)
            assert not blocker.entered.acquire(blocking=False)  # the third waits for a thread
            blocker.gate.release()  # one ends: the third starts
            await blocker.wait_entered()
            blocker.gate.release(2)
            for call in calls:
                await call.closed.wait()
        assert [c.result["content"][0]["text"] for c in calls] == ["released"] * 3


async def test_a_client_that_goes_away_is_let_go_at_once(
    server: Server, wire: Wire, blocker: Blocker
) -> None:
    """The request ends while its thread still blocks; the thread keeps its slot until it
    returns, in the background."""
    _register(server, "tool", blocker)
    body, headers = wire.modern_body("tools/call", REQUESTS["tool"][1])
    recorder = Recorder()
    done = trio.Event()

    async def exchange() -> None:
        await wire.endpoint.handle("POST", wire._headers(headers), encode(body), recorder)
        done.set()

    with trio.fail_after(LIMIT):
        wire.nursery.start_soon(exchange)
        await blocker.wait_entered()
        recorder.disconnect()
        await done.wait()
    assert not recorder.status  # nothing was answered to a client that left
    assert wire.endpoint.runtime.threads.statistics().borrowed_tokens == 1


async def test_notifications_cancelled_lets_a_blocking_call_go_at_once(
    server: Server, wire: Wire, blocker: Blocker
) -> None:
    _register(server, "tool", blocker)
    with trio.fail_after(LIMIT):
        session, _ = await wire.initialize(NEWEST)
        body = wire.legacy_body("tools/call", REQUESTS["tool"][1])
        call = wire.spawn("POST", session_headers(session, NEWEST), encode(body))
        await blocker.wait_entered()
        note = await wire.legacy(
            "notifications/cancelled",
            {"requestId": body["id"]},
            session=session,
            version=NEWEST,
            notification=True,
        )
        assert note.status == 202
        await call.closed.wait()
    assert call.messages == []  # no answer to a cancelled request


async def test_a_thread_handler_reaches_its_context_through_trio(
    server: Server, wire: Wire
) -> None:
    @server.tool()
    def steps(ctx: Context) -> str:
        trio.from_thread.run(ctx.report_progress, 1, 2, "half")
        trio.from_thread.run(ctx.info, "working")
        return f"done in {ctx.era}"

    params = {
        "name": "steps",
        "arguments": {},
        "_meta": meta(progressToken="p", **{"io.modelcontextprotocol/logLevel": "info"}),
    }
    with trio.fail_after(LIMIT):
        reply = await wire.modern("tools/call", params)
    methods = [m.get("method") for m in reply.messages]
    assert methods == ["notifications/progress", "notifications/message", None]
    assert reply.result["content"][0]["text"] == "done in modern"


async def test_a_thread_handler_can_ask_for_input(server: Server, wire: Wire) -> None:
    @server.tool()
    def hello(ctx: Context) -> str:
        schema = {"type": "object", "properties": {"name": {"type": "string"}}}
        answer = trio.from_thread.run(ctx.elicit, "Name?", schema)
        return f"Hello, {answer['content']['name']}!"

    caps: dict[str, Any] = {"elicitation": {}}
    params: dict[str, Any] = {"name": "hello", "arguments": {}}
    with trio.fail_after(LIMIT):
        first = await wire.modern("tools/call", params, capabilities=caps)
        assert first.result["resultType"] == "input_required"
        (key,) = first.result["inputRequests"]
        answer = {"action": "accept", "content": {"name": "Ada"}}
        second = await wire.modern(
            "tools/call",
            {
                **params,
                "inputResponses": {key: answer},
                "requestState": first.result["requestState"],
            },
            capabilities=caps,
        )
    assert second.result["content"][0]["text"] == "Hello, Ada!"


async def test_a_task_runs_its_plain_def_on_a_thread_of_the_endpoint(
    server: Server, blocker: Blocker
) -> None:
    _register(server, "tool", blocker, task="optional")
    async with serving(server, Config(thread_limit=1)) as wire:
        with trio.fail_after(LIMIT):
            session, _ = await wire.initialize(NEWEST)
            created = await wire.legacy(
                "tools/call",
                {"name": "block", "arguments": {}, "task": {}},
                session=session,
                version=NEWEST,
            )
            task_id = created.result["task"]["taskId"]
            await blocker.wait_entered()
            assert wire.endpoint.runtime.threads.statistics().borrowed_tokens == 1
            blocker.gate.release()
            result = await wire.legacy(
                "tasks/result", {"taskId": task_id}, session=session, version=NEWEST
            )
    assert result.result["content"][0]["text"] == "released"
    assert blocker.threads[0] != threading.get_ident()
