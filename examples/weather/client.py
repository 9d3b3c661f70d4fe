"""Use every feature of examples/weather/server.py, in either era.

python examples/weather/client.py http://127.0.0.1:8000/mcp [auto|modern|legacy]
"""

import sys

import trio

import mcpfast


def units(params: dict) -> dict:  # the server's question: fill in its form
    return {"action": "accept", "content": {"units": "Fahrenheit"}}


def progress(params: dict) -> None:
    print("progress", params["progress"], "of", params.get("total"))


async def main(url: str, era: str) -> None:
    async with mcpfast.connect(url, era=era, on_elicit=units, on_progress=progress) as client:
        print(client.era, client.protocol_version, client.server_info["name"])
        print(sorted(tool.name for tool in await client.list_tools()))
        print((await client.call_tool("add", {"a": 2, "b": 40})).structuredContent)
        result = await client.call_tool("forecast", {"city": "Porto"})
        print(result.content[0].text)
        read = await client.read_resource("weather://cities/Porto")
        print(read.contents[0].text)
        prompt = await client.get_prompt("trip", {"city": "Porto"})
        print(prompt.messages[0].content.text)
        done = await client.complete(
            {"type": "ref/prompt", "name": "trip"}, {"name": "city", "value": "P"}
        )
        print(done.values)


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "auto")
