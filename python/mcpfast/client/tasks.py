"""The task calls of a `Client`, in both task revisions: the 2026-07-28 tasks extension
(declared for each task request only) and 2025-11-25's experimental tasks (a legacy session's,
checked against what its server advertised)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import jsonrpc
from ..errors import MCPError, TransportError
from ..protocol.capabilities import unadvertised_task
from ..protocol.extensions import TASKS as TASKS_EXTENSION
from ..protocol.tasks import task_params
from ..versions import has_legacy_tasks

if TYPE_CHECKING:
    from .transport import ModernTransport

TASKS: dict[str, Any] = {TASKS_EXTENSION.identifier: TASKS_EXTENSION.settings}
"""The ``extensions`` member that declares the tasks extension for one request."""


class TaskCalls:
    """The task methods `Client` has (it provides what they call)."""

    if TYPE_CHECKING:

        @property
        def era(self) -> str: ...

        @property
        def protocol_version(self) -> str: ...

        @property
        def server_capabilities(self) -> dict[str, Any]: ...

        async def request(
            self,
            method: str,
            params: dict[str, Any] | None = None,
            *,
            meta: dict[str, Any] | None = None,
            extensions: dict[str, Any] | None = None,
        ) -> Any: ...

        async def _paginate(self, method: str, key: str) -> list[Any]: ...

        def _modern(self, what: str) -> ModernTransport: ...

    async def start_task(
        self, name: str, arguments: dict[str, Any] | None = None, *, ttl: int | None = None
    ) -> dict[str, Any]:
        """Call a tool as a task.

        Modern era: the tasks extension, declared for this request only (the server decides):
        the task (``resultType: "task"``), or the complete tool result when the server
        answered at once. A 2025-11-25 session: ``tools/call`` with ``params.task`` (``{"ttl":
        ttl}``, or ``{}`` to take the server's), answered ``{"task": {...}}``; ``ttl`` is that
        revision's only (the modern extension's TTL is the server's choice).

        Raises:
            MCPError: -32601 (nothing sent) when a 2025-11-25 server does not advertise
                ``tasks.requests.tools.call``; a protocol error from the server.
            TransportError: a legacy session of a revision before 2025-11-25 (no tasks).
        """
        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        if self._tasks_era("tools/call") == "legacy":
            params["task"] = task_params(ttl)
            legacy: dict[str, Any] = await self.request("tools/call", params)
            return legacy
        result: dict[str, Any] = await self.request("tools/call", params, extensions=TASKS)
        return result

    async def get_task(self, task_id: str) -> dict[str, Any]:
        """The task's state (``tasks/get``, both task revisions)."""
        if self._tasks_era("tasks/get") == "legacy":
            legacy: dict[str, Any] = await self.request("tasks/get", {"taskId": task_id})
            return legacy
        result: dict[str, Any] = await self.request(
            "tasks/get", {"taskId": task_id}, extensions=TASKS
        )
        return result

    async def task_result(self, task_id: str) -> dict[str, Any]:
        """``tasks/result`` (2025-11-25 sessions): waits for the task to end and returns the
        underlying tool result (what the task asks for meanwhile is answered by the handlers).
        The modern extension has none: poll `get_task`, or `listen` with ``task_ids``.

        Raises:
            MCPError: the task failed (its error), was cancelled, or is unknown (-32602).
        """
        self._legacy_tasks("tasks/result")
        result: dict[str, Any] = await self.request("tasks/result", {"taskId": task_id})
        return result

    async def list_tasks(self) -> list[dict[str, Any]]:
        """Every task of this session (``tasks/list``, all pages; 2025-11-25 sessions)."""
        self._legacy_tasks("tasks/list")
        return await self._paginate("tasks/list", "tasks")

    async def update_task(self, task_id: str, responses: dict[str, Any]) -> None:
        """``tasks/update`` (modern era): answer what a task asked for."""
        self._modern("the tasks extension")
        await self.request(
            "tasks/update", {"taskId": task_id, "inputResponses": responses}, extensions=TASKS
        )

    async def cancel_task(self, task_id: str) -> dict[str, Any]:
        """``tasks/cancel``: the (empty) acknowledgement in the modern era, the cancelled task in
        a 2025-11-25 session (cancelling a task that already ended is refused -32602)."""
        if self._tasks_era("tasks/cancel") == "legacy":
            legacy: dict[str, Any] = await self.request("tasks/cancel", {"taskId": task_id})
            return legacy
        result: dict[str, Any] = await self.request(
            "tasks/cancel", {"taskId": task_id}, extensions=TASKS
        )
        return result

    def _tasks_era(self, method: str) -> str:
        """Which task revision a task request speaks: ``"modern"`` (the extension) or
        ``"legacy"`` (2025-11-25's experimental tasks, checked by `_legacy_tasks`)."""
        if self.era == "modern":
            return "modern"
        self._legacy_tasks(method)
        return "legacy"

    def _legacy_tasks(self, method: str) -> None:
        """Check that this 2025-11-25 session's server advertised what ``method`` needs.

        Raises:
            TransportError: the modern era or a revision before 2025-11-25 (no such tasks).
            MCPError: -32601, nothing sent: the server does not advertise it.
        """
        if self.era != "legacy" or not has_legacy_tasks(self.protocol_version):
            raise TransportError(
                f"{method} as a 2025-11-25 task request needs a 2025-11-25 session"
                f" (this connection speaks {self.protocol_version})"
                + (
                    "; the modern era's tasks extension has no such request"
                    if self.era == "modern"
                    else ""
                )
            )
        missing = unadvertised_task(method, self.server_capabilities)
        if missing is not None:
            raise MCPError(
                jsonrpc.METHOD_NOT_FOUND,
                f"The server does not advertise {missing}: {method} was not sent",
            )
