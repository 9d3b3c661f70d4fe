"""What the eras, the engines and the long-lived streams share while one `Endpoint` serves: the
server, its settings and keys, its bus (`bound_bus`), the task store, the live requests
(`live`), the governor of its load (`governor`), the shutdown event, the two ways of running a
handler under the client's watch (`Runtime.guarded`, `Runtime.linger`), the one wait for
shutdown that wakes every idle stream (`Runtime.wake_on_closing`), and the worker's lease on
the bus (`Runtime.keep_lease`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

import trio

from ..._nursery import background_nursery
from ...errors import BusUnavailable
from ..config import Config
from ..framework.app import Server
from ..framework.features import ControlSignal
from ..seams import ClientGone, Responder
from ..state.bus import LEASE_RENEW_SECONDS, Bus
from ..state.keys import KeyRing
from ..state.local_bus import LocalBus
from .governor import Governor
from .live import Live
from .tasks import TaskStore

T = TypeVar("T")


class Waking(Protocol):
    """A long-lived stream waiting for something (`streams.Outlet`): `poke` wakes it."""

    def poke(self) -> None: ...


def bound_bus(server: Server) -> Bus:
    """The bus an endpoint of ``server`` serves with: `Server.bus` (given, or set by `serve`
    from `Config.bus`), else a new `LocalBus` bound into the server, so that every endpoint of
    one server shares one bus and `Server.publish` reaches their streams."""
    if server.bus is None:
        server.bus = LocalBus()
    bus: Bus = server.bus
    return bus


class Runtime:
    """One endpoint's shared state (built by the `Endpoint`, which runs its task store)."""

    __slots__ = (
        "_closing_watched",
        "_waking",
        "bus",
        "closing",
        "config",
        "governor",
        "keys",
        "live",
        "server",
        "tasks",
        "threads",
    )

    def __init__(self, server: Server, config: Config, keys: KeyRing) -> None:
        self.server = server
        self.config = config
        self.keys = keys
        self.bus = bound_bus(server)
        """The bus this endpoint serves with (every request, stream and task of the endpoint
        uses this one)."""
        self.tasks = TaskStore(server, self.bus)
        self.live = Live(self.bus, config.input_timeout_seconds)
        self.closing = trio.Event()
        """Set when the server shuts down: long-lived streams end (`linger`)."""
        self.threads = trio.CapacityLimiter(config.thread_limit)
        """The worker threads of plain-``def`` handlers (`Config.thread_limit` at once)."""
        self.governor = Governor(config)
        """The concurrency caps, tool deadlines and load shedding (`governor`)."""
        self.tasks.tool_timeout_seconds = config.tool_timeout_seconds
        self._waking: set[Waking] = set()
        self._closing_watched = False

    def wake_on_closing(self, stream: Waking) -> None:
        """Poke ``stream`` when the server shuts down (until `forget`): one task, in the
        endpoint's background nursery while it runs, waits for `closing` for all streams."""
        self._waking.add(stream)
        nursery = self.tasks.nursery
        if not self._closing_watched and nursery is not None:
            self._closing_watched = True
            nursery.start_soon(self._watch_closing)

    def forget(self, stream: Waking) -> None:
        """``stream`` no longer waits (`wake_on_closing`)."""
        self._waking.discard(stream)

    async def _watch_closing(self) -> None:
        try:
            await self.closing.wait()
            for stream in list(self._waking):
                stream.poke()
        finally:
            self._closing_watched = False

    async def keep_lease(self) -> None:
        """Renew this worker's lease on the bus every `LEASE_RENEW_SECONDS` while the endpoint
        serves (in its background nursery); a renewal the bus refuses is made at the next."""
        while True:
            try:
                await self.bus.renew_lease()
            except BusUnavailable:
                pass
            await trio.sleep(LEASE_RENEW_SECONDS)

    async def guarded(self, responder: Responder, run: Callable[[], Awaitable[T]]) -> T:
        """Run ``run``, cancelling it if the client goes away. What ``run`` raises (a
        `ControlSignal` too) comes out as itself, not in an exception group.

        Raises:
            ClientGone: when the client disconnected first.
        """
        with trio.CancelScope() as scope:
            watching = responder.watch(scope)
            if watching is None:  # only a task waiting on the transport can tell
                outcome = await _watched(responder, run, None)
                if not outcome:
                    raise ClientGone
                return outcome[0]
            with watching:
                return await run()
        raise ClientGone  # the transport cancelled the scope: the client went away

    async def linger(self, responder: Responder, run: Callable[[], Awaitable[None]]) -> None:
        """Run a stream's forwarding loop until the client goes away, or until the server shuts
        down: then return, for the caller to end the stream (its client reconnects, to another
        worker or to the restarted one; `Last-Event-ID` replays only what the process that kept
        the stream's events still has, so across a restart or to another worker nothing is
        replayed).

        Raises:
            ClientGone: when the client disconnected first.
        """
        if not await _watched(responder, run, self.closing) and not self.closing.is_set():
            raise ClientGone


async def _cancel_after(wait: Callable[[], Awaitable[None]], scope: trio.CancelScope) -> None:
    await wait()
    scope.cancel()


async def _watched(
    responder: Responder, run: Callable[[], Awaitable[T]], until: trio.Event | None
) -> list[T]:
    """``[run()]``, or ``[]`` when the client went away (or ``until`` was set) first."""
    outcome: list[T] = []
    signal: list[ControlSignal] = []
    async with background_nursery() as nursery:
        nursery.start_soon(_cancel_after, responder.wait_disconnect, nursery.cancel_scope)
        if until is not None:
            nursery.start_soon(_cancel_after, until.wait, nursery.cancel_scope)
        try:
            outcome.append(await run())
        except ControlSignal as exc:  # kept out of the nursery's exception group
            signal.append(exc)
    if signal:
        raise signal[0]
    return outcome
