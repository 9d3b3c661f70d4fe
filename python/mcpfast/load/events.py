"""The events of a streamed response (`mcpfast.load.connection`'s), read line by line under
gevent's timeouts: gevent is imported only once a stream is read (by a locust user), so the fast
engine's plan, which only opens and closes the probe's GET stream, runs without it.
"""

from __future__ import annotations

from typing import Any

from ..protocol import sse

__all__ = ["Events"]


class Events:
    """The events of a streamed response, read line by line (a stream never ends by itself)."""

    def __init__(self, response: Any) -> None:
        self.raw = getattr(response, "_response", None)
        self.decoder = sse.Decoder()
        self.pending: list[dict[str, Any]] = []

    def _feed(self) -> bool:
        line = self.raw.readline(b"\n") if self.raw is not None else b""
        if not line:
            return False
        self.pending.extend(self.decoder.feed(line))
        return True

    def next_message(self, timeout: float) -> dict[str, Any] | None:
        """The next message, or None when none came within ``timeout`` seconds."""
        import gevent  # type: ignore[import-untyped]

        with gevent.Timeout(timeout, False):
            while not self.pending:
                if not self._feed():
                    return None
        return self.pending.pop(0) if self.pending else None

    def hold(self, seconds: float) -> None:
        """Read (and drop) whatever comes for ``seconds``, or until the server ends the stream."""
        import gevent

        with gevent.Timeout(seconds, False):
            while self._feed():
                self.pending.clear()

    def close(self) -> None:
        """Close the connection (an unfinished response is never returned to the pool)."""
        if self.raw is not None:
            self.raw.release()
            self.raw = None
