"""The conformance "everything" server: every fixture the MCP conformance suite's server scenarios
ask for (`/work/shared/conformance/SCENARIOS.md`, bundled harness 0.2.0-alpha.12), for the
2025-03-26, 2025-06-18, 2025-11-25 and 2026-07-28 revisions and the tasks extension.

    python tests/conformance/server.py PORT      # serves http://127.0.0.1:PORT/mcp

`tests/conformance/run.sh` starts it and runs the suite legs against it. Fixture names,
arguments and texts follow the scenario sources exactly; where a scenario leaves the text open
the value says what happened, so a failing check shows it in its details.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import tempfile
from typing import Annotated, Any

import trio

import mcpfast
from mcpfast import Context, Header, InputRequest, ProtocolError
from mcpfast.jsonrpc import INTERNAL_ERROR
from mcpfast.types import (
    AudioContent,
    EmbeddedResource,
    ImageContent,
    PromptMessage,
    TextContent,
    TextResourceContents,
    ToolResult,
)

# A 1x1 red PNG and a 1 ms 8 kHz mono 8-bit WAV (valid files, so clients that decode them can).
PNG_BASE64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)
WAV_BASE64 = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA=="

server = mcpfast.Server(
    "mcpfast-conformance",
    mcpfast.__version__,
    instructions="The mcpfast conformance server: every fixture of the MCP conformance suite.",
)


def _text_of(answer: Any) -> str:
    """The text of a sampling answer (``CreateMessageResult``), whatever its content shape."""
    if not isinstance(answer, dict):
        return str(answer)
    content = answer.get("content")
    if isinstance(content, list):
        content = next(
            (c for c in content if isinstance(c, dict) and c.get("type") == "text"), None
        )
    text = content.get("text") if isinstance(content, dict) else None
    if isinstance(text, str):
        return text
    return json.dumps(answer)


def _form(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required is not None:
        schema["required"] = required
    return schema


# ====================================================================================== tools
# Order matters: `http-header-validation` calls the first listed tool with `{}` arguments and
# expects success, so a no-argument tool comes first.


@server.tool()
def test_simple_text() -> str:
    """Returns a simple text response (tools-call-simple-text)."""
    return "This is a simple text response for testing."


@server.tool()
def test_image_content() -> ImageContent:
    """Returns a PNG image block (tools-call-image)."""
    return ImageContent(data=PNG_BASE64, mimeType="image/png")


@server.tool()
def test_audio_content() -> AudioContent:
    """Returns a WAV audio block (tools-call-audio)."""
    return AudioContent(data=WAV_BASE64, mimeType="audio/wav")


@server.tool()
def test_embedded_resource() -> EmbeddedResource:
    """Returns an embedded text resource (tools-call-embedded-resource)."""
    return EmbeddedResource(
        resource=TextResourceContents(
            uri="test://embedded-resource",
            mimeType="text/plain",
            text="This is an embedded resource content.",
        )
    )


@server.tool()
def test_multiple_content_types() -> ToolResult:
    """Returns text, image and resource blocks (tools-call-mixed-content)."""
    return ToolResult(
        content=[
            TextContent(text="Multiple content types test:"),
            ImageContent(data=PNG_BASE64, mimeType="image/png"),
            EmbeddedResource(
                resource=TextResourceContents(
                    uri="test://mixed-content-resource",
                    mimeType="application/json",
                    text=json.dumps({"test": "data", "value": 123}, separators=(",", ":")),
                )
            ),
        ]
    )


@server.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Sends three info log notifications ~50 ms apart (tools-call-with-logging)."""
    await ctx.info("Tool execution started")
    await trio.sleep(0.05)
    await ctx.info("Tool processing data")
    await trio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool()
def test_error_handling() -> str:
    """Always fails with a tool error (tools-call-error)."""
    raise RuntimeError("This tool intentionally returns an error for testing")


@server.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0/100, 50/100, 100/100 ~50 ms apart (tools-call-with-progress)."""
    await ctx.report_progress(0, 100)
    await trio.sleep(0.05)
    await ctx.report_progress(50, 100)
    await trio.sleep(0.05)
    await ctx.report_progress(100, 100)
    return "Tool with progress executed successfully"


@server.tool(description="Asks the client's LLM to answer a prompt (tools-call-sampling).")
async def test_sampling(ctx: Context, prompt: str) -> str:
    answer = await ctx.sample(prompt, max_tokens=100)
    return f"LLM response: {_text_of(answer)}"


@server.tool(description="Asks the user for a username and an email (tools-call-elicitation).")
async def test_elicitation(ctx: Context, message: str) -> str:
    answer = await ctx.elicit(
        message,
        _form(
            {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            ["username", "email"],
        ),
    )
    return (
        f"User response: action={answer.get('action')}, "
        f"content={json.dumps(answer.get('content', {}))}"
    )


@server.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Elicitation whose schema has a default for every primitive type (SEP-1034)."""
    answer = await ctx.elicit(
        "Please review and update the form fields with defaults",
        _form(
            {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {
                    "type": "boolean",
                    "description": "Verification status",
                    "default": True,
                },
            },
            [],
        ),
    )
    return (
        f"Elicitation completed: action={answer.get('action')}, "
        f"content={json.dumps(answer.get('content', {}))}"
    )


@server.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Elicitation whose schema has all five enum variants (SEP-1330)."""
    answer = await ctx.elicit(
        "Please select options from the enum fields",
        _form(
            {
                "untitledSingle": {
                    "type": "string",
                    "description": "Untitled single-select",
                    "enum": ["option1", "option2", "option3"],
                },
                "titledSingle": {
                    "type": "string",
                    "description": "Titled single-select",
                    "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ],
                },
                "legacyEnum": {
                    "type": "string",
                    "description": "Legacy titled enum (deprecated enumNames)",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "description": "Untitled multi-select",
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                },
                "titledMulti": {
                    "type": "array",
                    "description": "Titled multi-select",
                    "items": {
                        "anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ]
                    },
                },
            },
            [],
        ),
    )
    return (
        f"Elicitation completed: action={answer.get('action')}, "
        f"content={json.dumps(answer.get('content', {}))}"
    )


JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@server.tool(
    description="Tool with JSON Schema 2020-12 features",
    input_schema=JSON_SCHEMA_2020_12,
)
def json_schema_2020_12_tool(
    name: str | None = None,
    address: dict[str, Any] | None = None,
    contactMethod: str | None = None,
    phone: str | None = None,
    email: str | None = None,
) -> str:
    return "ok"


@server.tool()
async def test_reconnection(ctx: Context) -> str:
    """Closes its SSE stream mid-call (SEP-1699, server-sse-polling): the client sees the
    priming event, the connection ends, and the client resumes with GET + Last-Event-ID to get
    the result, which is sent after the close and so only reaches it by that resumption."""
    await ctx.close_stream()
    await trio.sleep(0.1)
    return "Reconnection test completed"


@server.tool(description="Echoes a region mirrored in the Mcp-Param-Region header (SEP-2243).")
def test_custom_header(region: Annotated[str, Header("Region")]) -> str:
    return f"Region: {region}"


# --- diagnostic tools probed by `server-stateless` (2026-07-28) ------------------------------


@server.tool()
async def test_missing_capability(ctx: Context) -> str:
    """Needs the client's `sampling` capability: without it the call is refused with -32021."""
    answer = await ctx.sample("Say hello.", max_tokens=10, key="greeting")
    return f"LLM response: {_text_of(answer)}"


@server.tool()
async def test_streaming_elicitation(ctx: Context) -> str:
    """Asks for input mid-call: the response stream must carry only an IncompleteResult
    (input_required), never a server-to-client request."""
    await ctx.report_progress(0, 1, "asking for confirmation")
    answer = await ctx.elicit(
        "Continue?", _form({"confirm": {"type": "boolean"}}, ["confirm"]), key="confirm"
    )
    await ctx.report_progress(1, 1, "done")
    return f"Streaming elicitation completed: action={answer.get('action')}"


@server.tool()
async def test_logging_tool(ctx: Context) -> str:
    """Logs at every level; nothing may reach a client that set no `_meta` logLevel."""
    for level in ("debug", "info", "notice", "warning", "error"):
        await ctx.log(level, f"{level} message from test_logging_tool")
    return "Logging tool completed"


_changes = {"tools": 0, "prompts": 0}


def _dynamic_tool() -> str:
    return "I am the tool that test_trigger_tool_change redefines."


def _dynamic_prompt() -> str:
    return "I am the prompt that test_trigger_prompt_change redefines."


def _register_dynamic_tool() -> None:
    server.add_tool(
        _dynamic_tool,
        name="test_dynamic_tool",
        description=f"Redefined by test_trigger_tool_change (version {_changes['tools']}).",
    )


def _register_dynamic_prompt() -> None:
    server.prompt(
        "test_dynamic_prompt",
        description=f"Redefined by test_trigger_prompt_change (version {_changes['prompts']}).",
    )(_dynamic_prompt)


@server.tool()
def test_trigger_tool_change() -> str:
    """Redefines `test_dynamic_tool` so listeners receive notifications/tools/list_changed."""
    _changes["tools"] += 1
    _register_dynamic_tool()
    return f"tool list changed (version {_changes['tools']})"


@server.tool()
def test_trigger_prompt_change() -> str:
    """Redefines `test_dynamic_prompt` so listeners receive notifications/prompts/list_changed."""
    _changes["prompts"] += 1
    _register_dynamic_prompt()
    return f"prompt list changed (version {_changes['prompts']})"


# --- multi-round-trip input, SEP-2322 (2026-07-28) -------------------------------------------

NAME_FORM = _form({"name": {"type": "string"}}, ["name"])


def _content(answer: Any) -> dict[str, Any]:
    content = answer.get("content") if isinstance(answer, dict) else None
    return content if isinstance(content, dict) else {}


@server.tool()
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """Asks for the user's name (key `user_name`), then greets them."""
    answer = await ctx.elicit("What is your name?", NAME_FORM, key="user_name")
    return f"Hello, {_content(answer).get('name', 'stranger')}!"


@server.tool()
async def test_input_required_result_sampling(ctx: Context) -> str:
    """Asks the client's LLM for the capital of France (key `capital_question`)."""
    answer = await ctx.sample(
        "What is the capital of France?", max_tokens=100, key="capital_question"
    )
    return f"LLM response: {_text_of(answer)}"


@server.tool()
async def test_input_required_result_list_roots(ctx: Context) -> str:
    """Asks for the client's roots (key `client_roots`) and lists them."""
    roots = await ctx.list_roots(key="client_roots")
    uris = [r.get("uri") for r in roots if isinstance(r, dict)]
    return f"Client roots ({len(uris)}): {', '.join(str(u) for u in uris)}"


@server.tool()
async def test_input_required_result_request_state(ctx: Context) -> str:
    """Asks for confirmation with a signed requestState; the retry's state is verified."""
    answer = await ctx.elicit(
        "Please confirm", _form({"ok": {"type": "boolean"}}, ["ok"]), key="confirm"
    )
    return f"state-ok: requestState verified, ok={_content(answer).get('ok')}"


@server.tool()
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Asks for an elicitation, a sampling and the roots in one InputRequiredResult."""
    answers = await ctx.ask(
        {
            "user_name": InputRequest(
                method="elicitation/create",
                params={"message": "What is your name?", "requestedSchema": NAME_FORM},
            ),
            "greeting": InputRequest(
                method="sampling/createMessage",
                params={
                    "messages": [
                        {"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}
                    ],
                    "maxTokens": 50,
                },
            ),
            "client_roots": InputRequest(method="roots/list"),
        }
    )
    name = _content(answers["user_name"]).get("name", "stranger")
    roots = (
        answers["client_roots"].get("roots", [])
        if isinstance(answers["client_roots"], dict)
        else []
    )
    return f"{_text_of(answers['greeting'])} {name} ({len(roots)} roots)"


@server.tool()
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """Two rounds of elicitation (`step1`, then `step2`), the requestState growing each round."""
    step1 = await ctx.elicit("Step 1: What is your name?", NAME_FORM, key="step1")
    step2 = await ctx.elicit(
        "Step 2: What is your favorite color?",
        _form({"color": {"type": "string"}}, ["color"]),
        key="step2",
    )
    return (
        f"{_content(step1).get('name', 'stranger')}'s favorite color is "
        f"{_content(step2).get('color', 'unknown')}"
    )


@server.tool()
async def test_input_required_result_tampered_state(ctx: Context) -> str:
    """Asks for confirmation with an HMAC-signed requestState; a tampered one is rejected."""
    answer = await ctx.elicit(
        "Please confirm", _form({"ok": {"type": "boolean"}}, ["ok"]), key="confirm"
    )
    return f"state verified, ok={_content(answer).get('ok')}"


@server.tool()
async def test_input_required_result_capabilities(ctx: Context) -> str:
    """Asks only for the inputs whose capability the client declared."""
    candidates = {
        "user_name": InputRequest(
            method="elicitation/create",
            params={"message": "What is your name?", "requestedSchema": NAME_FORM},
        ),
        "capital_question": InputRequest(
            method="sampling/createMessage",
            params={
                "messages": [
                    {
                        "role": "user",
                        "content": {"type": "text", "text": "What is the capital of France?"},
                    }
                ],
                "maxTokens": 100,
            },
        ),
        "client_roots": InputRequest(method="roots/list"),
    }
    wanted = {key: req for key, req in candidates.items() if ctx.supports(req)}
    if not wanted:
        return "The client declared none of elicitation, sampling or roots."
    answers = await ctx.ask(wanted)
    return f"Received inputs: {', '.join(sorted(answers))}"


# --- tasks extension, SEP-2663 ----------------------------------------------------------------


@server.tool(description="Greets someone; sync only (tasks fixtures).")
def greet(name: str) -> str:
    return f"Hello, {name}!"


@server.tool(
    task="optional",
    description="Sleeps `seconds` seconds, then answers; supports tasks (tasks fixtures).",
)
async def slow_compute(seconds: float = 1, label: str = "") -> str:
    await trio.sleep(max(seconds, 0))
    return f"slow_compute {label or 'unlabelled'} finished after {seconds} s"


@server.tool(
    task="required",
    description="Fails with a tool execution error after ~1 s; requires a task (tasks fixtures).",
)
async def failing_job() -> str:
    await trio.sleep(1)
    raise RuntimeError("failing_job failed on purpose")


@server.tool(
    task="optional",
    description="Fails with a protocol-level error; supports tasks (tasks fixtures).",
)
async def protocol_error_job() -> str:
    await trio.sleep(0.1)
    raise ProtocolError(INTERNAL_ERROR, "protocol_error_job: simulated internal failure")


@server.tool(
    task="optional",
    description="Asks for confirmation, then 'deletes' the file; supports tasks (tasks fixtures).",
)
async def confirm_delete(ctx: Context, filename: str = "file.txt") -> str:
    answer = await ctx.elicit(
        f"Delete {filename}?", _form({"confirm": {"type": "boolean"}}, ["confirm"]), key="confirm"
    )
    if answer.get("action") == "accept" and _content(answer).get("confirm"):
        return f"Deleted {filename}"
    return f"Kept {filename}"


@server.tool(
    task="optional",
    description="Asks for two inputs at once; supports tasks (tasks fixtures).",
)
async def multi_input(ctx: Context) -> str:
    answers = await ctx.ask(
        {
            "first": InputRequest(
                method="elicitation/create",
                params={"message": "First input: your name?", "requestedSchema": NAME_FORM},
            ),
            "second": InputRequest(
                method="elicitation/create",
                params={
                    "message": "Second input: confirm?",
                    "requestedSchema": _form({"confirm": {"type": "boolean"}}, ["confirm"]),
                },
            ),
        }
    )
    return f"Got {_content(answers['first']).get('name')} and {_content(answers['second'])}"


@server.tool(
    task="required",
    defer_task=True,
    description="Asks for a name (MRTR), then finishes as a task (tasks-mrtr-composition).",
)
async def test_tool_with_task(ctx: Context) -> str:
    answer = await ctx.elicit("What is your name?", NAME_FORM, key="user_name")
    await ctx.start_task()
    await trio.sleep(0.2)
    return f"Task finished for {_content(answer).get('name', 'stranger')}"


_register_dynamic_tool()


# ================================================================================== resources


@server.resource(
    "test://static-text",
    name="static-text",
    description="A static text resource",
    mime_type="text/plain",
)
def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource(
    "test://static-binary",
    name="static-binary",
    description="A static binary resource (a PNG image)",
    mime_type="image/png",
)
def static_binary() -> bytes:
    return base64.b64decode(PNG_BASE64)


@server.resource(
    "test://watched-resource",
    name="watched-resource",
    description="A resource clients subscribe to",
    mime_type="text/plain",
)
def watched_resource() -> str:
    return "Watched resource content."


@server.resource(
    "test://template/{id}/data",
    name="template-data",
    description="Data for an id, from a resource template",
    mime_type="application/json",
)
def template_data(id: str) -> str:
    return json.dumps(
        {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}, separators=(",", ":")
    )


# ==================================================================================== prompts


@server.prompt(description="A simple prompt without arguments")
def test_simple_prompt() -> str:
    return "This is a simple prompt for testing."


@server.prompt(
    description="A prompt with two required arguments",
    arguments={"arg1": "First test argument", "arg2": "Second test argument"},
)
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt(
    description="A prompt embedding a resource",
    arguments={"resourceUri": "URI of the resource to embed"},
)
def test_prompt_with_embedded_resource(resourceUri: str) -> list[PromptMessage]:
    return [
        PromptMessage(
            role="user",
            content=EmbeddedResource(
                resource=TextResourceContents(
                    uri=resourceUri,
                    mimeType="text/plain",
                    text="Embedded resource content for testing.",
                )
            ),
        ),
        PromptMessage(
            role="user", content=TextContent(text="Please process the embedded resource above.")
        ),
    ]


@server.prompt(description="A prompt with an image")
def test_prompt_with_image() -> list[PromptMessage]:
    return [
        PromptMessage(role="user", content=ImageContent(data=PNG_BASE64, mimeType="image/png")),
        PromptMessage(role="user", content=TextContent(text="Please analyze the image above.")),
    ]


@server.prompt(description="A prompt that asks the user for context first (SEP-2322)")
async def test_input_required_result_prompt(ctx: Context) -> str:
    answer = await ctx.elicit(
        "What context should the prompt use?",
        _form({"context": {"type": "string"}}, ["context"]),
        key="user_context",
    )
    return f"Use this context: {_content(answer).get('context', '(none)')}"


_register_dynamic_prompt()


# ============================================================================ skills, SEP-2640

BULK_SKILLS = 101
"""Generated skills past the demo ones, so that ``skills/list`` needs a second page (the
server's page size is 100)."""


def _write_bulk_skills(folder: str) -> None:
    """`BULK_SKILLS` one-file skills (``bulk-000`` ...) in ``folder``."""
    for n in range(BULK_SKILLS):
        name = f"bulk-{n:03d}"
        os.makedirs(os.path.join(folder, name))
        with open(os.path.join(folder, name, "SKILL.md"), "w", encoding="utf-8") as f:
            f.write(f"---\nname: {name}\ndescription: Generated skill {n}.\n---\n\nStep {n}.\n")


# the demo skills first: the first listed (acme/billing/refunds) has a subdirectory, which the
# sep-2640-skills-directory scenario reads
server.skills_from(os.path.join(os.path.dirname(mcpfast.__file__), "demo_skills"))
with tempfile.TemporaryDirectory(prefix="mcpfast-conformance-skills-") as _bulk:
    _write_bulk_skills(_bulk)
    server.skills_from(_bulk)  # read into memory: the folder may go


# ================================================================================ completions

COMPLETIONS = ["paris", "park", "party", "test", "testing", "tested"]


@server.completion(prompt="test_prompt_with_arguments")
def complete_prompt_argument(argument: str, value: str, context: dict[str, str]) -> list[str]:
    return [v for v in COMPLETIONS if v.startswith(value.lower())]


@server.completion(template="test://template/{id}/data")
def complete_template_id(argument: str, value: str, context: dict[str, str]) -> list[str]:
    return [v for v in ("123", "456", "789") if v.startswith(value)]


# ======================================================================================= main


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[1].isdigit():
        print("usage: python tests/conformance/server.py PORT", file=sys.stderr)
        return 2
    # The development signing key goes to a throwaway directory, not to $HOME.
    if not os.environ.get("MCPFAST_STATE_DIR"):
        os.environ["MCPFAST_STATE_DIR"] = tempfile.mkdtemp(prefix="mcpfast-conformance-")
    engine = os.environ.get("MCPFAST_ENGINE", "hypercorn")  # the HTTP engine under test
    config = mcpfast.Config(host="127.0.0.1", port=int(argv[1]), engine=engine)  # type: ignore[arg-type]
    print(f"conformance server at http://127.0.0.1:{config.port}{config.path}", file=sys.stderr)
    trio.run(mcpfast.serve, server, config)
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main(sys.argv))
    except KeyboardInterrupt:
        raise SystemExit(130) from None
