"""What a 2026-07-28 client does with a result, as tables: the retry that answers
``input_required``, and which ``resultType`` values a request allows."""

from __future__ import annotations

from typing import Any

import pytest

from mcpfast.errors import TransportError
from mcpfast.protocol.modern import check_result_type, retry_params
from mcpfast.types import TASKS_EXTENSION

TASKS: dict[str, Any] = {TASKS_EXTENSION: {}}


@pytest.mark.parametrize(
    ("params", "result", "responses", "expected"),
    [
        (
            {"name": "t"},
            {"requestState": "s1"},
            {"a": 1},
            {"name": "t", "inputResponses": {"a": 1}, "requestState": "s1"},
        ),
        (
            {"name": "t", "inputResponses": {"old": 0}, "requestState": "s0"},
            {"requestState": "s1"},
            {"b": 2},
            {"name": "t", "inputResponses": {"b": 2}, "requestState": "s1"},
        ),
        (
            {"name": "t", "requestState": "s0"},
            {},
            {"a": 1},
            {"name": "t", "inputResponses": {"a": 1}},
        ),
        ({"name": "t"}, {"requestState": "s1"}, {}, {"name": "t", "requestState": "s1"}),
    ],
    ids=["first retry", "answers and state replaced", "no state given: none sent", "no answers"],
)
def test_retry_params(
    params: dict[str, Any], result: dict[str, Any], responses: dict[str, Any], expected: Any
) -> None:
    assert retry_params(params, result, responses) == expected


@pytest.mark.parametrize(
    ("method", "kind", "extensions", "allowed"),
    [
        ("tools/list", "complete", None, True),
        ("tools/call", "complete", TASKS, True),
        ("tools/call", "task", TASKS, True),
        ("tools/call", "task", None, False),
        ("prompts/get", "task", TASKS, False),
        ("tools/call", "bogus", TASKS, False),
        ("tools/call", None, None, False),
    ],
)
def test_check_result_type(
    method: str, kind: Any, extensions: dict[str, Any] | None, allowed: bool
) -> None:
    if allowed:
        check_result_type(method, kind, extensions)
        return
    with pytest.raises(TransportError, match=method):
        check_result_type(method, kind, extensions)
