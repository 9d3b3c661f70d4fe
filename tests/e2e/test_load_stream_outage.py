"""``mcpfast load``'s stream users through a Redis outage (issue 26, failure 2), in both eras,
on the engine under test: the demo server on a real Redis bus, two `ListenUser`s holding their
streams past the outage. While Redis is away each user's attempts are refused (503,
``Retry-After: 1``) and it waits as the client does between them (`protocol.backoff`), so the
refusals are a few per second of outage, not a busy loop; once Redis is back the streams open
again."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import trio

from ..helpers import ENGINE
from ..redis_server import RedisServer
from .processes import free_port, mcpfast_command, server_process
from .test_load import Run, _load, _require

USERS = 2
OUTAGE = 5.0
"""Seconds Redis is away (more than 5 attempts' worth of the client's old 1 s apart)."""
AFTER = 14
"""Seconds the run goes on after the outage: the waits grow to 10 s (`protocol.backoff.CAP`)."""


def _topics(redis: RedisServer) -> int:
    """How many bus topics Redis has subscribers for (one a stream follows, at least)."""
    with socket.create_connection(("127.0.0.1", redis.port), timeout=5) as sock:
        sock.sendall(b"PUBSUB CHANNELS *topic:*\r\n")
        head = sock.recv(4096).split(b"\r\n", 1)[0]
    return int(head[1:]) if head.startswith(b"*") else 0


async def _following(redis: RedisServer) -> None:
    """Wait (at most 30 s) until a stream of the run follows a topic on the bus."""
    with trio.fail_after(30):
        while not _topics(redis):
            await trio.sleep(0.1)


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_stream_users_wait_out_a_redis_outage(
    era: str, tmp_path: Path, redis_server: RedisServer
) -> None:
    _require("locust", "the load extra")
    port = free_port()
    argv = mcpfast_command(
        "serve", "--port", str(port), "--engine", ENGINE, "--bus", redis_server.url
    )
    extra = ("--user-class", "listen", "--era", era, "-u", str(USERS), "--stream-seconds", "60")
    runs: list[Run] = []

    async def load(url: str) -> None:
        seconds = int(OUTAGE) + AFTER + 2
        runs.append(await _load(url, tmp_path, *extra, seconds=seconds, expect=1))

    async with server_process(argv, port) as url, trio.open_nursery() as nursery:
        nursery.start_soon(load, url)
        await _following(redis_server)
        await trio.sleep(1)  # every user's stream is open
        redis_server.stop()
        await trio.sleep(OUTAGE)
        redis_server.start()
    (run,) = runs
    name = "subscriptions/listen" if era == "modern" else "legacy GET stream"
    row = run.stats()[name]
    opened = int(row["Request Count"]) - int(row["Failure Count"])
    assert opened >= 2 * USERS, run.output  # each user's stream, and again after the outage
    refusals = int(run.stats()["Aggregated"]["Failure Count"])
    assert 0 < refusals <= USERS * (OUTAGE + 3), run.output  # Retry-After kept: no busy loop
    assert run.stats()["Aggregated"]["Request Count"]
