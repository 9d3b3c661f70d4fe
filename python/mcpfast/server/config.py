"""Server settings: bind address, limits, timeouts and the DNS-rebinding guard."""

from __future__ import annotations

from typing import Literal

import msgspec

from ..protocol.http import host_allowed, origin_allowed


class Config(msgspec.Struct, kw_only=True):
    """Everything a deployment tunes.

    ``allowed_hosts``/``allowed_origins`` guard against DNS rebinding: ``None`` means "the loopback
    names when bound to loopback, anything otherwise" for hosts, and "loopback or the request's own
    host" for origins; ``["*"]`` turns a check off.
    """

    host: str = "127.0.0.1"
    port: int = 8000
    path: str = "/mcp"
    workers: int = 1
    engine: Literal["hypercorn", "native"] = "hypercorn"
    """The HTTP engine: Hypercorn's Trio worker (ASGI), or mcpfast's own HTTP/1.1 on Trio."""
    max_body: int = 4 * 1024 * 1024
    max_header_bytes: int = 64 * 1024
    max_headers: int = 100
    """Header lines per request head; past it, 431 (both engines)."""
    max_depth: int = 64
    max_connections: int = 16384
    """Native engine: open connections per worker; past it, new clients wait to be accepted."""
    allowed_hosts: list[str] | None = None
    allowed_origins: list[str] | None = None
    keepalive_seconds: float = 15.0
    read_timeout_seconds: float = 30.0
    write_timeout_seconds: float = 30.0
    """Native engine: a client that reads nothing of a response for this long is disconnected."""
    graceful_seconds: float = 10.0
    """On shutdown, how long requests in flight (and open streams) may go on before they are
    cancelled."""
    request_state_seconds: int = 600
    request_state_max_bytes: int = 1024 * 1024
    """The largest ``requestState`` (the answers of a multi-round-trip request so far, signed):
    a round whose answers would pass it fails with -32602 naming this limit. It rides in the
    retry's body, so it must stay below ``max_body``."""
    input_timeout_seconds: float = 600.0
    """How long a legacy server-to-client request (elicitation, sampling, roots) waits for the
    client's answer, and a task waits in ``input_required``, before the handler gets an
    `MCPError`."""
    task_max_ttl_ms: int = 24 * 3600 * 1000
    """The longest TTL a 2025-11-25 client may ask for a task (``params.task.ttl``); a longer
    request is cut to this (the revision lets the server override the TTL, and the task shows
    the one it got); an ended task is forgotten once its TTL has passed."""
    session_seconds: int = 24 * 3600
    """A legacy session unused for this long ends (whichever of its ids the client sends)."""
    session_lifetime_seconds: int = 7 * 24 * 3600
    """No legacy session lives longer than this from its ``initialize``, however much used."""
    session_refresh_seconds: int = 3600
    """A session id older than this is re-minted in the response, for clients that adopt it."""
    sse_retry_ms: int = 1000
    event_store_size: int = 1000
    thread_limit: int = 40
    """How many plain-``def`` handlers (tools, resources, prompts, completions not registered
    ``instant=True``) may run at once on worker threads, per endpoint (each worker process has
    its own); further calls wait for a free thread. 40 is the default of Trio's, AnyIO's and so
    Starlette's thread pools: enough for handlers that block on I/O (HTTP, files, databases),
    while a CPU-bound handler gains nothing past the cores anyway (the GIL) and each thread costs
    a stack."""

    def __post_init__(self) -> None:
        if self.thread_limit < 1:  # no thread at all: every plain-def call would wait forever
            raise ValueError(f"thread_limit must be at least 1, not {self.thread_limit}")

    def host_allowed(self, host_header: str | None) -> bool:
        """Whether the ``Host`` header names this server."""
        return host_allowed(self.allowed_hosts, self.host, host_header)

    def origin_allowed(self, origin: str | None, host_header: str | None) -> bool:
        """Whether a browser ``Origin`` may call this server (no ``Origin``: not a browser)."""
        return origin_allowed(self.allowed_origins, origin, host_header)
