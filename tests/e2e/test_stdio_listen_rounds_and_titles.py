"""Spec rules through the real stack, that had only in-memory or conformance
tests: ``subscriptions/listen`` over stdio (ST5) and its end at the server's shutdown (LS4), the
stdio server's line limit (ST6), multi-round-trip ``resources/read`` and ``prompts/get`` over
HTTP with the real client and the cache never keeping what took a round (MR6 / CH3), and tool
titles and annotations as typed fields per revision (TL5)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

import mcpfast
from mcpfast import Context
from mcpfast.client import EraCache
from mcpfast.client.connect import EraChoice
from mcpfast.types import ToolAnnotations

from ..helpers import MODERN, REPO, running
from .processes import mcpfast_command

# --------------------------------------------------------------------------- stdio servers

STDIO_SERVER = """
import mcpfast

server = mcpfast.Server("audit-stdio", "1.0")


@server.tool()
async def add_tool(name: str) -> str:
    server.add_tool(lambda: "x", name=name)
    return "added " + name


@server.tool()
async def touch(uri: str) -> str:
    await server.resource_updated(uri)
    return "touched " + uri


@server.resource("memo://doc")
def doc() -> str:
    return "the doc"
"""


def _meta() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"},
    }


def _request(id_: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    body = {
        "jsonrpc": "2.0",
        "id": id_,
        "method": method,
        "params": {**(params or {}), "_meta": _meta()},
    }
    return json.dumps(body).encode() + b"\n"


def _module(tmp_path: Path) -> str:
    module = tmp_path / "audit_stdio.py"
    module.write_text(STDIO_SERVER)
    return f"{module}:server"


class Lines:
    """The lines a raw stdio subprocess writes on stdout."""

    def __init__(self, process: trio.Process) -> None:
        assert process.stdout is not None and process.stdin is not None
        self.process = process
        self.stdout = process.stdout
        self.stdin = process.stdin
        self.buffer = b""
        self.eof = False

    async def send(self, data: bytes) -> None:
        await self.stdin.send_all(data)

    async def line(self) -> dict[str, Any] | None:
        """The next message; None at the end of stdout."""
        while b"\n" not in self.buffer:
            chunk = await self.stdout.receive_some()
            if not chunk:
                self.eof = True
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        loaded: dict[str, Any] = json.loads(line)
        return loaded


@asynccontextmanager
async def raw_stdio(target: str) -> AsyncIterator[Lines]:
    """``mcpfast serve --stdio target`` with raw pipes; killed on the way out if still alive."""
    env = {"PYTHONPATH": str(REPO / "python")}
    process = await trio.lowlevel.open_process(
        mcpfast_command("serve", "--stdio", target),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, **env},
    )
    try:
        yield Lines(process)
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
            await process.wait()


# ------------------------------------------------------------------------------ ST5: listen


async def test_st5_listen_over_stdio_hears_list_changed_and_updates(tmp_path: Path) -> None:
    """ST5: the real client's ``listen()`` over ``mcpfast serve --stdio`` gets the
    acknowledgement, then a tools ``list_changed`` when a tool adds a tool and a
    ``resources/updated`` for a subscribed uri, each tagged with the listen's id."""
    command = mcpfast_command("serve", "--stdio", _module(tmp_path))
    async with mcpfast.connect(command, "modern", timeout=20, era_cache=EraCache()) as client:
        assert client.era == "modern"
        async with client.listen(tools=True, resource_uris=["memo://doc"]) as events:
            with trio.fail_after(10):
                ack = await events.__anext__()
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            assert ack["params"]["notifications"] == {
                "toolsListChanged": True,
                "resourceSubscriptions": ["memo://doc"],
            }
            listen_id = ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"]
            assert {t.name for t in await client.list_tools()} == {"add_tool", "touch"}
            added = await client.call_tool("add_tool", {"name": "fresh"})
            assert added.content[0].text == "added fresh"  # type: ignore[union-attr]
            with trio.fail_after(10):
                change = await events.__anext__()
            assert change["method"] == "notifications/tools/list_changed"
            assert change["params"]["_meta"] == {
                "io.modelcontextprotocol/subscriptionId": listen_id
            }
            # the list_changed emptied the cached tools/list: the new tool is there
            assert client.cache.get("tools/list", {}) is None
            assert "fresh" in {t.name for t in await client.list_tools()}
            await client.call_tool("touch", {"uri": "memo://doc"})
            with trio.fail_after(10):
                updated = await events.__anext__()
            assert updated["method"] == "notifications/resources/updated"
            assert updated["params"]["uri"] == "memo://doc"


# ---------------------------------------------------------------------- ST6: over-long line

LIMIT = 4 * 1024 * 1024  # Config().max_body, the stdio server's line limit


async def test_st6_an_over_long_line_is_answered_minus_32600_and_serving_goes_on(
    tmp_path: Path,
) -> None:
    """ST6: a line longer than ``max_body`` gets one ``-32600 "Message too large"`` (no id:
    it could not be read), the rest of that line is skipped up to its newline (no second
    error, no parse error for its tail), and the next line is served as usual."""
    async with raw_stdio(_module(tmp_path)) as pipe:
        with trio.fail_after(30):
            await pipe.send(_request(1, "tools/list"))
            first = await pipe.line()
            assert first is not None and first["id"] == 1
            assert {t["name"] for t in first["result"]["tools"]} == {"add_tool", "touch"}
            huge = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
            big = json.dumps({**huge, "params": {"pad": "x" * (LIMIT + 100_000)}}).encode()
            async with trio.open_nursery() as nursery:  # the server answers while we send
                nursery.start_soon(pipe.send, big + b"\n")
                refused = await pipe.line()
            assert refused == {
                "jsonrpc": "2.0",
                "error": {"code": -32600, "message": "Message too large"},
            }
            await pipe.send(_request(3, "resources/read", {"uri": "memo://doc"}))
            after = await pipe.line()
            assert after is not None and after["id"] == 3  # no answer for id 2 came between
            assert after["result"]["contents"][0]["text"] == "the doc"
            await pipe.stdin.aclose()
            assert await pipe.line() is None  # stdin closed, nothing open: the server ends
            assert await pipe.process.wait() == 0


async def test_st6_a_line_just_under_the_limit_is_served(tmp_path: Path) -> None:
    """The limit is on the line: one a little under ``max_body`` is read and answered."""
    async with raw_stdio(_module(tmp_path)) as pipe:
        with trio.fail_after(30):
            body = {"uri": "memo://doc", "pad": "x" * (LIMIT - 1000)}
            line = _request(7, "resources/read", body)
            assert len(line) < LIMIT
            async with trio.open_nursery() as nursery:
                nursery.start_soon(pipe.send, line)
                answer = await pipe.line()
            assert answer is not None and answer["id"] == 7
            assert answer["result"]["contents"][0]["text"] == "the doc"


# -------------------------------------------------------------- LS4: listen ended by shutdown


async def test_ls4_closing_stdin_ends_an_open_listen_with_cancelled_and_a_result(
    tmp_path: Path,
) -> None:
    """LS4: at the end of stdin (the stdio server's shutdown) an open listen gets
    ``notifications/cancelled`` for its request id, then the graceful-closure result (both
    tagged with the subscription id, `streams.end_listen`), then stdout closes and the
    process exits 0."""
    async with raw_stdio(_module(tmp_path)) as pipe:
        with trio.fail_after(10):
            await pipe.send(_request(1, "subscriptions/listen", {"notifications": {}}))
            ack = await pipe.line()
            assert ack is not None
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            await pipe.stdin.aclose()
            cancelled = await pipe.line()
            assert cancelled is not None and cancelled["method"] == "notifications/cancelled"
            assert cancelled["params"]["requestId"] == 1
            final = await pipe.line()
            assert final is not None and final["id"] == 1
            assert final["result"]["resultType"] == "complete"
            assert await pipe.line() is None
            assert await pipe.process.wait() == 0


async def test_ls4_sigterm_ends_an_open_listen_with_cancelled_and_a_result(
    tmp_path: Path,
) -> None:
    """LS4: SIGTERM (the shutdown signal of ``mcpfast serve``) with a listen open: the listen
    gets ``notifications/cancelled`` and its final result before stdout closes."""
    async with raw_stdio(_module(tmp_path)) as pipe:
        with trio.fail_after(10):
            await pipe.send(_request(1, "subscriptions/listen", {"notifications": {}}))
            ack = await pipe.line()
            assert ack is not None
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            pipe.process.terminate()
            cancelled = await pipe.line()
            assert cancelled is not None and cancelled["method"] == "notifications/cancelled"
            assert cancelled["params"]["requestId"] == 1
            final = await pipe.line()
            assert final is not None and final["id"] == 1
            assert final["result"]["resultType"] == "complete"
            assert await pipe.line() is None


async def test_ls4_closing_stdin_without_a_listen_ends_the_server(tmp_path: Path) -> None:
    """The contrast: with nothing open, the end of stdin ends the server at once (exit 0)."""
    async with raw_stdio(_module(tmp_path)) as pipe:
        with trio.fail_after(20):
            await pipe.send(_request(1, "tools/list"))
            answer = await pipe.line()
            assert answer is not None and answer["id"] == 1
            await pipe.stdin.aclose()
            assert await pipe.line() is None
            assert await pipe.process.wait() == 0


# ------------------------------------------------------------- MR6 / CH3: multi-round trips

FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def asking() -> tuple[mcpfast.Server, dict[str, int]]:
    server = mcpfast.Server("asking", "1.0")
    calls = {"read": 0, "prompt": 0, "plain": 0}

    @server.resource("memo://asked")
    async def asked(ctx: Context) -> str:
        calls["read"] += 1
        answer = await ctx.elicit("Whose memo?", FORM, key="who")
        return f"memo of {answer['content']['name']}"

    @server.resource("memo://plain")
    def plain() -> str:
        calls["plain"] += 1
        return "plain memo"

    @server.prompt()
    async def greeting(ctx: Context) -> str:
        calls["prompt"] += 1
        answer = await ctx.elicit("Greet whom?", FORM, key="who")
        return f"Say hello to {answer['content']['name']}"

    return server, calls


async def test_mr6_ch3_resources_read_with_elicitation_is_answered_and_never_cached() -> None:
    """MR6: a ``resources/read`` whose handler elicits comes back ``input_required``; the
    client answers it with ``on_elicit`` and retries, getting the final contents. CH3: a result
    reached through a round is not kept, although the server hints ``ttlMs`` (a plain read is
    kept): the second identical read reaches the handler again."""
    server, calls = asking()
    asked: list[dict[str, Any]] = []

    def on_elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"name": f"Ada{len(asked)}"}}

    async with (
        running(server) as url,
        mcpfast.connect(url, "modern", on_elicit=on_elicit, era_cache=EraCache()) as client,
    ):
        with trio.fail_after(10):
            first = await client.read_resource("memo://asked")
        assert first.contents[0].text == "memo of Ada1"
        assert [a["message"] for a in asked] == ["Whose memo?"]
        assert asked[0]["requestedSchema"] == FORM
        assert calls["read"] == 2  # the first try (input_required), then the retry
        assert client.cache.get("resources/read", {"uri": "memo://asked"}) is None
        with trio.fail_after(10):
            second = await client.read_resource("memo://asked")
        assert second.contents[0].text == "memo of Ada2"
        assert calls["read"] == 4 and len(asked) == 2  # the server saw it again
        # the contrast: a read that took no round is kept for its ttlMs
        for _ in range(2):
            plain = await client.read_resource("memo://plain")
            assert plain.contents[0].text == "plain memo"
        assert calls["plain"] == 1
        assert client.cache.get("resources/read", {"uri": "memo://plain"}) is not None


async def test_mr6_prompts_get_with_elicitation_is_answered_each_time() -> None:
    """MR6: ``prompts/get`` through an elicitation round, twice: each time the handler runs
    (first try and retry) and the answer of that time is in the messages."""
    server, calls = asking()
    names = iter(["Ada", "Grace"])

    def on_elicit(params: dict[str, Any]) -> dict[str, Any]:
        assert params["message"] == "Greet whom?"
        return {"action": "accept", "content": {"name": next(names)}}

    async with (
        running(server) as url,
        mcpfast.connect(url, "modern", on_elicit=on_elicit, era_cache=EraCache()) as client,
    ):
        with trio.fail_after(10):
            first = await client.get_prompt("greeting")
        assert first.messages[0].content.text == "Say hello to Ada"  # type: ignore[union-attr]
        assert calls["prompt"] == 2
        assert client.cache.get("prompts/get", {"name": "greeting"}) is None
        with trio.fail_after(10):
            second = await client.get_prompt("greeting")
        assert second.messages[0].content.text == "Say hello to Grace"  # type: ignore[union-attr]
        assert calls["prompt"] == 4


# ------------------------------------------------------------- TL5: titles and annotations


def annotated() -> mcpfast.Server:
    server = mcpfast.Server("annotated", "1.0")

    @server.tool(
        title="Look it up",
        annotations={"title": "Lookup", "readOnlyHint": True, "openWorldHint": False},
    )
    def lookup(word: str) -> str:
        return word

    return server


@pytest.mark.parametrize(
    ("era", "version"),
    [("modern", None), ("legacy", "2025-11-25"), ("legacy", "2025-06-18")],
)
async def test_tl5_title_and_annotations_reach_the_client_typed(
    era: EraChoice, version: str | None
) -> None:
    """TL5: from 2025-06-18 on, and in the modern era, ``Tool.title`` and
    ``Tool.annotations`` (a `ToolAnnotations`) come through ``list_tools()`` as typed fields."""
    extra: dict[str, Any] = {"legacy_version": version} if version else {}
    async with (
        running(annotated()) as url,
        mcpfast.connect(url, era, era_cache=EraCache(), **extra) as client,
    ):
        assert client.protocol_version == (version or MODERN)
        (tool,) = await client.list_tools()
        assert tool.name == "lookup"
        assert tool.title == "Look it up"
        assert isinstance(tool.annotations, ToolAnnotations)
        assert tool.annotations.title == "Lookup"
        assert tool.annotations.readOnlyHint is True
        assert tool.annotations.openWorldHint is False
        assert tool.annotations.destructiveHint is msgspec.UNSET


async def test_tl5_2025_03_26_strips_the_title_and_keeps_annotations() -> None:
    """TL5: 2025-03-26 has no ``Tool.title``: it is stripped; its annotations (title hint
    included, which that revision has) are kept and typed."""
    async with (
        running(annotated()) as url,
        mcpfast.connect(url, "legacy", legacy_version="2025-03-26", era_cache=EraCache()) as client,
    ):
        assert client.protocol_version == "2025-03-26"
        (tool,) = await client.list_tools()
        assert tool.title is msgspec.UNSET
        assert isinstance(tool.annotations, ToolAnnotations)
        assert tool.annotations.title == "Lookup"
        assert tool.annotations.readOnlyHint is True
