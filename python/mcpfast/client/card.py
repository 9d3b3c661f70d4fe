"""Reading a Server Card (SEP-2127, a draft: experimental) before connecting: from its URL, from
an MCP endpoint's URL (``<url>/server-card``), or through a domain's AI Catalog
(``/.well-known/ai-catalog.json``, its first MCP Server Card entry, by ``url`` or inline)."""

from __future__ import annotations

from typing import TypeVar

import httpx2
import msgspec

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
    url: str, *, http_client: httpx2.AsyncClient | None = None, timeout: float = 10.0
) -> ServerCard:
    """The Server Card at ``url``: a card URL (ending in ``/server-card``), an AI Catalog URL
    (ending in ``/.well-known/ai-catalog.json``: its first MCP Server Card entry), or an MCP
    endpoint URL (its ``/server-card``). The card is advisory: once connected, prefer what
    ``server/discover`` says.

    Raises:
        TransportError: unreachable, not 200, over `MAX_CARD_BYTES`, not a valid card (or
            catalog), or a catalog without an MCP Server Card entry.
    """
    owned = http_client is None
    http = http_client or httpx2.AsyncClient(timeout=httpx2.Timeout(timeout))
    try:
        if url.endswith(CATALOG_PATH):
            catalog = await _get(http, url, CATALOG_MEDIA_TYPE, Catalog)
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
        return await _get(http, url, CARD_MEDIA_TYPE, ServerCard)
    finally:
        if owned:
            await http.aclose()


async def _get(http: httpx2.AsyncClient, url: str, accept: str, kind: type[T]) -> T:
    """GET one JSON document of ``kind``.

    Raises:
        TransportError: as `read_server_card`.
    """
    try:
        async with http.stream("GET", url, headers={"accept": accept}) as response:
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_CARD_BYTES:
                    raise TransportError(f"{url}: over {MAX_CARD_BYTES} bytes")
            status = response.status_code
    except httpx2.TransportError as exc:
        raise TransportError(f"{url} is unreachable: {exc}") from exc
    body = b"".join(chunks)
    if status != 200:
        raise TransportError(f"{url}: {http_error_text(status, body)}", status)
    try:
        return msgspec.json.decode(body, type=kind)
    except msgspec.ValidationError as exc:
        raise TransportError(f"{url} is not a valid {kind.__name__}: {exc}") from None
    except msgspec.DecodeError:
        raise TransportError(f"{url} is not JSON") from None
