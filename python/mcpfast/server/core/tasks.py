"""Tasks: a tool call that outlives its request; what both eras ask of them (`TaskStore`).

2026-07-28 has them as the ``io.modelcontextprotocol/tasks`` extension (``resultType: "task"``,
``tasks/get|update|cancel``, input through ``tasks/update``); 2025-11-25 as an experimental core
feature (``params.task``, ``tasks/get|result|list|cancel``, input forwarded on the stream of a
``tasks/result`` request).

A task runs in the worker that created it (`task_runner`): its handler in that endpoint's
background nursery, with its cancel scope and the events its input waits on (`Task`). What it
shows is its record on the bus (`state.task_records`: storage, lifetimes, ownership); an update
or cancel reaching another worker is signalled to this one, which applies it: a cancelled task
is ``cancelled`` in the record before the reply says so. A task whose worker died stays
``working`` in its record until that expires; an update or cancel of it is refused with 503
after `ACK_SECONDS`.

A task of a tool that needs scopes needs them for every method that reaches it
(`TaskRecords.scopes`, asked by the endpoint before the request is served). A task waiting for
input (``input_required``) waits at most ``input_timeout_seconds``: then its handler's ``ask``
raises an `MCPError` (-32603), as a legacy server-to-client request that goes unanswered does.
"""

from __future__ import annotations

from typing import Any

import trio

from ... import jsonrpc
from ...errors import MCPError, ProtocolError
from ...protocol import tasks as wire
from ...protocol.tasks import TERMINAL
from ...types import CallToolParams
from ..framework.app import Server
from ..framework.call import Call
from ..framework.context import InputSource
from ..framework.registry import ToolEntry
from ..state.bus import Bus
from ..state.task_records import TaskRecord
from .task_runner import TaskRunner


class TaskStore(TaskRunner):
    """The tasks of one endpoint, as both eras' methods reach them: running here or not, every
    task is read and changed through its record (`TaskRunner`). The methods that read or change
    a task raise `BusUnavailable` when the bus is away, and `ProtocolError` -32602 for an
    unknown task (or one of another owner)."""

    def __init__(
        self,
        server: Server,
        bus: Bus,
        ttl_ms: int = 3_600_000,
        poll_ms: int = 500,
        input_timeout_seconds: float = 600.0,
        max_ttl_ms: int = 86_400_000,
    ) -> None:
        super().__init__(server, bus, poll_ms, input_timeout_seconds)
        self.ttl_ms = ttl_ms
        """The TTL of a task whose client asked for none (2026-07-28 tasks always)."""
        self.max_ttl_ms = max_ttl_ms
        """The longest TTL a 2025-11-25 client may ask for (``params.task.ttl``); a longer one
        is cut to it (the revision: "Receivers MAY override the requested ttl"; the task
        shows the TTL it got). The endpoint sets it from `Config.task_max_ttl_ms`."""
        self._forwarding: set[str] = set()
        """The tasks whose input requests a ``tasks/result`` here forwards now."""

    # ------------------------------------------------------------------------------ 2026-07-28

    async def start(
        self, call: Call, entry: ToolEntry, params: CallToolParams, answers: dict[str, Any]
    ) -> dict[str, Any]:
        """Create a task for a ``tools/call`` (2026-07-28): a ``CreateTaskResult``. ``answers``
        are inputs gathered before (a ``defer_task`` tool's multi-round-trip phase)."""
        task = await self._spawn(call, entry, bytes(params.arguments), self.ttl_ms, answers)
        return wire.created(task.record)

    async def get(self, task_id: str) -> dict[str, Any]:
        return wire.detailed(await self.records.find(task_id))

    async def update(self, task_id: str, answers: dict[str, Any]) -> None:
        """``tasks/update``: input answers, taken by the running task before this returns
        (for an ended task, nothing)."""
        await self._update(task_id, answers, None)

    async def cancel(self, task_id: str) -> None:
        """``tasks/cancel``: the task is ``cancelled`` before this returns (an ended task
        stays as it ended)."""
        record = await self.records.find(task_id)
        if record.status not in TERMINAL:
            await self._cancel(record)

    # ------------------------------------------------------------------------------ 2025-11-25

    async def start_legacy(
        self, call: Call, entry: ToolEntry, params: CallToolParams
    ) -> dict[str, Any]:
        """Create a task for a ``tools/call`` carrying ``params.task`` (2025-11-25)."""
        ttl = wire.legacy_ttl(params.task, self.ttl_ms, self.max_ttl_ms)
        task = await self._spawn(call, entry, bytes(params.arguments), ttl, {})
        return wire.legacy_created(task.record)

    async def get_legacy(self, task_id: str, owner: str | None) -> dict[str, Any]:
        return wire.legacy_task(await self.records.find(task_id, owner))

    async def result_legacy(
        self, task_id: str, owner: str | None, asker: InputSource | None = None
    ) -> Any:
        """Wait for the task to end (wherever it runs); its tool result (or its error). While
        it waits, what the task asks for (``input_required``) is forwarded to the client
        through ``asker`` (the ``tasks/result`` request's own stream), tagged with the related
        task, unless another ``tasks/result`` here forwards it already.

        Raises:
            ProtocolError: the task's error; -32602 when it was cancelled, or its record
                expired meanwhile; the client's error answer to a forwarded request.
        """
        record = await self.records.find(task_id, owner)
        while record.status not in TERMINAL:
            if (
                record.status == "input_required"
                and record.requests
                and asker is not None
                and task_id not in self._forwarding
            ):
                await self._forward(record, asker)
            record = await self.records.next(task_id, owner, record.revision)
        return wire.legacy_result(record)

    async def _forward(self, record: TaskRecord, asker: InputSource) -> None:
        """Ask the client what the task waits for and hand the answers to it; given up when
        the task stops waiting for them meanwhile (answered elsewhere, timed out, ended)."""
        pending = wire.tagged(record.requests, record.id)
        answers: list[dict[str, Any]] = []
        refused: list[MCPError] = []

        async def ask() -> None:
            try:
                answers.append(await asker.ask(pending))
            except MCPError as exc:
                refused.append(exc)
            nursery.cancel_scope.cancel()

        async def stop_when_moved() -> None:
            current = record
            try:
                while current.status == "input_required":
                    current = await self.records.next(record.id, record.owner, current.revision)
            except ProtocolError:  # the record is gone: the client's answers are moot
                pass
            nursery.cancel_scope.cancel()

        self._forwarding.add(record.id)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(ask)
                nursery.start_soon(stop_when_moved)
        finally:
            self._forwarding.discard(record.id)
        if refused:
            raise ProtocolError(refused[0].code, refused[0].message, refused[0].data)
        if answers:
            await self._update(record.id, answers[0], record.owner)

    async def list_legacy(self, owner: str | None) -> list[dict[str, Any]]:
        """The tasks of one legacy session (never another's, nor a 2026-07-28 task)."""
        if not owner:
            return []
        return [wire.legacy_task(record) for record in await self.records.owned(owner)]

    async def cancel_legacy(self, task_id: str, owner: str | None) -> dict[str, Any]:
        """``tasks/cancel`` (2025-11-25): the task, ``cancelled``.

        Raises:
            ProtocolError: -32602 for a task that had ended already.
        """
        record = await self.records.find(task_id, owner)
        if record.status not in TERMINAL:
            record = await self._cancel(record)
            if record.status == "cancelled":
                return wire.legacy_task(record)
        raise ProtocolError(jsonrpc.INVALID_PARAMS, f"The task is already {record.status}")
