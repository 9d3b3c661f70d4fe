"""``tools/call`` in both eras: run at once, with input rounds (2026-07-28), or as a task
(the tasks extension of 2026-07-28, the ``task`` param of 2025-11-25). A call run in the
request holds its concurrency caps' slots first (`governor.Governor.slots`: refused with
-32023 before anything ran) and runs under its deadline (an ``isError`` result past it)."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Any

import msgspec

from .... import jsonrpc
from ....errors import ProtocolError, UrlElicitationRequired
from ....protocol import results
from ....protocol.capabilities import missing_capability
from ....protocol.limits import NO_LIMITS
from ....types import TASKS_EXTENSION, CallToolParams, ToolResult
from ....versions import has_legacy_tasks
from ...framework import features
from ...framework.features import StartTaskSignal
from ...framework.registry import ToolEntry
from ...state import request_state as state
from ..governor import note_overran
from ..rounds import with_input
from ..turn import Turn, serves


@serves("tools/call")
async def call_tool(turn: Turn, p: CallToolParams) -> Any:
    """Run the tool ``p.name``, in the request or as a task.

    Raises:
        ProtocolError: -32602 for an unknown tool or bad arguments; -32601 (legacy) or the
            missing-capability error (2026-07-28) when the call and the tool's task support
            disagree; what the tool raises that has no result form.
    """
    entry = features.find_tool(turn.runtime.server, p.name)
    if turn.exchange is None:
        return await _modern(turn, entry, p)
    return await _legacy(turn, entry, p)


async def _modern(turn: Turn, entry: ToolEntry, p: CallToolParams) -> Any:
    call = turn.call
    if entry.task_support != "forbidden":
        declared = call.declares_extension(TASKS_EXTENSION)
        if not declared and entry.task_support == "required":
            raise missing_capability({"extensions": {TASKS_EXTENSION: {}}})
        if declared and not entry.defer_task:
            return await turn.runtime.tasks.start(call, entry, p, {})
        if declared:
            return await _deferred_task(turn, entry, p)
    if p.inputResponses is None and p.requestState is None and not entry.signature.waits:
        if entry.limits is NO_LIMITS and turn.runtime.governor.idle:  # nothing to govern
            turn.start()
            return await features.run_tool(turn.runtime.server, call, entry, bytes(p.arguments))
        return await _governed(turn, entry, bytes(p.arguments))
    async with _slots(turn, entry):
        return await _with_input(turn, entry, p)


async def _governed(turn: Turn, entry: ToolEntry, arguments: bytes) -> ToolResult:
    """Run the tool in the request once its caps' slots are held, under its deadline."""
    async with _slots(turn, entry):
        turn.start()
        return await _run(turn, entry, arguments)


def _slots(turn: Turn, entry: ToolEntry) -> AbstractAsyncContextManager[None]:
    """The slots of the caps a call of ``entry`` passes (none: nothing to wait for)."""
    governor = turn.runtime.governor
    return governor.slots(entry) if governor.capped(entry) else nullcontext()


async def _run(turn: Turn, entry: ToolEntry, arguments: bytes) -> ToolResult:
    """Run the tool in the request under its deadline (past it, the `features.Overran`
    result), counted in flight while shedding is on (`Governor.flight`)."""
    governor = turn.runtime.governor
    deadline = governor.deadline(entry)
    try:
        if not governor.shedding:
            return await features.run_tool(turn.server, turn.call, entry, arguments, deadline)
        with governor.flight():
            return await features.run_tool(turn.server, turn.call, entry, arguments, deadline)
    except features.Overran as exc:
        note_overran(exc.tool, exc.seconds)
        return exc.result()


async def _with_input(turn: Turn, entry: ToolEntry, p: CallToolParams) -> Any:
    """Run a tool that may ask for input: its result, or an ``input_required`` dict."""
    arguments = bytes(p.arguments)
    return await with_input(
        turn,
        state.binding("tools/call", p.name, msgspec.json.decode(arguments)),
        p.requestState,
        p.inputResponses,
        lambda: _run(turn, entry, arguments),
    )


async def _deferred_task(turn: Turn, entry: ToolEntry, p: CallToolParams) -> Any:
    """Run a ``defer_task`` tool in the request until it asks to become a task."""
    call = turn.call

    async def start_task() -> None:
        raise StartTaskSignal(call.input.answers)  # type: ignore[attr-defined]

    call.start_task = start_task
    try:
        return await _with_input(turn, entry, p)
    except StartTaskSignal as signal:
        return await turn.runtime.tasks.start(call, entry, p, signal.answers)


async def _legacy(turn: Turn, entry: ToolEntry, p: CallToolParams) -> Any:
    call = turn.call
    tasks = has_legacy_tasks(call.version)
    if p.task is not None and tasks:
        if entry.task_support == "forbidden":
            raise ProtocolError(jsonrpc.METHOD_NOT_FOUND, f"Tool {p.name} does not run as a task")
        return await turn.runtime.tasks.start_legacy(call, entry, p)
    if entry.task_support == "required" and tasks:
        raise ProtocolError(jsonrpc.METHOD_NOT_FOUND, f"Tool {p.name} must run as a task")
    try:
        if entry.limits is NO_LIMITS and turn.runtime.governor.idle:  # nothing to govern
            turn.start()
            result = await features.run_tool(turn.runtime.server, call, entry, bytes(p.arguments))
        else:
            result = await _governed(turn, entry, bytes(p.arguments))
        return results.for_revision(call.version, result)
    except UrlElicitationRequired as exc:
        instead = results.legacy_tool_error(exc, call.version)
        if instead is None:
            raise
        return instead
