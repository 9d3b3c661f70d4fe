"""The client's response cache as a table: what may be kept, for how long, and what empties it."""

from __future__ import annotations

from typing import Any

import pytest

from mcpfast.client.cache import ResponseCache, keepable_ms


@pytest.mark.parametrize(
    ("result", "rounds", "expected"),
    [
        ({"ttlMs": 500}, 0, 500),
        ({"ttlMs": 500, "resultType": "complete"}, 0, 500),
        ({"ttlMs": 500}, 1, None),
        ({"ttlMs": 0}, 0, None),
        ({"ttlMs": -5}, 0, None),
        ({"ttlMs": True}, 0, None),
        ({"ttlMs": 1.5}, 0, None),
        ({"ttlMs": 500, "resultType": "task"}, 0, None),
        ({}, 0, None),
        ([], 0, None),
    ],
)
def test_keepable_ms(result: Any, rounds: int, expected: int | None) -> None:
    assert keepable_ms(result, rounds) == expected


def test_a_result_is_kept_for_its_ttl_ms() -> None:
    now = 100.0
    cache = ResponseCache(lambda: now)
    kept = {"ttlMs": 1500}
    cache.put("tools/list", {}, kept, 0)
    cache.put("tools/list", {"cursor": "c"}, {"ttlMs": 1500}, 1)  # after a round: never kept
    now += 1.499
    assert cache.get("tools/list", {}) is kept
    assert cache.get("tools/list", {"cursor": "c"}) is None
    now += 0.001
    assert cache.get("tools/list", {}) is None


def test_notifications_empty_what_they_name() -> None:
    cache = ResponseCache()
    kept = {"ttlMs": 60_000}
    cache.put("tools/list", {}, kept, 0)
    cache.put("resources/read", {"uri": "a://1"}, kept, 0)
    cache.put("resources/read", {"uri": "a://2"}, kept, 0)
    cache.heard("notifications/resources/updated", {"uri": "a://1"})
    assert cache.get("resources/read", {"uri": "a://1"}) is None
    assert cache.get("resources/read", {"uri": "a://2"}) is kept
    cache.heard("notifications/tools/list_changed", {})
    assert cache.get("tools/list", {}) is None
    assert cache.get("resources/read", {"uri": "a://2"}) is kept
