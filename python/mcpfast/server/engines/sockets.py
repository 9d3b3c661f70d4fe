"""Plain non-blocking sockets driven by `trio.lowlevel`: what the native engine reads and writes.

Trio's `trio.SocketStream` checkpoints on every call (a successful ``send`` still yields to
the scheduler) and wraps each in a context manager; on the native engine's hot path that is a
third of the CPU of a request. These sockets try the system call first and wait for the socket
only when it would block, so a request whose client is not pipelining costs one wait for its
head and none for its reply. Whoever loops over them checkpoints where no wait happened
(`Socket.waits` says): `NativeEngine.requests` does, once per request.
"""

from __future__ import annotations

import errno
import socket

import trio

_GONE = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError, TimeoutError)


class Socket:
    """One accepted connection (TCP_NODELAY on: a stream's small events go out at once)."""

    __slots__ = ("closed", "sock", "waits")

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = sock
        self.closed = False
        self.waits = 0
        """How many times a call had to wait for the socket (a checkpoint each)."""

    def peer(self) -> str | None:
        """The remote IP address; None for another kind of socket, or one already gone."""
        try:
            address = self.sock.getpeername()
        except OSError:
            return None
        return str(address[0]) if isinstance(address, tuple) else None

    async def receive(self, size: int, *, wait_first: bool = False) -> bytes:
        """Up to ``size`` bytes; ``b""`` at the end of the stream (or a reset: the client is
        gone either way). A checkpoint only when nothing was ready. ``wait_first``: nothing is
        expected yet (a reply was just sent), so wait before trying (saves a ``recv`` that would
        fail).

        Raises:
            trio.ClosedResourceError: the socket was closed (`close`), also while waiting.
        """
        if wait_first and not self.closed:
            self.waits += 1
            await trio.lowlevel.wait_readable(self.sock)
        while True:
            if self.closed:
                raise trio.ClosedResourceError
            try:
                return self.sock.recv(size)
            except BlockingIOError:
                pass
            except _GONE:
                return b""
            self.waits += 1
            await trio.lowlevel.wait_readable(self.sock)

    def receive_now(self, size: int) -> bytes | None:
        """Up to ``size`` bytes if the client sent some, without waiting: None when nothing
        is there yet; ``b""`` at the end of the stream (or a reset).

        Raises:
            trio.ClosedResourceError: the socket was closed (`close`).
        """
        if self.closed:
            raise trio.ClosedResourceError
        try:
            return self.sock.recv(size)
        except BlockingIOError:
            return None
        except _GONE:
            return b""

    async def send_all(self, data: bytes | memoryview) -> None:
        """Send all of ``data``, waiting for room only when the kernel's buffer is full.

        Raises:
            trio.BrokenResourceError: the client is gone.
            trio.ClosedResourceError: the socket was closed (`close`), also while waiting.
        """
        sent = self.send_now(data)
        view = memoryview(data)[sent:]
        while view:
            self.waits += 1
            await trio.lowlevel.wait_writable(self.sock)
            view = view[self.send_now(view) :]

    def send_now(self, data: bytes | memoryview) -> int:
        """Send what the kernel takes of ``data`` now, without waiting: how many bytes.

        Raises:
            trio.BrokenResourceError: the client is gone.
            trio.ClosedResourceError: the socket was closed (`close`).
        """
        if self.closed:
            raise trio.ClosedResourceError
        try:
            return self.sock.send(data)
        except BlockingIOError:
            return 0
        except _GONE as exc:
            raise trio.BrokenResourceError from exc

    def peer_closed(self) -> bool:
        """Whether the client has closed its side (or reset the connection), without reading
        what it sent: one non-blocking peek."""
        if self.closed:
            return True
        try:
            return not self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return False
        except OSError:
            return True

    def has_bytes(self) -> bool:
        """Whether bytes the client sent wait in the kernel, unread: one non-blocking peek."""
        if self.closed:
            return False
        try:
            return bool(self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
        except OSError:
            return False

    def close(self) -> None:
        """Close now; a task waiting on the socket wakes with `trio.ClosedResourceError`.
        Closing twice does nothing."""
        if self.closed:
            return
        self.closed = True
        trio.lowlevel.notify_closing(self.sock)
        self.sock.close()


class Listener:
    """A listening socket whose `accept` waits with `trio.lowlevel`."""

    __slots__ = ("sock",)

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self.sock = sock

    async def accept(self) -> Socket:
        """The next connection.

        Raises:
            OSError: as ``accept(2)`` does (``EMFILE`` and the like: the caller decides).
            trio.ClosedResourceError: the listener was closed.
        """
        while (sock := self.accept_now()) is None:
            await trio.lowlevel.wait_readable(self.sock)
        return sock

    def accept_now(self) -> Socket | None:
        """The next connection if a client waits to be accepted, else None, without waiting.

        Raises:
            OSError: as ``accept(2)`` does (``EMFILE`` and the like: the caller decides).
            trio.ClosedResourceError: the listener was closed.
        """
        while True:
            try:
                sock, _ = self.sock.accept()
            except BlockingIOError:
                return None
            except OSError as exc:
                if exc.errno in (errno.ECONNABORTED, errno.EPROTO):
                    continue  # the client left before it was accepted
                if exc.errno == errno.EBADF or self.sock.fileno() == -1:
                    raise trio.ClosedResourceError from exc
                raise
            return Socket(sock)

    async def wait_client(self) -> None:
        """Return once a client waits to be accepted."""
        await trio.lowlevel.wait_readable(self.sock)

    def close(self) -> None:
        if self.sock.fileno() != -1:
            trio.lowlevel.notify_closing(self.sock)
            self.sock.close()


BACKLOG = 1024
"""Connections the kernel holds for a listener before it accepts them, on both engines (past it
a new client's SYN is dropped, and it retries a second later): room for a burst of clients."""


async def open_listeners(
    host: str, port: int, *, reuse_port: bool = False, backlog: int = BACKLOG
) -> list[Listener]:
    """Listening sockets for every address of ``host``/``port`` (``reuse_port`` lets several
    processes share the port, the kernel spreading connections among them).

    Raises:
        OSError: a socket could not be bound.
    """
    infos = await trio.socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )
    listeners: list[Listener] = []
    try:
        for family, kind, proto, _, address in infos:
            sock = socket.socket(family, kind, proto)
            listeners.append(Listener(sock))
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if reuse_port:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(backlog)
    except BaseException:
        for listener in listeners:
            listener.close()
        raise
    return listeners
