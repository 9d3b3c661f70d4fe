"""Redis as production runs it: an mcpfast server on a ``redis+sentinel://`` bus follows a
failover (``SENTINEL FAILOVER``, or the primary killed) in the middle of a run, with a legacy
client writing and hearing on its GET stream and a modern client listening; each run prints how
long writes and notifications stopped."""

from __future__ import annotations

import base64
import itertools
import re
import time
from pathlib import Path
from typing import Any

import pytest
import trio

import mcpfast
from mcpfast.client import Client, EraCache

from ..e2e.processes import free_port, mcpfast_command, server_process
from .sentinel import SentinelGroup, cli

pytestmark = pytest.mark.slow

KEYS = "k1:" + base64.urlsafe_b64encode(b"sentinel-test-key-32-bytes-ok!!!").decode()
DOC = "test://doc"
STEADY = 3
"""Notifications each stream hears before the fault, and after the first write that follows it."""
AFTER = 2.0
"""Seconds after the sentinels name the new primary within which the bus must have followed
(`redis_connect.WATCH_SECONDS`, a reconnect): later writes must all reach it."""
_ENTRY = re.compile(r"\d+-\d+\Z")
BOUND = 45.0
"""The bound of a whole run (the machine is shared)."""

SERVER = """
import mcpfast

server = mcpfast.Server("failover")


@server.tool()
async def touch(uri: str) -> str:
    await server.resource_updated(uri)
    return "touched"


@server.resource("test://doc")
def doc() -> str:
    return "doc"
"""


class Run:
    """When each write succeeded and each stream heard an update (monotonic seconds)."""

    def __init__(self) -> None:
        self.writes: list[float] = []
        self.sent: list[float] = []
        """When each acknowledged write was sent (Unix seconds, as Redis's entry ids)."""
        self.heard: dict[str, list[float]] = {"GET stream": [], "listen": []}
        self.fault = float("inf")
        self.progress = trio.Event()

    def hear(self, stream: str) -> None:
        self.heard[stream].append(time.monotonic())
        self.progress.set()

    def settled(self, since: float) -> bool:
        """Each stream heard `STEADY` updates since ``since``."""
        return all(sum(t > since for t in times) >= STEADY for times in self.heard.values())

    def recovered(self) -> bool:
        after = [t for t in self.writes if t > self.fault]
        return bool(after) and self.settled(after[0])

    def figures(self) -> dict[str, float]:
        """The longest pause of the writes and of each stream, in seconds."""
        series = {"writes": self.writes, **self.heard}
        return {name: max(b - a for a, b in itertools.pairwise(t)) for name, t in series.items()}


async def _write(client: Client, run: Run) -> None:
    """``touch`` every 50 ms, each call bounded; a refusal is only counted out."""
    while True:
        with trio.move_on_after(5):
            try:
                sent = time.time()
                await client.call_tool("touch", {"uri": DOC})
                run.writes.append(time.monotonic())
                run.sent.append(sent)
            except Exception:  # a 503 "retry later" while the primary changes
                pass
        await trio.sleep(0.05)


async def _listen(client: Client, run: Run) -> None:
    """A ``subscriptions/listen`` stream, opened again whenever it ends or is refused."""
    while True:
        try:
            async with client.listen(resource_uris=[DOC]) as events:
                async for event in events:
                    if event.get("method") == "notifications/resources/updated":
                        run.hear("listen")
        except Exception:  # refused while the bus reconnects
            pass
        await trio.sleep(0.05)


def _logged(port: int, since: float) -> int:
    """The events published since ``since`` (Unix seconds) in the log of Redis on ``port``."""
    reply = cli(port, "XRANGE", "mcpfast:log", str(int(since * 1000)), "+")
    return sum(1 for line in reply.splitlines() if _ENTRY.match(line))


async def _until(run: Run, done: Any) -> None:
    while not done():
        run.progress = trio.Event()
        with trio.move_on_after(0.5):
            await run.progress.wait()


@pytest.mark.parametrize("fault", ["failover", "kill"])
@pytest.mark.parametrize("engine", ["hypercorn", "native"])
async def test_a_server_on_sentinel_follows_a_failover_mid_run(
    tmp_path: Path, sentinel_group: SentinelGroup, engine: str, fault: str
) -> None:
    target = tmp_path / "failover_server.py"
    target.write_text(SERVER)
    port = free_port()
    argv = mcpfast_command(
        "serve", f"{target}:server", "--port", str(port), "--engine", engine,
        "--bus", sentinel_group.url,
    )  # fmt: skip
    run = Run()

    def heard(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/resources/updated":
            run.hear("GET stream")

    async with (
        server_process(argv, port, {"MCPFAST_KEYS": KEYS}) as url,
        mcpfast.connect(url, "legacy", on_notification=heard, era_cache=EraCache()) as legacy,
        mcpfast.connect(url, "modern", era_cache=EraCache()) as modern,
    ):
        await legacy.subscribe(DOC)
        with trio.fail_after(BOUND):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_listen, modern, run)
                nursery.start_soon(_write, legacy, run)
                await _until(run, lambda: run.settled(0.0))
                old = sentinel_group.primary()
                if fault == "failover":
                    await trio.to_thread.run_sync(sentinel_group.failover)
                else:
                    sentinel_group.processes.kill(old)
                while await trio.to_thread.run_sync(sentinel_group.primary) == old:
                    await trio.sleep(0.05)
                run.fault = time.monotonic()  # the sentinels name the new primary from here
                switched = time.time()
                await _until(run, run.recovered)
                await trio.sleep(max(0.0, switched + AFTER + 1 - time.time()))
                nursery.cancel_scope.cancel()
    figures = run.figures()
    primary = sentinel_group.primary()
    print(
        f"\nsentinel {fault} ({engine}): "
        + ", ".join(f"{name} stopped {seconds:.2f} s" for name, seconds in figures.items())
        + f"; {len(run.sent)} writes acknowledged, {_logged(primary, 0.0)} on the new primary"
    )
    assert figures["writes"] < 10, figures
    # every write acknowledged once the bus had time to follow is on the new primary
    since = switched + AFTER
    assert _logged(primary, since) >= sum(sent >= since for sent in run.sent) > 0
    assert max(figures.values()) < 15, figures
