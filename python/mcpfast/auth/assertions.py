"""Replay protection of RFC 7523 assertions at the development authorization server (client
assertions for private_key_jwt, JWT bearer grants, ID-JAGs): how far ahead an ``exp`` may be
and `AssertionJtis`, the bounded memory of the ``jti`` values seen."""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from typing import Final

MAX_ASSERTION_SECONDS: Final = 300
"""The furthest an assertion's ``exp`` may be ahead (5 minutes, plus `ASSERTION_LEEWAY`): its
``jti`` is remembered that long, no longer."""
ASSERTION_LEEWAY: Final = 30
"""Seconds of clock skew allowed on an assertion's ``exp``."""


class AssertionJtis:
    """The ``jti`` of every assertion accepted, per issuer, until its ``exp``: a replay is
    refused. At most ``per_client`` at a time for each client presenting them and
    ``clients`` clients with any: a full quota refuses that client's next assertions (until
    its oldest expire), never another client's, and the memory stays bounded. ``clock`` is
    the wall clock (epoch seconds) an ``exp`` passes on."""

    def __init__(
        self, per_client: int = 1000, clients: int = 10_000, clock: Callable[[], float] = time.time
    ) -> None:
        self.per_client = per_client
        self.clients = clients
        self.clock = clock
        self._seen: dict[tuple[str, str], str] = {}  # (iss, jti) -> the client presenting it
        self._held: dict[str, int] = {}  # client -> how many of _seen
        self._expiry: list[tuple[float, str, str]] = []  # heap of (until, iss, jti)

    def remember(self, issuer: str, jti: str, until: float, client: str) -> str | None:
        """Record ``jti`` of ``issuer``, presented by ``client``, until ``until`` (epoch
        seconds); the reason to refuse it instead (a replay, a full quota), or None."""
        self._forget(self.clock())
        if (issuer, jti) in self._seen:
            return "the assertion's jti was already used"
        held = self._held.get(client, 0)
        if held >= self.per_client or (not held and len(self._held) >= self.clients):
            return "too many assertions in the last minutes: retry later"
        self._seen[issuer, jti] = client
        self._held[client] = held + 1
        heapq.heappush(self._expiry, (until, issuer, jti))
        return None

    def _forget(self, now: float) -> None:
        while self._expiry and self._expiry[0][0] <= now:
            _, issuer, jti = heapq.heappop(self._expiry)
            client = self._seen.pop((issuer, jti))
            self._held[client] -= 1
            if not self._held[client]:
                del self._held[client]
