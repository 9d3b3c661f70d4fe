"""A FastMCP server (``fastmcp`` on PyPI) with every feature it has, for the mcpfast client:
Streamable HTTP (legacy sessions and 2026-07-28 on one endpoint) or stdio.

python fastmcp_full.py PORT | stdio

Tools mirror `mcpfast_full`: ``echo``, ``add``, ``forecast``, ``count`` (progress), ``chatty``
(logs; FastMCP honours ``logging/setLevel`` per session), ``block`` / ``cancelled``
(cancellation), and ``ask_name`` / ``ask_model`` / ``roots``, which ask the client: with
``ctx.elicit`` or the SDK session (FastMCP's own API has no sampling or roots) in a legacy
session, and with FastMCP's guard pattern (an ``InputRequiredResult``, then
``ctx.input_responses`` on the retry) under 2026-07-28. FastMCP 4.1.6 serves neither
``resources/subscribe`` nor ``subscriptions/listen``, so there is no ``touch``.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from fastmcp import Context, FastMCP
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

warnings.simplefilter("ignore")  # the SDK flags roots and sampling as deprecated

mcp = FastMCP("fastmcp-full", version="4.1.6", instructions="Every FastMCP feature, for mcpfast.")
NAMES = ["Ada", "Alan", "Barbara", "Grace", "Linus"]
_CANCELLED: dict[str, anyio.Event] = {}


@dataclass
class Forecast:
    city: str
    celsius: int
    sunny: bool


@dataclass
class Name:
    name: str


def _cancelled(tag: str) -> anyio.Event:
    return _CANCELLED.setdefault(tag, anyio.Event())


def _modern(ctx: Context) -> bool:
    context = ctx.request_context
    return context is not None and context.protocol_version in MODERN_PROTOCOL_VERSIONS


def _ask(key: str, request: Any) -> types.InputRequiredResult:
    return types.InputRequiredResult(input_requests={key: request})


def _answer(ctx: Context, key: str) -> Any:
    return (ctx.input_responses or {}).get(key)


@mcp.tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool
def forecast(city: str) -> Forecast:
    """A structured object result."""
    return Forecast(city=city, celsius=21, sunny=True)


@mcp.tool
async def count(ctx: Context, steps: int = 3) -> str:
    """Report progress ``steps`` times."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
    return f"counted {steps}"


@mcp.tool(output_schema=None)
async def ask_name(ctx: Context) -> Any:
    """Elicit a name, then greet."""
    if _modern(ctx):
        answer = _answer(ctx, "name")
        if answer is None:
            schema = {"type": "object", "properties": {"name": {"type": "string"}}}
            params = types.ElicitRequestFormParams(
                message="What is your name?", requested_schema=schema
            )
            return _ask("name", types.ElicitRequest(params=params))
        return f"hello {answer.content['name']}"
    result = await ctx.elicit("What is your name?", Name)
    return (
        f"hello {result.data.name}" if result.action == "accept" else f"no name ({result.action})"
    )


@mcp.tool(output_schema=None)
async def ask_model(ctx: Context, prompt: str) -> Any:
    """Sample the client's model."""
    message = types.SamplingMessage(
        role="user", content=types.TextContent(type="text", text=prompt)
    )
    if _modern(ctx):
        answer = _answer(ctx, "model")
        if answer is None:
            params = types.CreateMessageRequestParams(messages=[message], max_tokens=50)
            return _ask("model", types.CreateMessageRequest(params=params))
    else:
        answer = await ctx.session.create_message(messages=[message], max_tokens=50)
    return f"model said {answer.content.text}"


@mcp.tool(output_schema=None)
async def roots(ctx: Context) -> Any:
    """The client's roots, comma-separated."""
    if _modern(ctx):
        answer = _answer(ctx, "roots")
        if answer is None:
            return _ask("roots", types.ListRootsRequest())
    else:
        answer = await ctx.session.list_roots()
    return ",".join(str(root.uri) for root in answer.roots)


@mcp.tool
async def chatty(ctx: Context) -> str:
    """Log at debug, info and warning."""
    await ctx.debug("a debug line")
    await ctx.info("an info line")
    await ctx.warning("a warning line")
    return "chatted"


@mcp.tool
async def block(ctx: Context, tag: str) -> str:
    """Report progress once (so the caller knows it runs), then wait until cancelled."""
    await ctx.report_progress(0, 1, "started")
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        _cancelled(tag).set()
        raise
    return "never"


@mcp.tool
async def cancelled(tag: str, wait: float = 5.0) -> bool:
    """Whether the ``block`` call tagged ``tag`` was cancelled (waiting up to ``wait`` s)."""
    with anyio.move_on_after(wait):
        await _cancelled(tag).wait()
    return _cancelled(tag).is_set()


@mcp.resource("peer://readme", mime_type="text/plain")
def readme() -> str:
    """What this server is."""
    return "fastmcp full server"


@mcp.resource("peer://items/{name}", mime_type="application/json")
def item(name: str) -> dict[str, object]:
    """One item, by name."""
    return {"name": name, "known": name in NAMES}


@mcp.prompt
def greeting(name: str, style: str = "plain") -> str:
    """Greet someone."""
    return f"Dear {name}, good day." if style == "formal" else f"Hi {name}!"


@mcp.completion
def complete(ref: Any, argument: types.CompletionArgument, context: Any) -> list[str]:
    if argument.name == "style":
        return [s for s in ("formal", "plain") if s.startswith(argument.value)]
    return [n for n in NAMES if n.lower().startswith(argument.value.lower())]


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        mcp.run(show_banner=False)
    else:
        mcp.run(
            transport="http",
            host="127.0.0.1",
            port=int(sys.argv[1]),
            path="/mcp",
            show_banner=False,
            log_level="warning",
        )
