"""What of the legacy sessions must meet at run time: server-to-client requests waiting for the
client's answer, and running requests that ``notifications/cancelled`` names.

Both are kept by the worker that runs the handler, keyed by session id and request id. What the
client sends about them may reach any worker: an answer names its worker in its request id
(``mcpfast-<worker>-...``), and a worker that has no waiter for it signals it on the bus to
``answer:<worker>``; a ``notifications/cancelled`` naming no request running here is signalled
to every worker (``cancel``). Each worker listens on both (`Live.listen`) and acts on what is
its own, never signalling it on. A signal is at most once: one lost (the bus away, a listener
behind) leaves the handler waiting, as an answer the client never sent would (its input
timeout ends the wait).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import msgspec
import trio

from ... import codec, jsonrpc
from ...errors import BusUnavailable, MCPError
from ...protocol.capabilities import InputRequest
from ...protocol.correlation import Correlator, cancel_params, cancel_target, result_of
from ...telemetry import current, propagation, semconv
from ...telemetry.tracing import asking, recording
from ..state.bus import Bus, listen
from .emission import Emission
from .refusal import best_effort

Key = tuple[str, int | str]

ID_PREFIX = "mcpfast-"
"""How the ids of this server's requests to its clients begin; the worker's id follows."""

CANCELS = "cancel"
"""The bus channel of ``notifications/cancelled`` naming a request no worker found at home."""


def answers_channel(worker: str) -> str:
    """The bus channel of the answers meant for ``worker``'s waiting requests."""
    return "answer:" + worker


def worker_of(request_id: Any) -> str | None:
    """The worker a server-to-client request id names (None: not an id of this server)."""
    if not isinstance(request_id, str) or not request_id.startswith(ID_PREFIX):
        return None
    worker = request_id[len(ID_PREFIX) :].rpartition("-")[0]
    return worker or None


class _Answer(msgspec.Struct, array_like=True):
    """A client's answer travelling to the worker that waits for it."""

    session: str
    id: int | str
    error: bool
    payload: bytes
    """The JSON of its ``result`` (or ``error``)."""


class _Cancel(msgspec.Struct, array_like=True):
    """A ``notifications/cancelled`` travelling to every worker."""

    session: str
    target: int | str


_answer_decoder = msgspec.msgpack.Decoder(_Answer)
_cancel_decoder = msgspec.msgpack.Decoder(_Cancel)


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

    def __init__(
        self, bus: Bus, input_timeout_seconds: float, resume_grace_seconds: float = 5.0
    ) -> None:
        self.bus = bus
        self.input_timeout_seconds = input_timeout_seconds
        self.resume_grace_seconds = resume_grace_seconds
        """How long a request's stream may have no reader before what it asked is withdrawn
        (the endpoint sets it from its config)."""
        # The id's tail tells apart the endpoints of one process sharing the bus's worker id.
        prefix = f"{ID_PREFIX}{bus.worker}-{secrets.token_hex(3)}."
        self.requests: Correlator[_Waiter] = Correlator(prefix)
        self.running: dict[Key, trio.CancelScope] = {}
        self._watches: dict[int, _Watch] = {}
        """By ``id()`` of the `Emission` (alive while a request of it waits)."""
        self.telemetry = current()

    async def listen(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Act on the answers and cancellations other workers signal here, until cancelled;
        started once listening."""
        async with trio.open_nursery() as nursery:
            await nursery.start(listen, self.bus, answers_channel(self.bus.worker), self._answer)
            await nursery.start(listen, self.bus, CANCELS, self._cancelled)
            task_status.started()

    async def _answer(self, payload: bytes) -> None:
        try:
            answer = _answer_decoder.decode(payload)
        except msgspec.DecodeError:
            return
        self._deliver(answer.session, answer.id, answer.error, answer.payload)

    async def _cancelled(self, payload: bytes) -> None:
        try:
            cancel = _cancel_decoder.decode(payload)
        except msgspec.DecodeError:
            return
        self._cancel(cancel.session, cancel.target)

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

    def cancel(self, session_id: str, params: bytes | None) -> bool:
        """``notifications/cancelled``: cancel the request it names if it runs here; whether
        it names one that does (this worker only: `cancel_anywhere` asks the others too)."""
        target = _target(params)
        return target is not None and self._cancel(session_id, target)

    def _cancel(self, session_id: str, target: int | str) -> bool:
        scope = self.running.get((session_id, target))
        if scope is not None:
            scope.cancel()
        return scope is not None

    async def cancel_anywhere(self, session_id: str, params: bytes | None) -> None:
        """``notifications/cancelled``: cancel the request it names, here or (signalled) in
        the worker where it runs.

        Raises:
            BusUnavailable: it is not running here, and the bus is away.
        """
        target = _target(params)
        if target is None or self._cancel(session_id, target):
            return
        payload = msgspec.msgpack.encode(_Cancel(session_id, target))
        await self.bus.signal(CANCELS, payload)

    def deliver(self, session_id: str, message: codec.Message) -> bool:
        """A client's answer (a framed response) to a server-to-client request; whether a
        request of that session waited here for it (this worker only: `route` hands it to the
        worker it names)."""
        error = message.kind != codec.KIND_RESULT
        return self._deliver(session_id, message.id, error, message.payload or b"null")

    def _deliver(self, session_id: str, id_: Any, error: bool, payload: bytes) -> bool:
        pending = self.requests.get(id_)
        if pending is None or pending.waker.session_id != session_id:
            return False
        member = "error" if error else "result"
        try:
            decoded = msgspec.json.decode(payload)
        except msgspec.DecodeError:
            return False
        if self.requests.deliver({"id": id_, member: decoded}) is not None:
            pending.waker.done.set()
        return True

    async def route(self, session_id: str, message: codec.Message) -> None:
        """A client's answer to a server-to-client request, to the request waiting for it here
        or (signalled) in the worker its id names; ignored when it names none.

        Raises:
            BusUnavailable: it is not for this worker, and the bus is away or the worker it
                names does not listen now (it is reconnecting to the bus, or gone): the client
                gets a 503 and may send it again, rather than a 202 for an answer lost.
        """
        if self.deliver(session_id, message):
            return
        worker = worker_of(message.id)
        if worker is None or not isinstance(message.id, str):
            return
        error = message.kind != codec.KIND_RESULT
        answer = _Answer(session_id, message.id, error, message.payload or b"null")
        if not await self.bus.signal(answers_channel(worker), msgspec.msgpack.encode(answer)):
            raise BusUnavailable(f"worker {worker} does not listen for answers now")

    async def request_client(
        self, session_id: str, emission: Emission, method: str, params: dict[str, Any]
    ) -> Any:
        """`ask_client`, traced (when a request's span is current) as a CLIENT span, a child
        of the request that asked, its trace context in the request's ``_meta``."""
        telemetry = self.telemetry
        if telemetry is None or not recording():
            return await self.ask_client(session_id, emission, method, params)
        with asking(
            telemetry,
            method=method,
            name=None,
            version=None,
            transport=semconv.transport(emission.resumable is not None),  # HTTP streams resume
            session_id=session_id,
        ) as op:
            params = {**params, "_meta": propagation.inject(params.get("_meta"))}
            try:
                return await self.ask_client(session_id, emission, method, params)
            except MCPError as exc:
                op.fail(exc.code, exc.message)
                raise

    async def ask_client(
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
        resumed the stream (the input timeout bounds those; with the bus away, no client
        is known to follow it)."""
        await self._disconnected(emission)
        if not emission.attached:
            await trio.sleep_forever()
        await trio.sleep(self.resume_grace_seconds)
        store, stream = emission.resumable, emission.stream_id
        followed = getattr(store.store, "followed", None) if store is not None else None
        if followed is None or stream is None:
            return
        if await best_effort(followed(stream), f"stream {stream}: no one knows who follows it"):
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


def _target(params: bytes | None) -> int | str | None:
    """The request a ``notifications/cancelled`` names, if any."""
    try:
        return cancel_target(msgspec.json.decode(params or b"{}"))
    except msgspec.DecodeError:
        return None
