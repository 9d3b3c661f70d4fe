"""Rate limits shared through a real Redis (issue 27): a limit of N admits exactly N across
``mcpfast serve --workers 2`` and across two ``mcpfast serve`` processes on one Redis (one
script per request, Redis's clock); with Redis stopped, ``--rate-limit-failure open`` admits and
``closed`` refuses 503 with ``Retry-After`` before anything runs."""

from __future__ import annotations

from collections import Counter
from contextlib import AsyncExitStack

import httpx2
import pytest
import trio

import mcpfast
from mcpfast.jsonrpc import INTERNAL_ERROR, RATE_LIMITED

from ..helpers import ENGINE, Wire, running
from ..redis_server import RedisServer
from .processes import free_port, mcpfast_command, server_process

N = 10
LIMIT = f"{N}/h"  # no token refills while a test runs (one each 6 minutes)
FRESH = httpx2.Limits(max_keepalive_connections=0)
"""A new connection per request: the kernel spreads them over the workers (SO_REUSEPORT)."""


async def _count(urls: list[str], requests: int) -> Counter[int]:
    """Send ``requests`` modern ``tools/list`` requests over the ``urls`` in turn, each on a
    connection of its own; the HTTP statuses counted."""
    statuses: Counter[int] = Counter()
    async with httpx2.AsyncClient(timeout=10, limits=FRESH) as http:
        for i in range(requests):
            wire = Wire(http, urls[i % len(urls)])
            reply = await wire.modern("tools/list")
            statuses[reply.status] += 1
            if reply.status == 429:
                assert reply.error["code"] == RATE_LIMITED
    return statuses


@pytest.mark.timeout(120)
async def test_two_workers_share_one_limit(redis_url: str) -> None:
    port = free_port()
    argv = mcpfast_command(
        "serve", "--port", str(port), "--engine", ENGINE, "--workers", "2", "--bus", redis_url,
        "--rate-limit", LIMIT,
    )  # fmt: skip
    async with server_process(argv, port) as url:
        assert await _count([url], 3 * N) == {200: N, 429: 2 * N}


@pytest.mark.timeout(120)
async def test_two_processes_share_one_limit(redis_url: str) -> None:
    """The second process takes its limit from the environment (``MCPFAST_RATE_LIMIT``)."""
    async with AsyncExitStack() as stack:
        urls = []
        for flags, env in (
            (["--rate-limit", LIMIT], {}),
            ([], {"MCPFAST_RATE_LIMIT": LIMIT}),
        ):
            port = free_port()
            argv = mcpfast_command(
                "serve", "--port", str(port), "--engine", ENGINE, "--bus", redis_url, *flags
            )
            urls.append(await stack.enter_async_context(server_process(argv, port, env)))
        assert await _count(urls, 3 * N) == {200: N, 429: 2 * N}


@pytest.mark.parametrize("failure", ["open", "closed"])
async def test_redis_away(redis_server: RedisServer, failure: str) -> None:
    server = mcpfast.Server("shared", rate_limit=LIMIT)
    async with (
        running(server, bus=redis_server.url, rate_limit_failure=failure) as url,
        httpx2.AsyncClient(timeout=10) as http,
    ):
        wire = Wire(http, url)
        assert (await wire.modern("tools/list")).status == 200
        redis_server.stop()
        with trio.fail_after(10):
            reply = await wire.modern("tools/list")
        if failure == "open":
            assert reply.status == 200 and "tools" in reply.result
        else:
            assert reply.status == 503 and int(reply.headers["retry-after"]) >= 1
            assert reply.error["code"] == INTERNAL_ERROR
