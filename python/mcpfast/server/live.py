"""What of the legacy sessions must meet in one worker at run time: server-to-client requests
waiting for the client's answer, and running requests that ``notifications/cancelled`` names.
Both are keyed by session id and request id; with several workers a shared bus routes the
client's messages to the worker holding them (see `bus`)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import msgspec
import trio

from .. import codec, jsonrpc
from ..errors import MCPError
from ..protocol.capabilities import InputRequest
from ..types import CancelledParams
from .emission import Emission

Key = tuple[str, int | str]


class Pending:
    """A server-to-client request waiting for its answer."""

    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.result: Any = None
        self.error: dict[str, Any] | None = None


class Live:
    """One worker's live requests of legacy sessions, both directions."""

    def __init__(self, input_timeout_seconds: float) -> None:
        self.input_timeout_seconds = input_timeout_seconds
        self.pending: dict[Key, Pending] = {}
        self.running: dict[Key, trio.CancelScope] = {}
        self._ids = itertools.count(1)

    @contextmanager
    def cancellable(self, session_id: str, id_: int | str | None) -> Iterator[trio.CancelScope]:
        """A cancel scope for a request, that ``notifications/cancelled`` naming ``id_`` (in
        this session) cancels while it is open."""
        with trio.CancelScope() as scope:
            if id_ is None:
                yield scope
                return
            self.running[(session_id, id_)] = scope
            try:
                yield scope
            finally:
                self.running.pop((session_id, id_), None)

    def cancel(self, session_id: str, params: bytes | None) -> None:
        """``notifications/cancelled``: cancel the request it names, if it runs here."""
        try:
            p = msgspec.json.decode(params or b"{}", type=CancelledParams)
        except msgspec.ValidationError:
            return
        if p.requestId is not None:
            scope = self.running.get((session_id, p.requestId))
            if scope is not None:
                scope.cancel()

    def deliver(
        self, session_id: str, id_: int | str | None, kind: int, payload: bytes | None
    ) -> None:
        """A client's answer to a server-to-client request (ignored when none waits for it)."""
        waiting = self.pending.get((session_id, id_)) if id_ is not None else None
        if waiting is None:
            return
        decoded = msgspec.json.decode(payload or b"null")
        if kind == codec.KIND_RESULT:
            waiting.result = decoded
        else:
            waiting.error = (
                decoded if isinstance(decoded, dict) else {"code": -32603, "message": "error"}
            )
        waiting.done.set()

    async def request_client(
        self, session_id: str, emission: Emission, method: str, params: dict[str, Any]
    ) -> Any:
        """Send a request to the client on the call's stream and wait for its answer.

        Raises:
            MCPError: the client answered with an error, or -32603 when it did not answer
                within ``input_timeout_seconds`` (the client is sent
                ``notifications/cancelled`` for it).
        """
        request_id = f"mcpfast-{next(self._ids)}"
        waiting = Pending()
        self.pending[(session_id, request_id)] = waiting
        limit = self.input_timeout_seconds
        try:
            await emission.emit(jsonrpc.request(request_id, method, params))
            with trio.move_on_after(limit):
                await waiting.done.wait()
        finally:
            del self.pending[(session_id, request_id)]
        if not waiting.done.is_set():
            reason = f"The client did not answer {method} within {limit:g} s"
            cancel = {"requestId": request_id, "reason": reason}
            await emission.emit(jsonrpc.notification("notifications/cancelled", cancel))
            raise MCPError(jsonrpc.INTERNAL_ERROR, reason)
        if waiting.error is not None:
            raise MCPError(
                int(waiting.error.get("code", -32603)),
                str(waiting.error.get("message", "")),
                waiting.error.get("data"),
            )
        return waiting.result


class LiveInput:
    """The legacy input source: each input request is a real request on the call's stream."""

    __slots__ = ("emission", "live", "session_id")

    def __init__(self, live: Live, session_id: str, emission: Emission) -> None:
        self.live = live
        self.session_id = session_id
        self.emission = emission

    async def ask(self, requests: Mapping[str, InputRequest]) -> dict[str, Any]:
        """Send every request at once and wait for all the answers.

        Raises:
            MCPError: the client answered one with an error (the first such, unwrapped, as
                the modern era raises it); the other requests are cancelled.
        """
        answers: dict[str, Any] = {}

        async def one(key: str, request: InputRequest) -> None:
            answers[key] = await self.live.request_client(
                self.session_id, self.emission, request.method, request.params
            )

        try:
            async with trio.open_nursery() as nursery:
                for key, request in requests.items():
                    nursery.start_soon(one, key, request)
        except BaseExceptionGroup as group:
            matched, rest = group.split(MCPError)
            if matched is None or rest is not None:
                raise
            first: BaseException = matched
            while isinstance(first, BaseExceptionGroup):
                first = first.exceptions[0]
            raise first from None
        return answers
