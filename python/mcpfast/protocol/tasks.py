"""Tasks on the wire, in both task revisions, as pure functions over what a task shows (`Shown`).

- 2026-07-28's tasks extension: ``tools/call`` answers ``resultType: "task"`` (`created`),
  ``tasks/get`` shows the task with its result, error or pending input (`detailed`, also the
  params of ``notifications/tasks``); the TTL and poll interval are ``ttlMs`` and
  ``pollIntervalMs``. A tool result with ``isError`` leaves the task ``completed``.
- 2025-11-25's experimental tasks: ``tools/call`` with ``params.task`` (`task_params`; the
  TTL asked for is capped, `legacy_ttl`) answers ``{"task": ...}`` (`legacy_created`);
  ``tasks/get``, ``tasks/list``, ``tasks/cancel`` and ``notifications/tasks/status`` show
  `legacy_task` (``ttl``, ``pollInterval``); ``tasks/result`` answers the tool result tagged
  with its task (`legacy_result`) and forwards what the task asks for (`tagged`). A tool
  result with ``isError`` fails the task (`fails_on_tool_error`, `error_text` its message).

Where a task is kept and how it runs is `mcpfast.server.tasks`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from .. import jsonrpc
from ..errors import ProtocolError
from ..types import RELATED_TASK_KEY, TextContent, ToolResult
from ..versions import is_modern
from .capabilities import InputRequest
from .results import input_requests

TERMINAL = ("completed", "failed", "cancelled")
"""The statuses a task ends in."""


class Shown(Protocol):
    """What a task shows of itself (`mcpfast.server.state.task_records.TaskRecord` is one)."""

    @property
    def id(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def created(self) -> str: ...
    @property
    def updated(self) -> str: ...
    @property
    def ttl_ms(self) -> int: ...
    @property
    def poll_ms(self) -> int: ...
    @property
    def message(self) -> str | None: ...
    @property
    def result(self) -> Any:
        """The tool result as JSON builtins, once the task ended with one."""

    @property
    def error(self) -> dict[str, Any] | None: ...
    @property
    def requests(self) -> Mapping[str, InputRequest]:
        """What it waits for, in ``input_required``."""


def _shown(task: Shown, ttl_key: str, poll_key: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "taskId": task.id,
        "status": task.status,
        "createdAt": task.created,
        "lastUpdatedAt": task.updated,
        ttl_key: task.ttl_ms,
        poll_key: task.poll_ms,
    }
    if task.message is not None:
        out["statusMessage"] = task.message
    return out


# ------------------------------------------------------------------------------- 2026-07-28


def modern_task(task: Shown) -> dict[str, Any]:
    """The task's state in the 2026-07-28 extension (``ttlMs``, ``pollIntervalMs``)."""
    return _shown(task, "ttlMs", "pollIntervalMs")


def created(task: Shown) -> dict[str, Any]:
    """The ``CreateTaskResult`` a ``tools/call`` answers (``resultType: "task"``)."""
    result = modern_task(task)
    result["resultType"] = "task"
    return result


def detailed(task: Shown) -> dict[str, Any]:
    """The task as ``tasks/get`` shows it: with its result (marked complete) once completed,
    its error once failed, or what it waits for in ``input_required``."""
    out = modern_task(task)
    if task.status == "completed":
        out["result"] = {**task.result, "resultType": "complete"}
    elif task.status == "failed" and task.error is not None:
        out["error"] = task.error
    elif task.status == "input_required":
        out["inputRequests"] = input_requests(task.requests)
    return out


# ------------------------------------------------------------------------------- 2025-11-25


def legacy_task(task: Shown) -> dict[str, Any]:
    """The task's state in 2025-11-25 (``ttl``, ``pollInterval``)."""
    return _shown(task, "ttl", "pollInterval")


def legacy_created(task: Shown) -> dict[str, Any]:
    """The ``CreateTaskResult`` a ``tools/call`` with ``params.task`` answers."""
    return {"task": legacy_task(task)}


def task_params(ttl: int | None) -> dict[str, Any]:
    """The ``params.task`` of a 2025-11-25 ``tools/call``: the TTL asked for (``{}``: the
    server's)."""
    return {"ttl": ttl} if ttl is not None else {}


def legacy_ttl(requested: Mapping[str, Any] | None, default_ms: int, max_ms: int) -> int:
    """The TTL a 2025-11-25 task gets: the one asked for (``params.task.ttl``), at most
    ``max_ms`` (the revision: "Receivers MAY override the requested ttl"); ``default_ms`` (at
    most ``max_ms``) when none, or no whole non-negative number, was asked for."""
    ttl = (requested or {}).get("ttl")
    if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl < 0:
        return min(default_ms, max_ms)
    return min(ttl, max_ms)


def related(task_id: str) -> dict[str, Any]:
    """The ``_meta`` member that ties a message to its task."""
    return {RELATED_TASK_KEY: {"taskId": task_id}}


def tagged(requests: Mapping[str, InputRequest], task_id: str) -> dict[str, InputRequest]:
    """A task's input requests as a ``tasks/result`` stream forwards them: each params'
    ``_meta`` names the task (`related`)."""
    tag = related(task_id)
    return {
        key: InputRequest(
            method=r.method, params={**r.params, "_meta": {**r.params.get("_meta", {}), **tag}}
        )
        for key, r in requests.items()
    }


def legacy_result(task: Shown) -> dict[str, Any]:
    """What ``tasks/result`` answers once the task ended: its tool result, tagged with the
    task (`related`).

    Raises:
        ProtocolError: the task's error, when it failed with one; -32602 when it was
            cancelled.
    """
    if task.status == "failed" and task.error is not None:
        error = task.error
        raise ProtocolError(error["code"], error["message"], error.get("data"))
    if task.status == "cancelled":
        raise ProtocolError(jsonrpc.INVALID_PARAMS, "The task was cancelled")
    return {**task.result, "_meta": related(task.id)}


def fails_on_tool_error(version: str) -> bool:
    """Whether a tool result with ``isError`` fails the task: 2025-11-25 ("For tool calls
    specifically, [failed] includes cases where the tool call result has isError set to
    true"; ``tasks/result`` still returns that result); the 2026-07-28 extension keeps such a
    task ``completed``."""
    return not is_modern(version)


def error_text(result: ToolResult) -> str:
    """The ``statusMessage`` of a task whose tool returned an error: the result's text."""
    texts = [c.text for c in result.content if isinstance(c, TextContent)]
    return " ".join(texts) or "The tool returned an error"
