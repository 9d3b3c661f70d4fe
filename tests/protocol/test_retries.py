"""`protocol.retries`: what a refusal is, which requests are sent again, and the bound on the
waits (no I/O)."""

from __future__ import annotations

import json

import msgspec
import pytest

from mcpfast.errors import MCPError, RateLimited
from mcpfast.protocol.correlation import result_of
from mcpfast.protocol.retries import (
    RetryPolicy,
    idempotent,
    refusal,
    repeatable,
    typed,
)
from mcpfast.types import Tool

NOW = 1_700_000_000.0


def _error(code: int, data: object = None) -> bytes:
    error: dict[str, object] = {"code": code, "message": "slow down"}
    if data is not None:
        error["data"] = data
    return json.dumps({"jsonrpc": "2.0", "id": 1, "error": error}).encode()


def test_a_429_with_the_drafts_error_is_read_whole() -> None:
    data = {"retryAfterMs": 1500, "limit": 10, "remaining": 0, "reason": "rate"}
    refused = refusal(429, "2", _error(-32023, data), NOW)
    assert isinstance(refused, RateLimited)
    assert (refused.retry_after_ms, refused.limit, refused.remaining) == (1500, 10, 0)
    assert (refused.reason, refused.http_status, refused.message) == ("rate", 429, "slow down")


def test_retry_after_stands_in_for_a_missing_retry_after_ms() -> None:
    refused = refusal(429, "3", b"too many requests", NOW)
    assert refused is not None and refused.retry_after_ms == 3000
    assert refused.message == "too many requests" and refused.limit is None


def test_a_503_is_a_refusal_only_with_retry_after() -> None:
    assert refusal(503, None, _error(-32603), NOW) is None
    bus_away = refusal(503, "1", _error(-32603), NOW)
    assert bus_away is not None and bus_away.reason == "unavailable"
    assert bus_away.retry_after_ms == 1000 and bus_away.http_status == 503
    shed = refusal(503, "1", _error(-32023, {"retryAfterMs": 200, "reason": "overloaded"}), NOW)
    assert shed is not None and (shed.reason, shed.retry_after_ms) == ("overloaded", 200)
    assert refusal(200, "1", _error(-32601), NOW) is None
    assert refusal(500, "1", b"", NOW) is None


def test_ill_typed_data_members_are_left_out() -> None:
    data = {"retryAfterMs": "soon", "limit": True, "remaining": -1, "reason": 7}
    refused = typed(MCPError(-32023, "no", data))
    assert isinstance(refused, RateLimited)
    assert (refused.retry_after_ms, refused.limit, refused.remaining) == (0, None, -1)
    assert refused.reason == "rate"


def test_a_32023_answer_is_a_rate_limited_on_any_transport() -> None:
    message = json.loads(_error(-32023, {"retryAfterMs": 10}))
    with pytest.raises(RateLimited) as caught:
        result_of(message)
    assert caught.value.retry_after_ms == 10
    with pytest.raises(MCPError) as other:
        result_of(json.loads(_error(-32601)))
    assert not isinstance(other.value, RateLimited)


def _tool(name: str, **hints: bool) -> Tool:
    raw: dict[str, object] = {"name": name, "inputSchema": {"type": "object"}}
    if hints:
        raw["annotations"] = hints
    return msgspec.convert(raw, Tool)


def test_which_requests_are_safe_to_repeat() -> None:
    tools = {
        t.name
        for t in (
            _tool("lookup", readOnlyHint=True),
            _tool("put", idempotentHint=True),
            _tool("send"),
            _tool("delete", readOnlyHint=False, destructiveHint=True),
        )
        if idempotent(t)
    }
    assert tools == {"lookup", "put"}
    for method in ("tools/list", "resources/read", "prompts/get", "server/discover", "ping"):
        assert repeatable(method, {}, tools)
    assert repeatable("completion/complete", {}, tools)
    assert repeatable("tools/call", {"name": "lookup"}, tools)
    assert not repeatable("tools/call", {"name": "send"}, tools)
    assert not repeatable("resources/subscribe", {}, tools)
    assert not repeatable("logging/setLevel", {}, tools)


def _refused(ms: int) -> RateLimited:
    return RateLimited("no", retry_after_ms=ms)


def test_waits_are_the_asked_floor_plus_a_jitter_and_attempts_are_capped() -> None:
    retries = RetryPolicy(attempts=2, max_wait=30).start(True)
    first = retries.wait(_refused(1000), 0.5)
    second = retries.wait(_refused(1000), 0.999)
    assert first is not None and 1.0 < first <= 1.25
    assert second is not None and 1.0 < second < 1.5
    assert retries.wait(_refused(0), 0.0) is None  # two retries: no third


def test_a_hostile_retry_after_cannot_stretch_the_wait() -> None:
    retries = RetryPolicy(max_wait=5).start(True)
    assert retries.wait(_refused(999_999_000), 0.5) is None  # raised at once, not waited
    waits = [retries.wait(_refused(2000), 0.9) for _ in range(3)]
    assert waits[0] is not None and waits[1] is not None
    assert sum(w for w in waits if w is not None) <= 5.0
    assert waits[2] is None  # what is left (under 2 s) cannot hold the asked wait


def test_a_request_not_safe_to_repeat_is_never_retried() -> None:
    assert RetryPolicy().start(False).wait(_refused(0), 0.0) is None
    assert RetryPolicy(attempts=0).start(True).wait(_refused(0), 0.0) is None
