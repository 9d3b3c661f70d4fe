"""Task records: what every worker sees of a task, kept on the bus (`TaskRecords`).

A record is saved before the reply that creates its task (durable first) and at every change,
each save a new ``revision``; every worker answers ``tasks/get``, ``tasks/list`` and
``tasks/result`` from it. A ``tasks/update`` or ``tasks/cancel`` reaching another worker is
signalled to the running one (``task:<worker>``, an `Op`), which applies it, saves the record
(the acknowledgement) and signals ``task-changed:<id>``; the asking worker waits for that
revision (at most `ACK_SECONDS`, rereading the record meanwhile, as signals may be lost).

A record lives for the task's TTL from its creation; a task still running then has its worker
keep the record `LEASE_SECONDS` ahead, and one that ends past it keeps it `FINAL_SECONDS`, for
the requests waiting on its end. A task whose worker died (its lease on the bus lapsed:
`Bus.alive`) is failed by the first worker that reads its record (`TaskRecords.load`): every
read and wait of it ends within a few seconds of the death, on every host.

A task belongs to whoever started it: on a protected server to the principal of the access
token (`sessions.principal`: issuer and subject), and a 2025-11-25 task also to its legacy
session. Only they read, await, update, list or cancel it, or listen to its notifications
(`task_topic`); anyone else is told it is unknown, as for an id that never existed
(`TaskRecords.find`, on every worker: the record carries its owners). On an open server a
2026-07-28 task belongs to no one: its unguessable id is the capability. A task id is never
logged (`redact`). Running a task is `mcpfast.server.core.task_runner`.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import msgspec
import trio

from ... import jsonrpc
from ...errors import BusUnavailable, ProtocolError
from ...protocol.capabilities import InputRequest
from ...protocol.methods import REACHES, TASK
from ...protocol.tasks import TERMINAL
from .bus import Bus
from .sessions import principal

ACK_SECONDS = 10.0
"""How long a worker waits for the running worker to apply an update or cancel it signalled."""

RECHECK_SECONDS = 1.0
"""How often a worker waiting on a task's record rereads it (a change signal may be lost)."""

LEASE_SECONDS = 60.0
"""How far ahead a running task's record is kept alive past its TTL."""

FINAL_SECONDS = 10.0
"""How long the record of a task that ended past its TTL is kept."""

TASK_METHODS = frozenset(
    m for m, reaches in REACHES.items() if any(r.kind == TASK for r in reaches)
)
"""The methods that reach tasks by their ids (`protocol.methods.Reach`): each needs the scopes
of the tasks' tools (`TaskRecords.scopes`), and an id, which grants access, is never logged."""


def ops_channel(worker: str) -> str:
    """The bus channel of the updates and cancellations of the tasks ``worker`` runs."""
    return "task:" + worker


def changed_channel(task_id: str) -> str:
    """The bus channel signalled at each save of a task's record."""
    return "task-changed:" + task_id


def task_topic(task_id: str, owner: str | None) -> str:
    """The topic of a task's ``notifications/tasks``, as ``owner`` (a principal; None on an
    open server) sees it: a listener naming another's task listens where nothing comes."""
    if owner is None:
        return "task/" + task_id
    return f"task/{task_id}/{hashlib.sha256(owner.encode()).hexdigest()[:32]}"


def redact(handle: str) -> str:
    """What a log line shows of an id that grants access (a task id): the first 16 hex digits
    of its SHA-256, enough to tell the lines of one task apart, useless to act on it."""
    return "#" + hashlib.sha256(handle.encode()).hexdigest()[:16]


class TaskRecord(msgspec.Struct, kw_only=True):
    """What every worker sees of a task (on the bus, msgpack-encoded)."""

    id: str
    worker: str
    """Where it runs: where its updates and cancellation are signalled."""
    owner: str | None
    """The legacy session that started it; None for a 2026-07-28 task."""
    principal: str | None = None
    """Whose task it is on a protected server (`sessions.principal`); None on an open one."""
    scopes: list[str] = msgspec.field(default_factory=list)
    """The scopes its tool needs (`Server.scopes_for`): so does every method reaching it."""
    status: str
    created: str
    updated: str
    ttl_ms: int
    poll_ms: int
    revision: int = 0
    message: str | None = None
    result: Any = None
    """The tool result (as JSON builtins), once it ended with one."""
    error: dict[str, Any] | None = None
    requests: dict[str, InputRequest] = msgspec.field(default_factory=dict)
    """What it waits for, in ``input_required``."""


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(TaskRecord)


class Op(msgspec.Struct, array_like=True):
    """An update (answers) or a cancellation signalled to the worker running the task."""

    task: str
    cancel: bool
    answers: dict[str, Any] = msgspec.field(default_factory=dict)


op_decoder = msgspec.msgpack.Decoder(Op)


def now() -> str:
    """A record's timestamp: UTC, in milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _unknown(task_id: str) -> ProtocolError:
    return ProtocolError(jsonrpc.INVALID_PARAMS, "Unknown task", {"taskId": task_id})


def _mine(record: TaskRecord, session: str | None) -> bool:
    """Whether the task is of legacy session ``session`` (None: a 2026-07-28 task) and of the
    principal of the request being served."""
    return record.owner == session and record.principal == principal()


class TaskRecords:
    """Every task's record on ``bus``, and the one gate to them (`find`). The methods raise
    `BusUnavailable` when the bus is away."""

    def __init__(self, bus: Bus) -> None:
        self.bus = bus

    async def put(self, record: TaskRecord, ttl: float) -> None:
        """Write ``record``, kept ``ttl`` seconds."""
        await self.bus.save_task(record.id, _encoder.encode(record), ttl, record.owner)

    async def load(self, task_id: str) -> TaskRecord | None:
        """The record of task ``task_id``, whoever's it is (None: none, or unreadable); failed
        (and saved so) when it is not over and its worker died."""
        raw = await self.bus.load_task(task_id)
        if raw is None:
            return None
        try:
            record = _decoder.decode(raw)
        except msgspec.DecodeError:
            return None
        if record.status in TERMINAL or await self.bus.alive(record.worker):
            return record
        return await self._orphaned(record)

    async def _orphaned(self, record: TaskRecord) -> TaskRecord:
        """``record`` of a task whose worker died, failed, saved for what remains of its TTL
        (at least `FINAL_SECONDS`) and signalled to its waiters."""
        message = "The worker running the task stopped before the task ended"
        record.status, record.message, record.requests = "failed", message, {}
        record.error = {"code": jsonrpc.INTERNAL_ERROR, "message": message}
        record.revision += 1
        record.updated = now()
        created = datetime.fromisoformat(record.created.replace("Z", "+00:00")).timestamp()
        remaining = created + record.ttl_ms / 1000 - datetime.now(UTC).timestamp()
        await self.put(record, max(remaining, FINAL_SECONDS))
        await self.bus.signal(changed_channel(record.id), b"")
        return record

    async def find(self, task_id: str, owner: str | None = None) -> TaskRecord:
        """The record of task ``task_id`` of ``owner`` (a legacy session id; None: a
        2026-07-28 task) and of the request's principal: the one gate of every task method.

        Raises:
            ProtocolError: -32602 for an unknown task, or one of another owner (alike).
        """
        record = await self.load(task_id)
        if record is None or not _mine(record, owner):
            raise _unknown(task_id)
        return record

    async def owned(self, owner: str) -> list[TaskRecord]:
        """The records of legacy session ``owner`` (never another's, nor a 2026-07-28 task)."""
        shown = []
        for task_id in await self.bus.task_ids(owner):
            record = await self.load(task_id)
            if record is not None and _mine(record, owner):
                shown.append(record)
        return shown

    async def scopes(self, task_id: str) -> frozenset[str]:
        """The scopes of the tool of task ``task_id``, when the task is the request's
        principal's (else none: to anyone else it is unknown)."""
        record = await self.load(task_id)
        if record is None or record.principal != principal():
            return frozenset()
        return frozenset(record.scopes)

    async def next(self, task_id: str, owner: str | None, revision: int) -> TaskRecord:
        """The task's record once its revision passes ``revision`` (unbounded: the caller
        bounds the wait, or the record's expiry does).

        Raises:
            ProtocolError: -32602 once the record is gone.
        """
        async with self.bus.signals(changed_channel(task_id)) as changes:
            while True:
                record = await self.find(task_id, owner)  # after subscribing: nothing missed
                if record.revision > revision:
                    return record
                with trio.move_on_after(RECHECK_SECONDS):
                    try:
                        await changes.receive()
                    except trio.EndOfChannel:
                        await trio.sleep_forever()

    async def signalled(self, record: TaskRecord, op: Op) -> TaskRecord:
        """Have the worker running the task apply ``op``; the record that acknowledges it
        (for a cancellation, the one that shows the task ended).

        Raises:
            BusUnavailable: the bus is away, that worker does not listen now (it reconnects
                to the bus, or died), or it did not answer within `ACK_SECONDS` (a task whose
                worker died stays as it was until its record expires).
        """
        if not await self.bus.signal(ops_channel(record.worker), msgspec.msgpack.encode(op)):
            raise BusUnavailable("the worker running the task does not listen now")
        with trio.move_on_after(ACK_SECONDS):
            record = await self.next(record.id, record.owner, record.revision)
            while op.cancel and record.status not in TERMINAL:
                record = await self.next(record.id, record.owner, record.revision)
            return record
        raise BusUnavailable("the worker running the task did not answer")
