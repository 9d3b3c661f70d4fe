"""The official SDK's client (``mcp`` on PyPI) in a legacy session through the proxy, as the
SDK runs it: it keeps the session id it got first, sets its log level to ``info`` once, and
answers elicitations."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any

import pytest
import trio

mcp = pytest.importorskip("mcp", reason="the official SDK (pip install mcp) is not installed")
from mcp import Client, types  # noqa: E402

CALL = 10.0
"""The bound of one call through the proxy."""


class SdkSession(AbstractAsyncContextManager["SdkSession"]):
    """One SDK client session; `check` calls a logging tool and an eliciting one."""

    def __init__(self, url: str) -> None:
        self.logs: list[Any] = []
        self.client = Client(
            url,
            mode="legacy",
            logging_callback=self._log,
            elicitation_callback=self._elicit,
            read_timeout_seconds=CALL,
        )

    async def _log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    async def _elicit(self, context: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": "Lin"})

    async def __aenter__(self) -> SdkSession:
        await self.client.__aenter__()
        try:
            await self.client.set_logging_level("info")
        except BaseException as exc:
            await self.client.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.client.__aexit__(kind, exc, tb)

    async def check(self) -> tuple[bool, bool]:
        """Whether an ``info`` log of a call arrives, and whether an elicitation completes
        (each bounded; a failed call counts as no)."""
        before = len(self.logs)
        logged = answered = False
        with trio.move_on_after(2 * CALL):
            try:
                await self.client.call_tool("say", {})
                with trio.move_on_after(CALL):
                    while len(self.logs) == before:
                        await trio.sleep(0.05)
                logged = len(self.logs) > before
                result = await self.client.call_tool("ask", {})
                content = result.content[0]
                answered = isinstance(content, types.TextContent) and content.text == "hello Lin"
            except Exception:  # a call the fault broke: the check fails, the run goes on
                pass
        return logged, answered
