"""Extensions (SEP-2133) through the real `Endpoint`, in memory: declared with their settings,
advertised in ``server/discover`` and ``initialize``, negotiated per request in both eras
(`Context.supports_extension`), invalid identifiers refused; the tasks extension on the same
mechanism; MCP Apps (SEP-1865) links and fallbacks; the Server Card (SEP-2127) documents."""

from __future__ import annotations

import json
from typing import Any

import pytest
from trio.testing import MockClock

from mcpfast import Context, Server
from mcpfast.protocol.apps import APP_MIME_TYPE, CLIENT_SETTINGS, UI_EXTENSION
from mcpfast.protocol.card import SCHEMA
from mcpfast.protocol.extensions import check_identifier
from mcpfast.server.config import AuthConfig, Config
from mcpfast.server.framework.card import Cards
from mcpfast.types import TASKS_EXTENSION, ImageContent, ToolResult

from ..helpers import validate
from .conftest import Recorder, Wire, serving

X = "com.example/x"
UI = {"extensions": {UI_EXTENSION: CLIENT_SETTINGS}}


def extension_server() -> Server:
    server = Server("ext", "1.2.3", extensions={X: {"level": 2}})

    @server.tool()
    async def probe(ctx: Context) -> dict[str, Any]:
        return {"supported": ctx.supports_extension(X), "settings": ctx.client_extension(X)}

    @server.tool(task="optional")
    async def slow() -> str:
        return "done"

    return server


def structured(reply: Recorder) -> Any:
    return reply.result["structuredContent"]


async def test_declared_extensions_are_advertised_in_both_eras(autojump_clock: MockClock) -> None:
    async with serving(extension_server()) as wire:
        discovered = await wire.modern("server/discover")
        _, initialized = await wire.initialize("2025-06-18")
    extensions = discovered.result["capabilities"]["extensions"]
    assert extensions == {X: {"level": 2}, TASKS_EXTENSION: {}}  # settings inline
    validate("2026-07-28", "DiscoverResult", discovered.result)
    # legacy: the declared extension, not the tasks one (2025-11-25 has core tasks instead)
    assert initialized.result["capabilities"]["extensions"] == {X: {"level": 2}}
    validate("2025-06-18", "InitializeResult", initialized.result)


async def test_negotiated_per_modern_request(autojump_clock: MockClock) -> None:
    async with serving(extension_server()) as wire:
        plain = await wire.modern("tools/call", {"name": "probe", "arguments": {}})
        declared = await wire.modern(
            "tools/call",
            {"name": "probe", "arguments": {}},
            capabilities={"extensions": {X: {"mode": "fast"}}},
        )
        again = await wire.modern("tools/call", {"name": "probe", "arguments": {}})
    assert structured(plain) == {"supported": False, "settings": None}  # off by default
    assert structured(declared) == {"supported": True, "settings": {"mode": "fast"}}
    assert structured(again)["supported"] is False  # nothing is remembered


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
async def test_negotiated_per_legacy_session(version: str, autojump_clock: MockClock) -> None:
    async with serving(extension_server()) as wire:
        with_it, _ = await wire.initialize(version, {"extensions": {X: {}}})
        without, _ = await wire.initialize(version)
        call = {"name": "probe", "arguments": {}}
        yes = await wire.legacy("tools/call", call, session=with_it, version=version)
        no = await wire.legacy("tools/call", call, session=without, version=version)
    text = json.loads(yes.result["content"][0]["text"])
    assert text == {"supported": True, "settings": {}}
    assert json.loads(no.result["content"][0]["text"])["supported"] is False


async def test_an_extension_the_server_did_not_declare_is_not_in_use(
    autojump_clock: MockClock,
) -> None:
    server = Server("plain")

    @server.tool()
    async def probe(ctx: Context) -> bool:
        return ctx.supports_extension(X)

    async with serving(server) as wire:
        reply = await wire.modern(
            "tools/call", {"name": "probe", "arguments": {}}, capabilities={"extensions": {X: {}}}
        )
        discovered = await wire.modern("server/discover")
    assert structured(reply) == {"result": False}
    assert "extensions" not in discovered.result["capabilities"]


@pytest.mark.parametrize(
    "identifier",
    ["x", "/x", "example/x", "com.example/", "com..example/x", "com.example/-x", "1com.a/x", 7],
)
def test_invalid_identifiers_are_refused(identifier: Any) -> None:
    with pytest.raises(ValueError, match="reverse-DNS"):
        Server("bad", extensions={identifier: {}})
    with pytest.raises(ValueError, match="reverse-DNS"):
        Server("bad").extension(identifier)


def test_valid_identifiers_and_settings() -> None:
    for identifier in ("io.modelcontextprotocol/ui", "com.example/my_ext.v2", "a.b-c/x"):
        assert check_identifier(identifier) == identifier
    with pytest.raises(ValueError, match="object"):
        Server("bad").extension(X, ["not", "an", "object"])  # type: ignore[arg-type]
    server = Server("s")
    server.extension(X, {"a": 1}, since="2026-07-28")
    assert server.capabilities("2026-07-28")["extensions"] == {X: {"a": 1}}
    assert "extensions" not in server.capabilities("2025-11-25")


async def test_the_tasks_extension_goes_through_the_framework(autojump_clock: MockClock) -> None:
    server = extension_server()

    @server.tool()
    async def tasks_on(ctx: Context) -> bool:
        return ctx.supports_extension(TASKS_EXTENSION)

    tasks: dict[str, Any] = {"extensions": {TASKS_EXTENSION: {}}}
    async with serving(server) as wire:
        task = await wire.modern(
            "tools/call", {"name": "slow", "arguments": {}}, capabilities=tasks
        )
        plain = await wire.modern("tools/call", {"name": "slow", "arguments": {}})
        asked = await wire.modern(
            "tools/call", {"name": "tasks_on", "arguments": {}}, capabilities=tasks
        )
    assert task.result["resultType"] == "task"
    assert plain.result["resultType"] == "complete"
    assert structured(asked) == {"result": True}
    server.remove_tool("slow")
    assert TASKS_EXTENSION not in server.capabilities("2026-07-28")["extensions"]


# ------------------------------------------------------------------------------------ MCP Apps


PAGE = "<!doctype html><p>hello</p>"


def app_server() -> Server:
    server = Server("apps")

    @server.app_resource(
        "ui://apps/view",
        csp={"connect_domains": ["https://api.example.com"]},
        permissions=["clipboardWrite"],
        prefers_border=True,
    )
    def view() -> str:
        return PAGE

    @server.tool(app="ui://apps/view")
    def shown() -> dict[str, int]:
        return {"n": 1}

    @server.tool(app="ui://apps/view", visibility=["app"])
    def refresh() -> dict[str, int]:
        return {"n": 2}

    @server.tool()
    def plain() -> str:
        return "plain"

    return server


def tools_of(reply: Recorder) -> dict[str, Any]:
    return {t["name"]: t for t in reply.result["tools"]}


async def test_an_app_resource_and_its_link(autojump_clock: MockClock) -> None:
    async with serving(app_server()) as wire:
        listed = await wire.modern("tools/list", capabilities=UI)
        read = await wire.modern("resources/read", {"uri": "ui://apps/view"}, capabilities=UI)
        resources = await wire.modern("resources/list", capabilities=UI)
        discovered = await wire.modern("server/discover")
    tools = tools_of(listed)
    assert tools["shown"]["_meta"]["ui"] == {
        "resourceUri": "ui://apps/view",
        "visibility": ["model", "app"],
    }
    assert tools["refresh"]["_meta"]["ui"]["visibility"] == ["app"]
    assert "_meta" not in tools["plain"]
    (content,) = read.result["contents"]
    assert content["mimeType"] == APP_MIME_TYPE and content["text"] == PAGE
    assert content["_meta"]["ui"] == {
        "csp": {"connectDomains": ["https://api.example.com"]},
        "permissions": {"clipboardWrite": {}},
        "prefersBorder": True,
    }
    assert resources.result["resources"][0]["mimeType"] == APP_MIME_TYPE
    assert discovered.result["capabilities"]["extensions"] == {UI_EXTENSION: {}}
    validate("2026-07-28", "ListToolsResult", listed.result)
    validate("2026-07-28", "ReadResourceResult", read.result)


async def test_a_client_without_the_extension_gets_the_text_fallback(
    autojump_clock: MockClock,
) -> None:
    wrong_mime = {"extensions": {UI_EXTENSION: {"mimeTypes": ["text/plain"]}}}
    async with serving(app_server()) as wire:
        listed = await wire.modern("tools/list")
        other = await wire.modern("tools/list", capabilities=wrong_mime)
        called = await wire.modern("tools/call", {"name": "shown", "arguments": {}})
        session, _ = await wire.initialize("2025-06-18")
        legacy = await wire.legacy("tools/list", {}, session=session, version="2025-06-18")
        ui_session, _ = await wire.initialize("2025-06-18", UI)
        legacy_ui = await wire.legacy("tools/list", {}, session=ui_session, version="2025-06-18")
    for reply in (listed, other, legacy):
        tools = tools_of(reply)
        assert set(tools) == {"shown", "plain"}  # the app-only tool is the app's
        assert "_meta" not in tools["shown"]
    assert tools_of(legacy_ui)["shown"]["_meta"]["ui"]["resourceUri"] == "ui://apps/view"
    assert called.result["content"] == [{"type": "text", "text": '{"n":1}'}]
    assert called.result["structuredContent"] == {"n": 1}


async def test_an_app_tool_without_text_gets_some(autojump_clock: MockClock) -> None:
    server = Server("apps")

    @server.tool(app="ui://apps/chart")
    def chart() -> ToolResult:
        image = ImageContent(data="AAAA", mimeType="image/png")
        return ToolResult(content=[image], structuredContent={"points": [1, 2]})

    async with serving(server) as wire:
        called = await wire.modern("tools/call", {"name": "chart", "arguments": {}})
    assert called.result["content"][-1] == {"type": "text", "text": '{"points":[1,2]}'}


def test_app_registration_is_checked() -> None:
    server = Server("apps")
    with pytest.raises(ValueError, match="ui://"):
        server.app_resource("https://example.com/page")
    with pytest.raises(ValueError, match="ui://"):
        server.app_resource("ui://apps/{id}")
    with pytest.raises(ValueError, match="CSP"):
        server.app_resource("ui://apps/v", csp={"script_domains": []})
    with pytest.raises(ValueError, match="permissions"):
        server.app_resource("ui://apps/v", permissions=["telepathy"])
    with pytest.raises(ValueError, match="ui://"):
        server.add_tool(lambda: 1, name="t", app="file:///x")
    with pytest.raises(ValueError, match="visibility"):
        server.add_tool(lambda: 1, name="t", app="ui://apps/v", visibility=["user"])
    assert UI_EXTENSION not in server.extensions  # nothing registered, nothing declared


# -------------------------------------------------------------------------------- Server Card


async def card_of(wire: Wire, path: str, method: str = "GET", **headers: str) -> Recorder:
    recorder = Recorder()
    base = {"host": "127.0.0.1", **headers}
    await wire.endpoint.cards.answer(path, method, base, recorder)
    return recorder


async def test_the_card_follows_server_discover(autojump_clock: MockClock) -> None:
    server = Server(
        "com.example/weather",
        "2.0.1",
        title="Weather",
        description="Forecasts for any city",
        website_url="https://example.com",
    )
    server.publish_card()
    async with serving(server) as wire:
        assert set(wire.endpoint.cards.paths) == {
            "/mcp/server-card",
            "/.well-known/ai-catalog.json",
        }
        card = await card_of(wire, "/mcp/server-card")
        catalog = await card_of(wire, "/.well-known/ai-catalog.json")
        discovered = (await wire.modern("server/discover")).result
    document = json.loads(card.body)
    info = discovered["serverInfo"]
    assert document == {
        "$schema": SCHEMA,
        "name": info["name"],
        "version": info["version"],
        "description": info["description"],
        "title": info["title"],
        "websiteUrl": info["websiteUrl"],
        "remotes": [
            {
                "type": "streamable-http",
                "url": "http://127.0.0.1/mcp",
                "supportedProtocolVersions": discovered["supportedVersions"],
            }
        ],
    }
    assert card.headers["access-control-allow-origin"] == "*"
    assert card.headers["cache-control"] == "public, max-age=3600"
    assert json.loads(catalog.body) == {
        "specVersion": "1.0",
        "entries": [
            {
                "identifier": "urn:air:127.0.0.1:mcp:weather",
                "type": "application/mcp-server-card+json",
                "url": "http://127.0.0.1/mcp/server-card",
            }
        ],
    }


async def test_card_methods_etag_and_hosts(autojump_clock: MockClock) -> None:
    server = Server("plain-name")
    with pytest.raises(ValueError, match="reverse-DNS"):
        server.publish_card()
    server.publish_card("org.example/plain", url="https://mcp.example.org/mcp")
    async with serving(server, Config(auth=None)) as wire:
        got = await card_of(wire, "/mcp/server-card")
        etag = got.headers["etag"]
        same = await card_of(wire, "/mcp/server-card", **{"if-none-match": etag})
        head = await card_of(wire, "/mcp/server-card", "HEAD")
        refused = [await card_of(wire, "/mcp/server-card", m) for m in ("POST", "PUT", "DELETE")]
        preflight = await card_of(wire, "/mcp/server-card", "OPTIONS")
        elsewhere = await card_of(wire, "/mcp/server-card", host="evil.example")
    document = json.loads(got.body)
    assert document["description"] == "plain-name"  # no description: the name stands in
    assert document["remotes"][0]["url"] == "https://mcp.example.org/mcp"
    assert same.status == 304 and same.body == b""
    assert head.status == 200 and head.body == b"" and head.headers["etag"] == etag
    assert {r.status for r in refused} == {405}
    assert refused[0].headers["allow"] == "GET, HEAD, OPTIONS"
    assert preflight.status == 204
    assert preflight.headers["access-control-allow-headers"] == "Content-Type, If-None-Match"
    assert elsewhere.status == 404


def test_no_card_unless_published() -> None:
    assert Cards(Server("com.example/x"), Config()).paths == {}


async def test_a_protected_server_card_names_its_authorization(autojump_clock: MockClock) -> None:
    server = Server("com.example/locked", description="Locked")
    server.publish_card()
    auth = AuthConfig(
        issuer="https://as.example",
        resource="https://mcp.example/mcp",
        jwks_url="https://as.example/j",
    )
    async with serving(server, Config(auth=auth)) as wire:
        card = json.loads((await card_of(wire, "/mcp/server-card")).body)
    (remote,) = card["remotes"]
    assert remote["url"] == "https://mcp.example/mcp"  # the canonical resource
    assert remote["headers"] == [
        {
            "name": "Authorization",
            "description": "An OAuth 2.1 access token for this server (its protected resource "
            "metadata names the authorization servers)",
            "isRequired": True,
            "isSecret": True,
            "value": "Bearer {token}",
        }
    ]
