"""`Config.scheduling`: while `mcpfast.serve` runs, Trio runs each batch of ready tasks in the
order they became ready (``fifo``, the default) or in Trio's own (``trio``: each batch forward
or reversed at random); Trio's order is back once it returns. In a process of its own: under
pytest-trio, Hypothesis' deterministic scheduling replaces Trio's order."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import json, sys
from functools import partial
import trio, mcpfast
from trio._core import _run

TASKS, ROUNDS = 6, 20

async def in_order() -> bool:
    # Tasks that take turns at checkpoints: the same order every round, or not.
    seen = []
    async def one(i):
        for _ in range(ROUNDS):
            seen.append(i)
            await trio.lowlevel.checkpoint()
    async with trio.open_nursery() as nursery:
        for i in range(TASKS):
            nursery.start_soon(one, i)
    return len({tuple(seen[k : k + TASKS]) for k in range(0, len(seen), TASKS)}) == 1

async def main(engine):
    coin = _run._r
    out = {"before": await in_order()}
    for scheduling in ("fifo", "trio"):
        async with trio.open_nursery() as nursery:
            await nursery.start(partial(
                mcpfast.serve, mcpfast.Server("t", "1"), port=0, engine=engine,
                scheduling=scheduling,
            ))
            out[scheduling] = await in_order()
            nursery.cancel_scope.cancel()
        out[scheduling + " after"] = await in_order()
    out["coin restored"] = _run._r is coin
    print(json.dumps(out))

trio.run(main, sys.argv[1])
"""


@pytest.mark.parametrize("engine", ["native", "hypercorn"])
def test_batches_run_in_order_while_serving_and_in_trios_order_otherwise(engine: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, engine], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    # Trio's order keeps one order through 20 rounds with a chance of 2^-19.
    assert seen == {
        "before": False,
        "fifo": True,
        "fifo after": False,
        "trio": False,
        "trio after": False,
        "coin restored": True,
    }
