"""The context a handler receives: progress, logging and asking the client for input.

The same handler code serves both eras. Under 2026-07-28 ``await ctx.elicit(...)`` works by
replay: the first call ends the request with an ``input_required`` result, and the client's retry
re-runs the handler with the answers, so the same ``await`` now returns. Under the legacy
revisions it is a live server-to-client request on the call's stream. A handler that asks must
therefore be safe to run again up to the point where it asks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from ... import jsonrpc
from ...protocol.capabilities import InputRequest, refusal
from ...protocol.extensions import declared
from ...types import LOG_LEVELS
from ...versions import has_url_elicitation, is_modern, names_form_mode
from ..access import AccessToken, current_access

_LEVEL_RANK = {level: rank for rank, level in enumerate(LOG_LEVELS)}


class InputSource(Protocol):
    """Where answers come from: replayed ``inputResponses`` (modern) or a live request (legacy)."""

    async def ask(self, requests: Mapping[str, InputRequest]) -> dict[str, Any]:
        """Answers for every key of ``requests``."""
        ...


class Emitter(Protocol):
    """Sends a JSON-RPC notification on the stream of the current request."""

    async def emit(self, message: bytes) -> None: ...


@runtime_checkable
class StreamControl(Protocol):
    """An emitter whose HTTP response a handler may end early (SSE polling, 2025-11-25)."""

    async def close_stream(self) -> None: ...


class Context:
    """Handed to a handler that declares a parameter of this type.

    Its methods are async. A plain ``def`` handler runs on a worker thread: there it calls
    them through Trio, ``trio.from_thread.run(ctx.report_progress, 1, 2)`` (which runs them in
    the request's task, so ``ask``/``elicit`` behave as under ``await``); its attributes it
    reads directly. A plain ``def`` registered ``instant=True`` runs on the event loop and can
    use none of the async methods."""

    __slots__ = (
        "_emitter",
        "_input",
        "_keys",
        "_task_starter",
        "auth",
        "client_capabilities",
        "client_info",
        "log_level",
        "progress_token",
        "protocol_version",
        "request_id",
        "server",
        "session_id",
    )

    def __init__(
        self,
        *,
        server: Any,
        request_id: int | str | None,
        protocol_version: str,
        client_capabilities: dict[str, Any],
        client_info: dict[str, Any] | None,
        log_level: str | None,
        progress_token: int | str | None,
        emitter: Emitter,
        input_source: InputSource,
        task_starter: Callable[[], Awaitable[None]] | None = None,
        session_id: str | None = None,
    ) -> None:
        self.server = server
        self.request_id = request_id
        self.protocol_version = protocol_version
        self.client_capabilities = client_capabilities
        self.client_info = client_info
        self.log_level = log_level
        self.progress_token = progress_token
        self._emitter = emitter
        self._input = input_source
        self._task_starter = task_starter
        self.session_id = session_id
        """The legacy session's id (None in the stateless era)."""
        self.auth: AccessToken | None = current_access.get()
        """The request's verified access token on a protected server (``subject``,
        ``client_id``, ``scopes``, ``claims``; never the token itself); None otherwise (an
        unprotected server, stdio)."""
        self._keys = 0

    @property
    def era(self) -> str:
        """``"modern"`` (2026-07-28, stateless) or ``"legacy"`` (a session)."""
        return "modern" if is_modern(self.protocol_version) else "legacy"

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` if the request asked for progress (a progress token)."""
        if self.progress_token is None:
            return
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self._emitter.emit(jsonrpc.notification("notifications/progress", params))

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message`` if the client asked for logs at this level or below."""
        if self.log_level is None or _LEVEL_RANK[level] < _LEVEL_RANK.get(self.log_level, 99):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self._emitter.emit(jsonrpc.notification("notifications/message", params))

    async def debug(self, data: Any) -> None:
        await self.log("debug", data)

    async def info(self, data: Any) -> None:
        await self.log("info", data)

    async def warning(self, data: Any) -> None:
        await self.log("warning", data)

    async def error(self, data: Any) -> None:
        await self.log("error", data)

    async def start_task(self) -> None:
        """Continue as a task (tools registered with ``defer_task``, when the client declared the
        tasks extension); the answers gathered so far go with it. Elsewhere it does nothing."""
        if self._task_starter is not None:
            await self._task_starter()

    async def close_stream(self) -> None:
        """End the HTTP response now and keep running (SSE polling, SEP-1699): under 2025-11-25
        over HTTP the request's reply becomes an SSE stream if it was not one yet (a priming
        event and ``retry``), the connection closes, and what the handler sends afterwards, its
        result included, is kept for the client, which resumes with GET + ``Last-Event-ID``.
        Elsewhere (2026-07-28, older revisions, batches, tasks, stdio) it does nothing."""
        if isinstance(self._emitter, StreamControl):
            await self._emitter.close_stream()

    def supports_extension(self, identifier: str) -> bool:
        """Whether an extension is in use for this request (SEP-2133 negotiation): this server
        declares it in the request's revision (`Server.extension`) and the client declared it
        too (in this request's ``_meta`` client capabilities under 2026-07-28, in the session's
        ``initialize`` before). When not, the handler falls back to the core protocol."""
        return self.client_extension(identifier) is not None and self.server.offers_extension(
            identifier, self.protocol_version
        )

    def client_extension(self, identifier: str) -> dict[str, Any] | None:
        """The settings the client declared for an extension (``{}`` for none); None when it
        did not declare it."""
        return declared(self.client_capabilities, identifier)

    def supports(self, request: InputRequest) -> bool:
        """Whether the client may be sent this input request: its revision has it and the
        client declared the capability it needs."""
        return refusal(self.protocol_version, self.client_capabilities, {"": request}) is None

    async def ask(self, requests: Mapping[str, InputRequest]) -> dict[str, Any]:
        """Ask for several inputs at once; returns the answers by key. Under 2026-07-28 a
        missing answer ends the run here with ``input_required`` by raising a `BaseException`
        (like trio's ``Cancelled``): ``except Exception:`` lets it pass, and so must any
        broader handler.

        Raises:
            ValueError: a form-mode elicitation whose ``requestedSchema`` is not what the spec
                allows (`form_schema_problem`; nothing was sent).
            ClientCapabilityError: the session's revision lacks what one asks for, or the client
                did not declare the capability it needs (nothing was sent); this includes
                sampling with a non-``none`` ``includeContext`` from a 2025-11-25 or later
                client that did not declare ``sampling.context``.
            MCPError: the client answered one of them with an error.
        """
        for request in requests.values():
            check_form(request)
        refused = refusal(self.protocol_version, self.client_capabilities, requests)
        if refused is not None:
            raise refused
        return await self._input.ask(requests)

    async def _ask_one(self, request: InputRequest, key: str | None) -> Any:
        if key is None:
            key = f"{request.method.split('/')[0]}-{self._keys}"
            self._keys += 1
        return (await self.ask({key: request}))[key]

    async def elicit(
        self, message: str, schema: dict[str, Any], *, key: str | None = None
    ) -> dict[str, Any]:
        """Ask the user to fill a form; returns ``{"action": ..., "content": {...}}``.

        ``schema`` must be what the spec allows a form: ``{"type": "object", "properties":
        {...}, "required": [...]}`` whose properties are flat primitives (string, number,
        integer, boolean, or an enum: single-select ``enum``/``oneOf``, multi-select ``array``
        of ``items.enum``/``items.anyOf``); anything else raises ``ValueError`` before the
        client is asked (`form_schema_problem`)."""
        params = {"message": message, "requestedSchema": schema}
        if names_form_mode(self.protocol_version):
            params["mode"] = "form"
        result: dict[str, Any] = await self._ask_one(
            InputRequest(method="elicitation/create", params=params), key
        )
        return result

    async def elicit_url(
        self, message: str, url: str, *, elicitation_id: str | None = None, key: str | None = None
    ) -> dict[str, Any]:
        """Send the user to a URL (URL-mode elicitation); returns ``{"action": ...}``."""
        params: dict[str, Any] = {"mode": "url", "message": message, "url": url}
        if self.era == "legacy":
            params["elicitationId"] = elicitation_id or f"{self.request_id}-{self._keys}"
        result: dict[str, Any] = await self._ask_one(
            InputRequest(method="elicitation/create", params=params), key
        )
        return result

    async def complete_elicitation(self, elicitation_id: str) -> None:
        """Tell the client a URL-mode elicitation finished out of band
        (``notifications/elicitation/complete``, 2025-11-25, on the session's GET stream)."""
        if self.session_id is None or not has_url_elicitation(self.protocol_version):
            return
        await self.server.publish(
            "notify/" + self.session_id,
            {
                "method": "notifications/elicitation/complete",
                "params": {"elicitationId": elicitation_id},
            },
        )

    async def sample(
        self,
        messages: list[dict[str, Any]] | str,
        *,
        max_tokens: int = 1000,
        key: str | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """Ask the client's model for a completion (``sampling/createMessage``).

        ``messages`` may be a plain string (one user message). ``options`` are passed as is
        (``systemPrompt``, ``temperature``, ``tools``, ``toolChoice``, ...).
        """
        if isinstance(messages, str):
            messages = [{"role": "user", "content": {"type": "text", "text": messages}}]
        params = {"messages": messages, "maxTokens": max_tokens, **options}
        result: dict[str, Any] = await self._ask_one(
            InputRequest(method="sampling/createMessage", params=params), key
        )
        return result

    async def list_roots(self, *, key: str | None = None) -> list[dict[str, Any]]:
        """The client's roots (``roots/list``)."""
        result = await self._ask_one(InputRequest(method="roots/list"), key)
        roots: list[dict[str, Any]] = result.get("roots", []) if isinstance(result, dict) else []
        return roots


_PRIMITIVES = frozenset({"string", "number", "integer", "boolean"})
_STRING_FORMATS = frozenset({"email", "uri", "date", "date-time"})


def _enum_options(options: Any) -> bool:
    """``oneOf``/``anyOf`` of titled constants: ``[{"const": ..., "title": ...}, ...]``."""
    return (
        isinstance(options, list)
        and bool(options)
        and all(isinstance(o, dict) and isinstance(o.get("const"), str) for o in options)
    )


def _property_problem(name: str, prop: Any) -> str | None:
    if not isinstance(prop, dict):
        return f"property {name!r} is not a schema object"
    kind = prop.get("type")
    if kind == "array":  # a multi-select enum: items.enum or items.anyOf of titled constants
        items = prop.get("items")
        if isinstance(items, dict) and (
            isinstance(items.get("enum"), list) or _enum_options(items.get("anyOf"))
        ):
            return None
        return (
            f"property {name!r} is an array: only a multi-select enum (items.enum or "
            "items.anyOf of {const, title}) is allowed"
        )
    if kind not in _PRIMITIVES:
        return (
            f"property {name!r} has type {kind!r}: form fields are flat primitives "
            "(string, number, integer, boolean) or enums, never objects or nested arrays"
        )
    if kind == "string":
        fmt = prop.get("format")
        if fmt is not None and fmt not in _STRING_FORMATS:
            return f"property {name!r} has format {fmt!r} (allowed: {sorted(_STRING_FORMATS)})"
        if "oneOf" in prop and not _enum_options(prop["oneOf"]):
            return f"property {name!r}: oneOf must list {{const, title}} options"
    return None


def form_schema_problem(schema: Any) -> str | None:
    """What makes ``schema`` unfit as a form-mode ``requestedSchema`` (2025-06-18 on: "a
    restricted subset of JSON Schema: only top-level properties, without nesting", each a
    `PrimitiveSchemaDefinition`), or None when it fits."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return 'requestedSchema must be an object schema ({"type": "object", "properties": ...})'
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return "requestedSchema must have properties (an object of property schemas)"
    for name, prop in properties.items():
        problem = _property_problem(name, prop)
        if problem is not None:
            return problem
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return "requestedSchema.required must be a list of property names"
    unknown = [r for r in required if r not in properties]
    if unknown:
        return f"requestedSchema.required names properties it does not have: {unknown}"
    return None


def check_form(request: InputRequest) -> None:
    """Refuse a form-mode ``elicitation/create`` whose schema the spec does not allow.

    Raises:
        ValueError: naming what is wrong (`form_schema_problem`).
    """
    if request.method != "elicitation/create" or request.params.get("mode", "form") != "form":
        return
    problem = form_schema_problem(request.params.get("requestedSchema"))
    if problem is not None:
        raise ValueError(f"elicitation form refused before sending: {problem}")
