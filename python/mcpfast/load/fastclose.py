"""The legacy sessions a fast engine plan opened (`mcpfast.load.fastplan`: one per connection of
a legacy workload), closed after the run: for each, a ``DELETE`` with its first request's
headers (``Mcp-Session-Id``, ``Authorization``, ...), sent from the parent on a connection of
its own, all within `CLOSE_TIMEOUT`. A session the server no longer knows (404) or cannot end
(405) counts as closed; the others are said in one note, never fatal.
"""

from __future__ import annotations

import base64
import socket
import time
from typing import Any

__all__ = ["CLOSE_TIMEOUT", "close_request", "close_sessions"]

CLOSE_TIMEOUT = 10.0
"""Seconds all the sessions of a run may take to close."""
CLOSED = (200, 202, 204, 404, 405)
"""The answers to a DELETE that leave no session behind (as `mcpfast.load.connection` reads
them)."""
_SESSION = b"mcp-session-id:"


def close_request(raw: bytes) -> bytes | None:
    """The ``DELETE`` ending the session of ``raw`` (a plan's request: HTTP/1.1 bytes, as
    `mcpfast.load.fastplan` builds them), with its headers but the body's; None when it has no
    session."""
    head = raw.split(b"\r\n\r\n", 1)[0].split(b"\r\n")
    if not any(line.lower().startswith(_SESSION) for line in head[1:]):
        return None
    target = head[0].split(b" ")[1]
    kept = [
        line
        for line in head[1:]
        if not line.lower().startswith((b"content-length:", b"content-type:"))
    ]
    return b"\r\n".join([b"DELETE " + target + b" HTTP/1.1", *kept, b"content-length: 0"]) + (
        b"\r\n\r\n"
    )


def close_sessions(plan: dict[str, Any], timeout: float = CLOSE_TIMEOUT) -> str | None:
    """Close the sessions of ``plan``'s cycles: a note on those left open (None: none)."""
    requests = {
        close
        for cycle in plan["cycles"]
        if (close := close_request(base64.b64decode(cycle[0]))) is not None
    }
    deadline = time.monotonic() + timeout
    left: dict[str, int] = {}
    for request in sorted(requests):
        try:
            status = _send(plan["host"], int(plan["port"]), request, deadline)
        except OSError as exc:
            why = "no time left" if time.monotonic() >= deadline else type(exc).__name__
            left[why] = left.get(why, 0) + 1
            continue
        if status not in CLOSED:
            left[f"HTTP {status}"] = left.get(f"HTTP {status}", 0) + 1
    if not left:
        return None
    reasons = ", ".join(f"{why}: {count}" for why, count in left.items())
    return (
        f"{sum(left.values())} of the {len(requests)} legacy sessions were not closed ({reasons})"
    )


def _send(host: str, port: int, request: bytes, deadline: float) -> int:
    """``request`` sent on a new connection: the answer's status.

    Raises:
        OSError: no connection, no answer by ``deadline``, or not an HTTP answer.
    """
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("no time left")
    with socket.create_connection((host, port), timeout=left) as connection:
        connection.sendall(request)
        answer = b""
        while b"\r\n" not in answer and len(answer) < 65536:
            connection.settimeout(max(deadline - time.monotonic(), 0.001))
            chunk = connection.recv(65536)
            if not chunk:
                break
            answer += chunk
    parts = answer.split(b"\r\n", 1)[0].split(b" ")
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise ConnectionError("not an HTTP answer")
    return int(parts[1])
