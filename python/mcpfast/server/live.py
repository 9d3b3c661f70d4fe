"""What of the legacy sessions must meet in one worker at run time: server-to-client requests
waiting for the client's answer, and running requests that ``notifications/cancelled`` names.
Both are keyed by session id and request id and kept in plain dicts of this worker, never
published on the bus: with several workers, a client's answer or ``notifications/cancelled``
that reaches another worker finds nothing there (acknowledged, then dropped)."""

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


class _Watch:
    """Who watches a call's connection for its requests to the client: one at a time (a
    connection is read by one task), and once it is lost it stays lost."""

    __slots__ = ("lock", "lost", "users")

    def __init__(self) -> None:
        self.lock = trio.Lock()
        self.lost = False
        self.users = 0


class Live:
    """One worker's live requests of legacy sessions, both directions: server-to-client
    requests (ids and answers by `protocol.correlation`), and the cancel scopes of running
    client requests."""

    def __init__(self, input_timeout_seconds: float, resume_grace_seconds: float = 5.0) -> None:
        self.input_timeout_seconds = input_timeout_seconds
        self.resume_grace_seconds = resume_grace_seconds
        """How long a request's stream may have no reader before what it asked is withdrawn
        (the endpoint sets it from its config)."""
        self.requests: Correlator[_Waiter] = Correlator("mcpfast-")
        self.running: dict[Key, trio.CancelScope] = {}
        self._watches: dict[int, _Watch] = {}
        """By ``id()`` of the `Emission` (alive while a request of it waits)."""

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

        The request is withdrawn (and no longer waited for) when the client does not answer
        within ``input_timeout_seconds``, or when the call's stream has lost its reader: the
        client's connection closed while the stream was still attached to it, and no client
        resumed the stream (GET + ``Last-Event-ID``) within ``resume_grace_seconds``. (A stream
        the server let go of itself, SSE polling, waits for its client to resume.)

        Raises:
            MCPError: the client answered with an error, or -32603 when the request was
                withdrawn (the stream records ``notifications/cancelled`` for it, for a client
                that resumes later).
        """
        pending = self.requests.open(_Waiter(session_id))
        limit = self.input_timeout_seconds
        gone: list[bool] = []
        try:
            await emission.emit(jsonrpc.request(pending.id, method, params))
            with trio.move_on_after(limit):
                async with trio.open_nursery() as nursery:

                    async def answered() -> None:
                        await pending.waker.done.wait()
                        nursery.cancel_scope.cancel()

                    async def abandoned() -> None:
                        await self._abandoned(emission)
                        gone.append(True)
                        nursery.cancel_scope.cancel()

                    nursery.start_soon(answered)
                    nursery.start_soon(abandoned)
        finally:
            self.requests.close(pending)
        if pending.answer is None:
            if gone:
                reason = f"The client went away before answering {method}"
            else:
                reason = f"The client did not answer {method} within {limit:g} s"
            cancel = cancel_params(pending.id, reason)
            await emission.emit(jsonrpc.notification("notifications/cancelled", cancel))
            raise MCPError(jsonrpc.INTERNAL_ERROR, reason)
        return result_of(pending.answer)

    async def _abandoned(self, emission: Emission) -> None:
        """Return once the call's stream has had no reader for ``resume_grace_seconds``; never
        while the connection lives, after the server let go of it (polling), or once a client
        resumed the stream (the input timeout bounds those)."""
        await self._disconnected(emission)
        if not emission.attached:
            await trio.sleep_forever()
        await trio.sleep(self.resume_grace_seconds)
        store, stream = emission.resumable, emission.stream_id
        followed = getattr(store.store, "followed", None) if store is not None else None
        if followed is not None and stream is not None and await followed(stream):
            await trio.sleep_forever()

    async def _disconnected(self, emission: Emission) -> None:
        """Return when the client's connection of ``emission`` is gone; several requests of one
        call share one reader of the connection."""
        key = id(emission)
        watch = self._watches.get(key)
        if watch is None:
            watch = self._watches[key] = _Watch()
        watch.users += 1
        try:
            async with watch.lock:
                if not watch.lost:
                    await emission.responder.wait_disconnect()
                    watch.lost = True
        finally:
            watch.users -= 1
            if not watch.users:
                del self._watches[key]


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
