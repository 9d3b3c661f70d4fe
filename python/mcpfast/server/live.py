"""What of the legacy sessions must meet in one worker at run time: server-to-client requests
waiting for the client's answer, and running requests that ``notifications/cancelled`` names.
Both are keyed by session id and request id; with several workers a shared bus routes the
client's messages to the worker holding them (see `bus`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import msgspec
import trio

from .. import codec, jsonrpc
from ..errors import MCPError
from ..protocol.capabilities import InputRequest
from ..protocol.correlation import Correlator, cancel_params, cancel_target, result_of
from .emission import Emission

Key = tuple[str, int | str]


class _Waiter:
    """Who waits for a server-to-client request's answer: its session, woken by ``done``."""

    __slots__ = ("done", "session_id")

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.done = trio.Event()


class Live:
    """One worker's live requests of legacy sessions, both directions: server-to-client
    requests (ids and answers by `protocol.correlation`), and the cancel scopes of running
    client requests."""

    def __init__(self, input_timeout_seconds: float) -> None:
        self.input_timeout_seconds = input_timeout_seconds
        self.requests: Correlator[_Waiter] = Correlator("mcpfast-")
        self.running: dict[Key, trio.CancelScope] = {}

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
            target = cancel_target(msgspec.json.decode(params or b"{}"))
        except msgspec.DecodeError:
            return
        scope = self.running.get((session_id, target)) if target is not None else None
        if scope is not None:
            scope.cancel()

    def deliver(self, session_id: str, message: codec.Message) -> None:
        """A client's answer (a framed response) to a server-to-client request; ignored unless
        a request of that session waits for it."""
        pending = self.requests.get(message.id)
        if pending is None or pending.waker.session_id != session_id:
            return
        member = "result" if message.kind == codec.KIND_RESULT else "error"
        decoded = msgspec.json.decode(message.payload or b"null")
        if self.requests.deliver({"id": message.id, member: decoded}) is not None:
            pending.waker.done.set()

    async def request_client(
        self, session_id: str, emission: Emission, method: str, params: dict[str, Any]
    ) -> Any:
        """Send a request to the client on the call's stream and wait for its answer.

        Raises:
            MCPError: the client answered with an error, or -32603 when it did not answer
                within ``input_timeout_seconds`` (the client is sent
                ``notifications/cancelled`` for it).
        """
        pending = self.requests.open(_Waiter(session_id))
        limit = self.input_timeout_seconds
        try:
            await emission.emit(jsonrpc.request(pending.id, method, params))
            with trio.move_on_after(limit):
                await pending.waker.done.wait()
        finally:
            self.requests.close(pending)
        if pending.answer is None:
            reason = f"The client did not answer {method} within {limit:g} s"
            cancel = cancel_params(pending.id, reason)
            await emission.emit(jsonrpc.notification("notifications/cancelled", cancel))
            raise MCPError(jsonrpc.INTERNAL_ERROR, reason)
        return result_of(pending.answer)


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
