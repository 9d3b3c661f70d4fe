"""Legacy sessions over several lifetimes: clients that never adopt a re-minted id (the official
SDK's and FastMCP's) keep their session, its log level and its DELETE; idle and absolute
lifetimes end sessions whichever id is sent.

Short lifetimes on the real wall clock (tokens carry Unix seconds), so these take seconds: the
peers (the SDK, FastMCP) pace themselves on real time, and the session clock (state/sessions.py,
the bus) takes no injected clock yet. tests/server/test_timeouts.py holds the same lifetimes on
virtual time."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import trio

import mcpfast
from mcpfast import Context

from ..helpers import Wire, running

IDLE = 2
REFRESH = 1
app = mcpfast.Server("session-tests", "1.0")


@app.tool()
async def chatty(ctx: Context, n: int) -> str:
    """Log at info and debug, and say which session served the call."""
    await ctx.info(f"call {n}")
    await ctx.debug(f"detail {n}")
    return f"{ctx.session_id}:{n}"


async def _sdk_session(url: str, logs: list[str], span: float) -> str:
    from mcp import Client

    async def on_log(params: Any) -> None:
        logs.append(str(params.data))

    async with Client(url, mode="legacy", logging_callback=on_log) as client:
        await client.set_logging_level("info")
        return await _calls(lambda n: client.call_tool("chatty", {"n": n}), span)


async def _fastmcp_session(url: str, logs: list[str], span: float) -> str:
    """FastMCP's client runs on asyncio only: in a thread of its own, against our Trio server."""
    from fastmcp import Client

    async def on_log(message: Any) -> None:
        logs.append(str(message.data))

    async def session() -> str:
        async with Client(url, mode="legacy", log_handler=on_log) as client:
            await client.set_logging_level("info")
            return await _calls(lambda n: client.call_tool("chatty", {"n": n}), span, asyncio)

    return await trio.to_thread.run_sync(asyncio.run, session())


async def _calls(call: Any, span: float, loop: Any = trio) -> str:
    """Call every 0.4 s for ``span`` seconds (on Trio, or asyncio); returns the session id the
    server saw."""
    n = 0
    session_id = ""
    for n in range(int(span / 0.4)):
        result = await call(n)
        text = result.content[0].text
        session_id, _, echoed = text.rpartition(":")
        assert echoed == str(n), text
        await loop.sleep(0.4)
    return session_id


@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
@pytest.mark.parametrize("peer", ["sdk", "fastmcp"])
async def test_a_client_that_keeps_its_first_id_lives_as_long_as_it_is_used(peer: str) -> None:
    pytest.importorskip("mcp" if peer == "sdk" else "fastmcp", reason=f"{peer} is not installed")
    session = _sdk_session if peer == "sdk" else _fastmcp_session
    logs: list[str] = []
    span = 3 * IDLE  # several idle lifetimes, every call with the initialize id
    async with running(app, session_seconds=IDLE, session_refresh_seconds=REFRESH) as url:
        with trio.fail_after(30):
            session_id = await session(url, logs, span)
        # every call's info log arrived (the level set once, on the first id), no debug ones
        assert logs == [f"call {n}" for n in range(int(span / 0.4))]
        # closing sent DELETE on the same old id, and it ended the session
        record = await app.bus.load_session(session_id)
        assert record is not None and record.ended


async def test_an_idle_session_ends(wire_factory: Any) -> None:
    idle_seconds = 3  # tokens count whole seconds: keep the margins above one
    async with running(app, session_seconds=idle_seconds, session_refresh_seconds=REFRESH) as url:
        wire = await wire_factory(url)
        version = "2025-11-25"
        idle, _ = await wire.initialize(version)
        await trio.sleep(REFRESH + 0.2)  # real time: the server's session clock
        used = await wire.legacy("ping", session=idle, version=version)
        assert used.status == 200 and used.headers["mcp-session-id"] != idle  # re-minted
        await trio.sleep(idle_seconds + 1.1)  # past the idle lifetime and its touch interval
        gone = await wire.legacy("ping", session=idle, version=version)
        assert gone.status == 404 and gone.error["data"]["reason"] == "expired"
        adopted = await wire.legacy("ping", session=used.headers["mcp-session-id"], version=version)
        assert adopted.status == 404  # the same session, whichever id


async def test_no_session_outlives_its_absolute_lifetime(wire_factory: Any) -> None:
    lifetime = 3
    async with running(
        app,
        session_seconds=IDLE,
        session_refresh_seconds=REFRESH,
        session_lifetime_seconds=lifetime,
    ) as url:
        wire = await wire_factory(url)
        version = "2025-06-18"
        session, _ = await wire.initialize(version)
        statuses: list[int] = []
        with trio.fail_after(15):
            while not statuses or statuses[-1] == 200:
                reply = await wire.legacy("ping", session=session, version=version)
                statuses.append(reply.status)
                session = reply.headers.get("mcp-session-id", session)  # adopt, as we may
                await trio.sleep(0.4)
        assert reply.status == 404 and reply.error["data"]["reason"] == "expired"
        assert statuses.count(200) >= int(lifetime / 0.4) - 2


@pytest.fixture
async def wire_factory() -> Any:
    import httpx2

    async with httpx2.AsyncClient(timeout=10) as client:

        async def make(url: str) -> Wire:
            return Wire(client, url)

        yield make
