"""The native engine's plain sockets (`mcpfast.server.engines.sockets`) on real loopback TCP:
TCP_NODELAY on every accepted connection (a stream's small events go out at once instead of
waiting on Nagle and delayed ACKs), waits only when the kernel says so, and a close that wakes
whoever waits."""

from __future__ import annotations

import socket

import pytest
import trio
import trio.testing

from mcpfast.server.engines.sockets import Listener, Socket, open_listeners


async def pair() -> tuple[Listener, Socket, trio.SocketStream]:
    """A listener, the server side of one accepted connection, and its client."""
    (listener,) = await open_listeners("127.0.0.1", 0)
    port = listener.sock.getsockname()[1]
    client = await trio.open_tcp_stream("127.0.0.1", port)
    server = await listener.accept()
    return listener, server, client


async def test_accepted_connections_have_nodelay() -> None:
    listener, server, client = await pair()
    with listener.sock, server.sock:
        assert server.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        assert not server.sock.getblocking()
    await client.aclose()


async def test_receive_waits_only_when_nothing_is_there() -> None:
    listener, server, client = await pair()
    with listener.sock:
        await client.send_all(b"ready")
        await trio.lowlevel.wait_readable(server.sock)  # the bytes are in the server's buffer
        assert await server.receive(100) == b"ready" and server.waits == 0
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.send_all, b"later")
            assert await server.receive(100) == b"later"
        assert server.waits == 1
        await client.aclose()
        assert await server.receive(100) == b""  # the end of the stream
        server.close()


async def test_send_all_waits_for_a_slow_reader() -> None:
    """A payload far over the kernel's buffers is sent whole as the peer reads it."""
    listener, server, client = await pair()
    payload = bytes(range(256)) * 40_000  # 10 MB
    received = bytearray()

    async def read_slowly() -> None:
        while len(received) < len(payload):
            received.extend(await client.receive_some(65536))
            await trio.sleep(0.001)  # a slow reader

    with listener.sock:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_slowly)
            await server.send_all(payload)
        assert bytes(received) == payload and server.waits > 0
        server.close()
        await client.aclose()


async def test_close_wakes_a_waiting_receive_and_refuses_more() -> None:
    listener, server, client = await pair()
    with listener.sock:
        async with trio.open_nursery() as nursery:

            async def waiting() -> None:
                with pytest.raises(trio.ClosedResourceError):
                    await server.receive(100)

            nursery.start_soon(waiting)
            await trio.testing.wait_all_tasks_blocked()
            server.close()
        server.close()  # twice: nothing
        with pytest.raises(trio.ClosedResourceError):
            await server.send_all(b"x")
        await client.aclose()


async def test_a_client_gone_is_a_broken_resource() -> None:
    listener, server, client = await pair()
    with listener.sock:
        client.socket.setsockopt(
            socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
        )
        await client.aclose()  # RST
        await trio.lowlevel.wait_readable(server.sock)  # the RST arrived
        with pytest.raises(trio.BrokenResourceError):
            for _ in range(100):
                await server.send_all(b"x" * 65536)
        server.close()


async def test_a_closed_listener_stops_accepting() -> None:
    (listener,) = await open_listeners("127.0.0.1", 0)
    async with trio.open_nursery() as nursery:

        async def accepting() -> None:
            with pytest.raises(trio.ClosedResourceError):
                await listener.accept()

        nursery.start_soon(accepting)
        await trio.testing.wait_all_tasks_blocked()
        listener.close()
