"""An mcpfast server with every feature, for peer clients to hit (both eras, HTTP and stdio).

In process: ``from tests.e2e.peers.mcpfast_full import server``; over stdio:
``mcpfast serve --stdio tests/e2e/peers/mcpfast_full.py:server``. Nothing here may import the
test package (the stdio form loads this file by path).

Tools: ``echo``, ``add`` (a wrapped structured int), ``forecast`` (a structured object),
``count`` (progress), ``ask_name`` (elicitation), ``ask_model`` (sampling), ``roots``, ``chatty``
(logs at debug, info and warning), ``block`` (runs until cancelled, after one progress
notification), ``cancelled`` (waits until the ``block`` call of a tag saw its cancellation) and
``touch`` (``notifications/resources/updated`` for a URI). Resources ``full://readme``,
``full://config`` and the template ``full://items/{name}``; the prompt ``greeting``; completion
of the prompt's ``name`` and the template's ``name``.
"""

from __future__ import annotations

import msgspec
import trio

import mcpfast
from mcpfast import Context

server = mcpfast.Server(
    "mcpfast-full", "1.0.0", instructions="Every mcpfast feature, for interop peers."
)

NAMES = ["Ada", "Alan", "Barbara", "Grace", "Linus"]
_CANCELLED: dict[str, trio.Event] = {}


def _cancelled(tag: str) -> trio.Event:
    return _CANCELLED.setdefault(tag, trio.Event())


class Forecast(msgspec.Struct):
    city: str
    celsius: int
    sunny: bool


@server.tool(annotations={"readOnlyHint": True})
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers (structured output, wrapped as ``result``)."""
    return a + b


@server.tool()
def forecast(city: str) -> Forecast:
    """A structured object result."""
    return Forecast(city=city, celsius=21, sunny=True)


@server.tool()
async def count(ctx: Context, steps: int = 3) -> str:
    """Report progress ``steps`` times."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
    return f"counted {steps}"


@server.tool()
async def ask_name(ctx: Context) -> str:
    """Elicit a name, then greet."""
    answer = await ctx.elicit(
        "What is your name?",
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        key="name",
    )
    if answer.get("action") != "accept":
        return f"no name ({answer.get('action')})"
    return f"hello {answer['content']['name']}"


@server.tool()
async def ask_model(ctx: Context, prompt: str) -> str:
    """Sample the client's model."""
    answer = await ctx.sample(prompt, max_tokens=50, key="model")
    return f"model said {answer['content']['text']}"


@server.tool()
async def roots(ctx: Context) -> str:
    """The client's roots, comma-separated."""
    return ",".join(root["uri"] for root in await ctx.list_roots(key="roots"))


@server.tool()
async def chatty(ctx: Context) -> str:
    """Log at debug, info and warning (the client's level decides what it receives)."""
    await ctx.debug("a debug line")
    await ctx.info("an info line")
    await ctx.warning("a warning line")
    return "chatted"


@server.tool()
async def block(ctx: Context, tag: str) -> str:
    """Report progress once (so the caller knows it runs), then wait until cancelled."""
    await ctx.report_progress(0, 1, "started")
    try:
        await trio.sleep_forever()
    except trio.Cancelled:
        _cancelled(tag).set()
        raise


@server.tool()
async def cancelled(tag: str, wait: float = 5.0) -> bool:
    """Whether the ``block`` call tagged ``tag`` was cancelled (waiting up to ``wait`` s)."""
    with trio.move_on_after(wait):
        await _cancelled(tag).wait()
    return _cancelled(tag).is_set()


@server.tool()
async def touch(uri: str) -> str:
    """Announce that a resource changed."""
    await server.resource_updated(uri)
    return f"touched {uri}"


@server.resource("full://readme", mime_type="text/plain")
def readme() -> str:
    """What this server is."""
    return "mcpfast full server"


@server.resource("full://config", mime_type="application/json")
def config() -> dict[str, object]:
    """A JSON resource."""
    return {"debug": False, "level": 3}


@server.resource("full://items/{name}", mime_type="application/json")
def item(name: str) -> dict[str, object]:
    """One item, by name."""
    return {"name": name, "known": name in NAMES}


@server.prompt(arguments={"name": "Who to greet", "style": "plain or formal"})
def greeting(name: str, style: str = "plain") -> str:
    """Greet someone."""
    return f"Dear {name}, good day." if style == "formal" else f"Hi {name}!"


@server.completion(prompt="greeting")
@server.completion(template="full://items/{name}")
def complete_name(argument: str, value: str, context: dict[str, str]) -> list[str]:
    if argument == "style":
        return [s for s in ("formal", "plain") if s.startswith(value)]
    return [n for n in NAMES if n.lower().startswith(value.lower())]
