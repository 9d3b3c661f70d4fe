from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from mcpfast.demo import server as demo_server

from ..helpers import Wire, running


@pytest.fixture
async def demo_url() -> AsyncIterator[str]:
    async with running(demo_server) as url:
        yield url


@pytest.fixture
async def wire(demo_url: str) -> AsyncIterator[Wire]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield Wire(client, demo_url)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything here needs sockets, processes or real time: ``slow``."""
    here = __file__.rsplit("/", 1)[0]
    for item in items:
        if str(item.path).startswith(here):
            item.add_marker(pytest.mark.slow)
