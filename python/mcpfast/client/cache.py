"""The client's 2026-07-28 response cache: a result with cache hints (``ttlMs``) is kept for
that long, per client; a result reached through ``input_required`` rounds is never kept, and
``list_changed`` and ``resources/updated`` notifications empty what they name."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import msgspec

from ..protocol.methods import CHANGES


def keepable_ms(result: Any, rounds: int) -> int | None:
    """For how many milliseconds a modern result may be kept: its ``ttlMs``, when positive, for
    a complete result that took no ``input_required`` round; else None."""
    if rounds or not isinstance(result, dict):
        return None
    ttl = result.get("ttlMs", 0)
    if type(ttl) is not int or ttl <= 0 or result.get("resultType", "complete") != "complete":
        return None
    return ttl


class ResponseCache:
    """Results by method and params, each until its deadline, read on ``clock`` (seconds;
    `time.monotonic`, or a test's fake)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._entries: dict[tuple[str, str], tuple[float, Any]] = {}

    @staticmethod
    def _key(method: str, params: dict[str, Any]) -> tuple[str, str]:
        return method, msgspec.json.encode(params).decode()

    def get(self, method: str, params: dict[str, Any]) -> Any | None:
        """The kept result of this request, while fresh; else None."""
        hit = self._entries.get(self._key(method, params))
        return hit[1] if hit is not None and hit[0] > self.clock() else None

    def put(self, method: str, params: dict[str, Any], result: Any, rounds: int) -> None:
        """Keep a modern result if `keepable_ms` allows it."""
        ttl = keepable_ms(result, rounds)
        if ttl is not None:
            self._entries[self._key(method, params)] = (self.clock() + ttl / 1000, result)

    def invalidate(self, method: str | None = None) -> None:
        """Forget kept results (of one method, or all)."""
        self._entries = {
            k: v for k, v in self._entries.items() if method is not None and k[0] != method
        }

    def invalidate_resource(self, uri: str) -> None:
        """Forget the kept ``resources/read`` of ``uri``."""
        self._entries.pop(self._key("resources/read", {"uri": uri}), None)

    def heard(self, method: str, params: dict[str, Any]) -> None:
        """Empty what a server notification says is stale: a ``list_changed`` its list's, a
        ``resources/updated`` the read of its uri."""
        for cached in CHANGES.get(method, ()):
            self.invalidate(cached)
        if method == "notifications/resources/updated" and isinstance(params.get("uri"), str):
            self.invalidate_resource(params["uri"])
