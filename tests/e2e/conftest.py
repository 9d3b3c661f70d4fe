from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2
import pytest

import mcpfast
from mcpfast.demo import server as demo_server

from ..helpers import Wire, running


@pytest.fixture
async def demo_url() -> AsyncIterator[str]:
    async with running(demo_server) as url:
        yield url


@pytest.fixture
def served() -> mcpfast.Server:
    """The server `wire` talks to: the demo. A module whose tests need a server of their own
    overrides this fixture (and only this one)."""
    return demo_server


@pytest.fixture
async def wire(served: mcpfast.Server) -> AsyncIterator[Wire]:
    """A raw-HTTP `Wire` to `served`, on loopback with the engine under test."""
    async with running(served) as url, httpx2.AsyncClient(timeout=10) as client:
        yield Wire(client, url)


SERIAL = {
    "test_load.py": None,
    "test_load_peers.py": None,
    "test_load_notify.py": None,
    "test_load_elicit.py": None,
    "test_load_flows.py": {
        "test_ramp_and_spike_shapes",
        "test_a_weighted_mix_with_session_churn",
        "test_resumption_after_a_dropped_stream",
    },
    "test_load_distributed.py": None,
    "test_load_stream_outage.py": None,
    "test_load_compare.py": None,
    "test_load_refusals.py": None,
    "test_readme.py": {"test_the_load_lines"},
}
"""The tests that run ``mcpfast load`` (locust: several busy processes for a fixed few seconds),
by module (None: all of its tests). They need the machine to themselves, so ``make test`` runs
them (marked ``serial``) in a pytest of their own after the parallel (pytest-xdist) one."""


BUSIEST = {
    "test_soak.py": None,
    "test_slow_clients.py": {"test_a_good_client_is_served_among_slow_and_flooding_ones"},
    "test_load.py": {"test_load_against_fastmcp_skips_what_it_lacks"},
    "test_load_peers.py": {
        "test_load_pinned_to_every_revision_the_peer_speaks",
        "test_load_pinned_to_each_legacy_revision_of_the_demo_server",
    },
    "test_load_compare.py": None,
    "test_load_refusals.py": None,
}
"""The busiest serial tests (wrk, thousands of sockets, several locust runs at once, bounds on
rates and latencies), as `SERIAL` lists them: where ``make test`` runs serial tests on two
workers (``--dist loadgroup``), these are one group, so one at a time, beside lighter ones
(tests/deploy and tests/packaging mark theirs so too)."""


def _listed(item: pytest.Item, table: dict[str, set[str] | None]) -> bool:
    """Whether ``table`` lists the test (its module, with None: all of its tests)."""
    if item.path.name not in table:
        return False
    names = table[item.path.name]
    return names is None or getattr(item, "originalname", item.name) in names


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """`SERIAL`: ``serial``; `BUSIEST`: the ``busiest`` xdist group; a test parametrized by
    ``engine``: ``both_engines``. (Everything here is ``slow``: `tests.isolation` says so.)"""
    here = __file__.rsplit("/", 1)[0]
    for item in items:
        if not str(item.path).startswith(here):
            continue
        if _listed(item, SERIAL):
            item.add_marker(pytest.mark.serial)
        if _listed(item, BUSIEST):
            item.add_marker(pytest.mark.xdist_group("busiest"))
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "engine" in callspec.params:
            item.add_marker(pytest.mark.both_engines)
