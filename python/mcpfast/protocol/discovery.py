"""Era detection as pure decisions (`shared/seeds/002_*`): what a probe's answer means, and the
per-endpoint cache of verdicts."""

from __future__ import annotations

import time
from typing import Any, Literal

import msgspec

from ..errors import TransportError
from ..versions import ALL_VERSIONS, MODERN_VERSIONS

Era = Literal["modern", "legacy"]
FALLBACK_STATUSES = (400, 404, 405)
FALLBACK_CODES = (-32020, -32021, -32022, -32601)


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
    """The meaning of a stdio probe's answer (a timeout is judged by the caller: legacy)."""
    error = _error_of(message)
    if error is None:
        return None
    if error.get("code") == -32022:
        version = pick_version((error.get("data") or {}).get("supported"))
        if version is not None and version in MODERN_VERSIONS:
            return Verdict("modern", version, retry=True)
    return Verdict("legacy", "")


class EraCache:
    """Verdicts per endpoint (URL or command), each kept for ``ttl`` seconds."""

    def __init__(self, ttl: float = 3600.0) -> None:
        self.ttl = ttl
        self._entries: dict[str, tuple[Era, str, float]] = {}

    def get(self, endpoint: str) -> tuple[Era, str] | None:
        entry = self._entries.get(endpoint)
        if entry is None or entry[2] < time.monotonic():
            self._entries.pop(endpoint, None)
            return None
        return entry[0], entry[1]

    def put(self, endpoint: str, era: Era, version: str) -> None:
        self._entries[endpoint] = (era, version, time.monotonic() + self.ttl)

    def forget(self, endpoint: str) -> None:
        self._entries.pop(endpoint, None)


ERA_CACHE = EraCache()
