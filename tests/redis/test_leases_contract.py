"""The leases and the loss check of the `Bus` contract, on `LocalBus` and on two `RedisBus`
workers sharing one Redis (the suite's, with no persistence)."""

from __future__ import annotations

import time

from .conftest import Pair


async def test_workers_that_renew_their_lease_are_alive(pair: Pair) -> None:
    one, other = pair
    await one.renew_lease()
    await other.renew_lease()
    assert await one.alive(other.worker)
    assert await other.alive(one.worker)
    assert await one.alive(one.worker)


async def test_a_session_begun_now_lost_nothing(pair: Pair) -> None:
    one, _ = pair
    assert not await one.lost(int(time.time()) + 1)


async def test_neither_bus_keeps_its_data_across_a_restart(pair: Pair) -> None:
    """A `LocalBus` never does; the suite's Redis runs with ``--save "" --appendonly no`` (a
    Cluster, whose ``CONFIG GET`` answers per node, leaves it unknown)."""
    for bus in pair:
        assert bus.durable() is not True
