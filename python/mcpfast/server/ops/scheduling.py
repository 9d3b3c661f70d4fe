"""Trio's run order made first-in first-out while a server runs (`Config.scheduling`).

Trio runs the tasks that became ready during one pass of its loop as a batch, in the order they
became ready or in the reverse, by a coin tossed per batch (``trio._core._run``, which calls it
"the worst of both worlds", keeping the choice open; python-trio/trio#32), so that no program
comes to rely on an order. A server under load is such a batch: one task per busy connection.
A connection served first in one batch may be served last in the next, so a request waits
anywhere from nothing to two whole batches; in order, about one. At 64 busy connections on one
core that was the native engine's p99 against uvicorn's (asyncio runs its callbacks in order):
``benches/RESULTS.md``, "The p99 at 64 connections".

`fifo` runs every batch in order, from entry to exit: the coin (a private `random.Random`) is
swapped for one that always lands the same way, and put back when the last user leaves. Any
correct Trio program is correct in either order; this one only takes the randomness away.
Where the Trio in use has no such coin, nothing changes and a warning says so once.
"""

from __future__ import annotations

import contextlib
import logging
import random
from collections.abc import Iterator

from trio._core import _run

log = logging.getLogger("mcpfast.serve")


class _InOrder(random.Random):
    """Trio's coin, landing on "reverse" every time: Trio pops a batch from its end, so a
    reversed batch runs in the order its tasks became ready. Its other draws (Trio's
    `MockClock` offset, the shuffle of deterministic test scheduling) stay random."""

    def random(self) -> float:
        return 0.0  # Trio reverses a batch when its draw is below 0.5

    def uniform(self, a: float, b: float) -> float:
        return a + (b - a) * super().random()


_users = 0
_trios_coin = random.Random()  # Trio's, while a `fifo` block runs
_warned = False


@contextlib.contextmanager
def fifo() -> Iterator[None]:
    """Trio's batches run in order inside the block, for the whole process (nested and
    concurrent blocks share it; the last one out restores Trio's own order). On a Trio without
    the coin, Trio's own order, with one warning per process."""
    global _users, _trios_coin, _warned
    if _users == 0:
        coin = getattr(_run, "_r", None)
        if not isinstance(coin, random.Random):
            if not _warned:
                _warned = True
                log.warning("this Trio has no batch-order coin: tasks run in Trio's own order")
            yield
            return
        _trios_coin = coin
        _run._r = _InOrder()
    _users += 1
    try:
        yield
    finally:
        _users -= 1
        if _users == 0:
            _run._r = _trios_coin
