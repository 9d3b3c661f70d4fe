"""Fetching a document on a remote party's word: protected resource and authorization server
metadata, token and registration responses, JWKS, introspection replies, client metadata
documents, server cards. Whoever named the URL may be hostile, so `fetch`:

- checks the URL first (`check_url`): ``https:``, or ``http:`` to a loopback host only; with
  ``UrlPolicy(public_only=True)`` the host must also resolve to public addresses only (every
  address it resolves to is checked; not private, loopback, link-local, unique-local, CGNAT,
  unspecified, multicast or reserved). The check resolves the name once and the connection
  resolves it again: a DNS server that answers differently the second time (DNS rebinding)
  gets past it. It narrows server-side request forgery, it does not replace a firewall;
- follows no redirect (a 3xx is refused: a redirect could lead anywhere, past the URL check);
- reads the body as it comes, at most ``max_bytes`` after decoding (``gzip``/``deflate``
  decoded here with a bounded output, so a compression bomb stops at the cap) and about as
  many on the wire, refusing any other ``Content-Encoding``;
- finishes within ``deadline`` seconds in total (resolution, connection, every read).
"""

from __future__ import annotations

import ipaddress
import socket
import zlib
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final

import httpx2
import msgspec
import orjson
import trio

__all__ = [
    "DEFAULT_POLICY",
    "FetchError",
    "Reply",
    "UrlPolicy",
    "check_url",
    "fetch",
    "is_loopback_host",
    "read_capped",
]

_RAW_SLACK: Final = 64 * 1024
"""Wire bytes allowed past ``max_bytes`` (framing of a compressed body near the cap)."""


class FetchError(Exception):
    """A document was not fetched: refused by the rules above (``unreachable`` False) or not
    reachable in time (``unreachable`` True). The message names the document and the URL."""

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


class UrlPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """Where documents may be fetched from. Always ``https:``, or ``http:`` to a loopback host;
    ``public_only``: every address the host resolves to must be public (see the module doc)."""

    public_only: bool = False


DEFAULT_POLICY: Final = UrlPolicy()
"""https, or http to loopback; any address."""


class Reply(msgspec.Struct, frozen=True):
    """A fetched answer: its status, headers and (decoded, capped) body."""

    status: int
    headers: httpx2.Headers
    body: bytes

    def json(self) -> Any:
        """The body as JSON; None when it is not JSON."""
        try:
            return orjson.loads(self.body)
        except orjson.JSONDecodeError:
            return None


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` names a loopback address (``localhost``, 127.0.0.0/8, ``::1``)."""
    host = host.strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not (ip.is_multicast or ip.is_reserved or ip.is_unspecified)


async def check_url(url: str, policy: UrlPolicy, what: str) -> None:
    """Check ``url`` against ``policy`` (see the module doc), resolving its host when
    ``policy.public_only``.

    Raises:
        FetchError: the URL is refused (or its host does not resolve).
    """
    try:
        parts = httpx2.URL(url)
    except (httpx2.InvalidURL, TypeError):
        raise FetchError(f"the {what} URL {url!r} is not a URL") from None
    host = parts.host
    if not host or parts.scheme not in ("https", "http"):
        raise FetchError(f"the {what} URL {url!r} is not https")
    if parts.scheme == "http" and not is_loopback_host(host):
        raise FetchError(f"the {what} URL {url!r} is not https (http only on loopback)")
    if not policy.public_only:
        return
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        found = await trio.socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise FetchError(
            f"the {what} host {host!r} does not resolve: {exc}", unreachable=True
        ) from None
    private = sorted({str(entry[4][0]) for entry in found if not _public(str(entry[4][0]))})
    if private or not found:
        raise FetchError(
            f"the {what} URL {url!r} resolves to a non-public address ({', '.join(private)}): "
            "refused (public addresses only)"
        )


async def fetch(
    http: httpx2.AsyncClient | None,
    method: str,
    url: str,
    *,
    what: str,
    max_bytes: int,
    deadline: float,
    policy: UrlPolicy = DEFAULT_POLICY,
    headers: Mapping[str, str] | None = None,
    data: Mapping[str, str] | None = None,
    json: Any = None,
    auth: tuple[str, str] | None = None,
) -> Reply:
    """``method`` ``url`` under the rules of the module doc; ``what`` names the document in
    errors. ``http``: the client to send with (None: a client of its own for this fetch).
    Any status is returned (its body capped alike): the caller judges it.

    Raises:
        FetchError: refused (URL, redirect, size, encoding) or unreachable / over ``deadline``.
    """
    sent = {"accept": "application/json", **(headers or {}), "accept-encoding": "gzip"}
    with trio.move_on_after(deadline) as scope:
        await check_url(url, policy, what)
        async with _client(http, deadline) as client:
            request = client.build_request(method, url, headers=sent, data=data, json=json)
            return await _send(client, request, auth, what, max_bytes)
    assert scope.cancelled_caught
    raise FetchError(f"the {what} at {url} took over {deadline:g} s", unreachable=True)


@asynccontextmanager
async def _client(
    http: httpx2.AsyncClient | None, timeout: float
) -> AsyncIterator[httpx2.AsyncClient]:
    if http is not None:
        yield http
        return
    async with httpx2.AsyncClient(timeout=timeout) as own:
        yield own


async def _send(
    http: httpx2.AsyncClient,
    request: httpx2.Request,
    auth: tuple[str, str] | None,
    what: str,
    max_bytes: int,
) -> Reply:
    url = request.url
    try:
        response = await http.send(
            request, stream=True, follow_redirects=False, auth=auth or httpx2.USE_CLIENT_DEFAULT
        )
        try:
            if response.is_redirect:
                raise FetchError(f"the {what} at {url} redirects: redirects are not followed")
            if _encoding(response) not in ("identity", *_INFLATED):
                raise FetchError(f"the {what} at {url} has content-encoding {_encoding(response)}")
            try:
                body = await read_capped(response, max_bytes)
            except FetchError as exc:
                raise FetchError(f"the {what}: {exc}") from None
        finally:
            await response.aclose()
    except httpx2.HTTPError as exc:
        raise FetchError(f"the {what} at {url} is unreachable: {exc}", unreachable=True) from None
    return Reply(response.status_code, response.headers, body)


_INFLATED: Final = ("gzip", "x-gzip", "deflate")


def _encoding(response: httpx2.Response) -> str:
    return response.headers.get("content-encoding", "identity").strip().lower() or "identity"


async def read_capped(response: httpx2.Response, max_bytes: int) -> bytes:
    """The decoded body of a streamed ``response``, at most ``max_bytes`` (and ``max_bytes`` +
    `_RAW_SLACK` on the wire). ``gzip``/``deflate`` are inflated here with a bounded output (a
    compression bomb stops at the cap); other encodings are httpx2's, capped per chunk.

    Raises:
        FetchError: over the cap (the message says so), or not valid gzip/deflate.
    """
    too_big = FetchError(f"{response.url} sent over {max_bytes:,} bytes")
    length = response.headers.get("content-length", "")
    if length.isdigit() and int(length) > max_bytes + _RAW_SLACK:
        raise too_big
    encoding = _encoding(response)
    if encoding not in ("identity", *_INFLATED):
        decoded = bytearray()
        async for piece in response.aiter_bytes():
            decoded += piece
            if len(decoded) > max_bytes:
                raise too_big
        return bytes(decoded)
    inflater = zlib.decompressobj(32 + zlib.MAX_WBITS) if encoding in _INFLATED else None
    buffer = bytearray()
    raw = 0
    async for chunk in response.aiter_raw():
        raw += len(chunk)
        if raw > max_bytes + _RAW_SLACK:
            raise too_big
        try:
            while chunk:
                room = max_bytes + 1 - len(buffer)
                buffer += inflater.decompress(chunk, room) if inflater else chunk
                chunk = inflater.unconsumed_tail if inflater else b""
                if len(buffer) > max_bytes:
                    raise too_big
        except zlib.error:
            raise FetchError(f"{response.url} sent invalid {encoding}") from None
    return bytes(buffer)
