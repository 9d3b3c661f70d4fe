"""`room.Room.accept_waiting`: after the connection waited for, those already in the listen
backlog are taken in the same turn of the loop, each in a free slot (real loopback sockets)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import trio
import trio.testing

from mcpfast.server.engines.http1 import Connection
from mcpfast.server.engines.room import Room
from mcpfast.server.engines.sockets import Listener, Socket


@contextmanager
def waiting_clients(count: int) -> Iterator[Listener]:
    """A loopback listener with ``count`` clients connected, none accepted yet."""
    with ExitStack() as stack:
        sock = stack.enter_context(socket.socket())
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        for _ in range(count):  # the kernel completes each handshake into the backlog
            stack.enter_context(socket.create_connection(sock.getsockname()))
        listener = Listener(sock)
        stack.callback(listener.close)
        yield listener


def close(socks: list[Socket]) -> None:
    for sock in socks:
        sock.close()


async def test_a_burst_is_taken_in_one_turn() -> None:
    room: Room[Connection] = Room(100)
    with waiting_clients(6) as listener:
        first = await room.accept(listener)
        with trio.testing.assert_no_checkpoints():
            rest = room.accept_waiting(listener, 100)
        assert len(rest) == 5
        assert room.accept_waiting(listener, 100) == []  # nobody left: no wait either
        assert room.slots.value == 100 - 6
        close([first, *rest])


async def test_the_cap_and_the_most_bound_a_burst() -> None:
    room: Room[Connection] = Room(4)
    with waiting_clients(8) as listener:
        first = await room.accept(listener)
        two = room.accept_waiting(listener, 2)
        assert len(two) == 2
        rest = room.accept_waiting(listener, 100)
        assert len(rest) == 1, "a burst stops at the cap"
        assert room.slots.value == 0
        assert listener.accept_now() is not None, "the others still wait in the backlog"
        close([first, *two, *rest])


async def test_a_closed_listener_ends_a_burst_and_gives_its_slot_back() -> None:
    room: Room[Connection] = Room(4)
    with waiting_clients(2) as listener:
        first = await room.accept(listener)
        listener.close()
        assert room.accept_waiting(listener, 100) == []
        assert room.slots.value == 3
        close([first])
