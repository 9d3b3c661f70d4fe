"""A blocking HTTP session on httpx2 (no locust, no gevent) with the part of locust's
`FastHttpSession` that the probe (`mcpfast.load.probe`), `mcpfast.load.connection.Connection`
and the token requests (`mcpfast.load.auth`) use: the fast engine's plan process
(`mcpfast.load.fastplan`) speaks through it, so ``--engine fast`` runs on mcpfast's base install.

``request(method, path, ...)`` is a context manager yielding a `Response`: ``status_code`` (0:
no HTTP answer, ``error`` says why), ``headers``, ``content`` and ``request_meta``; its
``success`` and ``failure`` record nothing (the plan is not the load). A streamed answer's body is
never read (the probe only opens the GET stream): it is closed when the ``with`` ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import httpx2

__all__ = ["BlockingSession", "Response"]


class Response:
    """One answer, as `FastHttpSession`'s ``catch_response`` requests give it."""

    _response = None
    """Where `mcpfast.load.events.Events` reads a stream: nothing here."""

    def __init__(
        self,
        name: str,
        status_code: int = 0,
        headers: httpx2.Headers | None = None,
        content: bytes = b"",
        error: Exception | None = None,
    ) -> None:
        self.status_code = status_code
        self.headers = headers if headers is not None else httpx2.Headers()
        self.content = content
        self.error = error
        self.request_meta: dict[str, Any] = {"name": name, "response_time": 0.0}

    def success(self) -> None:
        """Nothing is recorded."""

    def failure(self, exc: Any) -> None:
        """Nothing is recorded."""


class BlockingSession:
    """Requests to ``base_url`` (or to the absolute URL given as the path), ``timeout`` seconds
    per operation, no redirects followed."""

    def __init__(self, base_url: str, timeout: float) -> None:
        self.base_url = base_url
        self.client = httpx2.Client(
            timeout=timeout, follow_redirects=False, headers={"user-agent": "mcpfast load"}
        )

    @contextmanager
    def request(
        self,
        method: str,
        path: str,
        *,
        name: str = "",
        data: Any = None,
        headers: dict[str, str] | None = None,
        stream: bool = False,
        catch_response: bool = True,
        allow_redirects: bool = False,
    ) -> Iterator[Response]:
        """One request; its `Response` (status 0 when there was no HTTP answer)."""
        url = path if "://" in path else self.base_url + path
        body = data.encode() if isinstance(data, str) else data
        with ExitStack() as stack:
            try:
                answer = stack.enter_context(
                    self.client.stream(method, url, content=body, headers=headers)
                )
                content = b"" if stream else answer.read()
            except httpx2.HTTPError as exc:
                yield Response(name, error=exc)
                return
            yield Response(name, answer.status_code, answer.headers, content)
