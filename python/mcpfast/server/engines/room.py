"""Admission at a connection cap, the policy of every listener of ours (the native engine, the
metrics listener): at most ``limit`` connections open; at the cap, once a client waits to be
accepted, the connection that has waited longest for a request head (idle keep-alive, or a head
trickling in: a slow or stalled client) is closed to make room. A connection busy with a request
is never closed for room: when every one is, new clients wait in the listen backlog until one
closes. Idle and slow clients therefore cannot keep a listener from answering."""

from __future__ import annotations

import errno
import logging
from typing import Generic, Protocol, TypeVar

import trio

from .sockets import Listener, Socket

log = logging.getLogger("mcpfast.accept")

_RESOURCE_ERRORS = {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}

_ROOM_SECONDS = 0.05
"""At the cap with a client waiting: how often to look again for a connection to close."""


class Cuttable(Protocol):
    def cut(self) -> None:
        """Close the connection now (whatever waits on it wakes)."""
        ...


C = TypeVar("C", bound=Cuttable)


class Room(Generic[C]):
    """The open connections of a listener (at most ``limit``) and those waiting for a request
    head, which its owner adds to `heads` when it starts reading one and removes once read."""

    __slots__ = ("heads", "slots", "tick")

    def __init__(self, limit: int) -> None:
        self.slots = trio.Semaphore(limit)
        self.heads: dict[C, int] = {}
        """The connections waiting for a request head, oldest first, with the `tick` they began
        at: what `make_room` and `expire` close."""
        self.tick = 0
        """The clock of the head deadlines, advanced by the owner's sweeper (`expire`)."""

    async def accept(self, listener: Listener) -> Socket:
        """The next connection, once a slot is free (at the cap: `make_room`, again every
        `_ROOM_SECONDS` for connections that went idle meanwhile). The caller gives the slot
        back (`leave`) when the connection closes. An accept failing for want of resources
        (``EMFILE`` and the like) is logged and retried after 0.1 s.

        Raises:
            OSError: ``accept(2)`` failed otherwise.
            trio.ClosedResourceError: the listener was closed.
        """
        while True:
            await self._enter(listener)
            try:
                return await listener.accept()
            except OSError as exc:
                self.leave()
                if exc.errno not in _RESOURCE_ERRORS:
                    raise
                log.error("accept: %s; retrying in 0.1 s", exc)
                await trio.sleep(0.1)
            except BaseException:
                self.leave()
                raise

    def accept_waiting(self, listener: Listener, most: int) -> list[Socket]:
        """Up to ``most`` more connections, those already waiting to be accepted, each in a free
        slot, without waiting or checkpointing: after `accept`, a burst of clients is taken in
        one turn of the loop, as asyncio's accept loop does, instead of one per turn (each turn
        a whole pass over the busy connections: the 64th client of a burst waited 64 passes
        for its first answer). Stops at the cap, at the first client not there yet, and at a
        failing accept (`accept` meets it next and reports it). The caller gives each slot
        back (`leave`)."""
        taken: list[Socket] = []
        slots = self.slots
        while len(taken) < most and slots.value:
            slots.acquire_nowait()
            try:
                sock = listener.accept_now()
            except (OSError, trio.ClosedResourceError):
                sock = None
            if sock is None:
                slots.release()
                break
            taken.append(sock)
        return taken

    def leave(self) -> None:
        """Give back the slot of a connection that closed."""
        self.slots.release()

    def make_room(self) -> None:
        """Close the connection that has waited longest for a request head, if any."""
        for conn in self.heads:
            del self.heads[conn]
            conn.cut()
            return

    def expire(self, ticks: float) -> None:
        """Close the connections that have waited for a request head more than ``ticks``."""
        late = self.tick - ticks
        for conn, started in list(self.heads.items()):
            if started >= late:
                break  # the rest began later
            del self.heads[conn]
            conn.cut()

    async def _enter(self, listener: Listener) -> None:
        slots = self.slots
        if slots.value == 0:
            await listener.wait_client()
        while True:
            with trio.move_on_after(_ROOM_SECONDS):
                if slots.value == 0:
                    self.make_room()
                await slots.acquire()
                return
