"""FastMCP's client (``fastmcp`` on PyPI) in a legacy session through the proxy, as FastMCP runs
it (it keeps its first session id): on an asyncio loop of its own, in a thread of its own, which
the Trio test drives call by call (each bounded)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any, TypeVar

import pytest
import trio

pytest.importorskip("fastmcp", reason="FastMCP (pip install fastmcp) is not installed")
from fastmcp import Client

T = TypeVar("T")
CALL = 10.0
"""The bound of one call through the proxy."""


class FastMcpSession(AbstractAsyncContextManager["FastMcpSession"]):
    """One FastMCP client session on its own loop; `check` calls the logging and eliciting
    tools."""

    def __init__(self, url: str) -> None:
        self.logs: list[Any] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.url = url
        self.client: Client[Any] | None = None

    async def _log(self, message: Any) -> None:
        self.logs.append(message)

    async def _elicit(self, message: str, response_type: Any, params: Any, context: Any) -> Any:
        return {"name": "Lin"}

    async def _run(
        self, coroutine: Callable[[], Coroutine[Any, Any, T]], bound: float = 3 * CALL
    ) -> T:
        """``coroutine()`` made and run on the client's loop, at most ``bound`` seconds."""

        async def made() -> T:
            return await coroutine()

        future = asyncio.run_coroutine_threadsafe(made(), self.loop)
        return await trio.to_thread.run_sync(lambda: future.result(bound))

    async def _enter(self) -> None:
        self.client = Client(
            self.url,
            mode="legacy",
            log_handler=self._log,
            elicitation_handler=self._elicit,
            timeout=CALL,
        )
        await self.client.__aenter__()  # type: ignore[no-untyped-call]
        await self.client.set_logging_level("info")

    async def __aenter__(self) -> FastMcpSession:
        self.thread.start()
        try:
            await self._run(self._enter)
        except BaseException:
            await self._stop()
            raise
        return self

    async def _stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        await trio.to_thread.run_sync(lambda: self.thread.join(CALL))

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        client = self.client
        try:
            if client is not None:
                await self._run(lambda: client.__aexit__(None, None, None))  # type: ignore[no-untyped-call]
        finally:
            await self._stop()

    async def _check(self) -> tuple[bool, bool]:
        assert self.client is not None
        before = len(self.logs)
        await self.client.call_tool("say", {})
        for _ in range(int(CALL / 0.05)):
            if len(self.logs) > before:
                break
            await asyncio.sleep(0.05)
        answer = await self.client.call_tool("ask", {})
        text = getattr(answer.content[0], "text", None)
        return len(self.logs) > before, text == "hello Lin"

    async def check(self) -> tuple[bool, bool]:
        """Whether an ``info`` log of a call arrives, and whether an elicitation completes (a
        call the fault broke counts as no)."""
        try:
            return await self._run(self._check)
        except Exception:
            return False, False
