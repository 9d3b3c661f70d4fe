"""What `Client` needs of a connection, whatever carries it: `ModernHttp`, `LegacyHttp` or a
`StdioSession` in either era."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from ..protocol.headers import ParamHeaders
from ..protocol.initialize import Initialized


class Transport(Protocol):
    """A connected transport.

    Attributes:
        param_headers: the ``x-mcp-header`` declarations of the listed tools, by name (their
            calls mirror them in ``Mcp-Param-*`` over 2026-07-28 HTTP).
    """

    param_headers: dict[str, ParamHeaders]

    @property
    def era(self) -> str:
        """``"modern"`` or ``"legacy"``."""
        ...

    @property
    def version(self) -> str:
        """The revision in use."""
        ...

    @property
    def initialized(self) -> Initialized | None:
        """What the legacy handshake said (None in the modern era)."""
        ...

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        meta: dict[str, Any] | None = None,
    ) -> Any:
        """Send a request; its result.

        Raises:
            MCPError: the server answered with an error.
            TransportError: the answer was not MCP, or the server is gone.
        """
        ...

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification."""
        ...

    async def aclose(self) -> None:
        """End the connection (a legacy session is ended at the server)."""
        ...


class ModernTransport(Transport, Protocol):
    """A 2026-07-28 transport: every request carries ``_meta``, built from these.

    Attributes:
        log_level: the ``logLevel`` of every request (None: none).
        extensions: extensions declared in every request (empty by default: a request that
            uses one declares it itself, through ``extensions=``).
    """

    log_level: str | None
    extensions: dict[str, Any]

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        meta: dict[str, Any] | None = None,
        extensions: dict[str, Any] | None = None,
    ) -> Any:
        """Send a request (declaring ``extensions`` in its ``clientCapabilities`` besides the
        connection's); its result.

        Raises:
            MCPError: the server answered with an error.
            TransportError: the answer was not MCP, or the server is gone.
        """
        ...

    def stream(
        self, method: str, params: dict[str, Any], *, extensions: dict[str, Any] | None = None
    ) -> AbstractAsyncContextManager[AsyncIterator[dict[str, Any]]]:
        """A long-lived request (``subscriptions/listen``): its messages as they come."""
        ...
