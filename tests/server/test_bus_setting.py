"""`Server(bus=...)` is a setting: the bus an endpoint serves with is the one given, else the
in-process one the first endpoint of the server makes and binds into it (every later endpoint
of that server serves with it too), or the shared one `Config.bus` names."""

from __future__ import annotations

import pytest

import mcpfast
from mcpfast.server.config import Config
from mcpfast.server.core.endpoint import Endpoint
from mcpfast.server.serve import endpoint_for
from mcpfast.server.state.local_bus import LocalBus
from mcpfast.server.state.redis_bus import RedisBus

from ..helpers import TEST_KEYS
from .conftest import build, serving


async def test_a_server_has_no_bus_until_an_endpoint_serves_it() -> None:
    server = mcpfast.Server("unserved")
    assert server.bus is None
    await server.resource_updated("file:///a")  # nobody listens: it goes nowhere
    assert await server.publish("list/tools", {"method": "m"}) == ""
    assert server.bus is None


async def test_every_endpoint_of_a_server_serves_with_the_bus_the_first_made() -> None:
    server = build()
    first = Endpoint(server, Config(), TEST_KEYS)
    assert isinstance(first.runtime.bus, LocalBus)
    assert server.bus is first.runtime.bus
    second = Endpoint(server, Config(), TEST_KEYS)
    assert second.runtime.bus is first.runtime.bus


async def test_a_bus_given_is_the_one_served_with() -> None:
    bus = LocalBus(max_sessions=8)
    server = mcpfast.Server("given", bus=bus)
    async with serving(server) as wire:
        assert wire.endpoint.runtime.bus is bus
        assert server.bus is bus
        assert await server.publish("list/tools", {"method": "m"}) == await bus.head()


@pytest.mark.parametrize("given", [None, LocalBus()], ids=["default", "in-process"])
def test_config_bus_takes_the_place_of_an_in_process_one(given: LocalBus | None) -> None:
    server = mcpfast.Server("shared", bus=given)
    endpoint = endpoint_for(server, Config(bus="redis://127.0.0.1:1"), TEST_KEYS)
    assert isinstance(server.bus, RedisBus)
    assert endpoint.runtime.bus is server.bus


def test_config_bus_is_refused_beside_a_shared_bus_of_the_server() -> None:
    server = mcpfast.Server("two buses", bus=RedisBus("redis://127.0.0.1:1"))
    with pytest.raises(ValueError, match="a bus of its own"):
        endpoint_for(server, Config(bus="redis://127.0.0.1:2"), TEST_KEYS)
