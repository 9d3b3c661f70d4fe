"""Which Redis a bus URL names, and the coredis client `RedisBus` talks to it with.

* ``redis://``, ``rediss://``, ``unix://``: one Redis (coredis' URL form).
* ``redis+sentinel://[[user]:password@]host:port[,host:port…]/service[/db]`` (the form of the
  redis-sentinel-url package): the primary the sentinels name for ``service``, asked at every
  new connection and every `WATCH_SECONDS`; when they name another node every connection to
  the old one is closed, so writes, pub/sub and streams follow a failover within a reconnect.
  The credentials are the primary's; the sentinels are asked without. ``rediss+sentinel://``
  speaks TLS to the primary.
* ``redis+cluster://[[user]:password@]host:port[,host:port…]`` (``rediss+cluster://`` with
  TLS): a Redis Cluster found from these startup nodes; every script's keys share a slot
  (`redis_scripts`).
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import unquote

import anyio
import coredis
import coredis.exceptions
import trio
from coredis.connection import TCPLocation
from coredis.pool import SentinelConnectionPool
from coredis.retry import NoRetryPolicy

Client = coredis.Redis[bytes] | coredis.RedisCluster[bytes]

FAILURES = (coredis.exceptions.RedisError, TimeoutError, OSError, anyio.ClosedResourceError)
"""What coredis raises when Redis is away, slow or refusing (all become `BusUnavailable`); a
connection closed under it (by a reconnect, or when cancelled) is anyio's ClosedResourceError."""

WATCH_SECONDS = 0.25
"""How often the sentinels are asked which node is the primary."""


class Nodes:
    """The parts of a Sentinel or Cluster URL: its hosts, credentials and path.

    Raises:
        ValueError: no host, or a host without a port.
    """

    __slots__ = ("hosts", "password", "path", "tls", "username")

    def __init__(self, url: str) -> None:
        scheme, _, rest = url.partition("://")
        self.tls = scheme.lower().startswith("rediss")
        netloc, _, self.path = rest.partition("/")
        userinfo, _, hosts = netloc.rpartition("@")
        user, _, password = userinfo.partition(":")
        self.username = unquote(user) or None
        self.password = unquote(password) or None
        self.hosts = [_location(host) for host in hosts.split(",") if host]
        if not self.hosts:
            raise ValueError(f"no host:port in {url!r}")


def _location(text: str) -> TCPLocation:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"{text!r} is not host:port")
    return TCPLocation(host.strip("[]"), int(port))


@asynccontextmanager
async def connected(url: str, timeout: float) -> AsyncIterator[Client]:
    """The client for ``url``, open while inside. It does not retry (every call of the bus is
    bounded by ``timeout`` and fails fast), except on a Cluster: coredis' own retries there
    (redirections, a node's failover) stay within the bus's bound.

    Raises:
        ValueError: a URL coredis does not read, or a Sentinel URL without a service name.
    """
    scheme = url.partition("://")[0].lower()
    limits: dict[str, Any] = {"stream_timeout": timeout, "connect_timeout": timeout}
    client: Client
    if scheme.endswith("+sentinel"):
        async with _primary(Nodes(url), limits) as client:
            yield client
        return
    if scheme.endswith("+cluster"):
        nodes = Nodes(url)
        client = coredis.RedisCluster(
            startup_nodes=nodes.hosts,
            username=nodes.username,
            password=nodes.password,
            ssl=nodes.tls,
            **limits,
        )
    else:
        client = coredis.Redis.from_url(url, retry_policy=NoRetryPolicy(), **limits)
    async with client:
        yield client


@asynccontextmanager
async def _primary(nodes: Nodes, limits: dict[str, Any]) -> AsyncIterator[Client]:
    service, _, db = nodes.path.partition("/")
    if not service:
        raise ValueError("a redis+sentinel:// URL names its service: …/mymaster")
    sentinel = coredis.Sentinel(nodes.hosts, sentinel_kwargs=dict(limits), **limits)
    async with sentinel:
        primary = sentinel.primary_for(
            service,
            db=int(db or 0),
            username=nodes.username,
            password=nodes.password,
            ssl_context=ssl.create_default_context() if nodes.tls else None,
        )
        async with primary, trio.open_nursery() as nursery:
            nursery.start_soon(_watch, primary.connection_pool, limits["stream_timeout"])
            try:
                yield primary
            finally:
                nursery.cancel_scope.cancel()


async def _watch(pool: object, timeout: float) -> None:
    """Ask the sentinels for the primary every `WATCH_SECONDS`: when they name another node,
    coredis' pool closes every connection to the old one (pub/sub too), so the next ones go to
    the new primary. Without this, connections to a primary demoted by ``SENTINEL FAILOVER``
    go on writing there (writes the new primary never sees) until Sentinel reconfigures it."""
    assert isinstance(pool, SentinelConnectionPool)
    while True:
        await trio.sleep(WATCH_SECONDS)
        with trio.move_on_after(timeout):
            try:
                await pool.get_primary_location()
            except FAILURES:
                pass  # no sentinel answered: the connections stay as they are
