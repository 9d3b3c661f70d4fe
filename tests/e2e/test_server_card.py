"""The Server Card (SEP-2127, experimental) through real servers on both engines: the card at
``/mcp/server-card`` and the AI Catalog at ``/.well-known/ai-catalog.json`` agree with
``server/discover``, are public (CORS) and cacheable (ETag), answer GET and HEAD only, and
`mcpfast.client.read_server_card` reads them (directly, from the endpoint URL, or through the
catalog); a server that publishes none serves neither."""

from __future__ import annotations

import httpx2
import pytest

import mcpfast
from mcpfast.client import read_server_card
from mcpfast.errors import TransportError
from mcpfast.protocol.card import SCHEMA

from ..helpers import running

ENGINES = pytest.mark.parametrize("engine", ["hypercorn", "native"])


def card_server() -> mcpfast.Server:
    server = mcpfast.Server(
        "com.example/weather", "3.1.4", title="Weather", description="Forecasts for any city"
    )

    @server.tool()
    def forecast(city: str) -> str:
        return f"sun in {city}"

    server.publish_card()
    return server


@ENGINES
async def test_the_card_and_the_catalog(engine: str) -> None:
    async with (
        running(card_server(), engine=engine) as url,
        httpx2.AsyncClient() as http,
        mcpfast.connect(url, "modern") as client,
    ):
        base = url.removesuffix("/mcp")
        got = await http.get(url + "/server-card")
        catalog = await http.get(base + "/.well-known/ai-catalog.json")
        head = await http.head(url + "/server-card")
        cached = await http.get(
            url + "/server-card", headers={"if-none-match": got.headers["etag"]}
        )
        refused = [await http.request(m, url + "/server-card") for m in ("POST", "PUT", "DELETE")]
        discovered = client.discover_result
    assert got.status_code == 200 and got.headers["access-control-allow-origin"] == "*"
    card = got.json()
    assert discovered is not None
    assert card["$schema"] == SCHEMA
    assert card["name"] == discovered.server_info["name"]
    assert card["version"] == discovered.server_info["version"] == "3.1.4"
    assert card["title"] == "Weather" and card["description"] == "Forecasts for any city"
    (remote,) = card["remotes"]
    assert remote == {
        "type": "streamable-http",
        "url": url,
        "supportedProtocolVersions": discovered.supportedVersions,
    }
    assert not {"tools", "resources", "prompts", "capabilities"} & set(card)  # none listed
    assert catalog.status_code == 200
    assert catalog.headers["access-control-allow-origin"] == "*"
    assert catalog.json()["entries"][0]["url"] == url + "/server-card"
    assert head.status_code == 200 and head.content == b""
    assert cached.status_code == 304
    assert {r.status_code for r in refused} == {405}


@ENGINES
async def test_the_client_helper(engine: str) -> None:
    async with running(card_server(), engine=engine) as url:
        base = url.removesuffix("/mcp")
        direct = await read_server_card(url + "/server-card")
        from_endpoint = await read_server_card(url)
        through_catalog = await read_server_card(base + "/.well-known/ai-catalog.json")
    assert direct == from_endpoint == through_catalog
    assert direct.name == "com.example/weather" and direct.version == "3.1.4"
    assert direct.remotes and direct.remotes[0].url == url


@ENGINES
async def test_no_card_unless_published(engine: str) -> None:
    async with running(mcpfast.Server("com.example/quiet"), engine=engine) as url:
        async with httpx2.AsyncClient() as http:
            assert (await http.get(url + "/server-card")).status_code == 404
            base = url.removesuffix("/mcp")
            assert (await http.get(base + "/.well-known/ai-catalog.json")).status_code == 404
        with pytest.raises(TransportError, match="404"):
            await read_server_card(url)
