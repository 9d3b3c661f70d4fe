"""The engine's own metrics through the real stack: open connections (native) or HTTP exchanges
in flight (ASGI) and SSE streams, with both engines; bus publish and replay latency."""

from __future__ import annotations

from collections.abc import Callable

import httpx2
import pytest
import trio

import mcpfast
from mcpfast.client import EraCache
from mcpfast.telemetry import metrics

from ..helpers import Wire, running
from .conftest import Recorded

LEGACY = "2025-11-25"
WAIT = 10.0


def _server() -> mcpfast.Server:
    server = mcpfast.Server("metered", "1.0")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @server.tool()
    async def touch(uri: str) -> str:
        """Publishes a resource update."""
        await server.resource_updated(uri)
        return uri

    return server


def _value(otel: Recorded, metric: str, engine: str) -> int:
    """The sum of an UpDownCounter for ``engine`` (0 before anything was recorded)."""
    points = [p for p in otel.points(metric) if p.attributes.get(metrics.ENGINE) == engine]
    return sum(int(p.value) for p in points)


async def _until(condition: Callable[[], bool]) -> None:
    """Wait (bounded by the caller) until ``condition`` holds: the server notices a client
    that went away on its own time."""
    while not condition():
        await trio.sleep(0.02)


@pytest.mark.parametrize(
    ("engine", "kind", "counter"),
    [("native", "native", metrics.CONNECTIONS), ("hypercorn", "asgi", metrics.EXCHANGES)],
)
async def test_open_connections_or_exchanges_and_streams_are_counted(
    otel: Recorded, engine: str, kind: str, counter: str
) -> None:
    async with running(_server(), engine=engine) as url:
        client_cm = mcpfast.connect(url, "legacy", era_cache=EraCache(), timeout=WAIT)
        async with client_cm as client:  # its GET stream is open while it is connected
            with trio.fail_after(WAIT):
                await client.call_tool("add", {"a": 1, "b": 2})
                await _until(lambda: _value(otel, metrics.STREAMS, kind) == 1)
                assert _value(otel, counter, kind) >= 1
        with trio.fail_after(WAIT):
            await _until(lambda: _value(otel, metrics.STREAMS, kind) == 0)
            await _until(lambda: _value(otel, counter, kind) == 0)
    other = "asgi" if kind == "native" else "native"
    assert not [p for p in otel.points(metrics.STREAMS) if p.attributes[metrics.ENGINE] == other]


async def test_nothing_is_counted_without_an_sdk() -> None:
    assert mcpfast.telemetry.current() is None
    server = _server()
    async with running(server) as url, mcpfast.connect(url, "legacy", era_cache=EraCache()) as c:
        with trio.fail_after(WAIT):
            await c.call_tool("touch", {"uri": "test://a"})
    assert server.bus_timer is None


def _bus_points(otel: Recorded, operation: str) -> list[int]:
    return [
        p.count
        for p in otel.points(metrics.BUS_DURATION)
        if p.attributes[metrics.BUS_OPERATION] == operation
        and p.attributes[metrics.BUS_KIND] == "local"
    ]


async def test_bus_publish_and_replay_latency(otel: Recorded) -> None:
    server = _server()
    async with running(server) as url, httpx2.AsyncClient(timeout=WAIT) as http:
        wire = Wire(http, url)
        with trio.fail_after(WAIT):
            session, _ = await wire.initialize(LEGACY)
            reply = await wire.legacy(
                "tools/call",
                {"name": "touch", "arguments": {"uri": "test://a"}},
                session=session,
                version=LEGACY,
            )
            assert reply.status == 200
            assert _bus_points(otel, "publish") == [1]

            @server.tool()
            def later() -> str:
                """Registered while serving: a list change, published in the background."""
                return "later"

            await _until(lambda: _bus_points(otel, "publish") == [2])
            headers = {
                "accept": "text/event-stream",
                "mcp-session-id": session,
                "mcp-protocol-version": LEGACY,
                "last-event-id": "0-0_resumed",
            }
            async with http.stream("GET", url, headers=headers) as stream:
                assert stream.status_code == 200
                await _until(lambda: _bus_points(otel, "replay") == [1])
