"""Interop: the official Python SDK's client (``mcp`` on PyPI, `mcp.Client`) against mcpfast
servers, in every era it speaks, over Streamable HTTP (the engine under test) and stdio.

The SDK client speaks 2026-07-28 (``mode="2026-07-28"``, or ``"auto"``, which discovers it) and,
with ``mode="legacy"``, offers 2025-11-25 in ``initialize`` and accepts any handshake revision
the server answers with. To hold a session at 2025-06-18 or 2025-03-26 the tests make it offer
that revision (`offer`); everything else is the SDK as shipped, on real bytes. The SDK client
also validates every result against the negotiated revision's schema.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

mcp = pytest.importorskip("mcp", reason="the official SDK (pip install mcp) is not installed")
import mcp.client.session as sdk_session  # noqa: E402
from mcp import Client, StdioServerParameters, types  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402
from pydantic import FileUrl  # noqa: E402

from ..helpers import running  # noqa: E402
from .peers.harness import (  # noqa: E402
    ERAS,
    LEGACY,
    MCPFAST_STDIO,
    MODERN,
    NO_ELICITATION,
    SUBPROCESS_ENV,
    Changes,
    check_all,
    engine_independent,
    text_of,
)
from .peers.mcpfast_full import server as full_server  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
TIMEOUT = 10


# ------------------------------------------------------------------------- the demo server


async def test_sdk_client_in_modern_mode_uses_the_demo(demo_url: str) -> None:
    async with Client(demo_url, mode="2026-07-28") as client:
        tools = await client.list_tools()
        assert {"echo", "add", "slow", "greet"} <= {t.name for t in tools.tools}
        echo = await client.call_tool("echo", {"text": "from the sdk"})
        assert text_of(echo.content[0]) == "from the sdk"
        add = await client.call_tool("add", {"a": 20, "b": 22})
        assert add.structured_content == {"result": 42}
        read = await client.read_resource("demo://readme")
        assert "mcpfast demo" in text_of(read.contents[0])
        prompt = await client.get_prompt("describe", {"city": "Porto"})
        assert "Porto" in text_of(prompt.messages[0].content)


async def test_sdk_client_auto_mode_discovers_the_modern_era(demo_url: str) -> None:
    async with Client(demo_url) as client:
        assert client.protocol_version == MODERN
        assert client.server_info is not None and client.server_info.name == "mcpfast-demo"
        result = await client.call_tool("echo", {"text": "auto"})
        assert text_of(result.content[0]) == "auto"


async def test_sdk_client_modern_answers_input_required(demo_url: str) -> None:
    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": "Grace"})

    async with Client(demo_url, mode="2026-07-28", elicitation_callback=elicit) as client:
        result = await client.call_tool("greet", {})
        assert text_of(result.content[0]) == "Hello, Grace!"


# ------------------------------------------------------------------ the full server, by era


class Peer:
    """The SDK client's callbacks, recording what the server sent."""

    def __init__(self) -> None:
        self.elicitations: list[Any] = []
        self.logs: list[types.LoggingMessageNotificationParams] = []
        self.updated: list[str] = []
        self.changes = Changes()

    async def elicit(self, context: Any, params: Any) -> types.ElicitResult:
        self.elicitations.append(params)
        return types.ElicitResult(action="accept", content={"name": "Lin"})

    async def sample(self, context: Any, params: Any) -> types.CreateMessageResult:
        prompt = params.messages[0].content.text
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"beep:{prompt}"),
            model="m",
        )

    async def roots(self, context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=FileUrl("file:///work"), name="work")])

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)
        self.changes.notify()

    async def message(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.updated.append(str(message.params.uri))
            self.changes.notify()


@pytest.fixture
def offer(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Make the SDK client offer a handshake revision (it offers 2025-11-25 as shipped)."""

    def use(version: str) -> None:
        if version != MODERN:
            monkeypatch.setattr(sdk_session, "LATEST_HANDSHAKE_VERSION", version)

    return use


@asynccontextmanager
async def connected(target: Any, version: str, peer: Peer) -> AsyncIterator[Client]:
    async with Client(
        target,
        mode=MODERN if version == MODERN else "legacy",
        elicitation_callback=peer.elicit,
        sampling_callback=peer.sample,
        list_roots_callback=peer.roots,
        logging_callback=peer.log,
        message_handler=peer.message,
        log_level="info",  # the 2026-07-28 opt-in; legacy sessions use logging/setLevel
        read_timeout_seconds=TIMEOUT,
    ) as client:
        assert client.protocol_version == version
        yield client


async def tools(client: Client, version: str, peer: Peer) -> None:
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert {"echo", "add", "forecast", "count", "ask_name", "block", "touch"} <= set(listed)
    assert listed["echo"].annotations is not None and listed["echo"].annotations.read_only_hint
    echo = await client.call_tool("echo", {"text": "héllo, 世界"})
    assert not echo.is_error and text_of(echo.content[0]) == "héllo, 世界"
    invalid = await client.call_tool("add", {"a": "one", "b": 2})
    assert invalid.is_error


async def structured_output(client: Client, version: str, peer: Peer) -> None:
    add = await client.call_tool("add", {"a": 20, "b": 22})
    forecast = await client.call_tool("forecast", {"city": "Porto"})
    expected = {"city": "Porto", "celsius": 21, "sunny": True}
    assert json.loads(text_of(add.content[0])) == {"result": 42}  # mirrored as text in every era
    assert json.loads(text_of(forecast.content[0])) == expected
    if version != NO_ELICITATION:  # 2025-03-26 predates structured output
        assert add.structured_content == {"result": 42}
        assert forecast.structured_content == expected
        schema = {t.name: t for t in (await client.list_tools()).tools}["forecast"].output_schema
        assert schema is not None and set(schema["properties"]) == set(expected)


async def progress(client: Client, version: str, peer: Peer) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    result = await client.call_tool("count", {"steps": 3}, progress_callback=on_progress)
    assert text_of(result.content[0]) == "counted 3"
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def elicitation(client: Client, version: str, peer: Peer) -> None:
    result = await client.call_tool("ask_name", {})
    text = text_of(result.content[0])
    if version == NO_ELICITATION:
        # 2025-03-26 has no elicitation: the tool fails, and nothing is sent to the client
        assert result.is_error, text
        assert "elicitation" in text.lower(), text
        assert "nursery" not in text.lower(), text
        assert peer.elicitations == []
    else:
        assert not result.is_error and text == "hello Lin"
        assert peer.elicitations[-1].message == "What is your name?"


async def sampling(client: Client, version: str, peer: Peer) -> None:
    result = await client.call_tool("ask_model", {"prompt": "say beep"})
    assert not result.is_error and text_of(result.content[0]) == "model said beep:say beep"


async def roots(client: Client, version: str, peer: Peer) -> None:
    result = await client.call_tool("roots", {})
    assert not result.is_error and text_of(result.content[0]) == "file:///work"


async def resources(client: Client, version: str, peer: Peer) -> None:
    listed = {str(r.uri): r for r in (await client.list_resources()).resources}
    assert {"full://readme", "full://config"} <= set(listed)
    assert listed["full://config"].mime_type == "application/json"
    templates = (await client.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == ["full://items/{name}"]
    readme = (await client.read_resource("full://readme")).contents[0]
    assert text_of(readme) == "mcpfast full server" and readme.mime_type == "text/plain"
    config = (await client.read_resource("full://config")).contents[0]
    assert json.loads(text_of(config)) == {"debug": False, "level": 3}
    item = (await client.read_resource("full://items/Ada")).contents[0]
    assert str(item.uri) == "full://items/Ada" and json.loads(text_of(item))["known"] is True
    with pytest.raises(MCPError) as missing:
        await client.read_resource("full://nothing")
    assert missing.value.error.code == (-32602 if version == MODERN else -32002)


async def prompts(client: Client, version: str, peer: Peer) -> None:
    listed = {p.name: p for p in (await client.list_prompts()).prompts}
    arguments = {a.name: bool(a.required) for a in listed["greeting"].arguments or []}
    assert arguments == {"name": True, "style": False}
    formal = await client.get_prompt("greeting", {"name": "Ada", "style": "formal"})
    assert formal.messages[0].role == "user"
    assert text_of(formal.messages[0].content) == "Dear Ada, good day."
    plain = await client.get_prompt("greeting", {"name": "Ada"})
    assert text_of(plain.messages[0].content) == "Hi Ada!"


async def completion(client: Client, version: str, peer: Peer) -> None:
    prompt = types.PromptReference(type="ref/prompt", name="greeting")
    names = await client.complete(prompt, {"name": "name", "value": "a"})
    assert names.completion.values == ["Ada", "Alan"] and names.completion.total == 2
    styles = await client.complete(prompt, {"name": "style", "value": "f"}, {"name": "Ada"})
    assert styles.completion.values == ["formal"]
    template = types.ResourceTemplateReference(type="ref/resource", uri="full://items/{name}")
    items = await client.complete(template, {"name": "name", "value": "g"})
    assert items.completion.values == ["Grace"]


async def logs(client: Client, version: str, peer: Peer) -> None:
    if version != MODERN:
        await client.set_logging_level("info")
    result = await client.call_tool("chatty", {})
    assert text_of(result.content[0]) == "chatted"
    await peer.changes.until(
        lambda: any(m.level == "warning" for m in peer.logs), "warning log message"
    )
    assert [(m.level, m.data) for m in peer.logs] == [
        ("info", "an info line"),
        ("warning", "a warning line"),
    ]


async def subscriptions(client: Client, version: str, peer: Peer) -> None:
    uri = f"full://items/{uuid.uuid4().hex}"
    if version == MODERN:
        async with client.listen(resource_subscriptions=[uri]) as subscription:
            assert subscription.honored.resource_subscriptions == [uri]
            await client.call_tool("touch", {"uri": uri})
            async for event in subscription:
                assert getattr(event, "uri", None) == uri, event
                break
    else:
        await client.subscribe_resource(uri)
        await client.call_tool("touch", {"uri": uri})
        await peer.changes.until(
            lambda: uri in peer.updated, f"notifications/resources/updated for {uri}"
        )


async def cancellation(client: Client, version: str, peer: Peer) -> None:
    tag = uuid.uuid4().hex
    started = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        started.set()

    async with anyio.create_task_group() as group:

        async def call() -> None:
            await client.call_tool("block", {"tag": tag}, progress_callback=on_progress)

        group.start_soon(call)
        await started.wait()
        group.cancel_scope.cancel()
    seen = await client.call_tool("cancelled", {"tag": tag})
    # the text, not structured_content: 2025-03-26 has no structuredContent
    text = getattr(seen.content[0], "text", None)
    assert text == '{"result":true}', "the server never saw the cancellation"


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
async def test_sdk_client_over_http(
    feature: str, version: str, offer: Callable[[str], None]
) -> None:
    offer(version)
    peer = Peer()
    async with running(full_server) as url, connected(url, version, peer) as client:
        with anyio.fail_after(TIMEOUT):
            await FEATURES[feature](client, version, peer)


@pytest.mark.parametrize("version", LEGACY)
async def test_sdk_client_legacy_session_survives_a_changed_session(
    version: str, offer: Callable[[str], None]
) -> None:
    """The SDK client keeps the ``Mcp-Session-Id`` of the ``initialize`` response for the whole
    session; what ``logging/setLevel`` and ``resources/subscribe`` changed still holds later."""
    offer(version)
    peer = Peer()
    uri = f"full://items/{uuid.uuid4().hex}"
    async with running(full_server) as url, connected(url, version, peer) as client:
        with anyio.fail_after(TIMEOUT):
            await client.set_logging_level("warning")
            await client.subscribe_resource(uri)
            for _ in range(3):
                assert (await client.call_tool("add", {"a": 1, "b": 1})).is_error is False
            await client.call_tool("chatty", {})
            await client.call_tool("touch", {"uri": uri})
            await peer.changes.until(
                lambda: uri in peer.updated and peer.logs, "resources/updated and a log message"
            )
            assert [m.level for m in peer.logs] == ["warning"]


@pytest.mark.timeout(150)  # every feature may use its whole bound before failing
@engine_independent
@pytest.mark.parametrize("version", ERAS)
async def test_sdk_client_over_stdio(version: str, offer: Callable[[str], None]) -> None:
    """One `mcpfast serve --stdio` process per era; every feature, all reported at once."""
    offer(version)
    peer = Peer()
    command = StdioServerParameters(
        command=MCPFAST_STDIO[0], args=MCPFAST_STDIO[1:], env=SUBPROCESS_ENV
    )
    async with connected(command, version, peer) as client:
        failures = await check_all(
            {name: _bound(feature, client, version, peer) for name, feature in FEATURES.items()}
        )
    assert not failures, failures


@engine_independent
async def test_sdk_client_auto_mode_over_stdio() -> None:
    command = StdioServerParameters(
        command=MCPFAST_STDIO[0], args=MCPFAST_STDIO[1:], env=SUBPROCESS_ENV
    )
    async with Client(command) as client:
        assert client.protocol_version == MODERN
        assert text_of((await client.call_tool("echo", {"text": "auto"})).content[0]) == "auto"


def _bound(feature: Any, client: Client, version: str, peer: Peer) -> Any:
    async def run() -> None:
        peer.logs.clear()
        await feature(client, version, peer)

    return run


def test_the_shipped_sdk_client_offers_2025_11_25() -> None:
    """What `offer` changes for the older revisions (and restores after each test)."""
    # the name the session reads (and `offer` patches), imported there from mcp_types.version
    assert vars(sdk_session)["LATEST_HANDSHAKE_VERSION"] == "2025-11-25"
