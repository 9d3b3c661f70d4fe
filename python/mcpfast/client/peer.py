"""What the client application answers: server-to-client requests (elicitation, sampling, roots)
and notifications (progress, logs, changes). Both eras and every transport share it."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from .. import jsonrpc
from ..errors import MCPError
from ..protocol.capabilities import FEATURE_OF, client_capabilities, elicitation_modes
from ..protocol.modern import request_meta
from ..telemetry import Telemetry, current
from ..telemetry.tracing import Operation, serving

Handler = Callable[..., Any]


async def _call(fn: Handler, *args: Any) -> Any:
    out = fn(*args)
    return await out if inspect.isawaitable(out) else out


class Peer:
    """The application's handlers.

    Args:
        on_elicit: ``(params) -> {"action": ..., "content": ...}`` for ``elicitation/create``.
        on_sample: ``(params) -> CreateMessageResult dict`` for ``sampling/createMessage``.
        on_roots: ``() -> [{"uri": ..., "name": ...}]`` for ``roots/list``.
        on_progress: ``(params)`` for ``notifications/progress``.
        on_log: ``(params)`` for ``notifications/message``.
        on_notification: ``(method, params)`` for every other notification.
        sampling_tools: ``on_sample`` handles tool use (``tools``/``toolChoice``): declares
            ``sampling.tools`` (2025-11-25 and later).
        elicitation_url: ``on_elicit`` handles URL mode (``mode: "url"``): declares
            ``elicitation.url`` (2025-11-25 and later); without it only form mode is declared.
        extensions: the extensions (SEP-2133) the client supports, by identifier, with their
            settings: declared under ``capabilities.extensions`` in every request (modern) or
            in ``initialize`` (legacy).
    """

    def __init__(
        self,
        *,
        on_elicit: Handler | None = None,
        on_sample: Handler | None = None,
        on_roots: Handler | None = None,
        on_progress: Handler | None = None,
        on_log: Handler | None = None,
        on_notification: Handler | None = None,
        sampling_tools: bool = False,
        elicitation_url: bool = False,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self.on_elicit = on_elicit
        self.on_sample = on_sample
        self.on_roots = on_roots
        self.on_progress = on_progress
        self.on_log = on_log
        self.on_notification = on_notification
        self.sampling_tools = sampling_tools
        self.elicitation_url = elicitation_url
        self.extensions: dict[str, dict[str, Any]] = dict(extensions or {})
        self.progress_by_token: dict[int | str, Handler] = {}
        self.telemetry = current()
        """The SERVER spans of the server's requests answered; None when no SDK is live."""
        self.version: str | None = None
        """The legacy revision a session negotiated: server requests are answered only for the
        capabilities declared in its terms."""

    def capabilities(self, version: str) -> dict[str, Any]:
        """The client capabilities these handlers amount to, in a revision's terms, with the
        declared `extensions`."""
        caps = client_capabilities(
            version,
            elicit=self.on_elicit is not None,
            sample=self.on_sample is not None,
            sampling_tools=self.sampling_tools,
            roots=self.on_roots is not None,
            elicit_url=self.elicitation_url,
        )
        if self.extensions:
            caps["extensions"] = dict(self.extensions)
        return caps

    async def answer(self, method: str, params: dict[str, Any]) -> Any:
        """The result of a server-to-client request (or of an ``inputRequests`` entry).

        Raises:
            MCPError: -32601 when no handler is registered for it, or when the session's
                revision has no such request (elicitation before 2025-06-18); -32602 for an
                elicitation in a mode the client did not declare (URL mode without
                ``elicitation_url``; any mode but form before 2025-11-25), when what
                ``on_elicit`` returned does not fit the request (`elicit_answer_problem`:
                nothing is sent of it), and for a
                ``sampling/createMessage`` whose messages break the tool-use rules
                (`tool_messages_problem`); the handler is not called.
        """
        needed = FEATURE_OF.get(method)
        declared = self.capabilities(self.version) if self.version else None
        if needed and declared is not None and needed not in declared:
            raise MCPError(
                jsonrpc.METHOD_NOT_FOUND, f"{method} is not offered under {self.version}"
            )
        if method == "elicitation/create" and self.on_elicit is not None:
            mode = params.get("mode", "form")
            modes = elicitation_modes(declared) if declared is not None else {"form", "url"}
            if mode not in modes or (mode == "url" and not self.elicitation_url):
                raise MCPError(
                    jsonrpc.INVALID_PARAMS,
                    f"elicitation mode {mode!r} was not declared by this client"
                    + (" (connect with elicitation_url=True)" if mode == "url" else ""),
                )
            answer = await _call(self.on_elicit, params)
            problem = elicit_answer_problem(params, answer)
            if problem is not None:
                raise MCPError(
                    jsonrpc.INVALID_PARAMS, f"elicitation/create: on_elicit returned {problem}"
                )
            return answer
        if method == "sampling/createMessage" and self.on_sample is not None:
            problem = tool_messages_problem(params.get("messages"))
            if problem is not None:
                raise MCPError(jsonrpc.INVALID_PARAMS, f"sampling/createMessage: {problem}")
            return await _call(self.on_sample, params)
        if method == "roots/list" and self.on_roots is not None:
            roots = await _call(self.on_roots)
            return roots if isinstance(roots, dict) else {"roots": list(roots)}
        if method == "ping":
            return {}
        raise MCPError(jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method}")

    async def reply_to(self, message: dict[str, Any]) -> bytes:
        """The JSON-RPC response to a server request message, answered in a SERVER span (a
        child of the server's CLIENT span, by the trace context of its ``_meta``) when
        telemetry is live."""
        telemetry = self.telemetry
        if telemetry is None:
            return await self._reply_to(message, None)
        id_ = message.get("id")
        with self._serving(
            telemetry,
            str(message.get("method")),
            message.get("params"),
            id_ if isinstance(id_, int | str) else None,
        ) as op:
            return await self._reply_to(message, op)

    async def answer_input(self, method: str, params: dict[str, Any]) -> Any:
        """`answer`, for an ``inputRequests`` entry (2026-07-28): in a SERVER span when
        telemetry is live, a child of the server's span that asked (by the trace context in
        the entry's ``_meta``).

        Raises:
            MCPError: as `answer`.
        """
        telemetry = self.telemetry
        if telemetry is None:
            return await self.answer(method, params)
        with self._serving(telemetry, method, params, None) as op:
            try:
                return await self.answer(method, params)
            except MCPError as exc:
                op.fail(exc.code, exc.message)
                raise

    def _serving(
        self, telemetry: Telemetry, method: str, params: Any, id_: int | str | None
    ) -> AbstractContextManager[Operation]:
        """The SERVER operation of answering a server's request, its parent the trace context
        in its params' ``_meta``."""
        meta = params.get("_meta") if isinstance(params, dict) else None
        return serving(
            telemetry,
            method=method,
            name=None,
            id_=id_,
            version=self.version,
            era=None,
            params=None,
            headers=None,
            meta=meta if isinstance(meta, dict) else None,
            transport={},
        )

    async def _reply_to(self, message: dict[str, Any], op: Operation | None) -> bytes:
        try:
            result = await self.answer(message["method"], message.get("params") or {})
        except MCPError as exc:
            if op is not None:
                op.fail(exc.code, exc.message)
            return jsonrpc.error(message.get("id"), exc.code, exc.message, exc.data)
        except Exception as exc:  # a failing handler answers with an error, it does not kill us
            if op is not None:
                op.fail(jsonrpc.INTERNAL_ERROR, str(exc))
            return jsonrpc.error(message.get("id"), jsonrpc.INTERNAL_ERROR, str(exc))
        return jsonrpc.result(message.get("id"), result)

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        """Route a server notification to its callback."""
        if method == "notifications/progress":
            handler = self.progress_by_token.get(params.get("progressToken"))  # type: ignore[arg-type]
            handler = handler or self.on_progress
            if handler is not None:
                await _call(handler, params)
        elif method == "notifications/message":
            if self.on_log is not None:
                await _call(self.on_log, params)
        elif self.on_notification is not None:
            await _call(self.on_notification, method, params)


ELICIT_ACTIONS = ("accept", "decline", "cancel")


def elicit_answer_problem(params: dict[str, Any], answer: Any) -> str | None:
    """What makes ``answer`` (an ``on_elicit`` result) not an ElicitResult for the request of
    ``params`` (None: nothing). An ``action`` is one of accept / decline / cancel; accepted
    form-mode ``content`` fits ``requestedSchema``, the flat object of primitives
    (`client/elicitation.mdx`): every ``required`` property present, no property the schema
    does not name, each value of its ``type`` (string with ``minLength`` / ``maxLength``,
    number / integer with ``minimum`` / ``maximum``, boolean) and within its enum (``enum``,
    ``oneOf`` consts, and for an array its ``items.enum`` / ``items.anyOf`` consts)."""
    if not isinstance(answer, dict):
        return f"{type(answer).__name__}, not an ElicitResult object"
    action = answer.get("action")
    if action not in ELICIT_ACTIONS:
        return f"action {action!r} (not accept, decline or cancel)"
    if params.get("mode", "form") != "form" or action != "accept":
        return None
    schema = params.get("requestedSchema")
    if not isinstance(schema, dict):
        return None
    content = answer.get("content", {})
    if not isinstance(content, dict):
        return "content that is not an object"
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    for name in required if isinstance(required, list) else ():
        if name not in content:
            return f"content without the required {name!r}"
    for name, value in content.items():
        if name not in properties:
            return f"content with {name!r}, which requestedSchema does not name"
        problem = _value_problem(properties[name], value)
        if problem is not None:
            return f"content whose {name!r} {problem}"
    return None


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "array": (list,),
}


def _consts(options: Any) -> list[Any] | None:
    if not isinstance(options, list):
        return None
    return [o.get("const") for o in options if isinstance(o, dict) and "const" in o]


def _value_problem(schema: Any, value: Any) -> str | None:
    """What makes ``value`` break one primitive property ``schema`` (None: nothing)."""
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if isinstance(kind, str) and kind in _JSON_TYPES:
        ok = isinstance(value, _JSON_TYPES[kind])
        if kind == "integer" and isinstance(value, float) and value.is_integer():
            ok = True
        if kind != "boolean" and isinstance(value, bool):
            ok = False
        if not ok:
            return f"is {value!r}, not of type {kind}"
    allowed = schema.get("enum")
    allowed = allowed if isinstance(allowed, list) else _consts(schema.get("oneOf"))
    if allowed is not None and value not in allowed:
        return f"is {value!r}, not one of {allowed!r}"
    if isinstance(value, list):
        items = schema.get("items")
        items = items if isinstance(items, dict) else {}
        choices = items.get("enum")
        choices = choices if isinstance(choices, list) else _consts(items.get("anyOf"))
        for item in value:
            if choices is not None and item not in choices:
                return f"holds {item!r}, not one of {choices!r}"
    if isinstance(value, str):
        low, high = schema.get("minLength"), schema.get("maxLength")
        if isinstance(low, int) and len(value) < low:
            return f"is shorter than minLength {low}"
        if isinstance(high, int) and len(value) > high:
            return f"is longer than maxLength {high}"
    if isinstance(value, int | float) and not isinstance(value, bool):
        low, high = schema.get("minimum"), schema.get("maximum")
        if isinstance(low, int | float) and value < low:
            return f"is {value!r}, under minimum {low}"
        if isinstance(high, int | float) and value > high:
            return f"is {value!r}, over maximum {high}"
    return None


def _blocks(message: Any) -> list[Any]:
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else [content]


def _kind(block: Any) -> Any:
    return block.get("type") if isinstance(block, dict) else None


def tool_messages_problem(messages: Any) -> str | None:
    """What breaks the 2025-11-25 sampling rules on tool use in ``messages`` (None: nothing),
    `client/sampling.mdx`: a user message holding a ``tool_result`` holds tool results only;
    an assistant message with ``tool_use`` blocks is followed at once by a user message of
    ``tool_result`` blocks answering each of their ids (and a ``tool_result`` answers a
    ``tool_use`` of the message just before). A conversation that uses no tools passes."""
    if not isinstance(messages, list):
        return None
    open_ids: set[Any] | None = None  # the tool_use ids the next message must answer
    for index, message in enumerate(messages):
        blocks = _blocks(message)
        kinds = {_kind(b) for b in blocks}
        role = message.get("role") if isinstance(message, dict) else None
        results = [b.get("toolUseId") for b in blocks if _kind(b) == "tool_result"]
        if results and kinds != {"tool_result"}:
            return f"message {index} mixes tool_result with other content"
        if open_ids is not None:
            if role != "user" or not results:
                return f"message {index} must be the tool results for message {index - 1}"
            if set(results) != open_ids:
                missing = sorted(map(str, open_ids - set(results)))
                extra = sorted(map(str, set(results) - open_ids))
                return (
                    f"message {index} does not answer the tool uses of message {index - 1}"
                    f" (missing {missing}, unmatched {extra})"
                )
            open_ids = None
        elif results:
            return f"message {index} holds tool results for no tool use"
        uses = {b.get("id") for b in blocks if _kind(b) == "tool_use"}
        if uses:
            if role != "assistant":
                return f"message {index}: tool_use belongs in an assistant message"
            open_ids = uses
    if open_ids is not None:
        return f"the tool uses of message {len(messages) - 1} have no results"
    return None


class Identity:
    """What a modern connection says of its client in every request's ``_meta``: the revision,
    the capabilities of its `Peer`, its info, log level and extensions (set by the subclass)."""

    version: str
    peer: Peer
    client_info: dict[str, Any]
    log_level: str | None
    extensions: dict[str, Any]

    def meta(
        self, extra: dict[str, Any] | None = None, extensions: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The ``_meta`` of a request (`protocol.modern.request_meta`), with ``extra`` added
        and ``extensions`` declared besides the client's (`Peer.extensions`) and the
        connection's own."""
        declared = self.peer.extensions
        if self.extensions or extensions:
            declared = {**declared, **self.extensions, **(extensions or {})}
        return request_meta(
            self.version,
            self.peer.capabilities(self.version),
            self.client_info,
            self.log_level,
            declared,
            extra,
        )
