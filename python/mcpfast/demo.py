"""The built-in demo server that ``mcpfast serve`` runs when given no target."""

from __future__ import annotations

import datetime

import trio

from .server import Context, Server

server = Server(
    "mcpfast-demo",
    "0.1.0",
    instructions="A demo of mcpfast: echo text, add numbers, watch progress, answer a question.",
)

CITIES = ["Amsterdam", "Berlin", "Lisbon", "London", "Paris", "Porto", "Prague", "Rome"]


@server.tool(annotations={"readOnlyHint": True}, instant=True)
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool(annotations={"readOnlyHint": True}, instant=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool(task="optional")
async def slow(ctx: Context, steps: int = 5, delay: float = 0.2) -> str:
    """Count to ``steps``, reporting progress after each step."""
    for step in range(1, steps + 1):
        await trio.sleep(delay)
        await ctx.report_progress(step, steps, f"step {step} of {steps}")
    return f"done after {steps} steps"


@server.tool()
async def greet(ctx: Context) -> str:
    """Ask the user for their name, then greet them."""
    answer = await ctx.elicit(
        "What is your name?",
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        key="name",
    )
    if answer.get("action") != "accept":
        return "No name given."
    return f"Hello, {answer.get('content', {}).get('name', 'stranger')}!"


@server.tool()
async def touch(uri: str = "demo://readme") -> str:
    """Announce an update of the resource ``uri`` to its subscribers
    (``notifications/resources/updated``)."""
    await server.resource_updated(uri)
    return f"touched {uri}"


CLOCK_PAGE = """<!doctype html>
<html><body style="font: 2rem system-ui; text-align: center">
<p id="time">…</p>
<script>
// MCP Apps (SEP-1865): the host sends the tool's result over postMessage as JSON-RPC.
const show = (r) => { document.getElementById("time").textContent =
  (r.structuredContent && r.structuredContent.time) || r.content[0].text; };
window.addEventListener("message", (e) => {
  const m = e.data || {};
  if (m.method === "ui/notifications/tool-result") show(m.params);
  if (m.id === 1 && m.result) parent.postMessage(
    {jsonrpc: "2.0", method: "ui/notifications/initialized"}, "*");
});
parent.postMessage({jsonrpc: "2.0", id: 1, method: "ui/initialize", params: {
  protocolVersion: "2026-01-26", appInfo: {name: "clock", version: "0.1.0"},
  appCapabilities: {}}}, "*");
</script>
</body></html>
"""


@server.app_resource("ui://demo/clock", title="Clock", csp={}, prefers_border=True)
def clock_page() -> str:
    """An MCP App that shows the time the clock tool returns."""
    return CLOCK_PAGE


@server.tool(app="ui://demo/clock", annotations={"readOnlyHint": True}, instant=True)
def clock() -> dict[str, str]:
    """The current UTC time, shown by the clock app (text for clients without MCP Apps)."""
    return {"time": datetime.datetime.now(datetime.UTC).strftime("%H:%M:%S UTC")}


@server.resource("demo://readme", mime_type="text/markdown")
def readme() -> str:
    """What this server is."""
    return "# mcpfast demo\n\nTools: echo, add, slow, greet, touch, clock (an MCP App)."


@server.resource("demo://cities/{city}", mime_type="application/json")
def city(city: str) -> dict[str, object]:
    """Facts about a city."""
    return {"city": city, "known": city in CITIES}


@server.prompt(arguments={"city": "The city to describe"})
def describe(city: str) -> str:
    """Ask the model to describe a city."""
    return f"Describe {city} in three sentences."


@server.completion(prompt="describe")
@server.completion(template="demo://cities/{city}")
def complete_city(argument: str, value: str, context: dict[str, str]) -> list[str]:
    return [c for c in CITIES if c.lower().startswith(value.lower())]
