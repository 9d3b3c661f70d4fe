"""Tasks: a tool call that outlives its request.

2026-07-28 has them as the ``io.modelcontextprotocol/tasks`` extension (``resultType: "task"``,
``tasks/get|update|cancel``, input through ``tasks/update``); 2025-11-25 as an experimental core
feature (``params.task``, ``tasks/get|result|list|cancel``, input forwarded on the stream of a
``tasks/result`` request). Tasks run in the background nursery of the serving `Endpoint`
(`TaskStore.nursery`); this store keeps them in the worker's memory until their TTL runs out.

A task belongs to whoever started it: a 2025-11-25 task to its legacy session, which alone
lists, reads, awaits or cancels it (another session is told it is unknown, as for an id that
never existed); a 2026-07-28 task to no one (that era is stateless: its unguessable id is the
handle), and it is never seen by a legacy session. A task waiting for input (``input_required``)
waits at most ``input_timeout_seconds``: then its handler's ``ask`` raises an `MCPError`
(-32603), as a legacy server-to-client request that goes unanswered does.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import msgspec
import trio

from .. import jsonrpc
from ..errors import MCPError, ProtocolError
from ..protocol.capabilities import InputRequest
from ..types import RELATED_TASK_KEY, CallToolParams, TextContent, ToolResult
from .app import Server
from .call import Call
from .context import InputSource
from .features import run_tool
from .registry import ToolEntry

TERMINAL = ("completed", "failed", "cancelled")


def _error_text(result: ToolResult) -> str:
    """The ``statusMessage`` of a task whose tool returned an error: the result's text."""
    texts = [c.text for c in result.content if isinstance(c, TextContent)]
    return " ".join(texts) or "The tool returned an error"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Task:
    """One task's state."""

    def __init__(self, ttl_ms: int, poll_ms: int, owner: str | None = None) -> None:
        self.id = secrets.token_urlsafe(12)
        self.owner = owner
        """The legacy session that started it; None for a 2026-07-28 task."""
        self.status = "working"
        self.message: str | None = None
        self.created = self.updated = _now()
        self.expires = time.monotonic() + ttl_ms / 1000
        self.ttl_ms = ttl_ms
        self.poll_ms = poll_ms
        self.result: Any = None
        self.error: dict[str, Any] | None = None
        self.requests: dict[str, InputRequest] = {}
        self.answers: dict[str, Any] = {}
        self.answered = trio.Event()
        self.done = trio.Event()
        self.scope = trio.CancelScope()
        self.forwarding = False
        self.changed = trio.Event()
        """Set (and replaced) at every change of status."""

    def set(self, status: str, message: str | None = None) -> None:
        self.status = status
        self.message = message
        self.updated = _now()
        self.changed.set()
        self.changed = trio.Event()


class TaskInput:
    """A task's input source: it parks in ``input_required`` until ``tasks/update`` answers."""

    def __init__(self, task: Task, store: TaskStore) -> None:
        self.task = task
        self.store = store

    async def ask(self, requests: Mapping[str, InputRequest]) -> dict[str, Any]:
        """The answers; parks the task in ``input_required`` until they all came.

        Raises:
            MCPError: -32603 when they did not come within ``input_timeout_seconds`` (the task
                is ``working`` again, for its handler to go on or end).
        """
        task = self.task
        limit = self.store.input_timeout_seconds
        with trio.move_on_after(limit) as waited:
            while True:
                missing = {k: r for k, r in requests.items() if k not in task.answers}
                if not missing:
                    break
                task.requests = missing
                task.answered = trio.Event()
                task.set("input_required")
                await self.store.changed(task)
                await task.answered.wait()
        if waited.cancelled_caught:
            task.requests = {}
            task.set("working")
            await self.store.changed(task)
            raise MCPError(
                jsonrpc.INTERNAL_ERROR, f"The client did not provide the input within {limit:g} s"
            )
        task.requests = {}
        task.set("working")
        await self.store.changed(task)
        return {k: task.answers[k] for k in requests}


class _Quiet:
    async def emit(self, message: bytes) -> None:
        return None


class TaskStore:
    """The tasks of one worker."""

    def __init__(
        self,
        server: Server,
        ttl_ms: int = 3_600_000,
        poll_ms: int = 500,
        input_timeout_seconds: float = 600.0,
        max_ttl_ms: int = 86_400_000,
    ) -> None:
        self.server = server
        self.ttl_ms = ttl_ms
        """The TTL of a task whose client asked for none (2026-07-28 tasks always)."""
        self.max_ttl_ms = max_ttl_ms
        """The longest TTL a 2025-11-25 client may ask for (``params.task.ttl``); a longer one
        is cut to it (the revision: "Receivers MAY override the requested ttl"; the task
        shows the TTL it got). The endpoint sets it from `Config.task_max_ttl_ms`."""
        self.poll_ms = poll_ms
        self.input_timeout_seconds = input_timeout_seconds
        """How long a task waits in ``input_required`` (the endpoint sets its config's)."""
        self.tasks: dict[str, Task] = {}
        self.nursery: trio.Nursery | None = None
        """Where tasks run: the serving endpoint's background nursery, None when not serving."""

    def _purge(self) -> None:
        """Forget the ended tasks whose TTL ran out."""
        now = time.monotonic()
        for key in [k for k, t in self.tasks.items() if t.expires < now and t.status in TERMINAL]:
            del self.tasks[key]

    def _find(self, task_id: str, owner: str | None = None) -> Task:
        """The task ``task_id`` of ``owner`` (a legacy session id; None: a 2026-07-28 task).

        Raises:
            ProtocolError: -32602 for an unknown task, or one of another owner (alike).
        """
        self._purge()
        task = self.tasks.get(task_id)
        if task is None or task.owner != owner:
            raise ProtocolError(
                jsonrpc.INVALID_PARAMS, f"Unknown task: {task_id}", {"taskId": task_id}
            )
        return task

    async def changed(self, task: Task) -> None:
        """Publish a change of ``task``'s status: to its listeners (2026-07-28
        ``notifications/tasks``), and for a 2025-11-25 task ``notifications/tasks/status`` with
        the task to its session's stream of notifications (the GET stream over HTTP, the pipe
        over stdio; the revision says a server MAY send it, and clients must not rely on it)."""
        await self.server.bus.publish(
            "task/" + task.id, {"method": "notifications/tasks", "params": self.detailed(task)}
        )
        if task.owner is not None:
            await self.server.bus.publish(
                "notify/" + task.owner,
                {"method": "notifications/tasks/status", "params": self._legacy(task)},
            )

    def _spawn(
        self, call: Call, entry: ToolEntry, arguments: bytes, ttl_ms: int, answers: dict[str, Any]
    ) -> Task:
        if self.nursery is None:
            raise ProtocolError(jsonrpc.INTERNAL_ERROR, "Tasks need a running server nursery")
        self._purge()
        task = Task(ttl_ms, self.poll_ms, call.session_id)
        task.answers.update(answers)
        self.tasks[task.id] = task
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
        self.nursery.start_soon(self._run, task, task_call, entry, arguments)
        return task

    async def _run(self, task: Task, call: Call, entry: ToolEntry, arguments: bytes) -> None:
        with task.scope:
            try:
                result = await run_tool(self.server, call, entry, arguments)
            except ProtocolError as exc:
                task.error = exc.to_error()
                task.set("failed", exc.message)
            except Exception as exc:  # a task that crashes fails; the server lives on
                task.error = {
                    "code": jsonrpc.INTERNAL_ERROR,
                    "message": str(exc) or type(exc).__name__,
                }
                task.set("failed", task.error["message"])
            else:
                task.result = result
                if result.isError and call.version < "2026-07-28":
                    # 2025-11-25: "For tool calls specifically, [failed] includes cases where the
                    # tool call result has isError set to true"; tasks/result still returns
                    # that result. (The 2026-07-28 extension keeps such a task completed.)
                    task.set("failed", _error_text(result))
                else:
                    task.set("completed")
        if task.scope.cancelled_caught:
            task.set("cancelled")
        task.done.set()
        await self.changed(task)

    # ------------------------------------------------------------------------------ 2026-07-28

    def _base(self, task: Task) -> dict[str, Any]:
        return _shown(task, "ttlMs", "pollIntervalMs")

    def detailed(self, task: Task) -> dict[str, Any]:
        """The task as ``tasks/get`` shows it: with its result, error or pending input."""
        out = self._base(task)
        if task.status == "completed":
            result = msgspec.to_builtins(task.result)
            result["resultType"] = "complete"
            out["result"] = result
        elif task.status == "failed" and task.error is not None:
            out["error"] = task.error
        elif task.status == "input_required":
            out["inputRequests"] = {
                k: {"method": r.method, "params": r.params} for k, r in task.requests.items()
            }
        return out

    async def start(
        self, call: Call, entry: ToolEntry, params: CallToolParams, answers: dict[str, Any]
    ) -> dict[str, Any]:
        """Create a task for a ``tools/call`` (2026-07-28): a ``CreateTaskResult``. ``answers``
        are inputs gathered before (a ``defer_task`` tool's multi-round-trip phase)."""
        task = self._spawn(call, entry, bytes(params.arguments), self.ttl_ms, answers)
        result = self._base(task)
        result["resultType"] = "task"
        return result

    def get(self, task_id: str) -> dict[str, Any]:
        return self.detailed(self._find(task_id))

    def update(self, task_id: str, answers: dict[str, Any], owner: str | None = None) -> None:
        task = self._find(task_id, owner)
        task.answers.update(answers)
        if task.requests and all(k in task.answers for k in task.requests):
            task.answered.set()
        elif task.requests:
            task.requests = {k: r for k, r in task.requests.items() if k not in task.answers}

    def cancel(self, task_id: str) -> None:
        task = self._find(task_id)
        if task.status not in TERMINAL:
            task.scope.cancel()

    # ------------------------------------------------------------------------------ 2025-11-25

    def _legacy(self, task: Task) -> dict[str, Any]:
        return _shown(task, "ttl", "pollInterval")

    async def start_legacy(
        self, call: Call, entry: ToolEntry, params: CallToolParams
    ) -> dict[str, Any]:
        """Create a task for a ``tools/call`` carrying ``params.task`` (2025-11-25)."""
        task = self._spawn(call, entry, bytes(params.arguments), self._ttl(params.task), {})
        return {"task": self._legacy(task)}

    def _ttl(self, requested: dict[str, Any] | None) -> int:
        """The TTL a 2025-11-25 task gets: the one asked for, at most ``max_ttl_ms``; the
        default ``ttl_ms`` when none (or no whole non-negative number) was asked for."""
        ttl = (requested or {}).get("ttl")
        if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl < 0:
            return min(self.ttl_ms, self.max_ttl_ms)
        return min(ttl, self.max_ttl_ms)

    def get_legacy(self, task_id: str, owner: str | None) -> dict[str, Any]:
        return self._legacy(self._find(task_id, owner))

    async def result_legacy(
        self, task_id: str, owner: str | None, asker: InputSource | None = None
    ) -> Any:
        """Wait for the task to end; its tool result (or its error). While it waits, what the
        task asks for (``input_required``) is forwarded to the client through ``asker`` (the
        ``tasks/result`` request's own stream), tagged with the related task."""
        task = self._find(task_id, owner)
        while not task.done.is_set():
            change = task.changed
            if task.status == "input_required" and asker is not None and not task.forwarding:
                await self._forward(task, asker)
            await change.wait()  # the task resumes (or ends)
        if task.status == "failed" and task.error is not None:
            raise ProtocolError(task.error["code"], task.error["message"], task.error.get("data"))
        if task.status == "cancelled":
            raise ProtocolError(jsonrpc.INVALID_PARAMS, f"Task {task_id} was cancelled")
        result: ToolResult = task.result
        out = msgspec.to_builtins(result)
        out["_meta"] = {RELATED_TASK_KEY: {"taskId": task.id}}
        return out

    async def _forward(self, task: Task, asker: InputSource) -> None:
        related = {RELATED_TASK_KEY: {"taskId": task.id}}
        pending = {
            key: InputRequest(
                method=r.method,
                params={**r.params, "_meta": {**r.params.get("_meta", {}), **related}},
            )
            for key, r in task.requests.items()
        }
        answers: list[dict[str, Any]] = []

        async def stop_when_done() -> None:
            await task.done.wait()  # cancelled meanwhile: the client's answers are moot
            nursery.cancel_scope.cancel()

        task.forwarding = True
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(stop_when_done)
                answers.append(await asker.ask(pending))
                nursery.cancel_scope.cancel()
        finally:
            task.forwarding = False
        if answers:
            self.update(task.id, answers[0], task.owner)

    def list_legacy(self, owner: str | None) -> list[dict[str, Any]]:
        """The tasks of one legacy session (never another's, nor a 2026-07-28 task)."""
        self._purge()
        return [self._legacy(t) for t in self.tasks.values() if owner and t.owner == owner]

    def cancel_legacy(self, task_id: str, owner: str | None) -> dict[str, Any]:
        task = self._find(task_id, owner)
        if task.status in TERMINAL:
            raise ProtocolError(jsonrpc.INVALID_PARAMS, f"Task {task_id} is already {task.status}")
        task.scope.cancel()
        task.set("cancelled")
        return self._legacy(task)


def _shown(task: Task, ttl_key: str, poll_key: str) -> dict[str, Any]:
    """A task's state as a result shows it; the two task revisions name the TTL and the poll
    interval differently (``ttlMs``/``pollIntervalMs`` in the 2026-07-28 extension,
    ``ttl``/``pollInterval`` in 2025-11-25)."""
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
