"""The feature methods over a `Server`'s registry, the same in every era: running a tool, reading
a resource, getting a prompt, completing an argument, paging a list (cursors), and
the control signals by which a handler ends a modern-era run early."""

from __future__ import annotations

import base64
import functools
from collections.abc import Callable
from typing import Any

import msgspec
import trio

from ... import jsonrpc
from ...errors import ClientCapabilityError, ProtocolError
from ...protocol import results
from ...protocol.apps import UI_EXTENSION, model_visible, renders_apps
from ...telemetry import current, semconv
from ...types import (
    CompleteParams,
    GetPromptParams,
    ListParams,
    ReadResourceParams,
    TextContent,
    Tool,
    ToolResult,
)
from .app import Server
from .call import Call
from .context import Context
from .functions import Signature, prompt_messages, resource_contents, tool_result
from .registry import ToolEntry


class ControlSignal(BaseException):
    """Ends a modern-era handler run early; the dispatcher turns it into a result.

    A `BaseException`, as trio's ``Cancelled`` is, so that a handler's ``except Exception:``
    cannot swallow it."""


class InputRequiredSignal(ControlSignal):
    """The handler needs input it does not have yet (an ``input_required`` result)."""

    def __init__(self, requests: dict[str, Any], answers: dict[str, Any]) -> None:
        super().__init__("input required")
        self.requests = requests
        self.answers = answers


class StartTaskSignal(ControlSignal):
    """The handler asked to continue as a task, carrying the answers gathered so far."""

    def __init__(self, answers: dict[str, Any]) -> None:
        super().__init__("start task")
        self.answers = answers


def _first_signal(group: BaseExceptionGroup[BaseException]) -> ControlSignal | None:
    matched, _ = group.split(ControlSignal)
    first: BaseException | None = matched
    while isinstance(first, BaseExceptionGroup):
        first = first.exceptions[0]
    return first if isinstance(first, ControlSignal) else None


def context(server: Server, call: Call) -> Context:
    """The handler context for a call."""
    return Context(
        server=server,
        request_id=call.id,
        protocol_version=call.version,
        client_capabilities=call.capabilities,
        client_info=call.client_info,
        log_level=call.log_level,
        progress_token=call.progress_token,
        emitter=call.emitter,
        input_source=call.input,
        task_starter=call.start_task,
        session_id=call.session_id,
    )


async def invoke(
    fn: Callable[..., Any],
    signature: Signature,
    args: Any,
    ctx: Callable[[], Context],
    threads: trio.CapacityLimiter | None = None,
) -> Any:
    """Call a handler with decoded arguments (a Struct or dict), and a context made by
    ``ctx()`` if it takes one: awaited, on a worker thread bounded by ``threads``
    (`Signature.on_thread`), or inline (``instant=True``).

    Raises:
        ControlSignal: unwrapped, also when it left the handler's own nursery in an exception
            group (the first signal of the group wins over the group's other exceptions).
    """
    if isinstance(args, msgspec.Struct):
        kwargs = msgspec.structs.asdict(args)
    else:
        kwargs = dict(args)
    if signature.context_param is not None:
        kwargs[signature.context_param] = ctx()
    try:
        if signature.on_thread:
            return await in_thread(functools.partial(fn, **kwargs), threads)
        if signature.is_async:
            return await fn(**kwargs)
        return fn(**kwargs)
    except BaseExceptionGroup as group:
        signal = _first_signal(group)
        if signal is None:
            raise
        raise signal from None


async def in_thread(run: Callable[[], Any], threads: trio.CapacityLimiter | None) -> Any:
    """``run()`` on a worker thread, once ``threads`` has a slot. Cancelled, it returns at once
    and abandons the thread, which runs to completion in the background (still holding its
    slot) and whose outcome is dropped."""
    return await trio.to_thread.run_sync(run, abandon_on_cancel=True, limiter=threads)


def find_tool(server: Server, name: str) -> ToolEntry:
    """The tool called ``name``.

    Raises:
        ProtocolError: -32602 for an unknown tool.
    """
    entry = server.tools.get(name)
    if entry is None:
        raise ProtocolError(jsonrpc.INVALID_PARAMS, f"Unknown tool: {name}", {"name": name})
    return entry


def _tool_error(text: str) -> ToolResult:
    return ToolResult(content=[TextContent(text=text)], isError=True)


class Overran(Exception):
    """A tool's call ran past its deadline and was cancelled (a plain ``def`` on a thread is
    let go: it runs on, its outcome dropped). In a request it answers as a tool's exception
    does, an ``isError`` result (`result`); it fails a task (`error`)."""

    def __init__(self, tool: str, seconds: float) -> None:
        super().__init__(f"Tool {tool!r} timed out after {seconds:g} s")
        self.tool = tool
        self.seconds = seconds

    def result(self) -> ToolResult:
        return _tool_error(str(self))

    def error(self) -> dict[str, Any]:
        data = {"tool": self.tool, "timeoutSeconds": self.seconds}
        return {"code": jsonrpc.INTERNAL_ERROR, "message": str(self), "data": data}


async def run_tool(
    server: Server, call: Call, entry: ToolEntry, arguments: bytes, timeout: float | None = None
) -> ToolResult:
    """Validate the arguments, run the tool (cancelled after ``timeout`` seconds, if given),
    and turn what it returns or raises into a result.

    Raises:
        Overran: the tool ran past ``timeout`` (counted in ``mcpfast.server.deadlines``).
        ProtocolError: as the tool raised it; but for a legacy session a
            `ClientCapabilityError` is a tool error that says what happened.
        ControlSignal: as the tool's context raised it (modern era).
    """
    try:
        args = entry.signature.decoder.decode(arguments)
    except msgspec.ValidationError as exc:
        return _tool_error(f"Invalid arguments: {exc}")
    except msgspec.DecodeError:
        return _tool_error("Invalid arguments: not a JSON object")
    try:
        running = invoke(
            entry.fn, entry.signature, args, lambda: context(server, call), call.threads
        )
        if timeout is None:
            value = await running
        else:
            with trio.move_on_after(timeout) as deadline:
                value = await running
            if deadline.cancelled_caught:
                raise _overran(entry.definition.name, timeout)
    except ClientCapabilityError as exc:
        if call.modern:
            raise
        return _tool_error(exc.message)
    except (ProtocolError, Overran):
        raise
    except Exception as exc:  # a tool that raises is a tool error, not a dead worker
        return _tool_error(str(exc) or type(exc).__name__)
    result = checked_output(entry, tool_result(value, entry.output))
    return with_text(result) if entry.app is not None else result


def _overran(tool: str, seconds: float) -> Overran:
    telemetry = current()
    if telemetry is not None and telemetry.instruments is not None:
        telemetry.instruments.deadlines.add(1, {semconv.TOOL_NAME: tool})
    return Overran(tool, seconds)


def with_text(result: ToolResult) -> ToolResult:
    """An MCP App tool's result with a text content block, for the clients that show no app
    (SEP-1865's fallback): its structured content as JSON when it has no text block."""
    if any(isinstance(block, TextContent) for block in result.content):
        return result
    text = (
        "(no text result)"
        if result.structuredContent is msgspec.UNSET
        else msgspec.json.encode(result.structuredContent).decode()
    )
    return msgspec.structs.replace(result, content=[*result.content, TextContent(text=text)])


def checked_output(entry: ToolEntry, result: ToolResult) -> ToolResult:
    """``result``, or a tool error when it breaks the tool's ``outputSchema``: "servers MUST
    provide structured results that conform to this schema" (2025-06-18 on), so a result that
    does not (or that has no ``structuredContent`` at all) is not sent; the error says why, for
    the model and the tool's author. An ``isError`` result is sent as it is."""
    output = entry.output
    if output.schema is None or result.isError:
        return result
    name = entry.definition.name
    if result.structuredContent is msgspec.UNSET:
        return _tool_error(
            f"Tool {name!r} returned no structuredContent, but it declares an outputSchema"
        )
    problem = output.mismatch(result.structuredContent)
    if problem is None:
        return result
    return _tool_error(
        f"Tool {name!r} returned structuredContent that does not match its outputSchema: {problem}"
    )


async def read_resource(server: Server, call: Call, params: ReadResourceParams) -> dict[str, Any]:
    """``resources/read``: a fixed resource, else the first matching template.

    Raises:
        ProtocolError: no resource matches (-32602 in the modern era, -32002 before).
    """
    uri = params.uri

    def ctx() -> Context:
        return context(server, call)

    found = server.resource_for(uri)
    if found is None:
        code = jsonrpc.INVALID_PARAMS if call.modern else jsonrpc.RESOURCE_NOT_FOUND_LEGACY
        raise ProtocolError(code, "Resource not found", {"uri": uri})
    entry, arguments = found
    value = await invoke(entry.fn, entry.signature, arguments, ctx, call.threads)
    mime = entry.definition.mimeType
    contents = resource_contents(uri, value, mime if isinstance(mime, str) else None)
    ui = server.apps.get(uri)
    if ui:  # an MCP App's CSP and permissions go with its contents
        contents = [msgspec.structs.replace(c, meta={"ui": ui}) for c in contents]
    return cache_hints(server, call, {"contents": contents})


async def get_prompt(server: Server, call: Call, params: GetPromptParams) -> dict[str, Any]:
    """``prompts/get``.

    Raises:
        ProtocolError: -32602 for an unknown prompt or arguments that do not fit it.
    """
    entry = server.prompts.get(params.name)
    if entry is None:
        raise ProtocolError(
            jsonrpc.INVALID_PARAMS, f"Unknown prompt: {params.name}", {"name": params.name}
        )
    try:
        args = msgspec.convert(params.arguments or {}, entry.signature.arguments)
    except msgspec.ValidationError as exc:
        raise ProtocolError(jsonrpc.INVALID_PARAMS, f"Invalid prompt arguments: {exc}") from None
    value = await invoke(
        entry.fn, entry.signature, args, lambda: context(server, call), call.threads
    )
    result: dict[str, Any] = {"messages": prompt_messages(value)}
    description = entry.definition.description
    if isinstance(description, str):
        result["description"] = description
    return result


async def complete(
    server: Server, params: CompleteParams, call: Call | None = None
) -> dict[str, Any]:
    """``completion/complete``: at most 100 values, with ``total`` and ``hasMore``; a plain
    ``def`` completer runs on a worker thread bounded by ``call.threads``.

    Raises:
        ProtocolError: -32602 for a reference to an unknown prompt.
    """
    ref = params.ref
    key = (ref.type, ref.name if ref.type == "ref/prompt" else ref.uri)
    if ref.type == "ref/prompt" and ref.name not in server.prompts:
        raise ProtocolError(jsonrpc.INVALID_PARAMS, f"Unknown prompt: {ref.name}")
    completer = server.completers.get(key)  # type: ignore[arg-type]
    values: list[str] = []
    if completer is not None:
        arguments = (params.context or {}).get("arguments") or {}
        run = functools.partial(
            completer.fn, params.argument.name, params.argument.value, arguments
        )
        if completer.on_thread:
            out = await in_thread(run, call.threads if call is not None else None)
        else:
            out = run()
        values = list(await out if hasattr(out, "__await__") else out)
    return {
        "completion": {"values": values[:100], "total": len(values), "hasMore": len(values) > 100}
    }


# ------------------------------------------------------------------------------------ lists

LISTS: dict[str, Callable[[Server], list[Any]]] = {
    "tools": lambda server: [t.definition for t in server.tools.values()],
    "resources": lambda server: [r.definition for r in server.resources.values()],
    "resourceTemplates": lambda server: [t.definition for t in server.templates.values()],
    "prompts": lambda server: [p.definition for p in server.prompts.values()],
}
"""The registry lists, by the key of their list result."""


def cache_hints(server: Server, call: Call, result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with the server's cache hints where the call's method and revision carry
    them (`protocol.results.cache_hints`)."""
    return results.cache_hints(
        result, call.method, call.version, ttl_ms=server.cache_ttl_ms, scope=server.cache_scope
    )


def list_result(
    server: Server, call: Call, params: ListParams, key: str, items: list[Any]
) -> dict[str, Any]:
    """A page of ``items`` under ``key`` with ``nextCursor`` and cache hints.

    Raises:
        ProtocolError: -32602 for a cursor this server did not issue (or past the end).
    """
    if key == "tools" and UI_EXTENSION in server.extensions and not renders_apps(call.capabilities):
        items = without_apps(items)
    start = 0 if params.cursor is None else _decode_cursor(params.cursor, len(items))
    end = start + server.page_size
    page = results.page_for_revision(call.version, items[start:end])
    result: dict[str, Any] = {key: page}
    if end < len(items):
        result["nextCursor"] = _encode_cursor(end)
    return cache_hints(server, call, result)


def without_apps(tools: list[Tool]) -> list[Tool]:
    """The tools a client that renders no MCP App sees: no app-only tool (``visibility``
    without ``model``), and no ``_meta.ui`` link on the others."""
    out = []
    for tool in tools:
        meta = tool.meta
        if not isinstance(meta, dict) or "ui" not in meta:
            out.append(tool)
        elif model_visible(meta):
            rest = {k: v for k, v in meta.items() if k != "ui"}
            out.append(msgspec.structs.replace(tool, meta=rest or msgspec.UNSET))
    return out


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, size: int) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        kind, _, value = text.partition(":")
        offset = int(value)
    except (ValueError, UnicodeDecodeError):
        raise ProtocolError(jsonrpc.INVALID_PARAMS, "Invalid cursor", {"cursor": cursor}) from None
    if kind != "o" or not 0 <= offset <= size:
        raise ProtocolError(jsonrpc.INVALID_PARAMS, "Invalid cursor", {"cursor": cursor})
    return offset
