"""What a server accepts from its author and advertises, and its task outcomes, on the
`Endpoint` in memory and on the rules themselves: tool names, form schemas, the sampling-context gate by revision, task
outcomes and TTLs, what a server advertises, and output-schema checks."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from trio.testing import MockClock, wait_all_tasks_blocked

from mcpfast import Context, Server
from mcpfast.protocol.capabilities import InputRequest, refusal
from mcpfast.server.config import Config
from mcpfast.types import TextContent, ToolResult

from ..helpers import validate
from .conftest import serving

TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


@pytest.mark.parametrize("name", ["add", "a.b-c_d", "x" * 128, "V2"])
def test_tool_names_in_the_rule_register(name: str) -> None:
    server = Server("names")
    server.add_tool(lambda: "x", name=name)
    assert name in server.tools


@pytest.mark.parametrize("name", ["", "x" * 129, "has space", "a/b", "ünï", "<lambda>"])
def test_tool_names_outside_the_rule_are_refused(name: str) -> None:
    server = Server("names")
    with pytest.raises(ValueError, match="1 to 128 characters"):
        server.add_tool(lambda: "x", name=name)
    assert server.tools == {}


ENUMS = {
    "type": "object",
    "properties": {
        "plain": {"type": "string", "format": "email", "default": "a@b.c"},
        "age": {"type": "integer", "minimum": 0},
        "ok": {"type": "boolean"},
        "pick": {"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]},
        "titled": {"type": "string", "oneOf": [{"const": "a", "title": "A"}]},
        "many": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
        "many_titled": {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}},
    },
    "required": ["plain"],
}


def test_every_primitive_and_enum_form_is_allowed() -> None:
    from mcpfast.server.framework.context import form_schema_problem

    assert form_schema_problem(ENUMS) is None
    assert form_schema_problem({"type": "object", "properties": {}}) is None


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        ({"type": "string"}, "object schema"),
        ({"type": "object"}, "must have properties"),
        ({"type": "object", "properties": {"a": {"type": "object"}}}, "flat primitives"),
        (
            {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object"}}}},
            "multi-select enum",
        ),
        ({"type": "object", "properties": {"a": {"type": "string", "format": "ipv4"}}}, "format"),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}}, "flat primitives"),
        ({"type": "object", "properties": {}, "required": ["ghost"]}, "ghost"),
    ],
)
def test_forms_the_spec_does_not_allow(schema: dict[str, Any], says: str) -> None:
    from mcpfast.server.framework.context import form_schema_problem

    problem = form_schema_problem(schema)
    assert problem is not None and says in problem


def _context_request() -> dict[str, InputRequest]:
    params = {"messages": [], "maxTokens": 10, "includeContext": "allServers"}
    return {"s": InputRequest(method="sampling/createMessage", params=params)}


@pytest.mark.parametrize(
    ("version", "declared", "refused"),
    [
        ("2025-03-26", {"sampling": {}}, False),  # no sampling.context before 2025-11-25
        ("2025-06-18", {"sampling": {}}, False),
        ("2025-11-25", {"sampling": {}}, True),
        ("2025-11-25", {"sampling": {"context": {}}}, False),
        ("2026-07-28", {"sampling": {"tools": {}}}, True),
        ("2026-07-28", {"sampling": {"context": {}}}, False),
    ],
)
def test_include_context_is_gated_on_sampling_context(
    version: str, declared: dict[str, Any], refused: bool
) -> None:
    error = refusal(version, declared, _context_request())
    assert (error is not None) is refused
    if error is not None:
        assert error.data == {"requiredCapabilities": {"sampling": {"context": {}}}}
    none = {"s": InputRequest(method="sampling/createMessage", params={"includeContext": "none"})}
    assert refusal(version, {"sampling": {}}, none) is None


def _task_server() -> Server:
    server = Server("tasks")

    @server.tool(task="optional")
    async def broken() -> ToolResult:
        return ToolResult(content=[TextContent(text="no luck")], isError=True)

    return server


async def test_a_2026_task_with_an_error_result_stays_completed(autojump_clock: MockClock) -> None:
    """The 2026-07-28 extension keeps ``isError`` results in ``completed`` (2025-11-25 fails)."""
    async with serving(_task_server()) as wire:
        created = await wire.modern(
            "tools/call", {"name": "broken", "arguments": {}}, capabilities=TASKS
        )
        task_id = created.result["taskId"]
        await wait_all_tasks_blocked()
        got = await wire.modern("tasks/get", {"taskId": task_id}, capabilities=TASKS)
    assert got.result["status"] == "completed"
    assert got.result["result"]["isError"] is True


@pytest.mark.parametrize(
    ("asked", "gets"), [(None, 30_000), (-5, 30_000), (True, 30_000), (1000, 1000), (10**9, 30_000)]
)
async def test_a_2025_11_25_task_ttl(asked: Any, gets: int, autojump_clock: MockClock) -> None:
    version = "2025-11-25"
    async with serving(_task_server(), Config(task_max_ttl_ms=30_000)) as wire:
        session, _ = await wire.initialize(version)
        task: dict[str, Any] = {} if asked is None else {"ttl": asked}
        created = await wire.legacy(
            "tools/call",
            {"name": "broken", "arguments": {}, "task": task},
            session=session,
            version=version,
        )
    assert created.result["task"]["ttl"] == gets
    validate(version, "CreateTaskResult", created.result)


async def test_a_2025_11_25_task_status_goes_on_the_get_stream(autojump_clock: MockClock) -> None:
    version = "2025-11-25"
    async with serving(_task_server()) as wire:
        session, _ = await wire.initialize(version)
        stream = await wire.stream(session, version)
        await wait_all_tasks_blocked()
        created = await wire.legacy(
            "tools/call",
            {"name": "broken", "arguments": {}, "task": {}},
            session=session,
            version=version,
        )
        with trio.fail_after(10):  # the clock jumps: a missing notification fails at once
            note = await stream.next_message()
    assert note["method"] == "notifications/tasks/status"
    assert note["params"]["taskId"] == created.result["task"]["taskId"]
    assert note["params"]["status"] == "failed" and note["params"]["statusMessage"] == "no luck"
    validate(version, "TaskStatusNotification", note)


def test_capabilities_follow_the_registry() -> None:
    server = Server("caps")
    assert server.capabilities("2025-06-18") == {"logging": {}}

    @server.resource("test://{name}")
    def named(name: str) -> str:
        return name

    assert server.capabilities("2025-06-18") == {
        "resources": {"subscribe": True, "listChanged": True},
        "logging": {},
    }

    @server.prompt()
    def hello() -> str:
        return "hello"

    @server.completion(prompt="hello")
    def complete(argument: str, value: str, context: dict[str, Any]) -> list[str]:
        return []

    caps = server.capabilities("2026-07-28")
    assert set(caps) == {"resources", "prompts", "completions", "logging"}


async def test_an_output_schema_tool_must_return_structured_content(
    autojump_clock: MockClock,
) -> None:
    server = Server("outputs")

    @server.tool(output_schema={"type": "object"})
    def bare() -> ToolResult:
        return ToolResult(content=[TextContent(text="no structure")])

    @server.tool(output_schema={"type": "object"})
    def failed() -> ToolResult:
        return ToolResult(content=[TextContent(text="oops")], isError=True)

    @server.tool()
    async def fine(ctx: Context) -> dict[str, int]:
        return {"n": 1}

    async with serving(server) as wire:
        bare_reply = await wire.modern("tools/call", {"name": "bare", "arguments": {}})
        failed_reply = await wire.modern("tools/call", {"name": "failed", "arguments": {}})
        fine_reply = await wire.modern("tools/call", {"name": "fine", "arguments": {}})
    assert bare_reply.result["isError"] is True
    assert "no structuredContent" in bare_reply.result["content"][0]["text"]
    assert failed_reply.result["content"][0]["text"] == "oops"  # an error result as it is
    assert fine_reply.result["structuredContent"] == {"n": 1}
