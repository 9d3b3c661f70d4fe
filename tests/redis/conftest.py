from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack

import pytest

from mcpfast.server.state.local_bus import LocalBus
from mcpfast.server.state.redis_bus import RedisBus

from .sentinel import redis_cluster, redis_cluster_session, sentinel_group  # noqa: F401

Pair = tuple[LocalBus | RedisBus, LocalBus | RedisBus]


@pytest.fixture(
    params=[
        "local",
        pytest.param("redis", marks=pytest.mark.slow),
        pytest.param("cluster", marks=pytest.mark.slow),
    ]
)
def bus_url(request: pytest.FixtureRequest) -> str | None:
    """None for `LocalBus`, else the URL of an empty Redis, or of an empty Redis Cluster."""
    if request.param == "local":
        return None
    url: str = request.getfixturevalue("redis_url" if request.param == "redis" else "redis_cluster")
    return url


@pytest.fixture
async def pair(bus_url: str | None) -> AsyncIterator[Pair]:
    """Two workers on one bus: the same `LocalBus` twice (one process), or two `RedisBus`
    instances on one Redis (what one publishes, records or saves, the other sees)."""
    async with AsyncExitStack() as stack:
        if bus_url is None:
            local = LocalBus()
            await stack.enter_async_context(local.attached())
            yield local, local
        else:
            first, second = RedisBus(bus_url), RedisBus(bus_url)
            await stack.enter_async_context(first.attached())
            await stack.enter_async_context(second.attached())
            yield first, second
