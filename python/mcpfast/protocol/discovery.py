"""Era detection as pure decisions (`shared/seeds/002_*`): what a probe's answer means, which
legacy revision to ask for after a -32022, and the per-endpoint cache of verdicts (with the
``server/discover`` result a modern verdict came with)."""

from __future__ import annotations

import time
from typing import Any, Literal

import msgspec

from ..errors import TransportError
from ..versions import ALL_VERSIONS, LEGACY, MODERN_VERSIONS

Era = Literal["modern", "legacy"]
FALLBACK_STATUSES = (400, 404, 405)
FALLBACK_CODES = (-32020, -32021, -32022, -32601)
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


def judge_http(status: int, raw: bytes, message: Any, *, retried: bool) -> Verdict | None:
    """The meaning of an HTTP probe's answer; None means the probe succeeded (modern).

    Raises:
        TransportError: for 401, 403, 5xx and anything else that is not an MCP answer.
    """
    error = _error_of(message)
    if error is not None and error.get("code") == -32022 and not retried:
        version = pick_version((error.get("data") or {}).get("supported"))
        if version is not None and version in MODERN_VERSIONS:
            return Verdict("modern", version, retry=True)
        return Verdict("legacy", "")
    if status in FALLBACK_STATUSES:
        return Verdict("legacy", "")
    if error is not None and error.get("code") in FALLBACK_CODES:
        return Verdict("legacy", "")
    if status == 200 and isinstance(message, dict) and "result" in message:
        return None
    raise TransportError(http_error_text(status, raw), status)


def judge_stdio(message: Any) -> Verdict | None:
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
    code = error.get("code")
    if code == -32022:
        version = pick_version((error.get("data") or {}).get("supported"))
        if version is not None and version in MODERN_VERSIONS:
            return Verdict("modern", version, retry=True)
    if code in STDIO_FALLBACK_CODES:
        return Verdict("legacy", "")
    raise TransportError(
        f"the server answered server/discover with error {code}: {error.get('message', '')}"[:300]
    )


def legacy_version_for(message: Any, requested: str) -> str:
    """The revision a client that falls back to ``initialize`` after the probe answer
    ``message`` asks for: after a -32022 that lists legacy revisions, the highest one both
    sides speak that is not newer than ``requested``; else ``requested``."""
    error = _error_of(message)
    if error is None or error.get("code") != -32022:
        return requested
    data = error.get("data")
    supported = data.get("supported") if isinstance(data, dict) else None
    ours = tuple(v for v in LEGACY if v <= requested)
    return pick_version(supported, ours) or requested


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
