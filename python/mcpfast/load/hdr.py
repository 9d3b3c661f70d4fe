"""Latency histograms of the fast engine, HdrHistogram's log-linear buckets (three significant
digits: every value in microseconds is kept within 1/1024 of itself), merged exactly across
processes by adding bucket counts: percentiles of a distributed run are those of all its
requests, never an average of per-process percentiles.

`bucket` is the one rule of the buckets; ``rust/loadgen.rs`` (`bucket`) follows it to the bit, so
the Rust engine's and the Trio twin's histograms add up. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

__all__ = ["SUB_BUCKETS", "Histogram", "bucket", "highest"]

SUB_BUCKETS = 2048
"""Values below this are their own bucket; above, each power of two has 1024 buckets."""
_HALF = SUB_BUCKETS // 2
_BITS = SUB_BUCKETS.bit_length() - 1


def bucket(micros: int) -> int:
    """The bucket of a value (microseconds, >= 0)."""
    if micros < SUB_BUCKETS:
        return max(micros, 0)
    shift = micros.bit_length() - _BITS
    return SUB_BUCKETS + (shift - 1) * _HALF + ((micros >> shift) - _HALF)


def highest(index: int) -> int:
    """The highest value (microseconds) that falls in bucket ``index``."""
    if index < SUB_BUCKETS:
        return index
    shift = (index - SUB_BUCKETS) // _HALF + 1
    mantissa = (index - SUB_BUCKETS) % _HALF + _HALF
    return ((mantissa + 1) << shift) - 1


class Histogram:
    """Counts per bucket, with the exact sum and maximum for the mean and the max."""

    __slots__ = ("counts", "max_us", "sum_us")

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.sum_us = 0
        self.max_us = 0

    @classmethod
    def of(cls, counts: Mapping[int, int], sum_us: int, max_us: int) -> Histogram:
        """A histogram of these bucket counts (e.g. an engine's, or a document's)."""
        made = cls()
        made.counts = {int(k): int(v) for k, v in counts.items() if v}
        made.sum_us, made.max_us = int(sum_us), int(max_us)
        return made

    def record(self, micros: int) -> None:
        index = bucket(micros)
        self.counts[index] = self.counts.get(index, 0) + 1
        self.sum_us += micros
        self.max_us = max(self.max_us, micros)

    def merge(self, others: Iterable[Histogram]) -> Histogram:
        """This histogram with ``others`` added in (exact)."""
        for other in others:
            for index, count in other.counts.items():
                self.counts[index] = self.counts.get(index, 0) + count
            self.sum_us += other.sum_us
            self.max_us = max(self.max_us, other.max_us)
        return self

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def percentile(self, q: float) -> float | None:
        """The ``q``-th percentile in milliseconds (the highest value of its bucket, capped at
        the maximum seen); None when empty."""
        total = self.total
        if not total:
            return None
        rank = max(1, math.ceil(q / 100.0 * total))
        seen = 0
        for index in sorted(self.counts):
            seen += self.counts[index]
            if seen >= rank:
                return min(highest(index), self.max_us) / 1000.0
        return self.max_us / 1000.0  # pragma: no cover - rank <= total

    def mean(self) -> float:
        """The mean in milliseconds (0 when empty)."""
        total = self.total
        return self.sum_us / total / 1000.0 if total else 0.0

    def document(self) -> dict[str, object]:
        """Its JSON form (bucket indices as strings), which `of` reads back."""
        return {
            "counts": {str(k): v for k, v in sorted(self.counts.items())},
            "sum_us": self.sum_us,
            "max_us": self.max_us,
        }
