"""Rate-limit buckets kept in one worker (`LocalBus.take_tokens`): `protocol.limits.take` over a
bounded table, on Trio's clock.

The table holds at most ``max_buckets``: past it, the least recently used bucket is forgotten
(a caller it belonged to starts again full), so a client inventing principals (addresses, tool
names) cannot grow it without bound."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import trio

from ...protocol.limits import Bucket, Rate, Verdict, take


class LocalBuckets:
    """Token buckets by key, in this process, at most ``max_buckets`` of them."""

    def __init__(self, max_buckets: int = 100_000) -> None:
        self._buckets: OrderedDict[str, Bucket] = OrderedDict()
        self._max = max_buckets

    def take(self, keys: Sequence[str], rates: Sequence[Rate]) -> Verdict:
        """One token from each of ``keys``' buckets (under ``rates``), or none (`take`)."""
        table = self._buckets
        verdict, stored = take(rates, [table.get(key) for key in keys], trio.current_time())
        if stored:
            table.update(zip(keys, stored, strict=True))
        for key in keys:  # used, so kept longest (a refused caller stays refused)
            if key in table:
                table.move_to_end(key)
        while len(table) > self._max:
            table.popitem(last=False)
        return verdict

    def __len__(self) -> int:
        return len(self._buckets)
