"""Era detection as pure decisions (`shared/seeds/002_*`): what a probe's answer means, which
legacy revision to ask for after a -32022, the `Negotiation` that the client and the load
tester both drive, and the per-endpoint cache of verdicts (with the ``server/discover`` result
a modern verdict came with)."""

from __future__ import annotations

import time
from typing import Any, Literal

import msgspec

from ..errors import TransportError
from ..jsonrpc import (
    HEADER_MISMATCH,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    UNSUPPORTED_VERSION,
)
from ..versions import ALL_VERSIONS, LATEST_LEGACY, LEGACY, MODERN, MODERN_VERSIONS, at_least

Era = Literal["modern", "legacy"]
FALLBACK_STATUSES = (400, 404, 405)
FALLBACK_CODES = (HEADER_MISMATCH, MISSING_CLIENT_CAPABILITY, UNSUPPORTED_VERSION, METHOD_NOT_FOUND)
STDIO_FALLBACK_CODES = FALLBACK_CODES
"""Over stdio, the seed's list too: -32020, -32021, -32022 and a legacy server's -32601. Any
other error answer is not a fallback (it raises)."""


class Verdict(msgspec.Struct, frozen=True):
    """What to do after a probe: use an era (and version), or retry modern with another version."""

    era: Era
    version: str
    retry: bool = False


def http_error_text(status: int, body: bytes) -> str:
    """``HTTP <code>`` plus up to 200 characters of the body."""
    text = body.decode("utf-8", "replace")[:200]
    return f"HTTP {status}" + (f": {text}" if text else "")


def _error_of(body: Any) -> dict[str, Any] | None:
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error: dict[str, Any] = body["error"]
        return error
    return None


def pick_version(supported: Any, ours: tuple[str, ...] = ALL_VERSIONS) -> str | None:
    """The highest version both sides support."""
    if not isinstance(supported, list):
        return None
    common = [v for v in ours if v in supported]
    return max(common) if common else None


def _judge_error(error: dict[str, Any], retried: bool) -> Verdict | None:
    """The verdict on a probe's error answer: after a first -32022 that lists a modern revision
    both sides speak, retry modern with it; on a fallback code, legacy; else None."""
    code = error.get("code")
    if code == UNSUPPORTED_VERSION and not retried:
        data = error.get("data")
        version = pick_version(data.get("supported") if isinstance(data, dict) else None)
        if version is not None and version in MODERN_VERSIONS:
            return Verdict("modern", version, retry=True)
    if code in FALLBACK_CODES:
        return Verdict("legacy", "")
    return None


def judge_http(status: int, raw: bytes, message: Any, *, retried: bool) -> Verdict | None:
    """The meaning of an HTTP probe's answer; None means the probe succeeded (modern).

    Raises:
        TransportError: for 401, 403, 5xx and anything else that is not an MCP answer.
    """
    error = _error_of(message)
    verdict = _judge_error(error, retried) if error is not None else None
    if verdict is not None:
        return verdict
    if status in FALLBACK_STATUSES:
        return Verdict("legacy", "")
    if status == 200 and isinstance(message, dict) and "result" in message:
        return None
    raise TransportError(http_error_text(status, raw), status)


def judge_stdio(message: Any, *, retried: bool = False) -> Verdict | None:
    """The meaning of a stdio probe's answer (a timeout is judged by the caller: legacy).

    Raises:
        TransportError: an error answer that is none of `STDIO_FALLBACK_CODES` (the seed falls
            back on those only), or an answer that is neither a result nor an error.
    """
    error = _error_of(message)
    if error is None:
        if isinstance(message, dict) and "result" in message:
            return None
        raise TransportError("the server's answer to server/discover is not JSON-RPC")
    verdict = _judge_error(error, retried)
    if verdict is not None:
        return verdict
    code = error.get("code")
    raise TransportError(
        f"the server answered server/discover with error {code}: {error.get('message', '')}"[:300]
    )


def legacy_version_for(message: Any, requested: str) -> str:
    """The revision a client that falls back to ``initialize`` after the probe answer
    ``message`` asks for: after a -32022 that lists legacy revisions, the highest one both
    sides speak that is not newer than ``requested``; else ``requested``."""
    error = _error_of(message)
    if error is None or error.get("code") != UNSUPPORTED_VERSION:
        return requested
    data = error.get("data")
    supported = data.get("supported") if isinstance(data, dict) else None
    ours = tuple(v for v in LEGACY if at_least(requested, v))
    return pick_version(supported, ours) or requested


class Negotiation:
    """One era detection (seed 002) as a state machine, driven the same way over any transport
    by the client (`mcpfast.client.connect`) and the load tester (`mcpfast.load.probe`).

    While `probe` is a revision, send ``server/discover`` in it and feed the answer to `http`
    (status, body, decoded message) or `stdio` (the message; None: no answer in time). Once
    `probe` is None, `era` and `version` are the outcome: ``modern`` and the revision the
    successful probe spoke (`answer` is its response), or ``legacy`` and the revision
    ``initialize`` asks for: ``legacy``, or after a -32022 that lists legacy revisions only,
    the highest one both sides speak that is not newer (`legacy_version_for`). At most two
    probes: a first -32022 that lists a modern revision we speak is retried once in it.
    """

    def __init__(self, first: str = MODERN, legacy: str = LATEST_LEGACY) -> None:
        self.probe: str | None = first
        """The revision to send the next ``server/discover`` in; None once decided."""
        self.era: Era | None = None
        self.version = ""
        self.answer: Any = None
        """The last probe's decoded answer (None: none, or not JSON)."""
        self._legacy = legacy
        self._probes = 0

    def http(self, status: int, raw: bytes, message: Any) -> None:
        """Take an HTTP probe's answer.

        Raises:
            TransportError: it is not an MCP answer (401, 403, 5xx, ...): no era.
        """
        self._take(message, judge_http(status, raw, message, retried=self._probes > 0))

    def stdio(self, message: Any) -> None:
        """Take a stdio probe's answer (None: none came in time, a legacy server).

        Raises:
            TransportError: an error answer the seed does not fall back on, or not JSON-RPC.
        """
        if message is None:
            self._take(None, Verdict("legacy", ""))
        else:
            self._take(message, judge_stdio(message, retried=self._probes > 0))

    def _take(self, message: Any, verdict: Verdict | None) -> None:
        assert self.probe is not None, "the negotiation is decided"
        self.answer = message
        self._probes += 1
        if verdict is None:
            self.era, self.version, self.probe = "modern", self.probe, None
        elif verdict.retry and self._probes < 2:
            self.probe = verdict.version
        else:
            self.era, self.probe = "legacy", None
            self.version = legacy_version_for(message, self._legacy)


class EraCache:
    """Verdicts per endpoint (URL or command), each kept for ``ttl`` seconds; a modern verdict
    may keep the ``server/discover`` result it came with, for as long as that result's own
    ``ttlMs`` allows (`discovered`)."""

    def __init__(self, ttl: float = 3600.0) -> None:
        self.ttl = ttl
        self._entries: dict[str, tuple[Era, str, float]] = {}
        self._discovered: dict[str, tuple[Any, float]] = {}

    def get(self, endpoint: str) -> tuple[Era, str] | None:
        entry = self._entries.get(endpoint)
        if entry is None or entry[2] < time.monotonic():
            self._entries.pop(endpoint, None)
            self._discovered.pop(endpoint, None)
            return None
        return entry[0], entry[1]

    def put(
        self, endpoint: str, era: Era, version: str, discovered: Any = None, ttl_ms: int = 0
    ) -> None:
        """Keep a verdict; with ``discovered`` (a ``server/discover`` result) reusable for
        ``ttl_ms`` (its ``ttlMs``; 0 keeps none)."""
        now = time.monotonic()
        self._entries[endpoint] = (era, version, now + self.ttl)
        self._discovered.pop(endpoint, None)
        if discovered is not None and ttl_ms > 0:
            self._discovered[endpoint] = (discovered, now + min(self.ttl, ttl_ms / 1000))

    def discovered(self, endpoint: str) -> Any:
        """The ``server/discover`` result kept with the endpoint's verdict while still fresh;
        else None."""
        entry = self._discovered.get(endpoint)
        if entry is None or entry[1] < time.monotonic() or self.get(endpoint) is None:
            self._discovered.pop(endpoint, None)
            return None
        return entry[0]

    def forget(self, endpoint: str) -> None:
        self._entries.pop(endpoint, None)
        self._discovered.pop(endpoint, None)


ERA_CACHE = EraCache()
