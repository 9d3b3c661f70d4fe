"""Two workers as one: two `Endpoint`s over two `Server`s built alike and sharing one `LocalBus`,
and a client whose consecutive requests go to one then the other. A server-to-client answer or
a ``notifications/cancelled`` reaching the other worker still reaches the handler; a task
started on one is read, given input, awaited and cancelled through the other; and a request
that needs the bus while it is away is 503 with -32603 and ``Retry-After``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
from trio.testing import MockClock, wait_all_tasks_blocked

from mcpfast import Context, Server
from mcpfast.errors import BusUnavailable
from mcpfast.server.state.local_bus import LocalBus
from mcpfast.server.state.sessions import SessionRecord

from .conftest import Wire, encode, serving, session_headers

TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}}
LEGACY_TASKS = "2025-11-25"
ADA = {"action": "accept", "content": {"name": "Ada"}}


class Probe:
    """What the handlers of both workers report."""

    def __init__(self) -> None:
        self.running = trio.Event()
        self.cancelled = trio.Event()


def build(bus: LocalBus, probe: Probe) -> Server:
    """One worker's server: every worker builds the same."""
    server = Server("workers", "1.0", bus=bus)

    @server.tool(task="optional")
    async def ask_name(ctx: Context) -> str:
        answer = await ctx.elicit("Name?", NAME_SCHEMA, key="name")
        return f"Hello, {answer['content']['name']}!"

    @server.tool(task="optional")
    async def forever() -> str:
        probe.running.set()
        try:
            await trio.sleep_forever()
        finally:
            probe.cancelled.set()

    return server


class Away(LocalBus):
    """A `LocalBus` whose task records and signals can be made unreachable, as a shared bus's
    backing store may be."""

    away = False

    def _check(self) -> None:
        if self.away:
            raise BusUnavailable("test: the store is away")

    async def save_task(
        self, task_id: str, record: bytes, ttl_seconds: float, owner: str | None
    ) -> None:
        self._check()
        await super().save_task(task_id, record, ttl_seconds, owner)

    async def load_task(self, task_id: str) -> bytes | None:
        self._check()
        return await super().load_task(task_id)

    async def signal(self, channel: str, payload: bytes) -> int:
        self._check()
        return await super().signal(channel, payload)

    async def save_session(
        self, session_id: str, record: SessionRecord, ttl_seconds: float
    ) -> None:
        self._check()
        await super().save_session(session_id, record, ttl_seconds)


@asynccontextmanager
async def two_workers(
    probe: Probe, bus: LocalBus | None = None
) -> AsyncIterator[tuple[Wire, Wire]]:
    shared = bus or LocalBus()
    async with serving(build(shared, probe)) as a, serving(build(shared, probe)) as b:
        yield a, b


def _answer(asked: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": asked["id"], "result": result}


# ------------------------------------------------------------------ answers and cancellation


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18"])
async def test_an_elicitation_answered_on_the_other_worker(version: str) -> None:
    async with two_workers(Probe()) as (a, b):
        session, _ = await a.initialize(version, {"elicitation": {}})
        body = b.legacy_body("tools/call", {"name": "ask_name", "arguments": {}})
        call = await b.start("POST", session_headers(session, version), encode(body))
        with trio.fail_after(5):
            asked = await call.next_message()
        assert asked["method"] == "elicitation/create"
        assert asked["id"].startswith(f"mcpfast-{b.server.bus.worker}-")
        ack = await a.post(_answer(asked, ADA), session_headers(session, version))
        assert ack.status == 202
        with trio.fail_after(5):
            await call.closed.wait()
    assert call.message["id"] == body["id"]
    assert call.result["content"][0]["text"] == "Hello, Ada!"


async def test_an_answer_from_another_session_is_not_taken() -> None:
    version = LEGACY_TASKS
    async with two_workers(Probe()) as (a, b):
        session, _ = await a.initialize(version, {"elicitation": {}})
        other, _ = await a.initialize(version, {"elicitation": {}})
        body = b.legacy_body("tools/call", {"name": "ask_name", "arguments": {}})
        call = await b.start("POST", session_headers(session, version), encode(body))
        asked = await call.next_message()
        stolen = {"action": "accept", "content": {"name": "Mallory"}}
        await a.post(_answer(asked, stolen), session_headers(other, version))
        await a.post(_answer(asked, ADA), session_headers(session, version))
        with trio.fail_after(5):
            await call.closed.wait()
    assert call.result["content"][0]["text"] == "Hello, Ada!"


async def test_a_cancellation_sent_to_the_other_worker_cancels_the_handler() -> None:
    probe = Probe()
    version = LEGACY_TASKS
    async with two_workers(probe) as (a, b):
        session, _ = await a.initialize(version)
        other, _ = await b.initialize(version)
        body = a.legacy_body("tools/call", {"name": "forever", "arguments": {}})
        call = a.spawn("POST", session_headers(session, version), encode(body))
        with trio.fail_after(5):
            await probe.running.wait()
        cancel = {"requestId": body["id"], "reason": "enough"}
        stray = await b.legacy(
            "notifications/cancelled", cancel, session=other, version=version, notification=True
        )
        assert stray.status == 202
        await wait_all_tasks_blocked()
        assert not probe.cancelled.is_set()  # another session's cancellation names nothing
        note = await b.legacy(
            "notifications/cancelled", cancel, session=session, version=version, notification=True
        )
        assert note.status == 202
        with trio.fail_after(5):
            await probe.cancelled.wait()
            await call.closed.wait()
    assert call.streaming and call.messages == []  # no answer to a cancelled request


# ----------------------------------------------------------------------------- modern tasks


async def test_a_modern_task_started_on_one_worker_is_driven_through_the_other(
    autojump_clock: MockClock,
) -> None:
    caps = {"elicitation": {}, **TASKS}
    async with two_workers(Probe()) as (a, b):
        created = await a.modern(
            "tools/call", {"name": "ask_name", "arguments": {}}, capabilities=caps
        )
        task = {"taskId": created.result["taskId"]}
        await wait_all_tasks_blocked()
        waiting = await b.modern("tasks/get", task, capabilities=caps)
        assert waiting.result["status"] == "input_required"
        assert list(waiting.result["inputRequests"]) == ["name"]
        updated = await b.modern(
            "tasks/update", {**task, "inputResponses": {"name": ADA}}, capabilities=caps
        )
        assert updated.result["resultType"] == "complete"
        after = await a.modern("tasks/get", task, capabilities=caps)
        assert after.result["status"] in ("working", "completed")  # the input was taken
        await wait_all_tasks_blocked()
        done = await b.modern("tasks/get", task, capabilities=caps)
        assert done.result["status"] == "completed"
        assert done.result["result"]["content"][0]["text"] == "Hello, Ada!"
        unknown = await b.modern("tasks/get", {"taskId": "nope"}, capabilities=caps)
        assert unknown.error["code"] == -32602


async def test_a_modern_task_is_cancelled_through_the_other_worker(
    autojump_clock: MockClock,
) -> None:
    probe = Probe()
    async with two_workers(probe) as (a, b):
        created = await a.modern(
            "tools/call", {"name": "forever", "arguments": {}}, capabilities=TASKS
        )
        task = {"taskId": created.result["taskId"]}
        await probe.running.wait()
        cancelled = await b.modern("tasks/cancel", task, capabilities=TASKS)
        assert cancelled.result["resultType"] == "complete"
        got = await b.modern("tasks/get", task, capabilities=TASKS)
        assert got.result["status"] == "cancelled"  # in the record before the reply
        await probe.cancelled.wait()
        again = await b.modern("tasks/cancel", task, capabilities=TASKS)
        assert again.result["resultType"] == "complete"
        assert (await a.modern("tasks/get", task, capabilities=TASKS)).result[
            "status"
        ] == "cancelled"


# ----------------------------------------------------------------------------- legacy tasks


async def test_a_legacy_task_started_on_one_worker_is_listed_read_and_awaited_on_the_other(
    autojump_clock: MockClock,
) -> None:
    version = LEGACY_TASKS
    async with two_workers(Probe()) as (a, b):
        session, _ = await a.initialize(version, {"elicitation": {}})
        stranger, _ = await b.initialize(version, {"elicitation": {}})
        created = await a.legacy(
            "tools/call",
            {"name": "ask_name", "arguments": {}, "task": {}},
            session=session,
            version=version,
        )
        task_id = created.result["task"]["taskId"]
        await wait_all_tasks_blocked()
        listed = await b.legacy("tasks/list", {}, session=session, version=version)
        assert [(t["taskId"], t["status"]) for t in listed.result["tasks"]] == [
            (task_id, "input_required")
        ]
        got = await b.legacy("tasks/get", {"taskId": task_id}, session=session, version=version)
        assert got.result["status"] == "input_required"
        hidden = await b.legacy("tasks/get", {"taskId": task_id}, session=stranger, version=version)
        assert hidden.error["code"] == -32602
        assert (await b.legacy("tasks/list", {}, session=stranger, version=version)).result[
            "tasks"
        ] == []
        body = b.legacy_body("tasks/result", {"taskId": task_id})
        waiting = await b.start("POST", session_headers(session, version), encode(body))
        asked = await waiting.next_message()  # forwarded on the tasks/result stream of B
        assert asked["method"] == "elicitation/create"
        assert asked["params"]["_meta"]["io.modelcontextprotocol/related-task"] == {
            "taskId": task_id
        }
        ack = await a.post(_answer(asked, ADA), session_headers(session, version))
        assert ack.status == 202
        await waiting.closed.wait()
        assert waiting.message["id"] == body["id"]
        assert waiting.result["content"][0]["text"] == "Hello, Ada!"
        assert waiting.result["_meta"]["io.modelcontextprotocol/related-task"] == {
            "taskId": task_id
        }
        done = await a.legacy("tasks/get", {"taskId": task_id}, session=session, version=version)
        assert done.result["status"] == "completed"


async def test_a_legacy_task_is_cancelled_through_the_other_worker(
    autojump_clock: MockClock,
) -> None:
    probe = Probe()
    version = LEGACY_TASKS
    async with two_workers(probe) as (a, b):
        session, _ = await a.initialize(version)
        created = await a.legacy(
            "tools/call",
            {"name": "forever", "arguments": {}, "task": {}},
            session=session,
            version=version,
        )
        task = {"taskId": created.result["task"]["taskId"]}
        await probe.running.wait()
        waiting = b.spawn(
            "POST", session_headers(session, version), encode(b.legacy_body("tasks/result", task))
        )
        await wait_all_tasks_blocked()
        cancelled = await b.legacy("tasks/cancel", task, session=session, version=version)
        assert cancelled.result["status"] == "cancelled"
        await probe.cancelled.wait()
        await waiting.closed.wait()
        assert waiting.error["code"] == -32602  # tasks/result of a cancelled task
        again = await b.legacy("tasks/cancel", task, session=session, version=version)
        assert again.error["code"] == -32602
        assert again.error["message"].endswith("is already cancelled")


# ------------------------------------------------------------------------- the bus away: 503


async def test_requests_needing_the_bus_while_it_is_away_are_503(
    autojump_clock: MockClock,
) -> None:
    bus = Away()
    version = LEGACY_TASKS
    caps = {"elicitation": {}, **TASKS}
    async with two_workers(Probe(), bus) as (a, b):
        session, _ = await a.initialize(version, {"elicitation": {}})
        modern = await a.modern(
            "tools/call", {"name": "ask_name", "arguments": {}}, capabilities=caps
        )
        legacy = await a.legacy(
            "tools/call",
            {"name": "ask_name", "arguments": {}, "task": {}},
            session=session,
            version=version,
        )
        await wait_all_tasks_blocked()
        bus.away = True
        refused = [
            await b.modern("tasks/get", {"taskId": modern.result["taskId"]}, capabilities=TASKS),
            await b.modern("tools/call", {"name": "ask_name", "arguments": {}}, capabilities=TASKS),
            await b.legacy(
                "tasks/get",
                {"taskId": legacy.result["task"]["taskId"]},
                session=session,
                version=version,
            ),
            await b.post(
                {"jsonrpc": "2.0", "id": f"mcpfast-{bus.worker}-x.1", "result": ADA},
                session_headers(session, version),
            ),
            await b.exchange("DELETE", session_headers(session, version)),
        ]
        for reply in refused:
            assert reply.status == 503
            assert reply.headers["retry-after"] == "1"
            assert reply.error["code"] == -32603
        bus.away = False
        again = await b.modern("tasks/get", {"taskId": modern.result["taskId"]}, capabilities=TASKS)
        assert again.result["status"] == "input_required"
