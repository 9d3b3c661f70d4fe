"""The official Python SDK's server (``mcp`` on PyPI, `MCPServer`) with every feature, for the
mcpfast client: both eras on one Streamable HTTP endpoint (stateful legacy sessions, 2026-07-28
by header), or stdio (the first request picks the era).

python sdk_full.py PORT | stdio

Tools mirror `mcpfast_full`: ``echo``, ``add``, ``forecast``, ``count`` (progress), ``ask_name`` /
``ask_model`` / ``roots`` (elicitation, sampling and roots through `Resolve`, so live requests in
a legacy session and ``input_required`` under 2026-07-28), ``chatty`` (logs), ``block`` and
``cancelled`` (cancellation), ``client_capabilities``, ``touch`` (``notifications/resources/updated`` to legacy
subscribers and to ``subscriptions/listen`` streams). ``logging/setLevel`` and
``resources/subscribe`` are added on the low-level server: `MCPServer` serves neither.
"""

from __future__ import annotations

import sys
import warnings
from typing import Annotated, Any

import anyio
import mcp.types as types
from mcp.server import MCPServer
from mcp.server.mcpserver import Context, Elicit, ListRoots, Resolve, Sample
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

warnings.simplefilter("ignore")  # the SDK flags roots, sampling and logging as deprecated

mcp = MCPServer("sdk-full", version="2.3.0", instructions="Every SDK feature, for mcpfast.")
NAMES = ["Ada", "Alan", "Barbara", "Grace", "Linus"]
_CANCELLED: dict[str, anyio.Event] = {}
SUBSCRIBERS: dict[str, list[Any]] = {}
LEVEL = ["debug"]  # the last logging/setLevel (tests run one session at a time)
RANK = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


class Forecast(BaseModel):
    city: str
    celsius: int
    sunny: bool


class Name(BaseModel):
    name: str


@mcp.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool()
def forecast(city: str) -> Forecast:
    """A structured object result."""
    return Forecast(city=city, celsius=21, sunny=True)


@mcp.tool()
async def count(ctx: Context, steps: int = 3) -> str:
    """Report progress ``steps`` times."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
    return f"counted {steps}"


def _cancelled(tag: str) -> anyio.Event:
    return _CANCELLED.setdefault(tag, anyio.Event())


def _ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@mcp.tool()
async def ask_name(name: Annotated[Name, Resolve(_ask_name)]) -> str:
    """Elicit a name, then greet."""
    return f"hello {name.name}"


def _ask_model(prompt: str) -> Sample:
    message = types.SamplingMessage(
        role="user", content=types.TextContent(type="text", text=prompt)
    )
    return Sample([message], max_tokens=50)


@mcp.tool()
async def ask_model(
    prompt: str, answer: Annotated[types.CreateMessageResult, Resolve(_ask_model)]
) -> str:
    """Sample the client's model."""
    content = answer.content
    return "model said " + (content.text if isinstance(content, types.TextContent) else "?")


def _roots() -> ListRoots:
    return ListRoots()


@mcp.tool()
async def roots(found: Annotated[types.ListRootsResult, Resolve(_roots)]) -> str:
    """The client's roots, comma-separated."""
    return ",".join(str(root.uri) for root in found.roots)


@mcp.tool()
async def chatty(ctx: Context) -> str:
    """Log at debug, info and warning: the SDK filters by the request's ``logLevel`` under
    2026-07-28 and leaves ``logging/setLevel`` to the application in a legacy session."""
    legacy = ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS
    floor = RANK.index(LEVEL[0]) if legacy else 0
    for level in ("debug", "info", "warning"):
        if RANK.index(level) >= floor:
            await ctx.log(level, f"a {level} line")
    return "chatted"


@mcp.tool()
async def block(ctx: Context, tag: str) -> str:
    """Report progress once (so the caller knows it runs), then wait until cancelled."""
    await ctx.report_progress(0, 1, "started")
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        _cancelled(tag).set()
        raise
    return "never"


@mcp.tool()
async def cancelled(tag: str, wait: float = 5.0) -> bool:
    """Whether the ``block`` call tagged ``tag`` was cancelled (waiting up to ``wait`` s)."""
    with anyio.move_on_after(wait):
        await _cancelled(tag).wait()
    return _cancelled(tag).is_set()


@mcp.tool()
def client_capabilities(ctx: Context) -> dict[str, Any]:
    """The capabilities the client declared (``initialize``, or this request's ``_meta``)."""
    declared = ctx.client_capabilities
    return declared.model_dump(by_alias=True, exclude_none=True) if declared else {}


@mcp.tool()
async def touch(ctx: Context, uri: str) -> str:
    """Announce that a resource changed, to listen streams and legacy subscribers."""
    await ctx.notify_resource_updated(uri)
    for session in SUBSCRIBERS.get(uri, []):
        await session.send_resource_updated(uri)
    return f"touched {uri}"


@mcp.resource("peer://readme", mime_type="text/plain")
def readme() -> str:
    """What this server is."""
    return "sdk full server"


@mcp.resource("peer://items/{name}", mime_type="application/json")
def item(name: str) -> dict[str, object]:
    """One item, by name."""
    return {"name": name, "known": name in NAMES}


@mcp.prompt()
def greeting(name: str, style: str = "plain") -> str:
    """Greet someone."""
    return f"Dear {name}, good day." if style == "formal" else f"Hi {name}!"


@mcp.completion()  # type: ignore[untyped-decorator, no-untyped-call]  # MCPServer.completion has no annotations (mcp 2.3.0)
async def complete(
    ref: types.PromptReference | types.ResourceTemplateReference,
    argument: types.CompletionArgument,
    context: types.CompletionContext | None,
) -> types.Completion:
    if argument.name == "style":
        values = [s for s in ("formal", "plain") if s.startswith(argument.value)]
    else:
        values = [n for n in NAMES if n.lower().startswith(argument.value.lower())]
    return types.Completion(values=values, total=len(values), has_more=False)


async def _set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
    LEVEL[0] = params.level
    return types.EmptyResult()


async def _subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
    SUBSCRIBERS.setdefault(str(params.uri), []).append(ctx.session)
    return types.EmptyResult()


async def _unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    sessions = SUBSCRIBERS.get(str(params.uri), [])
    SUBSCRIBERS[str(params.uri)] = [s for s in sessions if s is not ctx.session]
    return types.EmptyResult()


lowlevel = mcp._lowlevel_server
lowlevel.add_request_handler("logging/setLevel", types.SetLevelRequestParams, _set_level)
lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, _subscribe)
lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, _unsubscribe)


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        mcp.run()
    else:
        mcp.run(
            transport="streamable-http",
            host="127.0.0.1",
            port=int(sys.argv[1]),
            streamable_http_path="/mcp",
        )
