"""`protocol.tasks`: a task on the wire in both task revisions (the 2026-07-28 extension and
2025-11-25's experimental tasks), as tables over what a task shows."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from mcpfast import jsonrpc
from mcpfast.errors import ProtocolError
from mcpfast.protocol import tasks
from mcpfast.protocol.capabilities import InputRequest
from mcpfast.types import RELATED_TASK_KEY, TextContent, ToolResult


class Task(msgspec.Struct, kw_only=True):
    id: str = "t1"
    status: str = "working"
    created: str = "c"
    updated: str = "u"
    ttl_ms: int = 1000
    poll_ms: int = 50
    message: str | None = None
    result: Any = None
    error: dict[str, Any] | None = None
    requests: dict[str, InputRequest] = msgspec.field(default_factory=dict)


STATE = {"taskId": "t1", "status": "working", "createdAt": "c", "lastUpdatedAt": "u"}
MODERN = {**STATE, "ttlMs": 1000, "pollIntervalMs": 50}
LEGACY = {**STATE, "ttl": 1000, "pollInterval": 50}
ASK = {"k": InputRequest(method="roots/list")}


def test_each_revision_names_ttl_and_poll_interval_its_way() -> None:
    assert tasks.modern_task(Task()) == MODERN
    assert tasks.legacy_task(Task()) == LEGACY
    assert tasks.legacy_task(Task(message="m")) == {**LEGACY, "statusMessage": "m"}


def test_created_results() -> None:
    assert tasks.created(Task()) == {**MODERN, "resultType": "task"}
    assert tasks.legacy_created(Task()) == {"task": LEGACY}


@pytest.mark.parametrize(
    ("task", "extra"),
    [
        (Task(), {}),
        (
            Task(status="completed", result={"content": []}),
            {"result": {"content": [], "resultType": "complete"}},
        ),
        (
            Task(status="failed", error={"code": 1, "message": "m"}),
            {"error": {"code": 1, "message": "m"}},
        ),
        (Task(status="failed", message="tool error"), {"statusMessage": "tool error"}),
        (
            Task(status="input_required", requests=ASK),
            {"inputRequests": {"k": {"method": "roots/list", "params": {}}}},
        ),
        (Task(status="cancelled"), {}),
    ],
    ids=["working", "completed", "failed", "failed by the tool", "input_required", "cancelled"],
)
def test_detailed_shows_what_the_status_has(task: Task, extra: dict[str, Any]) -> None:
    assert tasks.detailed(task) == {**MODERN, "status": task.status, **extra}


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        (None, 1000),
        ({}, 1000),
        ({"ttl": 10}, 10),
        ({"ttl": 0}, 0),
        ({"ttl": 9000}, 5000),
        ({"ttl": -1}, 1000),
        ({"ttl": True}, 1000),
        ({"ttl": 1.5}, 1000),
    ],
)
def test_legacy_ttl_is_capped_and_defaulted(
    requested: dict[str, Any] | None, expected: int
) -> None:
    assert tasks.legacy_ttl(requested, 1000, 5000) == expected
    assert tasks.legacy_ttl(None, 9000, 5000) == 5000


def test_task_params() -> None:
    assert tasks.task_params(None) == {}
    assert tasks.task_params(30) == {"ttl": 30}


def test_tagged_requests_name_their_task_keeping_their_meta() -> None:
    requests = {"k": InputRequest(method="x", params={"p": 1, "_meta": {"own": 2}})}
    assert tasks.tagged(requests, "t1") == {
        "k": InputRequest(
            method="x", params={"p": 1, "_meta": {"own": 2, RELATED_TASK_KEY: {"taskId": "t1"}}}
        )
    }


def test_legacy_result_of_a_completed_task_is_tagged() -> None:
    done = Task(status="completed", result={"content": [], "_meta": {"dropped": 1}})
    assert tasks.legacy_result(done) == {
        "content": [],
        "_meta": {RELATED_TASK_KEY: {"taskId": "t1"}},
    }
    failed_by_tool = Task(status="failed", result={"isError": True})
    assert tasks.legacy_result(failed_by_tool)["isError"] is True


@pytest.mark.parametrize(
    ("task", "code", "message"),
    [
        (Task(status="failed", error={"code": -32603, "message": "boom"}), -32603, "boom"),
        (Task(status="cancelled"), jsonrpc.INVALID_PARAMS, "The task was cancelled"),
    ],
)
def test_legacy_result_raises_the_tasks_end(task: Task, code: int, message: str) -> None:
    with pytest.raises(ProtocolError) as info:
        tasks.legacy_result(task)
    assert (info.value.code, info.value.message) == (code, message)


@pytest.mark.parametrize(
    ("version", "fails"),
    [("2025-11-25", True), ("2026-07-28", False)],
)
def test_a_tool_error_fails_only_a_2025_11_25_task(version: str, fails: bool) -> None:
    assert tasks.fails_on_tool_error(version) is fails


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ([TextContent(text="a"), TextContent(text="b")], "a b"),
        ([], "The tool returned an error"),
    ],
)
def test_error_text(content: list[Any], text: str) -> None:
    assert tasks.error_text(ToolResult(content=content, isError=True)) == text
