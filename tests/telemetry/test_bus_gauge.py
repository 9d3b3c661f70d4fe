"""The bus's health as a metric, both engines: ``mcpfast.bus.available`` is 1 while the Redis
bus serves and 0 while it is away (the worker stays ready, degraded), with the bus's kind."""

from __future__ import annotations

import httpx2
import pytest

import mcpfast
from mcpfast.telemetry.metrics import BUS_AVAILABLE, BUS_KIND

from ..e2e.test_health import _status_becomes
from ..helpers import running
from ..redis_server import RedisServer
from .conftest import Recorded


def _gauge(otel: Recorded) -> list[tuple[int, str]]:
    return [(p.value, p.attributes[BUS_KIND]) for p in otel.points(BUS_AVAILABLE)]


@pytest.mark.parametrize("engine", ["hypercorn", "native"])
async def test_the_bus_gauge_follows_redis(
    otel: Recorded, engine: str, redis_server: RedisServer
) -> None:
    server = mcpfast.Server("gauged")
    async with running(server, engine=engine, bus=redis_server.url) as url:
        base = url.removesuffix("/mcp")
        async with httpx2.AsyncClient(timeout=5) as http:
            await _status_becomes(http, base + "/busz", 200)
            assert _gauge(otel) == [(1, "redis")]
            redis_server.stop()
            await _status_becomes(http, base + "/busz", 503)
            assert _gauge(otel) == [(0, "redis")]
            assert (await http.get(base + "/readyz")).status_code == 200
            redis_server.start()
            await _status_becomes(http, base + "/busz", 200)
            assert _gauge(otel) == [(1, "redis")]
