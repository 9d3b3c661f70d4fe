"""Interop: the mcpfast client (`mcpfast.connect`) against peer servers, in every era each one
speaks: the official Python SDK's server (``mcp`` on PyPI, `MCPServer`: ``peers/sdk_full.py``)
and FastMCP's (``peers/fastmcp_full.py``), over Streamable HTTP (one server process per peer for
the module) and over stdio (a process per era).

Both peers serve 2026-07-28 and every handshake revision on one endpoint, so the client is
pinned to each era (``era="modern"``, or ``"legacy"`` with ``legacy_version``); ``era="auto"``
must discover the modern era. mcpfast's HTTP engine is not involved (it is the client here).
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

import mcpfast
from mcpfast.client import EraCache
from mcpfast.errors import MCPError

from .peers.harness import (
    ERAS,
    LEGACY,
    MODERN,
    NO_ELICITATION,
    PEERS,
    Changes,
    check_all,
    engine_independent,
    peer_server,
)

pytestmark = engine_independent
TIMEOUT = 10
PEER_SERVERS = {"sdk": "sdk_full.py", "fastmcp": "fastmcp_full.py"}
PACKAGES = {
    "sdk": ("mcp", "the official SDK (pip install mcp) is not installed"),
    "fastmcp": ("fastmcp", "FastMCP (pip install fastmcp) is not installed"),
}
SERVER_INFO = {"sdk": ("sdk-full", "2.3.0"), "fastmcp": ("fastmcp-full", "4.1.6")}
NO_SUBSCRIBE = "fastmcp 4.1.6's server serves neither resources/subscribe nor subscriptions/listen"


def require(name: str) -> None:
    """Skip when the peer's package is missing (its server script could not run)."""
    package, reason = PACKAGES[name]
    pytest.importorskip(package, reason=reason)


@pytest.fixture(scope="module")
def sdk_url() -> Iterator[str]:
    require("sdk")
    with peer_server(PEER_SERVERS["sdk"]) as url:
        yield url


@pytest.fixture(scope="module")
def fastmcp_url() -> Iterator[str]:
    require("fastmcp")
    with peer_server(PEER_SERVERS["fastmcp"]) as url:
        yield url


@pytest.fixture(scope="module", params=list(PEER_SERVERS))
def peer_url(request: pytest.FixtureRequest) -> tuple[str, str]:
    """(peer, URL): each peer server runs once for the module."""
    return request.param, request.getfixturevalue(f"{request.param}_url")


class Peer:
    """The mcpfast client's handlers, recording what the server sent."""

    def __init__(self) -> None:
        self.elicitations: list[dict[str, Any]] = []
        self.logs: list[dict[str, Any]] = []
        self.updated: list[str] = []
        self.changes = Changes()

    def elicit(self, params: dict[str, Any]) -> dict[str, Any]:
        self.elicitations.append(params)
        return {"action": "accept", "content": {"name": "Lin"}}

    def sample(self, params: dict[str, Any]) -> dict[str, Any]:
        prompt = params["messages"][0]["content"]["text"]
        content = {"type": "text", "text": f"beep:{prompt}"}
        return {"role": "assistant", "content": content, "model": "m"}

    def roots(self) -> list[dict[str, str]]:
        return [{"uri": "file:///work", "name": "work"}]

    def log(self, params: dict[str, Any]) -> None:
        self.logs.append(params)
        self.changes.notify()

    def notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/resources/updated":
            self.updated.append(params["uri"])
            self.changes.notify()


@asynccontextmanager
async def connected(target: Any, version: str, peer: Peer) -> AsyncIterator[mcpfast.Client]:
    modern = version == MODERN
    async with mcpfast.connect(
        target,
        "modern" if modern else "legacy",
        legacy_version=LEGACY[0] if modern else version,
        timeout=TIMEOUT,
        on_elicit=peer.elicit,
        on_sample=peer.sample,
        on_roots=peer.roots,
        on_log=peer.log,
        on_notification=peer.notification,
        log_level="info" if modern else None,  # legacy sessions send logging/setLevel
        era_cache=EraCache(),
    ) as client:
        assert client.protocol_version == version
        yield client


def _text(result: Any) -> str:
    return str(result.content[0].text)


async def tools(client: mcpfast.Client, name: str, version: str, peer: Peer) -> None:
    listed = {tool.name: tool for tool in await client.list_tools()}
    assert {"echo", "add", "forecast", "count", "ask_name", "block"} <= set(listed)
    assert listed["add"].inputSchema["properties"].keys() == {"a", "b"}
    echo = await client.call_tool("echo", {"text": "héllo, 世界"})
    assert not echo.isError and _text(echo) == "héllo, 世界"
    invalid = await client.call_tool("add", {"a": "one", "b": 2})
    assert invalid.isError


async def structured_output(client: mcpfast.Client, name: str, version: str, peer: Peer) -> None:
    add = await client.call_tool("add", {"a": 20, "b": 22})
    forecast = await client.call_tool("forecast", {"city": "Porto"})
    expected = {"city": "Porto", "celsius": 21, "sunny": True}
    assert json.loads(_text(add)) == 42 and json.loads(_text(forecast)) == expected
    if version != NO_ELICITATION:  # 2025-03-26 predates structured output
        assert add.structuredContent == {"result": 42}
        assert forecast.structuredContent == expected
        schema = {t.name: t for t in await client.list_tools()}["forecast"].outputSchema
        assert isinstance(schema, dict) and set(schema["properties"]) == set(expected)


async def progress(client: mcpfast.Client, name: str, version: str, peer: Peer) -> None:
    seen: list[dict[str, Any]] = []
    result = await client.call_tool("count", {"steps": 3}, progress=seen.append)
    assert _text(result) == "counted 3"
    assert [(p["progress"], p["total"], p.get("message")) for p in seen] == [
        (1, 3, "step 1"),
        (2, 3, "step 2"),
        (3, 3, "step 3"),
    ]


async def elicitation(client: mcpfast.Client, name: str, version: str, peer: Peer) -> None:
    if version == NO_ELICITATION:
        # a revision without elicitation: the SDK's server does not ask; FastMCP 4.1.6's asks
        # anyway and mcpfast's client refuses (-32601). The call fails, the user is not asked.
        try:
            result = await client.call_tool("ask_name", {})
        except MCPError:
            pass
        else:
            assert result.isError, result
        assert peer.elicitations == []
        return
    result = await client.call_tool("ask_name", {})
    assert not result.isError and _text(result) == "hello Lin"
    assert peer.elicitations[-1]["message"] == "What is your name?"


async def sampling(client: mcpfast.Client, name: str, version: str, peer: Peer) -> None:
    result = await client.call_tool("ask_model", {"prompt": "say beep"})
    assert not result.isError and _text(result) == "model said beep:say beep"


async def roots(client: mcpfast.Client, name: str, version: str, peer: Peer) -> None:
    result = await client.call_tool("roots", {})
    assert not result.isError and _text(result) == "file:///work"


async def resources(client: mcpfast.Client, name: str, version: str, peer: Peer) -> None:
    assert "peer://readme" in {r.uri for r in await client.list_resources()}
    templates = await client.list_resource_templates()
    assert [t.uriTemplate for t in templates] == ["peer://items/{name}"]
    readme = (await client.read_resource("peer://readme")).contents[0]
    assert readme.text == f"{name} full server" and readme.mimeType == "text/plain"
    item = (await client.read_resource("peer://items/Ada")).contents[0]
    assert item.uri == "peer://items/Ada" and json.loads(item.text or "") == {
        "name": "Ada",
        "known": True,
    }
    with pytest.raises(MCPError) as missing:
        await client.read_resource("peer://nothing")
    assert missing.value.code in (-32002, -32602)


async def prompts(client: mcpfast.Client, name: str, version: str, peer: Peer) -> None:
    listed = {p.name: p for p in await client.list_prompts()}
    assert {a.name for a in listed["greeting"].arguments or []} == {"name", "style"}
    formal = await client.get_prompt("greeting", {"name": "Ada", "style": "formal"})
    assert formal.messages[0].role == "user"
    assert formal.messages[0].content.text == "Dear Ada, good day."  # type: ignore[union-attr]


async def completion(client: mcpfast.Client, name: str, version: str, peer: Peer) -> None:
    names = await client.complete(
        {"type": "ref/prompt", "name": "greeting"}, {"name": "name", "value": "a"}
    )
    assert names.values == ["Ada", "Alan"]
    template = {"type": "ref/resource", "uri": "peer://items/{name}"}
    items = await client.complete(template, {"name": "name", "value": "g"})
    assert items.values == ["Grace"]


async def logs(client: mcpfast.Client, name: str, version: str, peer: Peer) -> None:
    if version != MODERN:
        await client.set_log_level("info")
    assert _text(await client.call_tool("chatty", {})) == "chatted"
    await peer.changes.until(
        lambda: any(m["level"] == "warning" for m in peer.logs), "warning log message"
    )
    assert [m["level"] for m in peer.logs] == ["info", "warning"]
    assert "a warning line" in json.dumps(peer.logs[-1]["data"])


async def subscriptions(client: mcpfast.Client, name: str, version: str, peer: Peer) -> None:
    if name == "fastmcp":
        assert not client.server_capabilities.get("resources", {}).get("subscribe")
        pytest.skip(NO_SUBSCRIBE)
    uri = f"peer://items/{uuid.uuid4().hex}"
    if version == MODERN:
        async with client.listen(resource_uris=[uri]) as events:
            ack = await anext(events)
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            assert ack["params"]["notifications"] == {"resourceSubscriptions": [uri]}
            await client.call_tool("touch", {"uri": uri})
            updated = await anext(events)
            assert updated["method"] == "notifications/resources/updated"
            assert updated["params"]["uri"] == uri
    else:
        await client.subscribe(uri)
        await client.call_tool("touch", {"uri": uri})
        await peer.changes.until(
            lambda: uri in peer.updated, f"notifications/resources/updated for {uri}"
        )


async def cancellation(client: mcpfast.Client, name: str, version: str, peer: Peer) -> None:
    tag = uuid.uuid4().hex
    started = trio.Event()
    async with trio.open_nursery() as nursery:

        async def call() -> None:
            await client.call_tool("block", {"tag": tag}, progress=lambda _: started.set())

        nursery.start_soon(call)
        await started.wait()
        nursery.cancel_scope.cancel()
    seen = await client.call_tool("cancelled", {"tag": tag})
    assert seen.structuredContent == {"result": True}, "the server never saw the cancellation"


FEATURES = {
    f.__name__: f
    for f in (
        tools,
        structured_output,
        progress,
        elicitation,
        sampling,
        roots,
        resources,
        prompts,
        completion,
        logs,
        subscriptions,
        cancellation,
    )
}


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("feature", FEATURES)
async def test_mcpfast_client_over_http(
    feature: str, version: str, peer_url: tuple[str, str]
) -> None:
    name, url = peer_url
    peer = Peer()
    async with connected(url, version, peer) as client:
        with trio.fail_after(TIMEOUT):
            await FEATURES[feature](client, name, version, peer)


async def test_mcpfast_client_auto_discovers_the_modern_era(peer_url: tuple[str, str]) -> None:
    name, url = peer_url
    async with mcpfast.connect(url, era_cache=EraCache(), timeout=TIMEOUT) as client:
        assert (client.era, client.protocol_version) == ("modern", MODERN)
        assert client.server_info.get("name") in (SERVER_INFO[name][0], None)
        assert client.discover_result is not None
        assert MODERN in client.discover_result.supportedVersions
        assert _text(await client.call_tool("echo", {"text": "auto"})) == "auto"


@pytest.mark.parametrize("name", PEER_SERVERS)
async def test_mcpfast_client_auto_over_stdio(name: str) -> None:
    """The ``server/discover`` probe on a fresh pipe: both peers answer it (modern)."""
    require(name)
    command = [sys.executable, str(PEERS / PEER_SERVERS[name]), "stdio"]
    async with mcpfast.connect(command, era_cache=EraCache(), timeout=TIMEOUT) as client:
        assert (client.era, client.protocol_version) == ("modern", MODERN)
        assert _text(await client.call_tool("echo", {"text": "auto"})) == "auto"


@pytest.mark.parametrize("version", LEGACY)
async def test_mcpfast_client_legacy_handshake(version: str, peer_url: tuple[str, str]) -> None:
    name, url = peer_url
    async with connected(url, version, Peer()) as client:
        assert client.era == "legacy"
        assert (client.server_info["name"], client.server_info["version"]) == SERVER_INFO[name]
        assert client.instructions is not None and "mcpfast" in client.instructions
        await client.ping()


@pytest.mark.parametrize("version", ERAS)
async def test_mcpfast_client_declares_only_what_the_revision_has(
    version: str, sdk_url: str
) -> None:
    """The capabilities the client's handlers amount to, as the SDK server reads them in each
    revision (2025-03-26 has no elicitation)."""
    async with connected(sdk_url, version, Peer()) as client:
        declared = (await client.call_tool("client_capabilities", {})).structuredContent
    assert isinstance(declared, dict)
    assert {"sampling", "roots"} <= set(declared)
    assert ("elicitation" in declared) == (version != NO_ELICITATION), declared


@pytest.mark.timeout(150)  # every feature may use its whole bound before failing
@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("name", PEER_SERVERS)
async def test_mcpfast_client_over_stdio(name: str, version: str) -> None:
    """One ``<peer> stdio`` process per era; every feature, all reported at once (listening
    over stdio is `test_mcpfast_client_listens_over_stdio`)."""
    require(name)
    peer = Peer()
    command = [sys.executable, str(PEERS / PEER_SERVERS[name]), "stdio"]
    async with connected(command, version, peer) as client:

        def bound(feature: Any) -> Any:
            async def run() -> None:
                peer.logs.clear()
                try:
                    await feature(client, name, version, peer)
                except pytest.skip.Exception:
                    pass  # a peer limitation, reported by the HTTP test of the same feature

            return run

        features = {n: bound(f) for n, f in FEATURES.items()}
        if version == MODERN:
            del features["subscriptions"]
        failures = await check_all(features)
    assert not failures, failures


async def test_mcpfast_client_listens_over_stdio() -> None:
    """``subscriptions/listen`` over stdio (the SDK server speaks it): the stream's messages
    are the notifications naming the listen request's id, ended by ``notifications/cancelled``."""
    require("sdk")
    peer = Peer()
    uri = f"peer://items/{uuid.uuid4().hex}"
    command = [sys.executable, str(PEERS / "sdk_full.py"), "stdio"]
    async with connected(command, MODERN, peer) as client:
        with trio.fail_after(TIMEOUT):
            async with client.listen(resource_uris=[uri]) as events:
                ack = await anext(events)
                assert ack["method"] == "notifications/subscriptions/acknowledged"
                await client.call_tool("touch", {"uri": uri})
                updated = await anext(events)
                assert updated["params"]["uri"] == uri
