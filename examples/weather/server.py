"""A server with each kind of feature: tools (one that asks the user a question, in both eras),
a resource template, a prompt and its completion.

    python examples/weather/server.py [PORT]        # http://127.0.0.1:8000/mcp, both eras
    mcpfast serve examples/weather/server.py:server --engine native
"""

import sys

import trio

import mcpfast
from mcpfast import Context

server = mcpfast.Server("weather", "1.0", instructions="Forecasts for European cities.")

UNITS = {
    "type": "object",
    "properties": {"units": {"type": "string", "enum": ["Celsius", "Fahrenheit"]}},
    "required": ["units"],
}


@server.tool()
def add(a: int, b: int) -> int:  # a typed return: outputSchema and structuredContent
    """Add two numbers."""
    return a + b


@server.tool()
async def forecast(city: str, ctx: Context) -> str:
    """Tomorrow's forecast, in the units the user picks."""
    answer = await ctx.elicit("Units?", UNITS)  # legacy: a live request; 2026-07-28: a round
    await ctx.report_progress(1, 2, "got the units")
    if answer["action"] != "accept":
        return f"{city}: 21 degrees Celsius"
    return f"{city}: 21 degrees {answer['content']['units']}"


@server.resource("weather://cities/{city}", mime_type="application/json")
def city(city: str) -> dict[str, str]:  # a dict is read as JSON text
    """What we know of a city."""
    return {"city": city, "country": "Portugal" if city == "Porto" else "unknown"}


@server.prompt()
def trip(city: str) -> str:  # a string is one user message
    """Plan a day out."""
    return f"Plan a day out in {city}, given tomorrow's forecast."


@server.completion(prompt="trip")
def cities(argument: str, value: str, context: dict[str, str]) -> list[str]:
    return [name for name in ("Paris", "Porto", "Prague") if name.startswith(value)]


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8000
    trio.run(mcpfast.serve, server, mcpfast.Config(host="127.0.0.1", port=port))
