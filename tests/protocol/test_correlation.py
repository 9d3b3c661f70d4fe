"""`protocol.correlation`: ids, the pending table, who a message is for, and cancellation."""

from __future__ import annotations

from typing import Any

import pytest

from mcpfast.errors import MCPError
from mcpfast.protocol.correlation import (
    Correlator,
    cancel_params,
    cancel_target,
    kind_of,
    result_of,
)


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ({"jsonrpc": "2.0", "id": 1, "method": "ping"}, "request"),
        ({"jsonrpc": "2.0", "method": "notifications/progress"}, "notification"),
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, "response"),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "x"}}, "response"),
        ([{"id": 1}], "invalid"),
        ("text", "invalid"),
    ],
)
def test_kind_of(message: Any, kind: str) -> None:
    assert kind_of(message) == kind


@pytest.mark.parametrize(
    ("prefix", "ids"),
    [("", [1, 2, 3]), ("c", ["c1", "c2", "c3"])],
)
def test_ids_count_from_one_with_the_prefix(prefix: str, ids: list[Any]) -> None:
    correlator: Correlator[None] = Correlator(prefix)
    assert [correlator.next_id() for _ in ids] == ids


def test_a_bare_id_shares_the_counter() -> None:
    correlator: Correlator[None] = Correlator("c")
    assert [correlator.next_id(bare=True), correlator.next_id()] == [1, "c2"]


def test_deliver_wakes_the_request_once() -> None:
    correlator: Correlator[str] = Correlator("c")
    pending = correlator.open("waker")
    first = {"id": pending.id, "result": {"n": 1}}
    assert correlator.deliver(first) is pending
    assert pending.answer == first
    assert correlator.deliver({"id": pending.id, "result": {"n": 2}}) is None
    assert pending.answer == first


@pytest.mark.parametrize("id_", ["c9", 1, None, ["c1"], {"x": 1}])
def test_deliver_ignores_what_no_one_waits_for(id_: Any) -> None:
    correlator: Correlator[str] = Correlator("c")
    correlator.open("waker")
    assert correlator.deliver({"id": id_, "result": {}}) is None


def test_close_forgets_and_abandon_lists_the_unanswered() -> None:
    correlator: Correlator[str] = Correlator()
    answered, waiting = correlator.open("a"), correlator.open("b")
    correlator.deliver({"id": answered.id, "result": {}})
    assert correlator.abandon() == [waiting]
    correlator.close(waiting)
    correlator.close(waiting)
    assert len(correlator) == 1
    assert correlator.get(waiting.id) is None


@pytest.mark.parametrize(
    ("message", "outcome"),
    [
        ({"id": 1, "result": {"ok": True}}, {"ok": True}),
        ({"id": 1}, None),
        ({"id": 1, "error": {"code": -32602, "message": "bad", "data": {"x": 1}}}, (-32602, "bad")),
        ({"id": 1, "error": None}, (-32603, "")),
    ],
)
def test_result_of(message: dict[str, Any], outcome: Any) -> None:
    if isinstance(outcome, tuple):
        with pytest.raises(MCPError) as raised:
            result_of(message)
        assert (raised.value.code, raised.value.message) == outcome
        assert raised.value.data == (message["error"] or {}).get("data")
    else:
        assert result_of(message) == outcome


def test_cancel_params_and_target() -> None:
    assert cancel_params("c1") == {"requestId": "c1"}
    assert cancel_params(3, "gone") == {"requestId": 3, "reason": "gone"}
    assert cancel_target(cancel_params(3, "gone")) == 3
    for params in (None, {}, {"requestId": True}, {"requestId": 1.5}):
        assert cancel_target(params) is None
