"""Plain-``def`` tools through the real stack (loopback HTTP, the engine under test): one that
blocks stalls no other request, ``instant=True`` runs on the event loop, `Config.thread_limit`
bounds the threads, and a cancelled call is let go at once. The server runs in the test's own
Trio run, so a handler that blocked the loop would hold up the test too: the handlers' waits
end after 10 s, and the tests' waits are bounded."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx2
import pytest
import trio
import trio.testing

import mcpfast

from ..helpers import Wire, running

LIMIT = 5.0
"""Seconds any one wait of a test may take."""


class Blocker:
    """Handler side: says it entered, then waits until the test opens the gate (at most 10 s)."""

    def __init__(self) -> None:
        self.entered = threading.Semaphore(0)
        self.gate = threading.Semaphore(0)
        self.noticed = threading.Event()

    def block(self) -> str:
        self.entered.release()
        return "released" if self.gate.acquire(timeout=10) else "timed out"

    def cooperate(self) -> str:
        """Like `block`, but watches for its call's cancellation (``check_cancelled``)."""
        self.entered.release()
        for _ in range(200):
            if self.gate.acquire(timeout=0.05):
                return "released"
            try:
                trio.from_thread.check_cancelled()
            except trio.Cancelled:
                self.noticed.set()
                raise
        return "timed out"

    async def wait(self, what: threading.Semaphore | threading.Event) -> None:
        if isinstance(what, threading.Semaphore):
            ok = await trio.to_thread.run_sync(what.acquire, True, LIMIT, abandon_on_cancel=True)
        else:
            ok = await trio.to_thread.run_sync(what.wait, LIMIT, abandon_on_cancel=True)
        assert ok, "the handler did not get there"


@pytest.fixture
def blocker() -> Iterator[Blocker]:
    made = Blocker()
    yield made
    made.gate.release(100)  # no thread outlives the test waiting


def build(blocker: Blocker) -> mcpfast.Server:
    server = mcpfast.Server("blocking", "1")
    ran: dict[str, int] = {}
    server.ran = ran  # type: ignore[attr-defined]

    @server.tool()
    def block() -> str:
        return blocker.block()

    @server.tool()
    def cooperate() -> str:
        return blocker.cooperate()

    @server.tool()
    def echo(text: str) -> str:
        ran["echo"] = threading.get_ident()
        return text

    @server.tool(instant=True)
    def quick(text: str) -> str:
        ran["quick"] = threading.get_ident()
        return text

    return server


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_a_blocking_tool_stalls_no_other_request(blocker: Blocker, era: str) -> None:
    server = build(blocker)
    results: list[str] = []
    async with running(server) as url, mcpfast.connect(url, era) as client:  # type: ignore[arg-type]

        async def slow() -> None:
            result = await client.call_tool("block", {})
            results.append(result.content[0].text)  # type: ignore[union-attr]

        with trio.fail_after(LIMIT):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(slow)
                await blocker.wait(blocker.entered)
                other = await client.call_tool("echo", {"text": "hi"})
                assert other.content[0].text == "hi"  # type: ignore[union-attr]
                assert results == []
                blocker.gate.release()
    assert results == ["released"]


async def test_instant_runs_on_the_event_loop_and_the_default_on_a_thread(
    blocker: Blocker,
) -> None:
    server = build(blocker)
    async with running(server) as url, mcpfast.connect(url, "modern") as client:
        with trio.fail_after(LIMIT):
            assert (await client.call_tool("quick", {"text": "a"})).content[0].text == "a"  # type: ignore[union-attr]
            assert (await client.call_tool("echo", {"text": "b"})).content[0].text == "b"  # type: ignore[union-attr]
    ran = server.ran  # type: ignore[attr-defined]
    assert ran["quick"] == threading.get_ident()  # the test's thread runs the Trio loop
    assert ran["echo"] != threading.get_ident()


async def test_the_thread_limit_bounds_concurrent_calls(blocker: Blocker) -> None:
    server = build(blocker)
    results: list[str] = []
    async with running(server, thread_limit=2) as url, mcpfast.connect(url, "modern") as client:

        async def slow() -> None:
            result = await client.call_tool("block", {})
            results.append(result.content[0].text)  # type: ignore[union-attr]

        with trio.fail_after(LIMIT):
            async with trio.open_nursery() as nursery:
                for _ in range(3):
                    nursery.start_soon(slow)
                await blocker.wait(blocker.entered)
                await blocker.wait(blocker.entered)
                await trio.testing.wait_all_tasks_blocked()  # the third request is in
                assert not blocker.entered.acquire(blocking=False)  # and waits for a thread
                blocker.gate.release()
                await blocker.wait(blocker.entered)  # one ended: the third starts
                blocker.gate.release(2)
    assert results == ["released"] * 3


async def test_notifications_cancelled_answers_at_once(blocker: Blocker) -> None:
    server = build(blocker)
    version = "2025-11-25"
    async with running(server) as url, httpx2.AsyncClient(timeout=LIMIT) as http:
        wire = Wire(http, url)
        session, _ = await wire.initialize(version)
        replies = []

        async def call() -> None:
            body = {
                "jsonrpc": "2.0",
                "id": "long-1",
                "method": "tools/call",
                "params": {"name": "block", "arguments": {}},
            }
            headers = {"mcp-session-id": session, "mcp-protocol-version": version}
            replies.append(await wire.post(body, headers))

        with trio.fail_after(LIMIT):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(call)
                await blocker.wait(blocker.entered)
                note = await wire.legacy(
                    "notifications/cancelled",
                    {"requestId": "long-1"},
                    session=session,
                    version=version,
                    notification=True,
                )
                assert note.status == 202
        # the call ended while its thread still blocks (the gate stays shut)
        assert [m for m in replies[0].messages if "result" in m] == []
        assert not blocker.gate.acquire(blocking=False)


async def test_a_client_that_goes_away_cancels_the_call(blocker: Blocker) -> None:
    server = build(blocker)
    async with running(server) as url, mcpfast.connect(url, "modern") as client:
        with trio.fail_after(LIMIT):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.call_tool, "cooperate", {})
                await blocker.wait(blocker.entered)
                nursery.cancel_scope.cancel()  # the call is dropped: its connection closes
            await blocker.wait(blocker.noticed)  # and the server cancelled the handler
