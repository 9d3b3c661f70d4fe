"""The methods a legacy session (2025-*) serves: what `LegacyEra` dispatches to once a
request's session is known and its params are decoded (the errors each revision has are
`protocol.results.legacy_error`'s)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from ... import jsonrpc
from ...errors import ProtocolError, UrlElicitationRequired
from ...protocol import results
from ...types import (
    LOG_LEVELS,
    CallToolParams,
    CompleteParams,
    GetPromptParams,
    ListParams,
    Params,
    ReadResourceParams,
    SetLevelParams,
    TaskParams,
    UriParams,
)
from ...versions import has_legacy_tasks
from ..framework import features
from ..framework.app import Server
from ..framework.call import Call
from ..state import sessions
from ..state.sessions import Session
from . import skill_methods
from .runtime import Runtime
from .tasks import TaskStore


class Exchange:
    """One legacy request being served: its session, a re-minted id to send back if any, and
    whether its error came from the bus being away (a 503 over HTTP)."""

    __slots__ = ("session", "session_changed", "token_old", "unavailable")

    def __init__(self, session: Session, token_old: bool) -> None:
        self.session = session
        self.session_changed = False
        self.token_old = token_old
        self.unavailable = False


Handler = Callable[["LegacyMethods", Call, Exchange, Any], Awaitable[Any]]
"""A method's handler: it takes the params decoded once into `METHODS`' Struct for it."""


def _lister(key: str) -> Handler:
    """The handler of the list method of ``key``."""

    async def list_items(era: LegacyMethods, call: Call, ex: Exchange, params: ListParams) -> Any:
        items = features.LISTS[key](era.server)
        return features.list_result(era.server, call, params, key, items)

    return list_items


def _plain(method: Callable[[Any, Call, Any], dict[str, Any]]) -> Handler:
    """The handler of a method that answers at once from the registry (``method(server, call,
    params)``)."""

    async def answer(era: LegacyMethods, call: Call, ex: Exchange, params: Any) -> Any:
        return method(era.server, call, params)

    return answer


class LegacyMethods:
    """The legacy methods, for `LegacyEra` (which sets ``server`` and ``runtime``)."""

    server: Server
    runtime: Runtime

    async def ping(self, call: Call, exchange: Exchange, p: Params) -> Any:
        return {}

    def _change(self, exchange: Exchange, session: Session) -> None:
        """Make ``session`` the exchange's state (kept on the bus, minted into the id sent
        back): the one way a handler changes a session, within what its id may carry.

        Raises:
            ProtocolError: -32602 for a state too large (`sessions.bounded`); nothing changed.
        """
        exchange.session = sessions.bounded(session, self.runtime.config.max_header_bytes)
        exchange.session_changed = True

    async def set_level(self, call: Call, exchange: Exchange, p: SetLevelParams) -> Any:
        if p.level not in LOG_LEVELS:
            raise ProtocolError(jsonrpc.INVALID_PARAMS, f"Invalid log level: {p.level}")
        self._change(exchange, msgspec.structs.replace(exchange.session, log_level=p.level))
        return {}

    async def _subscriptions(self, exchange: Exchange, session: Session) -> None:
        """Make ``session``'s subscriptions the exchange's, kept on the bus *before* the news
        goes to the session's GET streams: a stream opening meanwhile, which missed the news,
        reads them there once subscribed (`streams.standalone`).

        Raises:
            BusUnavailable: the bus is away.
        """
        self._change(exchange, session)
        await sessions.save_state(self.runtime.bus, exchange.session, self.runtime.config)
        await self.server.publish(
            "session/" + session.id,
            {"method": "session", "params": msgspec.to_builtins(session)},
        )

    async def subscribe(self, call: Call, exchange: Exchange, p: UriParams) -> Any:
        """Subscribe to a resource the server serves (a fixed one or a template's match), within
        the session's bounds (`sessions.subscribed`).

        Raises:
            ProtocolError: -32602 past a bound; -32002 for a URI no resource serves.
        """
        session = sessions.subscribed(exchange.session, p.uri)
        if self.server.resource_for(p.uri) is None:
            raise ProtocolError(
                jsonrpc.RESOURCE_NOT_FOUND_LEGACY, "Resource not found", {"uri": p.uri}
            )
        await self._subscriptions(exchange, session)
        return {}

    async def unsubscribe(self, call: Call, exchange: Exchange, p: UriParams) -> Any:
        uris = [u for u in exchange.session.subscriptions if u != p.uri]
        await self._subscriptions(
            exchange, msgspec.structs.replace(exchange.session, subscriptions=uris)
        )
        return {}

    async def tools_call(self, call: Call, exchange: Exchange, p: CallToolParams) -> Any:
        entry = features.find_tool(self.server, p.name)
        if p.task is not None and has_legacy_tasks(call.version):
            if entry.task_support == "forbidden":
                raise ProtocolError(
                    jsonrpc.METHOD_NOT_FOUND, f"Tool {p.name} does not run as a task"
                )
            return await self.runtime.tasks.start_legacy(call, entry, p)
        if entry.task_support == "required" and has_legacy_tasks(call.version):
            raise ProtocolError(jsonrpc.METHOD_NOT_FOUND, f"Tool {p.name} must run as a task")
        try:
            result = await features.run_tool(self.server, call, entry, bytes(p.arguments))
            return results.for_revision(call.version, result)
        except UrlElicitationRequired as exc:
            instead = results.legacy_tool_error(exc, call.version)
            if instead is None:
                raise
            return instead

    async def resources_read(self, call: Call, exchange: Exchange, p: ReadResourceParams) -> Any:
        return await features.read_resource(self.server, call, p)

    async def prompts_get(self, call: Call, exchange: Exchange, p: GetPromptParams) -> Any:
        return await features.get_prompt(self.server, call, p)

    async def complete(self, call: Call, exchange: Exchange, p: CompleteParams) -> Any:
        return await features.complete(self.server, p, call)

    def _store(self, call: Call) -> TaskStore:
        if not has_legacy_tasks(call.version):
            raise ProtocolError(jsonrpc.METHOD_NOT_FOUND, f"Method not found: {call.method}")
        return self.runtime.tasks

    async def tasks_get(self, call: Call, exchange: Exchange, p: TaskParams) -> Any:
        return await self._store(call).get_legacy(p.taskId, call.session_id)

    async def tasks_result(self, call: Call, exchange: Exchange, p: TaskParams) -> Any:
        return await self._store(call).result_legacy(p.taskId, call.session_id, call.input)

    async def tasks_list(self, call: Call, exchange: Exchange, p: ListParams) -> Any:
        store = self._store(call)
        return features.list_result(
            self.server, call, p, "tasks", await store.list_legacy(call.session_id)
        )

    async def tasks_cancel(self, call: Call, exchange: Exchange, p: TaskParams) -> Any:
        return await self._store(call).cancel_legacy(p.taskId, call.session_id)


HANDLERS: dict[str, Handler] = {
    "ping": LegacyMethods.ping,
    "logging/setLevel": LegacyMethods.set_level,
    "tools/list": _lister("tools"),
    "tools/call": LegacyMethods.tools_call,
    "resources/list": _lister("resources"),
    "resources/templates/list": _lister("resourceTemplates"),
    "resources/read": LegacyMethods.resources_read,
    "resources/subscribe": LegacyMethods.subscribe,
    "resources/unsubscribe": LegacyMethods.unsubscribe,
    "prompts/list": _lister("prompts"),
    "prompts/get": LegacyMethods.prompts_get,
    "completion/complete": LegacyMethods.complete,
    "tasks/get": LegacyMethods.tasks_get,
    "tasks/result": LegacyMethods.tasks_result,
    "tasks/list": LegacyMethods.tasks_list,
    "tasks/cancel": LegacyMethods.tasks_cancel,
    "skills/list": _plain(skill_methods.list_skills),
    "skills/get": _plain(skill_methods.get_skill),
    "resources/directory/read": _plain(skill_methods.read_directory),
}
