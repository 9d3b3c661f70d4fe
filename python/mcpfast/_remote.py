"""Fetching a document on a remote party's word: protected resource and authorization server
metadata, token and registration responses, JWKS, introspection replies, client metadata
documents, server cards. Whoever named the URL may be hostile, so `fetch`:

- checks the URL first (`check_url`): a `secure_url` (``https:``, or ``http:`` to a loopback
  host), unless it is on the origin the user chose (`UrlPolicy.origin`); with
  ``UrlPolicy(public_only=True)`` the host must also resolve to public addresses only (every
  address it resolves to is checked; not private, loopback, link-local, unique-local, CGNAT,
  unspecified, multicast or reserved). The check resolves the name once and the connection
  resolves it again: a DNS server that answers differently the second time (DNS rebinding)
  gets past it. It narrows server-side request forgery, it does not replace a firewall;
- follows no redirect (a 3xx is refused: a redirect could lead anywhere, past the URL check);
- reads the body as it comes, at most ``max_bytes`` decoded and on the wire (`read_capped`:
  a compression bomb stops at the cap);
- finishes within ``deadline`` seconds in total (resolution, connection, every read).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final, Protocol, runtime_checkable

import httpx2
import msgspec
import orjson
import trio

from .protocol.auth import secure_url

__all__ = [
    "DEFAULT_POLICY",
    "FetchError",
    "Fetcher",
    "Reply",
    "Request",
    "TooLarge",
    "UrlPolicy",
    "check_url",
    "fetch",
    "origin_of",
    "read_capped",
]


class FetchError(Exception):
    """A document was not fetched: refused by the rules above (``unreachable`` False) or not
    reachable in time (``unreachable`` True). The message names the document and the URL."""

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


class TooLarge(FetchError):
    """A body over its cap."""


class UrlPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """Where documents may be fetched from: ``https:``, or ``http:`` to a loopback host;
    ``public_only``: every address the host resolves to must be public (see the module doc).
    URLs on ``origin`` pass unchecked: the origin the user chose (the MCP server's), whose
    documents are the user's word, not a remote party's."""

    public_only: bool = False
    origin: str | None = None

    def trusting(self, url: str) -> UrlPolicy:
        """This policy, with ``url``'s origin the user's."""
        return msgspec.structs.replace(self, origin=origin_of(url))


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


def origin_of(url: str) -> str:
    """``url``'s origin, normalized (lowercase scheme and host, the port always written)."""
    parts = httpx2.URL(url)
    port = parts.port or {"https": 443, "http": 80}.get(parts.scheme, 0)
    return f"{parts.scheme}://{parts.host}:{port}".lower()


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
    if policy.origin is not None and host and origin_of(url) == policy.origin:
        return
    if not secure_url(url):
        raise FetchError(f"the {what} URL {url!r} is not https (http only to loopback)")
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


class Request(msgspec.Struct, frozen=True, kw_only=True):
    """One `fetch`: its arguments, as a `Fetcher` is handed them."""

    method: str
    url: str
    what: str
    max_bytes: int
    deadline: float
    policy: UrlPolicy
    headers: Mapping[str, str] | None
    data: Mapping[str, str] | None
    json: Any
    auth: tuple[str, str] | None


@runtime_checkable
class Fetcher(Protocol):
    """A client of another kind that applies these rules itself (the load tester's gevent
    client: it cannot run Trio): `fetch` hands it the whole request."""

    async def fetch(self, request: Request) -> Reply: ...


async def fetch(
    http: httpx2.AsyncClient | Fetcher | None,
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
    Any status is returned (its body capped alike): the caller judges it. A `Fetcher` is
    handed the request.

    Raises:
        FetchError: refused (URL, redirect, size, decoding) or unreachable / over ``deadline``.
    """
    if isinstance(http, Fetcher):
        return await http.fetch(
            Request(
                method=method,
                url=url,
                what=what,
                max_bytes=max_bytes,
                deadline=deadline,
                policy=policy,
                headers=headers,
                data=data,
                json=json,
                auth=auth,
            )
        )
    sent = {"accept": "application/json", **(headers or {})}
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
            try:
                body = await read_capped(response, max_bytes)
            except FetchError as exc:
                raise FetchError(f"the {what}: {exc}") from None
        finally:
            await response.aclose()
    except httpx2.HTTPError as exc:
        raise FetchError(f"the {what} at {url} is unreachable: {exc}", unreachable=True) from None
    return Reply(response.status_code, response.headers, body)


async def read_capped(response: httpx2.Response, max_bytes: int) -> bytes:
    """The decoded body of a streamed ``response``, at most ``max_bytes``, and at most that
    many on the wire. httpx2 decodes a compressed body in pieces of at most 1 MiB, so a
    compression bomb stops within a piece of the cap.

    Raises:
        TooLarge: over the cap.
        FetchError: a body that does not decode.
    """
    too_big = TooLarge(f"{response.url} sent over {max_bytes:,} bytes")
    length = response.headers.get("content-length", "")
    if length.isdigit() and int(length) > max_bytes:
        raise too_big
    body = bytearray()
    try:
        async for piece in response.aiter_bytes():
            body += piece
            if len(body) > max_bytes or response.num_bytes_downloaded > max_bytes:
                raise too_big
    except httpx2.DecodingError:
        raise FetchError(f"{response.url} sent a body that does not decode") from None
    return bytes(body)
