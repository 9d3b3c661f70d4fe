"""Reading a Server Card (SEP-2127, a draft: experimental) before connecting: from its URL, from
an MCP endpoint's URL (``<url>/server-card``), or through a domain's AI Catalog
(``/.well-known/ai-catalog.json``, its first MCP Server Card entry, by ``url`` or inline)."""

from __future__ import annotations

from typing import TypeVar

import httpx2
import msgspec

from .._remote import FetchError, UrlPolicy, fetch
from ..errors import TransportError
from ..protocol.card import (
    CARD_MEDIA_TYPE,
    CARD_SUFFIX,
    CATALOG_MEDIA_TYPE,
    CATALOG_PATH,
    Catalog,
    ServerCard,
)
from ..protocol.discovery import http_error_text

MAX_CARD_BYTES = 1 << 20
"""The largest card or catalog read."""
T = TypeVar("T")


async def read_server_card(
    url: str,
    *,
    http_client: httpx2.AsyncClient | None = None,
    timeout: float = 10.0,
    public_only: bool = False,
) -> ServerCard:
    """The Server Card at ``url``: a card URL (ending in ``/server-card``), an AI Catalog URL
    (ending in ``/.well-known/ai-catalog.json``: its first MCP Server Card entry), or an MCP
    endpoint URL (its ``/server-card``). The card is advisory: once connected, prefer what
    ``server/discover`` says. Each document is read by `mcpfast._remote.fetch` within
    ``timeout`` seconds; a card URL a catalog names must be https (http to loopback) unless
    on ``url``'s origin, and with ``public_only`` resolve to public addresses only.

    Raises:
        TransportError: unreachable, not 200, over `MAX_CARD_BYTES`, refused by the fetch
            rules, not a valid card (or catalog), or a catalog without an MCP Server Card entry.
    """
    policy = UrlPolicy(public_only=public_only).trusting(url)
    if url.endswith(CATALOG_PATH):
        catalog = await _get(http_client, url, CATALOG_MEDIA_TYPE, Catalog, policy, timeout)
        entry = next((e for e in catalog.entries if e.type == CARD_MEDIA_TYPE), None)
        if entry is None:
            raise TransportError(f"the AI Catalog at {url} lists no MCP Server Card")
        if isinstance(entry.data, ServerCard):
            return entry.data
        if not isinstance(entry.url, str):
            raise TransportError(f"the AI Catalog entry {entry.identifier} has no card")
        url = entry.url
    elif not url.endswith(CARD_SUFFIX):
        url = url.rstrip("/") + CARD_SUFFIX
    return await _get(http_client, url, CARD_MEDIA_TYPE, ServerCard, policy, timeout)


async def _get(
    http: httpx2.AsyncClient | None,
    url: str,
    accept: str,
    kind: type[T],
    policy: UrlPolicy,
    deadline: float,
) -> T:
    """GET one JSON document of ``kind``.

    Raises:
        TransportError: as `read_server_card`.
    """
    try:
        reply = await fetch(
            http,
            "GET",
            url,
            what="server card",
            max_bytes=MAX_CARD_BYTES,
            deadline=deadline,
            policy=policy,
            headers={"accept": accept},
        )
    except FetchError as exc:
        raise TransportError(str(exc)) from None
    if reply.status != 200:
        raise TransportError(f"{url}: {http_error_text(reply.status, reply.body)}", reply.status)
    try:
        return msgspec.json.decode(reply.body, type=kind)
    except msgspec.ValidationError as exc:
        raise TransportError(f"{url} is not a valid {kind.__name__}: {exc}") from None
    except msgspec.DecodeError:
        raise TransportError(f"{url} is not JSON") from None
