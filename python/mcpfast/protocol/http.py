"""Streamable HTTP rules (every revision): the media types, the headers of an SSE response,
which of JSON and SSE an ``Accept`` header prefers, and the DNS-rebinding guard on ``Host`` and
``Origin``."""

from __future__ import annotations

import ipaddress
from collections.abc import Collection, Iterable
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

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
"""The loopback names: what a page of the browser's own machine is served from."""


def default_hosts(
    bound_host: str, addresses: Iterable[str], own_names: Iterable[str]
) -> frozenset[str] | None:
    """The ``Host`` names a server bound to ``bound_host`` answers when no ``allowed_hosts``
    are configured; None: any. A bind that listens on loopback (one of ``addresses``, what
    ``bound_host`` resolves to, is a loopback or unspecified address: ``127.0.0.1``,
    ``127.0.0.2``, ``0.0.0.0``, ``::``, Debian's ``127.0.1.1`` host name) answers the loopback
    names, the bound address itself (not an unspecified one) and ``own_names`` (the machine's
    names and addresses) only: a DNS-rebinding page's ``Host`` is a name its attacker owns. A
    bind to other addresses only answers any ``Host`` (set ``allowed_hosts`` there)."""
    ips = [_address(a) for a in addresses]
    if ips and not any(ip is not None and (ip.is_loopback or ip.is_unspecified) for ip in ips):
        return None
    names = {*LOOPBACK_HOSTS, *(_authority_name(n) for n in own_names)}
    bound = _address(bound_host)
    if bound is None or not bound.is_unspecified:
        names.add(_authority_name(bound_host))
    names.discard("")
    return frozenset(names)


def listed_hosts(allowed: Collection[str]) -> frozenset[str] | None:
    """The ``Host`` names that configured ``allowed_hosts`` answer, as `host_allowed` compares
    them (lower case, IPv6 bracketed, no port); None (any) when ``"*"`` is among them."""
    if "*" in allowed:
        return None
    return frozenset(_authority_name(name) for name in allowed) - {""}


def host_allowed(allowed: Collection[str] | None, host_header: str | None) -> bool:
    """Whether the ``Host`` header is one of the ``allowed`` names (compared without the port;
    None, or a ``"*"`` among them: any ``Host``, even none)."""
    if allowed is None or "*" in allowed:
        return True
    return host_header is not None and _hostname(host_header) in allowed


def origin_allowed(
    allowed: list[str] | None, origin: str | None, host_header: str | None, *, host_listed: bool
) -> bool:
    """Whether a browser ``Origin`` may call this server (no ``Origin``: not a browser).
    ``allowed`` lists the origins (``["*"]``: any); None admits an ``http(s)`` origin on a
    loopback name (a page of the browser's own machine) and, only when ``host_listed`` (the
    ``Host`` was checked against configured ``allowed_hosts``), the request's own host. An
    origin equal to the ``Host`` proves nothing by itself: a DNS-rebinding page has its
    attacker's name as both. ``null`` (sandboxed frames, ``file:``) is never admitted by
    default."""
    if origin is None:
        return True
    if allowed is not None:
        return "*" in allowed or origin in allowed
    scheme, sep, rest = origin.partition("://")
    if not sep or scheme not in ("http", "https"):
        return False
    name = _hostname(rest)
    if name in LOOPBACK_HOSTS:
        return True
    return host_listed and host_header is not None and name != "" and name == _hostname(host_header)


@lru_cache(maxsize=256)
def _hostname(authority: str) -> str:
    """The host of ``host[:port]``, in lower case (an IPv6 literal keeps its brackets); "" when
    ``authority`` is not one (bytes after ``]`` other than a port, a port not all digits)."""
    authority = authority.strip().lower()
    if authority.startswith("["):
        end = authority.find("]")
        name, rest = (authority[: end + 1], authority[end + 1 :]) if end != -1 else ("", "")
    elif authority.count(":") > 1:
        return ""  # an IPv6 address without its brackets
    else:
        name, colon, port = authority.partition(":")
        rest = colon + port
    port = rest[1:]
    if rest and (rest[0] != ":" or (port and not (port.isascii() and port.isdigit()))):
        return ""
    return name


def _authority_name(host: str) -> str:
    """``host`` (a name or an address, IPv6 bracketed or not) as `_hostname` reads it in a
    ``Host`` header."""
    ip = _address(host)
    if ip is not None and ip.version == 6:
        return f"[{ip.compressed}]"
    return _hostname(host) if ip is None else ip.compressed


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]").partition("%")[0])
    except ValueError:
        return None


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
