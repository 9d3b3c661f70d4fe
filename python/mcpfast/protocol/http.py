"""Streamable HTTP rules (every revision): the media types, the headers of an SSE response,
which of JSON and SSE an ``Accept`` header prefers, and the DNS-rebinding guard on ``Host`` and
``Origin``."""

from __future__ import annotations

from functools import lru_cache

JSON = b"application/json"
SSE = b"text/event-stream"
Headers = list[tuple[bytes, bytes]]

STREAM_HEADERS: Headers = [
    (b"content-type", SSE),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]
"""The headers of every SSE response, whatever the transport."""

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")


def host_allowed(allowed: list[str] | None, bound_host: str, host_header: str | None) -> bool:
    """Whether the ``Host`` header names this server. ``allowed`` None means "the loopback
    names when bound to loopback, anything otherwise"; ``["*"]`` turns the check off."""
    if allowed is None:
        if bound_host not in LOOPBACK_HOSTS:
            return True
        allowed = list(LOOPBACK_HOSTS)
    if "*" in allowed:
        return True
    if host_header is None:
        return False
    return _hostname(host_header) in allowed


def origin_allowed(allowed: list[str] | None, origin: str | None, host_header: str | None) -> bool:
    """Whether a browser ``Origin`` may call this server (no ``Origin``: not a browser).
    ``allowed`` None means "loopback or the request's own host"; ``["*"]`` turns it off."""
    if origin is None:
        return True
    if allowed is not None:
        return "*" in allowed or origin in allowed
    scheme, sep, rest = origin.partition("://")
    if not sep or scheme not in ("http", "https"):
        return False
    name = _hostname(rest)
    return name in LOOPBACK_HOSTS or (host_header is not None and name == _hostname(host_header))


@lru_cache(maxsize=256)
def _hostname(authority: str) -> str:
    authority = authority.strip().lower()
    if authority.startswith("["):
        end = authority.find("]")
        return authority[: end + 1] if end != -1 else authority
    return authority.rsplit(":", 1)[0] if authority.count(":") == 1 else authority


@lru_cache(maxsize=64)
def prefers_event_stream(accept: str | None) -> bool:
    """Whether an ``Accept`` header ranks ``text/event-stream`` above ``application/json``: by
    ``q``, and at equal ``q`` by which is listed first. The most specific range naming a type
    gives its rank (RFC 9110 §12.5.1), so ``*/*`` alone prefers neither."""
    if not accept:
        return False
    ranks: dict[str, tuple[int, float, int]] = {}  # type -> (specificity, q, position)
    for position, item in enumerate(accept.split(",")):
        media, *params = (part.strip() for part in item.split(";"))
        media = media.lower()
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value.strip())
                except ValueError:
                    quality = 0.0
        for target in ("text/event-stream", "application/json"):
            if media == target:
                specificity = 2
            elif media == target.split("/")[0] + "/*":
                specificity = 1
            elif media == "*/*":
                specificity = 0
            else:
                continue
            known = ranks.get(target)
            if known is None or specificity > known[0]:
                ranks[target] = (specificity, quality, position)
    stream = ranks.get("text/event-stream")
    json = ranks.get("application/json")
    if stream is None or stream[1] <= 0:
        return False
    if json is None or json[1] <= 0:
        return True
    return stream[1] > json[1] or (stream[1] == json[1] and stream[2] < json[2])
