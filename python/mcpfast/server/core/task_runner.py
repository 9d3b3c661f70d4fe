"""Running a task in this worker (`TaskRunner`): its handler in the endpoint's background
nursery (`TaskRunner.nursery`), with its cancel scope and the events its input waits on
(`Task`); its record on the bus written when it changes and kept alive while it runs (a lease
ahead, written again soon after the bus was away); the updates and cancellations other workers
signal for it applied here. What the eras ask of tasks is `tasks.TaskStore`."""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Mapping
from typing import Any

import msgspec
import trio

from ... import jsonrpc
from ...errors import BusUnavailable, MCPError, ProtocolError
from ...protocol import tasks as wire
from ...protocol.capabilities import InputRequest
from ...protocol.tasks import TERMINAL
from ...telemetry import current
from ...telemetry.metrics import TASK_STATUS
from ...types import ToolResult
from ..framework.app import Server
from ..framework.call import Call
from ..framework.features import Overran, run_tool
from ..framework.registry import ToolEntry
from ..state.bus import Bus, listen
from ..state.sessions import principal
from ..state.task_records import (
    FINAL_SECONDS,
    LEASE_SECONDS,
    Op,
    TaskRecord,
    TaskRecords,
    changed_channel,
    now,
    op_decoder,
    ops_channel,
    redact,
    task_topic,
)
from .governor import deadline
from .refusal import settled

log = logging.getLogger("mcpfast.tasks")

RETRY_SECONDS = 1.0
"""How soon a record that could not be saved (the bus away) is written again."""


class Task:
    """A task running in this worker: its record, and what only this worker acts on."""

    def __init__(self, record: TaskRecord, counter: Any = None) -> None:
        self.record = record
        self.counter = counter
        """The ``mcpfast.server.tasks`` UpDownCounter (None: metrics are off)."""
        if counter is not None:
            counter.add(1, {TASK_STATUS: record.status})
        self.expires = time.monotonic() + record.ttl_ms / 1000
        self.kept_until = 0.0
        """Until when the bus keeps the record last written."""
        self.stale = False
        """Whether the last write of the record failed (the bus away)."""
        self.answers: dict[str, Any] = {}
        self.answered = trio.Event()
        self.scope = trio.CancelScope()

    def set(self, status: str, message: str | None = None) -> None:
        if self.counter is not None:
            self.counter.add(-1, {TASK_STATUS: self.record.status})
            self.counter.add(1, {TASK_STATUS: status})
        self.record.status = status
        self.record.message = message
        self.record.updated = now()


class TaskInput:
    """A task's input source: it parks in ``input_required`` until ``tasks/update`` answers."""

    def __init__(self, task: Task, store: TaskRunner) -> None:
        self.task = task
        self.store = store

    async def ask(self, requests: Mapping[str, InputRequest]) -> dict[str, Any]:
        """The answers; parks the task in ``input_required`` until they all came (the update
        that brings the last one sets it ``working`` again).

        Raises:
            MCPError: -32603 when they did not come within ``input_timeout_seconds`` (the task
                is ``working`` again, for its handler to go on or end).
        """
        task = self.task
        limit = self.store.input_timeout_seconds
        with trio.move_on_after(limit) as waited:
            while missing := {k: r for k, r in requests.items() if k not in task.answers}:
                task.record.requests = missing
                task.answered = trio.Event()
                task.set("input_required")
                await self.store.save(task, notify=True)
                await task.answered.wait()
        if waited.cancelled_caught:
            task.record.requests = {}
            task.set("working")
            await self.store.save(task, notify=True)
            raise MCPError(
                jsonrpc.INTERNAL_ERROR, f"The client did not provide the input within {limit:g} s"
            )
        return {k: task.answers[k] for k in requests}


class _Quiet:
    """A task's emitter: nothing goes on the stream of the request that created it."""

    async def emit(self, message: bytes) -> None:
        return None


class TaskRunner:
    """The tasks running in one endpoint (`tasks`), and every task's record on the server's
    bus (`records`)."""

    def __init__(
        self, server: Server, bus: Bus, poll_ms: int = 500, input_timeout_seconds: float = 600.0
    ) -> None:
        self.server = server
        self.records = TaskRecords(bus)
        self.poll_ms = poll_ms
        self.input_timeout_seconds = input_timeout_seconds
        """How long a task waits in ``input_required`` (the endpoint sets its config's)."""
        self.tool_timeout_seconds: float | None = None
        """A task's tool's deadline when it declares none (the runtime sets its config's)."""
        self.tasks: dict[str, Task] = {}
        """The tasks running here, until their final record is saved."""
        self.nursery: trio.Nursery | None = None
        """Where tasks run: the serving endpoint's background nursery, None when not serving."""
        telemetry = current()
        self._counter = (
            telemetry.instruments.tasks
            if telemetry is not None and telemetry.instruments is not None
            else None
        )

    async def listen(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Apply the updates and cancellations other workers signal for the tasks running
        here, until cancelled; started once listening."""
        bus = self.records.bus
        await listen(bus, ops_channel(bus.worker), self._op, task_status=task_status)

    async def _op(self, payload: bytes) -> None:
        try:
            op = op_decoder.decode(payload)
        except msgspec.DecodeError:
            return
        task = self.tasks.get(op.task)
        if task is None:  # not here (another endpoint sharing the bus), or it just ended
            return
        if op.cancel:
            await self._apply_cancel(task)
        else:
            await self._apply_update(task, op.answers)

    # ----------------------------------------------------------------------------- records

    async def _put(self, task: Task) -> None:
        """Write the task's record, kept for its TTL (a lease ahead while it runs).

        Raises:
            BusUnavailable: not written.
        """
        record = task.record
        moment = time.monotonic()
        floor = FINAL_SECONDS if record.status in TERMINAL else LEASE_SECONDS
        ttl = max(task.expires - moment, floor)
        await self.records.put(record, ttl)
        task.kept_until = moment + ttl

    async def _write(self, task: Task) -> bool:
        """`_put`; False (and the task marked stale) when the bus was away."""
        try:
            await self._put(task)
        except BusUnavailable as exc:
            log.warning(
                "task %s: its record was not saved: %s", redact(task.record.id), exc.message
            )
            task.stale = True
            return False
        task.stale = False
        return True

    async def save(self, task: Task, *, notify: bool = False) -> bool:
        """Save a change of the task (a new revision) and signal it to the workers waiting on
        it; with ``notify`` (its status changed) tell its listeners too: 2026-07-28
        ``notifications/tasks``, and for a 2025-11-25 task ``notifications/tasks/status`` on
        its session's stream of notifications (the GET stream over HTTP, the pipe over stdio;
        the revision says a server MAY send it, and clients must not rely on it). False when
        the bus was away: the record is written again later (`_keep`, `_run`)."""
        record = task.record
        record.revision += 1
        if not await self._write(task):
            return False
        try:
            await self.records.bus.signal(changed_channel(record.id), b"")
            if notify:
                await self.server.publish(
                    task_topic(record.id, record.principal),
                    {"method": "notifications/tasks", "params": wire.detailed(record)},
                )
                if record.owner is not None:
                    await self.server.publish(
                        "notify/" + record.owner,
                        {
                            "method": "notifications/tasks/status",
                            "params": wire.legacy_task(record),
                        },
                    )
        except BusUnavailable as exc:
            log.warning("task %s: its change was not signalled: %s", redact(record.id), exc.message)
        return True

    # ------------------------------------------------------------------------------- running

    async def _spawn(
        self, call: Call, entry: ToolEntry, arguments: bytes, ttl_ms: int, answers: dict[str, Any]
    ) -> Task:
        """Create a task, its record saved, and start it.

        Raises:
            ProtocolError: -32603 when not serving.
            BusUnavailable: the record could not be saved (nothing was started).
        """
        nursery = self.nursery
        if nursery is None:
            raise ProtocolError(jsonrpc.INTERNAL_ERROR, "Tasks need a running server nursery")
        created = now()
        record = TaskRecord(
            id=secrets.token_urlsafe(12),
            worker=self.records.bus.worker,
            owner=call.session_id,
            principal=principal(),
            scopes=sorted(self.server.scopes_for("tools/call", entry.definition.name)),
            status="working",
            created=created,
            updated=created,
            ttl_ms=ttl_ms,
            poll_ms=self.poll_ms,
        )
        task = Task(record, self._counter)
        task.answers.update(answers)
        await self._put(task)
        self.tasks[record.id] = task
        task_call = Call(
            id=call.id,
            method=call.method,
            version=call.version,
            capabilities=call.capabilities,
            client_info=call.client_info,
            emitter=_Quiet(),
            input=TaskInput(task, self),
            threads=call.threads,
        )
        nursery.start_soon(self._run, task, task_call, entry, arguments)
        return task

    async def _run(self, task: Task, call: Call, entry: ToolEntry, arguments: bytes) -> None:
        """Run the task to its end, keeping its record alive meanwhile; then save its final
        record (retried while the bus is away, at most `LEASE_SECONDS`) and forget it here."""
        async with trio.open_nursery() as keeping:
            keeping.start_soon(self._keep, task)
            with task.scope:
                try:
                    timeout = deadline(entry.limits, self.tool_timeout_seconds)
                    result = await run_tool(self.server, call, entry, arguments, timeout)
                except Overran as exc:  # past its deadline: the task fails
                    self._ended(task, exc.error(), call.version)
                except ProtocolError as exc:  # it ran: the bus away is no "retry later"
                    self._ended(task, settled(exc, True).to_error(), call.version)
                except Exception as exc:  # a task that crashes fails; the server lives on
                    message = str(exc) or type(exc).__name__
                    self._ended(
                        task, {"code": jsonrpc.INTERNAL_ERROR, "message": message}, call.version
                    )
                else:
                    self._ended(task, result, call.version)
            if task.scope.cancelled_caught and task.record.status not in TERMINAL:
                task.set("cancelled")
            keeping.cancel_scope.cancel()
        for _ in range(int(LEASE_SECONDS / RETRY_SECONDS)):
            if await self.save(task, notify=True):
                break
            await trio.sleep(RETRY_SECONDS)
        self.tasks.pop(task.record.id, None)
        if task.counter is not None:
            task.counter.add(-1, {TASK_STATUS: task.record.status})

    @staticmethod
    def _ended(task: Task, outcome: ToolResult | dict[str, Any], version: str) -> None:
        """Record how the task's tool ended (a result, or an error object), unless a
        cancellation ended the task first."""
        record = task.record
        if record.status in TERMINAL:
            return
        if isinstance(outcome, dict):
            record.error = outcome
            task.set("failed", outcome["message"])
            return
        record.result = msgspec.to_builtins(outcome)
        if outcome.isError and wire.fails_on_tool_error(version):
            task.set("failed", wire.error_text(outcome))
        else:
            task.set("completed")

    async def _keep(self, task: Task) -> None:
        """While the task runs: write its record again before it expires (past its TTL), or
        soon after a save failed."""
        while True:
            due = task.kept_until - LEASE_SECONDS / 2
            wait = RETRY_SECONDS if task.stale else due - time.monotonic()
            await trio.sleep(max(wait, RETRY_SECONDS))
            if task.stale or time.monotonic() >= task.kept_until - LEASE_SECONDS / 2:
                await self._write(task)

    async def _apply_update(self, task: Task, answers: dict[str, Any]) -> None:
        """Take input answers for a task running here; once it has all it waits for it is
        ``working`` again. Saved even when nothing changed (the acknowledgement)."""
        task.answers.update(answers)
        record = task.record
        resumed = False
        if record.requests:
            record.requests = {k: r for k, r in record.requests.items() if k not in task.answers}
            if not record.requests:
                task.answered.set()
                task.set("working")
                resumed = True
        await self.save(task, notify=resumed)

    async def _apply_cancel(self, task: Task) -> None:
        """Cancel a task running here: ``cancelled`` at once (its handler unwinds after)."""
        ending = task.record.status not in TERMINAL
        if ending:
            task.scope.cancel()
            task.set("cancelled")
        await self.save(task, notify=ending)

    async def _update(self, task_id: str, answers: dict[str, Any], owner: str | None) -> None:
        record = await self.records.find(task_id, owner)
        if record.status in TERMINAL:
            return
        task = self.tasks.get(task_id)
        if task is not None:
            await self._apply_update(task, answers)
        else:
            await self.records.signalled(record, Op(task_id, False, answers))

    async def _cancel(self, record: TaskRecord) -> TaskRecord:
        """Cancel a task that has not ended; its record after."""
        task = self.tasks.get(record.id)
        if task is None:
            return await self.records.signalled(record, Op(record.id, True))
        await self._apply_cancel(task)
        return task.record
