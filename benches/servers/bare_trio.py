"""The floor of Trio on this machine: a bare JSON-RPC echo (no MCP, no ASGI) on Trio with raw
non-blocking sockets, the native engine's Rust head parser and orjson; keep-alive, one ``send``
per reply. What is left between this and mcpfast's native engine is per-request Python work.

python bare_trio.py PORT
"""

import socket
import sys

import orjson
import trio

from mcpfast import codec
from mcpfast.protocol.http11 import response_head

HEADERS = [(b"content-type", b"application/json")]


async def connection(stream: trio.SocketStream) -> None:
    sock = stream.socket._sock  # type: ignore[attr-defined]  # the stdlib socket under Trio's
    buffer = bytearray()
    try:
        while True:
            end = buffer.find(b"\r\n\r\n")
            if end == -1:
                try:
                    data = sock.recv(65536)
                except BlockingIOError:
                    await trio.lowlevel.wait_readable(sock)
                    continue
                if not data:
                    return
                buffer += data
                continue
            length = codec.parse_head(bytes(buffer[:end])).content_length
            start = end + 4
            while len(buffer) < start + (length or 0):
                await trio.lowlevel.wait_readable(sock)
                buffer += sock.recv(65536)
            body = bytes(buffer[start : start + (length or 0)])
            del buffer[: start + (length or 0)]
            request = orjson.loads(body)
            reply = orjson.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": request["id"],
                    "result": {
                        "content": [
                            {"type": "text", "text": request["params"]["arguments"]["text"]}
                        ]
                    },
                }
            )
            head = response_head(200, HEADERS, length=len(reply), keep_alive=True, version=(1, 1))
            sock.send(head + reply)
    except OSError:
        return
    finally:
        stream.socket.close()


async def main(port: int) -> None:
    listeners = await trio.open_tcp_listeners(port, host="127.0.0.1", backlog=1024)
    for listener in listeners:
        listener.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    await trio.serve_listeners(connection, listeners)


if __name__ == "__main__":
    trio.run(main, int(sys.argv[1]))
