"""Interop: FastMCP's client (``fastmcp`` on PyPI, `fastmcp.Client`) against mcpfast servers, in
every era it speaks, over Streamable HTTP (the engine under test) and stdio.

FastMCP's client runs on asyncio only (it keeps ``asyncio.Task`` objects), so each test runs it
on its own event loop in a worker thread (`in_asyncio`) while the mcpfast server runs on Trio in
the test's thread; they meet on loopback. It is built on the SDK's ``ClientSession``: it speaks
2026-07-28 (``mode="2026-07-28"`` / ``"auto"``) and, with ``mode="legacy"``, offers 2025-11-25 in
``initialize`` and accepts any handshake revision; `offer` makes it offer an older one. It always
opts in to every log level under 2026-07-28 (``logLevel: debug``), and has no API of its own for
``resources/subscribe`` or ``subscriptions/listen``: legacy subscriptions go through its SDK
session, and the updates through FastMCP's `MessageHandler`.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
import pytest
import trio

fastmcp = pytest.importorskip("fastmcp", reason="FastMCP (pip install fastmcp) is not installed")
import mcp.client.session as sdk_session  # noqa: E402
import mcp.types as types  # noqa: E402
from fastmcp import Client  # noqa: E402
from fastmcp.client.messages import MessageHandler  # noqa: E402
from fastmcp.client.transports import StdioTransport  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from ..helpers import running  # noqa: E402
from .peers.harness import (  # noqa: E402
    ERAS,
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
NO_LISTEN = "fastmcp 4.1.6's Client has no subscriptions/listen API (2026-07-28)"
T = TypeVar("T")


async def in_asyncio(main: Callable[[], Awaitable[T]], timeout: float = 45) -> T:
    """Run ``main()`` on a fresh asyncio loop in a worker thread (bounded there: a thread
    cannot be cancelled from Trio)."""

    async def bounded() -> T:
        return await asyncio.wait_for(main(), timeout)

    return await trio.to_thread.run_sync(lambda: asyncio.run(bounded()))


class Peer(MessageHandler):
    """FastMCP's handlers, recording what the server sent (made on the client's loop)."""

    def __init__(self) -> None:
        super().__init__()
        self.elicitations: list[Any] = []
        self.logs: list[Any] = []
        self.updated: list[str] = []
        self.changes = Changes()

    async def elicit(self, message: str, response_type: Any, params: Any, context: Any) -> Any:
        self.elicitations.append(params)
        return {"name": "Lin"}

    async def sample(self, messages: Any, params: Any, context: Any) -> str:
        return f"beep:{messages[0].content.text}"

    async def log(self, message: Any) -> None:
        self.logs.append(message)
        self.changes.notify()

    async def on_resource_updated(self, message: types.ResourceUpdatedNotification) -> None:
        self.updated.append(str(message.params.uri))
        self.changes.notify()


@pytest.fixture
def offer(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Make FastMCP's (SDK) session offer a handshake revision (2025-11-25 as shipped)."""

    def use(version: str) -> None:
        if version != MODERN:
            monkeypatch.setattr(sdk_session, "LATEST_HANDSHAKE_VERSION", version)

    return use


@asynccontextmanager
async def connected(target: Any, version: str, peer: Peer) -> AsyncIterator[Client[Any]]:
    client = Client(
        target,
        mode=MODERN if version == MODERN else "legacy",
        elicitation_handler=peer.elicit,
        sampling_handler=peer.sample,
        roots=["file:///work"],
        log_handler=peer.log,
        message_handler=peer,
        timeout=TIMEOUT,
    )
    async with client:
        assert client.protocol_version == version
        yield client


async def tools(client: Client[Any], version: str, peer: Peer) -> None:
    listed = {tool.name: tool for tool in await client.list_tools()}
    assert {"echo", "add", "forecast", "count", "ask_name", "block", "touch"} <= set(listed)
    echo = await client.call_tool("echo", {"text": "héllo, 世界"})
    assert text_of(echo.content[0]) == "héllo, 世界"
    invalid = await client.call_tool("add", {"a": "one", "b": 2}, raise_on_error=False)
    assert invalid.is_error


async def structured_output(client: Client[Any], version: str, peer: Peer) -> None:
    add = await client.call_tool("add", {"a": 20, "b": 22})
    forecast = await client.call_tool("forecast", {"city": "Porto"})
    expected = {"city": "Porto", "celsius": 21, "sunny": True}
    assert json.loads(text_of(add.content[0])) == {"result": 42}
    assert json.loads(text_of(forecast.content[0])) == expected
    if version != NO_ELICITATION:  # 2025-03-26 predates structured output
        assert add.structured_content == {"result": 42}
        assert add.data.result == 42  # FastMCP builds an object from the output schema
        assert forecast.structured_content == expected
        assert forecast.data.city == "Porto"


async def progress(client: Client[Any], version: str, peer: Peer) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    result = await client.call_tool("count", {"steps": 3}, progress_handler=on_progress)
    assert text_of(result.content[0]) == "counted 3"
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def elicitation(client: Client[Any], version: str, peer: Peer) -> None:
    result = await client.call_tool("ask_name", {}, raise_on_error=False)
    text = text_of(result.content[0])
    if version == NO_ELICITATION:
        assert result.is_error, text
        assert "elicitation" in text.lower(), text
        assert "nursery" not in text.lower(), text
        assert peer.elicitations == []
    else:
        assert not result.is_error and text == "hello Lin"
        assert peer.elicitations[-1].message == "What is your name?"


async def sampling(client: Client[Any], version: str, peer: Peer) -> None:
    result = await client.call_tool("ask_model", {"prompt": "say beep"})
    assert text_of(result.content[0]) == "model said beep:say beep"


async def roots(client: Client[Any], version: str, peer: Peer) -> None:
    result = await client.call_tool("roots", {})
    assert text_of(result.content[0]) == "file:///work"


async def resources(client: Client[Any], version: str, peer: Peer) -> None:
    listed = {str(r.uri): r for r in await client.list_resources()}
    assert {"full://readme", "full://config"} <= set(listed)
    templates = await client.list_resource_templates()
    assert [t.uri_template for t in templates] == ["full://items/{name}"]
    readme = (await client.read_resource("full://readme"))[0]
    assert text_of(readme) == "mcpfast full server" and readme.mime_type == "text/plain"
    config = (await client.read_resource("full://config"))[0]
    assert json.loads(text_of(config)) == {"debug": False, "level": 3}
    item = (await client.read_resource("full://items/Grace"))[0]
    assert json.loads(text_of(item)) == {"name": "Grace", "known": True}
    with pytest.raises(MCPError) as missing:
        await client.read_resource("full://nothing")
    assert missing.value.error.code == (-32602 if version == MODERN else -32002)


async def prompts(client: Client[Any], version: str, peer: Peer) -> None:
    listed = {p.name: p for p in await client.list_prompts()}
    assert {a.name for a in listed["greeting"].arguments or []} == {"name", "style"}
    formal = await client.get_prompt("greeting", {"name": "Ada", "style": "formal"})
    assert text_of(formal.messages[0].content) == "Dear Ada, good day."


async def completion(client: Client[Any], version: str, peer: Peer) -> None:
    prompt = types.PromptReference(type="ref/prompt", name="greeting")
    names = await client.complete(prompt, {"name": "name", "value": "a"})
    assert names.values == ["Ada", "Alan"] and names.total == 2
    template = types.ResourceTemplateReference(type="ref/resource", uri="full://items/{name}")
    items = await client.complete(template, {"name": "name", "value": "L"})
    assert items.values == ["Linus"]


async def logs(client: Client[Any], version: str, peer: Peer) -> None:
    if version != MODERN:
        await client.set_logging_level("warning")
    await client.call_tool("chatty", {})
    await peer.changes.until(
        lambda: any(m.level == "warning" for m in peer.logs), "warning log message"
    )
    levels = [m.level for m in peer.logs]
    # 2026-07-28: FastMCP asks for every level; legacy: logging/setLevel warning
    assert levels == (["debug", "info", "warning"] if version == MODERN else ["warning"])
    assert peer.logs[-1].data == "a warning line"


TOUCHES = 16
"""How many times `subscriptions` touches the resource (each waiting 0.5 s for its update)."""


async def subscriptions(client: Client[Any], version: str, peer: Peer) -> None:
    assert version != MODERN, NO_LISTEN
    uri = f"full://items/{uuid.uuid4().hex}"
    await client.session.subscribe_resource(uri)
    # FastMCP opens its GET stream on its own schedule after initialize, and an update published
    # while the session has no GET stream open has nowhere to go (a standalone stream keeps no
    # backlog): on a busy machine the first touch can come before the stream. So touch until an
    # update is heard, a bounded number of times.
    for _ in range(TOUCHES):
        await client.call_tool("touch", {"uri": uri})
        with anyio.move_on_after(0.5):
            await peer.changes.until(lambda: uri in peer.updated, "an update", timeout=1.0)
        if uri in peer.updated:
            return
    raise AssertionError(f"no notifications/resources/updated for {uri} in {TOUCHES} touches")


async def cancellation(client: Client[Any], version: str, peer: Peer) -> None:
    tag = uuid.uuid4().hex
    started = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        started.set()

    async with anyio.create_task_group() as group:

        async def call() -> None:
            await client.call_tool("block", {"tag": tag}, progress_handler=on_progress)

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


def _features(version: str) -> dict[str, Any]:
    return {n: f for n, f in FEATURES.items() if not (n == "subscriptions" and version == MODERN)}


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("feature", FEATURES)
async def test_fastmcp_client_over_http(
    feature: str, version: str, offer: Callable[[str], None]
) -> None:
    if feature not in _features(version):
        pytest.skip(NO_LISTEN)
    offer(version)
    async with running(full_server) as url:

        async def main() -> None:
            peer = Peer()
            async with connected(url, version, peer) as client:
                with anyio.fail_after(TIMEOUT):
                    await FEATURES[feature](client, version, peer)

        await in_asyncio(main)


async def test_fastmcp_client_auto_mode_discovers_the_modern_era() -> None:
    async with running(full_server) as url:

        async def main() -> tuple[str | None, str]:
            async with Client(url) as client:
                echo = await client.call_tool("echo", {"text": "a"})
                return client.protocol_version, text_of(echo.content[0])

        assert await in_asyncio(main) == (MODERN, "a")


@pytest.mark.timeout(150)  # every feature may use its whole bound before failing
@engine_independent
@pytest.mark.parametrize("version", ERAS)
async def test_fastmcp_client_over_stdio(version: str, offer: Callable[[str], None]) -> None:
    """One `mcpfast serve --stdio` process per era; every feature, all reported at once."""
    offer(version)

    async def main() -> str:
        peer = Peer()
        transport = StdioTransport(MCPFAST_STDIO[0], MCPFAST_STDIO[1:], env=SUBPROCESS_ENV)
        async with connected(transport, version, peer) as client:

            def bound(feature: Any) -> Any:
                async def run() -> None:
                    peer.logs.clear()
                    await feature(client, version, peer)

                return run

            return await check_all({n: bound(f) for n, f in _features(version).items()})

    failures = await in_asyncio(main, timeout=120)
    assert not failures, failures
