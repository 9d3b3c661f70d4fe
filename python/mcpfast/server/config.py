"""Server settings: bind address, limits, timeouts, the DNS-rebinding guard, authorization and
observability (health paths, the metrics listener, the access log)."""

from __future__ import annotations

import socket
from functools import lru_cache
from typing import Literal

import msgspec

from ..protocol.auth import canonical_resource
from ..protocol.http import default_hosts, host_allowed, listed_hosts, origin_allowed

_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_POSITIVE = (
    "tool_timeout_seconds",
    "max_concurrent_per_principal",
    "queue_timeout_seconds",
    "shed_in_flight",
    "shed_latency_ms",
    "max_stream_seconds",
)
"""The settings that, when set, must be above 0."""


class AuthConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Protect the HTTP endpoint as an OAuth 2.1 resource server (plain data, so that it
    reaches every worker; `mcpfast.server.auth.guard_for` builds the verifier from it).

    Tokens are verified as JWTs against ``jwks_url`` (or the issuer's discovered ``jwks_uri``)
    unless ``introspection_url`` is set (RFC 7662, with ``introspection_client_id`` and the
    secret, else ``$MCPFAST_AUTH_INTROSPECTION_CLIENT_SECRET``). A `Server` with its own
    ``token_verifier`` uses that instead.
    """

    issuer: str | None = None
    """The authorization server: the ``iss`` of its tokens, listed in the metadata."""
    resource: str | None = None
    """This server's canonical URL (RFC 8707/9728 ``resource``), e.g.
    ``https://mcp.example.com/mcp``; None: built from each request's ``Host`` and the path."""
    audience: list[str] | None = None
    """The ``aud`` values accepted; None: ``[resource]``."""
    authorization_servers: list[str] | None = None
    """The metadata's ``authorization_servers``; None: ``[issuer]``."""
    jwks_url: str | None = None
    """The issuer's JWKS; None: the ``jwks_uri`` of its RFC 8414 / OIDC metadata (its ``issuer``
    checked)."""
    algorithms: list[str] = msgspec.field(
        default_factory=lambda: ["RS256", "PS256", "ES256", "EdDSA"]
    )
    """The signature algorithms a JWT access token may use (never the token header's word)."""
    introspection_url: str | None = None
    """Verify tokens by RFC 7662 introspection at this URL instead of as JWTs."""
    introspection_client_id: str | None = None
    """The client id introspection authenticates with."""
    introspection_client_secret: str | None = None
    """Its secret; None: ``$MCPFAST_AUTH_INTROSPECTION_CLIENT_SECRET``, read by each worker."""
    scopes: list[str] = msgspec.field(default_factory=list)
    """Scopes every request needs (added to the `Server`'s own ``scopes``)."""
    scopes_supported: list[str] | None = None
    """The metadata's ``scopes_supported``; None: the scopes every request needs."""
    scope_implies: dict[str, list[str]] = msgspec.field(default_factory=dict)
    """Scope hierarchy: a scope grants the ones it lists (transitively), e.g.
    ``{"files": ["files:read", "files:write"]}``."""
    leeway_seconds: float = 30.0
    """Clock skew allowed when checking ``exp`` and ``nbf``."""
    jwks_refetch_seconds: float = 10.0
    """At most one JWKS refetch (for a token whose ``kid`` is unknown) per this long."""
    token_cache_seconds: float = 300.0
    """A verified token is remembered (by digest) until its ``exp``, at most this long."""
    token_cache_size: int = 10_000
    """How many verified tokens (digests) are remembered at most."""
    dpop: Literal["off", "on", "required"] = "on"
    """``on``: DPoP-bound tokens (``cnf.jkt``, or the ``DPoP`` scheme) need a valid proof;
    ``required``: every token must be DPoP-bound; ``off``: bound tokens are refused."""
    dpop_algorithms: list[str] = msgspec.field(
        default_factory=lambda: ["ES256", "RS256", "PS256", "EdDSA"]
    )
    """The signature algorithms a DPoP proof may use."""
    dpop_nonce: bool = False
    """Require a server nonce in DPoP proofs (``use_dpop_nonce`` with a ``DPoP-Nonce``)."""
    dpop_window_seconds: float = 300.0
    """How old a DPoP proof (its ``iat``) may be; each ``jti`` is accepted once in it."""
    resource_name: str | None = None
    """The protected resource metadata's ``resource_name``."""
    require_jwt_typ: bool = True
    """JWT access tokens must say ``typ: at+jwt`` (RFC 9068 section 4), so that an ID token or
    another JWT of the issuer with this server's ``aud`` is refused; False, for issuers that
    do not set it (Microsoft Entra), also takes untyped and ``typ: JWT`` tokens, unless they
    carry ID-token claims (``nonce``, ``at_hash``, ``c_hash``, ``s_hash``)."""
    jwks_public_only: bool = False
    """The ``jwks_uri`` the issuer's metadata names, when not on the issuer's origin, must
    resolve to public addresses only (no private, loopback, link-local... ones; see
    `mcpfast._remote`). Every issuer document is read with a size cap, a total deadline and no
    redirects; off the configured origins, only https (http to loopback)."""

    def __post_init__(self) -> None:
        if self.resource is not None:
            canonical_resource(self.resource)  # raises ValueError: not absolute, a fragment
        if not (self.audience or self.resource):
            raise ValueError("AuthConfig needs resource= (this server's URL) or audience=")
        if self.issuer is None and not self.authorization_servers:
            raise ValueError("AuthConfig needs issuer= or authorization_servers=")


class Config(msgspec.Struct, kw_only=True):
    """Everything a deployment tunes.

    ``allowed_hosts``/``allowed_origins`` guard against DNS rebinding (`protocol.http`): the
    ``Host`` names and browser ``Origin`` values answered. ``allowed_hosts`` None means "the
    loopback names, the bound address and the machine's own names" when the bind listens on
    loopback (``127.0.0.1``, any ``127.x``, ``0.0.0.0``, ``::``), any ``Host`` otherwise;
    ``allowed_origins`` None means "pages on loopback names", and also "the request's own host"
    once ``allowed_hosts`` is set; ``["*"]`` turns a check off.
    """

    host: str = "127.0.0.1"
    """The address to listen on (``0.0.0.0``: every IPv4 address)."""
    port: int = 8000
    """The port to listen on (0: any free one; `serve` reports the bound URLs)."""
    path: str = "/mcp"
    """The MCP endpoint's path."""
    workers: int = 1
    """Worker processes sharing the port (``SO_REUSEPORT``); above 1 needs a ``bus``."""
    engine: Literal["hypercorn", "native"] = "hypercorn"
    """The HTTP engine: Hypercorn's Trio worker (ASGI), or mcpfast's own HTTP/1.1 on Trio."""
    scheduling: Literal["fifo", "trio"] = "fifo"
    """The order Trio runs the tasks made ready together, while `serve` runs (the whole
    process's): ``fifo``, in the order they became ready, as asyncio does (a busy connection's
    request waits about one pass of the loop instead of up to two: the p99 under load,
    `ops.scheduling`); ``trio``, Trio's own (each pass in that order or its reverse, at random)."""
    max_body: int = 4 * 1024 * 1024
    """The largest request body, by ``Content-Length`` or chunked; past it, 413."""
    max_header_bytes: int = 64 * 1024
    """The largest request head (request line and header lines), chunk-size line or trailer
    section; past it, 431. No response head is written over it either."""
    max_headers: int = 100
    """Header lines per request head; past it, 431 (both engines)."""
    max_depth: int = 64
    """The deepest JSON nesting of a body (the message itself is level 1); past it, 400."""
    max_connections: int = 16384
    """Native engine: open connections per worker; past it, new clients wait to be accepted."""
    allowed_hosts: list[str] | None = None
    """The ``Host`` names answered (the DNS-rebinding guard; see the class docstring)."""
    allowed_origins: list[str] | None = None
    """The browser ``Origin`` values allowed to call (see the class docstring)."""
    keepalive_seconds: float = 15.0
    """How often an open SSE stream gets a keep-alive comment (so proxies do not idle it out)."""
    read_timeout_seconds: float = 30.0
    """How long a request and its whole head may take to arrive (idle keep-alive included:
    the connection is dropped), and its body from the end of its head (408)."""
    write_timeout_seconds: float = 30.0
    """Native engine: a client that reads nothing of a response for this long is disconnected."""
    graceful_seconds: float = 10.0
    """On shutdown, how long requests in flight (and open streams) may go on before they are
    cancelled."""
    request_state_seconds: int = 600
    """How long a 2026-07-28 ``requestState`` stays valid after it was signed."""
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
    """The SSE ``retry`` field (milliseconds) of event streams: how long a client waits before
    resuming one."""
    event_store_size: int = 1000
    """How many events of a legacy session's streams are kept for ``Last-Event-ID``
    resumption."""
    thread_limit: int = 40
    """How many plain-``def`` handlers (tools, resources, prompts, completions not registered
    ``instant=True``) may run at once on worker threads, per endpoint (each worker process has
    its own); further calls wait for a free thread. 40 is the default of Trio's, AnyIO's and so
    Starlette's thread pools: enough for handlers that block on I/O (HTTP, files, databases),
    while a CPU-bound handler gains nothing past the cores anyway (the GIL) and each thread costs
    a stack."""
    tool_timeout_seconds: float | None = None
    """A tool call's deadline when the tool declares none (``timeout=``): past it the call is
    cancelled (a plain ``def`` on a thread is let go) and answered with an ``isError`` result
    naming the tool and the seconds (a task fails). None: no deadline."""
    max_concurrent_per_principal: int | None = None
    """Tool calls one principal (a token's subject and client) runs at once on a worker; more
    wait (`concurrency_queue`, `queue_timeout_seconds`). None: no such cap."""
    concurrency_queue: int = 64
    """Calls that may wait for a concurrency cap's slot (a tool's ``concurrency=``, a
    principal's); one more is refused at once: -32023, 429, ``reason`` ``concurrency``."""
    queue_timeout_seconds: float = 10.0
    """The longest wait for a concurrency cap's slot; then the same refusal (nothing ran)."""
    shed_in_flight: int | None = None
    """Load shedding: with this many tool calls in flight on a worker, new requests are refused
    (-32023, 503, ``reason`` ``overloaded``), before their params are decoded; health probes,
    open streams, notifications and answers to the server's requests go on. None: off."""
    shed_latency_ms: float | None = None
    """Load shedding: new requests are refused so while the worker's recent tool-call latency
    (an average halving each idle second) is above this. None: off."""
    max_stream_seconds: float | None = None
    """The longest life of a ``subscriptions/listen`` or legacy GET stream: then it ends
    cleanly and the client reconnects (a GET stream resumes by ``Last-Event-ID``), for
    platforms that cut or bill long requests. None: no bound."""

    bus: str | None = None
    """What several workers (and hosts) share, as a URL: ``redis://host:port/db`` (also
    ``rediss://``, ``unix://``) for the Redis bus and task store; None: in this process only,
    which serves one worker (`run_workers` refuses several without a bus)."""

    auth: AuthConfig | None = None
    """Protect the HTTP endpoint with OAuth (None: open). Not applied to stdio."""

    rate_limit: str | None = None
    """Requests per principal (``"100/min burst=20"``: `protocol.limits.parse_rate`), every
    method; past it -32023, 429 with ``Retry-After`` (`core.limiter`). None: the `Server`'s."""
    method_rate_limits: dict[str, str] = msgspec.field(default_factory=dict)
    """Requests of a method per principal (``{"tools/list": "10/s"}``), over the `Server`'s."""
    tool_rate_limits: dict[str, str] = msgspec.field(default_factory=dict)
    """Calls of a tool per principal, over the tool's own ``rate_limit=``."""
    rate_limit_scope: Literal["bus", "worker"] = "bus"
    """Where the buckets live: on the bus (shared by every worker with a Redis ``bus``), or in
    each worker (no round trip; a limit of N then admits N per worker)."""
    rate_limit_failure: Literal["open", "closed"] = "open"
    """The shared buckets unreachable (Redis away): admit (``open``), or refuse 503 with
    ``Retry-After`` before anything runs (``closed``)."""
    trusted_proxy_hops: int = 0
    """Proxies in front that append the client's address to ``X-Forwarded-For``: an
    unauthenticated caller is limited by the address the outermost of them saw (the
    ``trusted_proxy_hops``-th from the right). 0: the connection's address (a client's own
    ``X-Forwarded-For`` is never believed)."""

    health_path: str | None = "/healthz"
    """Liveness: 200 while the process serves (on the main listener and the metrics one; no
    Host check, no token). None: not served."""
    ready_path: str | None = "/readyz"
    """Readiness: 200, or 503 while draining at shutdown. While the bus is away (`Bus.ready`)
    still 200 (what needs no bus is served), its body ``degraded``; 503 if ``ready_needs_bus``.
    None: not served."""
    bus_health_path: str | None = "/busz"
    """The bus's health: 200 while the bus serves, 503 while it is away (a request needing it
    is refused: 503 with ``Retry-After``). None: not served."""
    ready_needs_bus: bool = False
    """Strict readiness: 503 while the bus is away too (a proxy then sends nothing here)."""
    metrics_port: int | None = None
    """Serve the OpenTelemetry metrics in Prometheus text format at ``/metrics`` on this port
    (a listener of its own, also answering the health paths; needs ``mcpfast[metrics]``).
    With several workers, each takes the first free port of ``metrics_port`` ..
    ``metrics_port + workers - 1``: scrape them all. None: no metrics listener."""
    metrics_host: str | None = None
    """The metrics listener's address; None: ``127.0.0.1`` (the metrics are for local
    scrapers; give ``0.0.0.0`` for a Kubernetes probe or a remote Prometheus)."""
    access_log: str | None = None
    """One line per request at the MCP path (`access_log.AccessLog`): None off, ``"-"``
    stderr, else a file path (appended to)."""
    log_format: Literal["text", "json"] = "text"
    """The access log's lines, and those of ``log_level``: ``key=value`` text or JSON."""
    log_level: str | None = None
    """The level of mcpfast's own loggers (``mcpfast.*``; ``DEBUG`` .. ``CRITICAL``), written
    to stderr; None: leave logging as the application configured it."""

    def __post_init__(self) -> None:
        if self.thread_limit < 1:  # no thread at all: every plain-def call would wait forever
            raise ValueError(f"thread_limit must be at least 1, not {self.thread_limit}")
        for name in _POSITIVE:
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be above 0, not {value}")
        if self.concurrency_queue < 0:
            raise ValueError(f"concurrency_queue must be 0 or more, not {self.concurrency_queue}")
        paths = (self.health_path, self.ready_path, self.bus_health_path)
        probes = [p for p in paths if p is not None]
        for probe in probes:
            if not probe.startswith("/") or probe == self.path:
                raise ValueError(f"a health path must start with / and not be {self.path!r}")
        if len(set(probes)) < len(probes):
            raise ValueError("health_path, ready_path and bus_health_path must differ")
        if self.log_level is not None and self.log_level.upper() not in _LEVELS:
            raise ValueError(f"log_level must be one of {', '.join(_LEVELS)}")

    @property
    def metrics_address(self) -> str:
        """Where the metrics listener binds: ``metrics_host``, else ``127.0.0.1``."""
        return self.metrics_host if self.metrics_host is not None else "127.0.0.1"

    def hosts(self, bound_host: str | None = None) -> frozenset[str] | None:
        """The ``Host`` names a listener bound to ``bound_host`` (default: ``host``) answers;
        None: any (``allowed_hosts`` has ``"*"``, or is None on a bind beyond loopback). The
        first call for a bind resolves names (`serve.endpoint_for` makes it at start-up)."""
        allowed = tuple(self.allowed_hosts) if self.allowed_hosts is not None else None
        return _hosts(allowed, self.host if bound_host is None else bound_host)

    def host_allowed(self, host_header: str | None, bound_host: str | None = None) -> bool:
        """Whether the ``Host`` header names this server (`hosts`)."""
        return host_allowed(self.hosts(bound_host), host_header)

    def origin_allowed(self, origin: str | None, host_header: str | None) -> bool:
        """Whether a browser ``Origin`` may call this server (no ``Origin``: not a browser)."""
        listed = self.allowed_hosts is not None and "*" not in self.allowed_hosts
        return origin_allowed(self.allowed_origins, origin, host_header, host_listed=listed)


@lru_cache(maxsize=16)
def _hosts(allowed: tuple[str, ...] | None, bound_host: str) -> frozenset[str] | None:
    if allowed is not None:
        return listed_hosts(allowed)
    return default_hosts(bound_host, _addresses(bound_host), _own_names())


def _addresses(host: str) -> list[str]:
    """The addresses a bind to ``host`` listens on ([] when it does not resolve)."""
    try:
        infos = socket.getaddrinfo(
            host.strip("[]") or None, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except (OSError, UnicodeError):
        return []
    return [str(info[4][0]) for info in infos]


def _own_names() -> list[str]:
    """The machine's names (host name, fully qualified name) and the addresses its host name
    resolves to (a container's or pod's own address: what a probe or scraper sends as Host)."""
    name = socket.gethostname()
    return [name, socket.getfqdn(), *_addresses(name)]
