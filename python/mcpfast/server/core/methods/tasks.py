"""The task methods: 2026-07-28's tasks extension (``tasks/get``, ``tasks/update``,
``tasks/cancel``, for a client that declares it) and 2025-11-25's (``tasks/get``,
``tasks/result``, ``tasks/list``, ``tasks/cancel``, within the session that made the task)."""

from __future__ import annotations

from typing import Any

from .... import jsonrpc
from ....errors import ProtocolError
from ....protocol.capabilities import missing_capability
from ....types import TASKS_EXTENSION, ListParams, TaskParams
from ....versions import has_legacy_tasks
from ...framework import features
from ..rounds import answers
from ..tasks import TaskStore
from ..turn import Turn, serves


def _store(turn: Turn) -> TaskStore:
    """The task store, for a call of a revision (and client) that has tasks.

    Raises:
        ProtocolError: the missing-capability error (2026-07-28, without the extension);
            -32601 (a legacy revision before 2025-11-25).
    """
    call = turn.call
    if turn.exchange is None:
        if not call.declares_extension(TASKS_EXTENSION):
            raise missing_capability({"extensions": {TASKS_EXTENSION: {}}})
    elif not has_legacy_tasks(call.version):
        raise ProtocolError(jsonrpc.METHOD_NOT_FOUND, f"Method not found: {call.method}")
    return turn.runtime.tasks


@serves("tasks/get")
async def get(turn: Turn, p: TaskParams) -> Any:
    store = _store(turn)
    if turn.exchange is None:
        return await store.get(p.taskId)
    return await store.get_legacy(p.taskId, turn.call.session_id)


@serves("tasks/update")
async def update(turn: Turn, p: TaskParams) -> Any:
    await _store(turn).update(p.taskId, answers(p.inputResponses))
    return {}


@serves("tasks/cancel")
async def cancel(turn: Turn, p: TaskParams) -> Any:
    store = _store(turn)
    if turn.exchange is None:
        await store.cancel(p.taskId)
        return {}
    return await store.cancel_legacy(p.taskId, turn.call.session_id)


@serves("tasks/result")
async def result(turn: Turn, p: TaskParams) -> Any:
    call = turn.call
    return await _store(turn).result_legacy(p.taskId, call.session_id, call.input)


@serves("tasks/list")
async def list_tasks(turn: Turn, p: ListParams) -> Any:
    call = turn.call
    tasks = await _store(turn).list_legacy(call.session_id)
    return features.list_result(turn.server, call, p, "tasks", tasks)
