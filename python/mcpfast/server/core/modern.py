"""The 2026-07-28 (stateless) era: every request describes itself; nothing is remembered.

The checks a request passes before it is served, and their order, are
`mcpfast.protocol.modern.check`'s; `ModernEra.validate` applies them and builds the `Call`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import msgspec

from ... import codec, jsonrpc
from ...errors import BusUnavailable, ProtocolError, UrlElicitationRequired
from ...protocol import results
from ...protocol.capabilities import InputRequest, missing_capability, refusal
from ...protocol.http import prefers_event_stream
from ...protocol.methods import METHODS
from ...protocol.modern import check
from ...telemetry import current, propagation
from ...telemetry.tracing import Operation, recording, serving
from ...types import (
    TASKS_EXTENSION,
    CallToolParams,
    CompleteParams,
    GetPromptParams,
    ListenParams,
    ListParams,
    Params,
    ReadResourceParams,
    TaskParams,
)
from ...versions import ALL_VERSIONS
from ..framework import features
from ..framework.call import Call, decoder_for
from ..framework.features import InputRequiredSignal, StartTaskSignal
from ..framework.registry import ToolEntry
from ..seams import Responder, error_reply
from ..state import request_state as state
from . import skill_methods, streams
from .emission import Emission
from .runtime import Runtime
from .tasks import TaskStore

_meta_decoder = msgspec.json.Decoder(Params)


class Replay:
    """The modern input source: answers come from the request; a missing one ends the request
    with ``input_required``."""

    __slots__ = ("answers",)

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers

    async def ask(self, requests: Mapping[str, InputRequest]) -> dict[str, Any]:
        missing = {key: req for key, req in requests.items() if key not in self.answers}
        if missing:
            raise InputRequiredSignal(dict(missing), self.answers)
        return {key: self.answers[key] for key in requests}


def _input_required(
    runtime: Runtime, bound_to: str, signal: InputRequiredSignal, traced: bool
) -> dict[str, Any]:
    """The ``input_required`` result (`protocol.results.input_required`) with its signed
    state; ``traced``: each entry's params carry the current trace context in their
    ``_meta``, so that the client's answer continues the trace."""
    request_state = state.mint(
        runtime.keys, bound_to, signal.answers, runtime.config.request_state_max_bytes
    )
    carry = propagation.carrying if traced else None
    return results.input_required(signal.requests, request_state, carry)


def _answers(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        return {}
    return {key: value for key, value in raw.items() if isinstance(value, dict)}


Handler = Callable[["ModernEra", Call, Any, Emission], Awaitable[Any]]


def _lister(key: str) -> Handler:
    """The handler of the list method of ``key``."""

    async def list_items(era: ModernEra, call: Call, params: ListParams, emission: Emission) -> Any:
        items = features.LISTS[key](era.server)
        return results.complete(
            features.list_result(era.server, call, params, key, items), era.server_meta
        )

    return list_items


def _plain(method: Callable[[Any, Call, Any], dict[str, Any]]) -> Handler:
    """The handler of a method that answers at once from the registry (``method(server, call,
    params)``), its result marked complete."""

    async def answer(era: ModernEra, call: Call, params: Any, emission: Emission) -> Any:
        return results.complete(method(era.server, call, params), era.server_meta)

    return answer


class ModernEra:
    """Serves requests of the stateless era for one endpoint's `Runtime`."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.server = runtime.server
        self.telemetry = current()
        """Spans and metrics of the requests served; None (nothing recorded) when no SDK was
        configured before the server was built (`mcpfast.telemetry.state`)."""
        self.server_meta = results.server_meta(self.server.info.name, self.server.info.version)
        self.handlers: dict[str, Handler] = {
            "server/discover": ModernEra.discover,
            "tools/list": _lister("tools"),
            "tools/call": ModernEra.tools_call,
            "resources/list": _lister("resources"),
            "resources/templates/list": _lister("resourceTemplates"),
            "resources/read": ModernEra.resources_read,
            "prompts/list": _lister("prompts"),
            "prompts/get": ModernEra.prompts_get,
            "completion/complete": ModernEra.complete,
            "subscriptions/listen": ModernEra.listen,
            "tasks/get": ModernEra.tasks_get,
            "tasks/update": ModernEra.tasks_update,
            "tasks/cancel": ModernEra.tasks_cancel,
            "skills/list": _plain(skill_methods.list_skills),
            "skills/get": _plain(skill_methods.get_skill),
            "resources/directory/read": _plain(skill_methods.read_directory),
        }
        """The handler of each method served; params decode into `METHODS`' Struct for it."""

    # ------------------------------------------------------------------------------ validation

    def validate(
        self, headers: Mapping[str, str] | None, message: codec.Message
    ) -> tuple[Call, Handler, Any]:
        """Apply `mcpfast.protocol.modern.check`; ``headers`` is None off HTTP (stdio),
        where the header checks do not apply. Returns the call, its handler and its params,
        decoded once into the method's Struct.

        Raises:
            ProtocolError: with the code and HTTP status of the failed check.
        """
        method = message.method
        assert method is not None
        handler = self.handlers.get(method)
        tp = METHODS[method].params if handler is not None else Params
        typed, invalid = _decode_typed(tp, message.params)
        param_headers: Any = ()
        if headers is not None and message.name is not None and method == "tools/call":
            tool = self.server.tools.get(message.name)
            if tool is not None:
                param_headers = tool.headers
        requested, meta = check(
            headers,
            message,
            typed.meta,
            param_headers,
            served_methods=self.handlers,
            invalid=invalid,
        )
        assert handler is not None
        call = Call(
            id=message.id,
            method=method,
            version=requested,
            capabilities=meta.client_capabilities,
            client_info=meta.client_info if type(meta.client_info) is dict else None,
            log_level=meta.log_level,
            progress_token=meta.progress_token,
            emitter=_NO_EMITTER,
            input=_NO_INPUT,
            threads=self.runtime.threads,
        )
        return call, handler, typed

    # -------------------------------------------------------------------------------- serving

    async def serve(
        self, headers: Mapping[str, str] | None, message: codec.Message, responder: Responder
    ) -> None:
        """Answer one request (the caller has framed it and checked Origin/Host), in its own
        SERVER span when telemetry is live."""
        telemetry = self.telemetry
        if telemetry is None:
            await self._serve(headers, message, responder, None)
            return
        with serving(
            telemetry,
            method=message.method or "",
            name=message.name,
            id_=message.id,
            version=message.version,
            era="modern",
            params=message.params,
            headers=headers,
        ) as op:
            await self._serve(headers, message, responder, op)

    async def _serve(
        self,
        headers: Mapping[str, str] | None,
        message: codec.Message,
        responder: Responder,
        op: Operation | None,
    ) -> None:
        try:
            call, handler, params = self.validate(headers, message)
        except ProtocolError as exc:
            if op is not None:
                op.fail(exc.code, exc.message)
            await responder.reply(*error_reply(message.id, exc))
            return
        emission = Emission(
            responder,
            prefer_stream=headers is not None and prefers_event_stream(headers.get("accept")),
        )
        call.emitter = emission
        try:
            result = await handler(self, call, params, emission)
            if result is None:
                return
        except ProtocolError as exc:
            if op is not None:
                op.fail(exc.code, exc.message)
            status, body = error_reply(call.id, exc)
            if isinstance(exc, BusUnavailable):
                emission.extra_headers = BusUnavailable.headers
            await emission.finish(body, status)  # a stream's status went out already
            return
        if op is not None:
            op.result(result)
        await emission.finish(jsonrpc.result(call.id, result))

    def _traced(self) -> bool:
        """Whether a request's span is current, to be carried by its ``inputRequests``."""
        return self.telemetry is not None and recording()

    async def discover(self, call: Call, params: Params, emission: Emission) -> Any:
        result: dict[str, Any] = {
            "supportedVersions": list(ALL_VERSIONS),
            "capabilities": self.server.capabilities(call.version),
            "serverInfo": self.server.info,
        }
        features.cache_hints(self.server, call, result)
        if self.server.instructions:
            result["instructions"] = self.server.instructions
        return results.complete(result, self.server_meta)

    async def complete(self, call: Call, params: CompleteParams, emission: Emission) -> Any:
        return results.complete(
            await features.complete(self.server, params, call), self.server_meta
        )

    async def _with_input(
        self,
        call: Call,
        bound_to: str,
        request_state: str | None,
        responses: Any,
        run: Callable[[], Awaitable[Any]],
        emission: Emission,
    ) -> Any:
        """Run a handler that may ask for input; answers come from the state and the retry."""
        answers: dict[str, Any] = {}
        if request_state is not None:
            answers.update(
                state.open_state(self.runtime.keys, request_state, bound_to, self.runtime.config)
            )
        answers.update(_answers(responses))
        call.input = Replay(answers)
        try:
            return await self.runtime.guarded(emission.responder, run)
        except InputRequiredSignal as signal:
            return _input_required(self.runtime, bound_to, signal, self._traced())
        except UrlElicitationRequired as exc:
            pending = results.url_input_requests(exc)
            missing = {k: r for k, r in pending.items() if k not in answers}
            if not missing:
                raise
            refused = refusal(call.version, call.capabilities, missing)
            if refused is not None:  # only kinds the client declared: elicitation.url
                raise refused from None
            asked = InputRequiredSignal(missing, answers)
            return _input_required(self.runtime, bound_to, asked, self._traced())

    async def tools_call(self, call: Call, p: CallToolParams, emission: Emission) -> Any:
        entry = features.find_tool(self.server, p.name)
        if entry.task_support != "forbidden":
            declared = call.declares_extension(TASKS_EXTENSION)
            if not declared and entry.task_support == "required":
                raise missing_capability({"extensions": {TASKS_EXTENSION: {}}})
            if declared and not entry.defer_task:
                return results.with_server_meta(
                    await self.runtime.tasks.start(call, entry, p, {}), self.server_meta
                )
            if declared:
                return await self._deferred_task(call, entry, p, emission)
        arguments = bytes(p.arguments)
        if p.inputResponses is None and p.requestState is None and not entry.signature.waits:
            return results.stamped(
                await features.run_tool(self.server, call, entry, arguments), self.server_meta
            )
        return results.stamped(await self._run_tool(call, entry, p, emission), self.server_meta)

    async def _run_tool(
        self, call: Call, entry: ToolEntry, p: CallToolParams, emission: Emission
    ) -> Any:
        """Run a tool that may ask for input: its result, or an ``input_required`` dict."""
        arguments = bytes(p.arguments)
        return await self._with_input(
            call,
            state.binding("tools/call", p.name, msgspec.json.decode(arguments)),
            p.requestState,
            p.inputResponses,
            lambda: features.run_tool(self.server, call, entry, arguments),
            emission,
        )

    async def _deferred_task(
        self, call: Call, entry: ToolEntry, p: CallToolParams, emission: Emission
    ) -> Any:
        """Run a ``defer_task`` tool in the request until it asks to become a task."""

        async def start_task() -> None:
            raise StartTaskSignal(call.input.answers)  # type: ignore[attr-defined]

        call.start_task = start_task
        try:
            return results.stamped(await self._run_tool(call, entry, p, emission), self.server_meta)
        except StartTaskSignal as signal:
            return results.with_server_meta(
                await self.runtime.tasks.start(call, entry, p, signal.answers), self.server_meta
            )

    async def resources_read(self, call: Call, p: ReadResourceParams, emission: Emission) -> Any:
        result = await self._with_input(
            call,
            state.binding("resources/read", p.uri, None),
            p.requestState,
            p.inputResponses,
            lambda: features.read_resource(self.server, call, p),
            emission,
        )
        return results.stamped(result, self.server_meta)

    async def prompts_get(self, call: Call, p: GetPromptParams, emission: Emission) -> Any:
        result = await self._with_input(
            call,
            state.binding("prompts/get", p.name, p.arguments),
            p.requestState,
            p.inputResponses,
            lambda: features.get_prompt(self.server, call, p),
            emission,
        )
        return results.stamped(result, self.server_meta)

    def _tasks(self, call: Call) -> TaskStore:
        if not call.declares_extension(TASKS_EXTENSION):
            raise missing_capability({"extensions": {TASKS_EXTENSION: {}}})
        return self.runtime.tasks

    async def tasks_get(self, call: Call, p: TaskParams, emission: Emission) -> Any:
        store = self._tasks(call)
        return results.complete(await store.get(p.taskId), self.server_meta)

    async def tasks_update(self, call: Call, p: TaskParams, emission: Emission) -> Any:
        store = self._tasks(call)
        await store.update(p.taskId, _answers(p.inputResponses))
        return results.complete({}, self.server_meta)

    async def tasks_cancel(self, call: Call, p: TaskParams, emission: Emission) -> Any:
        store = self._tasks(call)
        await store.cancel(p.taskId)
        return results.complete({}, self.server_meta)

    async def listen(self, call: Call, p: ListenParams, emission: Emission) -> None:
        """``subscriptions/listen``: the stream is the answer (`streams.listen`)."""
        await streams.listen(self.runtime, call, p, emission.responder)


def _decode_typed(
    tp: type[Params], raw: bytes | None
) -> tuple[Params, msgspec.ValidationError | None]:
    """Params decoded into the method's Struct; when they do not fit, just ``_meta`` (for the
    earlier checks) and the error to report after them."""
    try:
        return decoder_for(tp).decode(raw or b"{}"), None
    except msgspec.ValidationError as exc:
        try:
            return _meta_decoder.decode(raw or b"{}"), exc
        except msgspec.ValidationError:
            return Params(), exc


class _NoEmitter:
    async def emit(self, message: bytes) -> None:
        return None


_NO_EMITTER = _NoEmitter()
_NO_INPUT = Replay({})
