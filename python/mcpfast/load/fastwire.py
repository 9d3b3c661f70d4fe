"""The wire between a fast-engine master and its workers (`mcpfast.load.fastdist`): over TCP,
each message is a JSON object after its length (4 bytes, big-endian), at most `MAX_MESSAGE`
bytes; `Frames` cuts bytes into messages (no I/O), `Peer` sends and receives them on a socket,
every read and write with a deadline. With a shared secret (`SECRET_ENV`, the same on the
master and every worker), each end proves it to the other before the plan is sent (`proof`:
HMAC-SHA256 over both ends' nonces, so a proof is good for one connection only), and every
message after the proofs is sealed (`Seal`: ChaCha20-Poly1305 under keys drawn from the secret
and both nonces, one per direction), so the plan, and the run's token in its requests, never
crosses the wire in the clear, and a message changed, replayed, reordered or reflected is
refused. Without a secret, the master listens on loopback only (`mcpfast.load.fastdist`) and
nothing is sealed.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = [
    "EXIT_FAILED",
    "GRACE",
    "HELLO",
    "HELLO_LIMIT",
    "MAX_MESSAGE",
    "SECRET_ENV",
    "SEND_WAIT",
    "VERSION",
    "WAIT",
    "Frames",
    "Peer",
    "Seal",
    "WireError",
    "frame",
    "nonce",
    "proof",
    "proven",
    "shared_secret",
]

HELLO = "mcpfast fast load"
VERSION = 3
"""The wire's version: a master refuses a worker of another (2: the hello has a nonce; 3: with
a secret, the messages after the proofs are sealed)."""
SECRET_ENV = "MCPFAST_LOAD_SECRET"
"""The environment variable of the secret a master and its workers share (not an option: a
command line is seen by every user of the host)."""
NONCE_BYTES = 16
MAX_MESSAGE = 256 * 2**20
"""Bytes one message may have, either way, once a peer is greeted (before: `HELLO_LIMIT`).
Not lower, for the two large messages grow with the run. A plan holds every request of the
worker's connections, base64 in JSON: against the demo server, 0.7 KB per ``tools``
connection, 3.1 KB per ``lists`` one (five requests), some 10 KB with a 1 KB bearer token in
each request; so some 25,000 such connections per worker. A worker's tallies hold, per load
process and request kind, a latency histogram (50 to 115 KB for a million requests of a usual
spread; up to some 14,500 buckets, 190 KB, within the request timeout) and up to
`mcpfast.load.engine_trio.DISTINCT` answer bodies: a worker of 64 load processes
(``--processes -1``) on a mix of seven request kinds sends tens of MB."""
HELLO_LIMIT = 4096
"""Bytes a hello may have (a peer the master has not greeted yet)."""
HEADER = struct.Struct(">I")
TAG_BYTES = 16
"""What sealing adds to a message (ChaCha20-Poly1305's tag)."""
WAIT = 10.0
"""Seconds a message may take to send (`Peer.send`'s default), and a handshake's reply to
arrive."""
SEND_WAIT = 60.0
"""Seconds a plan or a worker's tallies may take to send."""
GRACE = 120.0
"""Seconds past the run time a worker has to send its tallies (its load processes start, the
last requests time out)."""
EXIT_FAILED = 2
"""The exit status of a master or worker whose distributed run failed."""


def shared_secret() -> bytes | None:
    """`SECRET_ENV`'s value, or None when it is unset or empty."""
    return os.environ.get(SECRET_ENV, "").encode() or None


def nonce() -> str:
    """A fresh random nonce, hex."""
    return secrets.token_hex(NONCE_BYTES)


def proof(secret: bytes, role: str, mine: str, theirs: str) -> str:
    """What ``role`` (``master`` or ``worker``) sends to prove it holds ``secret`` on a
    connection whose nonces are ``mine`` and ``theirs``: the role keeps one end's proof from
    passing for the other's."""
    said = f"{role}|{mine}|{theirs}".encode()
    return hmac.new(secret, said, hashlib.sha256).hexdigest()


def proven(secret: bytes, role: str, mine: str, theirs: str, said: object) -> bool:
    """Whether ``said`` is ``role``'s `proof` (compared in constant time)."""
    if not isinstance(said, str):
        return False
    return hmac.compare_digest(proof(secret, role, mine, theirs).encode(), said.encode())


class WireError(Exception):
    """The peer broke the wire's rules, closed the connection, or was silent past a deadline."""


def frame(message: dict[str, Any], seal: Seal | None = None) -> bytes:
    """``message`` as it goes on the wire, sealed with ``seal`` if given.

    Raises:
        WireError: it is over `MAX_MESSAGE` bytes.
    """
    body = json.dumps(message).encode()
    if len(body) > MAX_MESSAGE:
        raise WireError(f"a message of {len(body)} bytes, over the limit of {MAX_MESSAGE}")
    if seal is not None:
        body = seal.seal(body)
    return HEADER.pack(len(body)) + body


class Seal:
    """The sealing of one connection's messages once both ends proved the secret: a key for
    each direction, drawn by HKDF-SHA256 from the secret with both nonces as the salt, and a
    count of the messages sent and opened each way as ChaCha20-Poly1305's nonce (a message
    opens only in its place in its direction). ``role``: this end's, ``master`` or
    ``worker``."""

    def __init__(self, secret: bytes, role: str, master_nonce: str, worker_nonce: str) -> None:
        other = "worker" if role == "master" else "master"
        salt = f"{master_nonce}|{worker_nonce}".encode()
        self._out = ChaCha20Poly1305(_key(secret, salt, role))
        self._in = ChaCha20Poly1305(_key(secret, salt, other))
        self._sent = 0
        self._opened = 0

    def seal(self, body: bytes) -> bytes:
        """``body`` sealed, `TAG_BYTES` longer, as the next message sent."""
        sealed = self._out.encrypt(_counter(self._sent), body, None)
        self._sent += 1
        return sealed

    def open(self, sealed: bytes) -> bytes:
        """The body of the next message received.

        Raises:
            WireError: it was not sealed by the other end, for this place (changed, replayed,
                reordered, sent back, or sealed with another secret).
        """
        try:
            body = self._in.decrypt(_counter(self._opened), sealed, None)
        except InvalidTag:
            raise WireError("a message that is not the peer's, sealed, in its place") from None
        self._opened += 1
        return body


def _key(secret: bytes, salt: bytes, sender: str) -> bytes:
    info = f"mcpfast load wire {VERSION}: {sender} to its peer".encode()
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=info).derive(secret)


def _counter(count: int) -> bytes:
    return count.to_bytes(12, "big")


class Frames:
    """Bytes in, messages out (no I/O): `feed` what was read, then take each whole message with
    `next` (None: more bytes are needed); none may be over ``limit`` bytes (a peer not yet
    greeted: `HELLO_LIMIT`), and each is opened with ``seal`` once it is set."""

    def __init__(self, limit: int = MAX_MESSAGE) -> None:
        self.buffer = bytearray()
        self.limit = limit
        self.seal: Seal | None = None

    def feed(self, data: bytes) -> None:
        self.buffer += data

    def next(self) -> dict[str, Any] | None:
        """The next whole message, or None.

        Raises:
            WireError: a length over ``limit`` (not this wire: a locust peer?), a sealed
                message that does not open (`Seal.open`), or a body that is not a JSON object.
        """
        if len(self.buffer) < HEADER.size:
            return None
        (size,) = HEADER.unpack_from(self.buffer)
        if size > self.limit + (TAG_BYTES if self.seal is not None else 0):
            raise WireError(
                f"the peer announced a message of {size} bytes (over {self.limit}): not the fast "
                "engine's wire (a locust master or worker? give both --engine fast)"
            )
        if len(self.buffer) < HEADER.size + size:
            return None
        body = bytes(self.buffer[HEADER.size : HEADER.size + size])
        del self.buffer[: HEADER.size + size]
        if self.seal is not None:
            body = self.seal.open(body)
        try:
            message = json.loads(body)
        except ValueError:
            raise WireError("the peer sent a message that is not JSON") from None
        if not isinstance(message, dict):
            raise WireError("the peer sent a message that is not a JSON object")
        return message


@dataclass
class Peer:
    """One end of the wire: its socket, the other end's name (said in errors), and the bytes
    read so far (with the seal of its messages once both ends proved the secret: `sealed`)."""

    sock: socket.socket
    name: str
    frames: Frames = field(default_factory=Frames)

    def sealed(self, seal: Seal) -> None:
        """Seal every message sent, and open every one received, from now on."""
        self.frames.seal = seal

    def close(self) -> None:
        """Close the connection (a read of it blocked in another thread then ends)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()

    def send(self, message: dict[str, Any], seconds: float = WAIT) -> None:
        """Send ``message`` within ``seconds``.

        Raises:
            WireError: the connection failed or stalled.
        """
        data = frame(message, self.frames.seal)
        self.sock.settimeout(seconds)
        try:
            self.sock.sendall(data)
        except OSError as exc:
            raise WireError(f"{self.name}: could not send ({exc})") from None

    def receive(self, key: str, seconds: float, *, also: tuple[str, ...] = ()) -> dict[str, Any]:
        """The next message, which has ``key`` (or one of ``also``), within ``seconds`` (a
        ``refused`` or ``failed`` message raises with the peer's reason).

        Raises:
            WireError: closed, silent past ``seconds``, another message, or not the wire.
        """
        deadline = time.monotonic() + seconds
        while (message := self.frames.next()) is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WireError(f"{self.name} sent no {key} within {seconds:.0f}s")
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(1 << 16)
            except TimeoutError:
                continue
            except OSError as exc:
                raise WireError(f"{self.name}: the connection failed ({exc})") from None
            if not data:
                raise WireError(f"{self.name} closed the connection before its {key}")
            self.frames.feed(data)
        for said in ("refused", "failed"):
            if said in message:
                raise WireError(f"{self.name} {said}: {message[said]}")
        if not any(k in message for k in (key, *also)):
            raise WireError(f"{self.name} sent {sorted(message)} where {key} was due")
        return message
