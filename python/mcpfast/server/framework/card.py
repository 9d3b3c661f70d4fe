"""Serving the Server Card (SEP-2127, a draft: experimental) of a `Server` that publishes one
(`Server.publish_card`): the card at ``<MCP path>/server-card`` and the domain's AI Catalog at
``/.well-known/ai-catalog.json`` listing it, both public (``Access-Control-Allow-Origin: *``),
cacheable (``Cache-Control``, an ``ETag`` honoured by ``If-None-Match``), GET and HEAD only
(OPTIONS answers a CORS preflight, anything else 405).

The card is built from the server as ``server/discover`` describes it: the same name (or the
card's own reverse-DNS one), version, title, description, website and icons, one Streamable
HTTP remote at the endpoint's URL with every supported protocol version, and on a protected
server the ``Authorization`` header a connection needs. It lists no tools, resources or
prompts, nor capabilities or extensions: the SEP leaves those to live negotiation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Literal

import msgspec

from ...protocol.card import (
    CARD_MEDIA_TYPE,
    CARD_SUFFIX,
    CATALOG_PATH,
    SCHEMA,
    Catalog,
    CatalogEntry,
    KeyValueInput,
    Remote,
    ServerCard,
    catalog_identifier,
)
from ...protocol.http import Headers
from ...versions import ALL_VERSIONS
from ..config import Config
from ..seams import Responder
from .app import Server
from .registry import CardSettings

Kind = Literal["card", "catalog"]
CORS: Headers = [
    (b"access-control-allow-origin", b"*"),
    (b"access-control-allow-methods", b"GET, HEAD, OPTIONS"),
    (b"access-control-allow-headers", b"Content-Type, If-None-Match"),
    (b"access-control-expose-headers", b"ETag"),
]
CACHE = (b"cache-control", b"public, max-age=3600")


def endpoint_url(settings: CardSettings, config: Config, headers: Mapping[str, str]) -> str:
    """The Streamable HTTP URL the card advertises."""
    if settings.url is not None:
        return settings.url
    if config.auth is not None and config.auth.resource is not None:
        return config.auth.resource
    return f"http://{headers.get('host') or 'localhost'}{config.path}"


def build_card(
    server: Server, settings: CardSettings, config: Config, headers: Mapping[str, str]
) -> ServerCard:
    """The server's card, as served to a request with ``headers``."""
    info = server.info
    description = info.description if isinstance(info.description, str) else settings.description
    title = info.title if isinstance(info.title, str) else None
    remote = Remote(
        type="streamable-http",
        url=endpoint_url(settings, config, headers),
        supportedProtocolVersions=list(ALL_VERSIONS),
    )
    if config.auth is not None or server.token_verifier is not None:
        remote.headers = [
            KeyValueInput(
                name="Authorization",
                description="An OAuth 2.1 access token for this server (its protected "
                "resource metadata names the authorization servers)",
                isRequired=True,
                isSecret=True,
                value="Bearer {token}",
            )
        ]
    return ServerCard(
        schema=SCHEMA,
        name=settings.name,
        version=info.version,
        description=(description or title or info.name)[:100],
        title=info.title,
        websiteUrl=info.websiteUrl,
        icons=info.icons,
        remotes=[remote],
    )


def build_catalog(card: ServerCard, card_url: str, host: str) -> Catalog:
    """The AI Catalog of the domain: one entry, the card at ``card_url``."""
    return Catalog(
        specVersion="1.0",
        entries=[
            CatalogEntry(
                identifier=catalog_identifier(host, card.name), type=CARD_MEDIA_TYPE, url=card_url
            )
        ],
    )


class Cards:
    """The card paths of an endpoint and their answers (none when the server publishes no
    card)."""

    def __init__(self, server: Server, config: Config) -> None:
        self.server = server
        self.config = config
        self.paths: dict[str, Kind] = {}
        if isinstance(server.card, CardSettings):
            self.paths[config.path.rstrip("/") + CARD_SUFFIX] = "card"
            self.paths[CATALOG_PATH] = "catalog"

    def document(self, kind: Kind, headers: Mapping[str, str]) -> bytes:
        """The card or catalog for a request with ``headers``, encoded."""
        settings = self.server.card
        assert isinstance(settings, CardSettings)
        card = build_card(self.server, settings, self.config, headers)
        if kind == "card":
            return msgspec.json.encode(card)
        url = endpoint_url(settings, self.config, headers).rstrip("/") + CARD_SUFFIX
        host = (headers.get("host") or "localhost").rsplit(":", 1)[0]
        return msgspec.json.encode(build_catalog(card, url, host))

    async def answer(
        self, path: str, method: str, headers: Mapping[str, str], responder: Responder
    ) -> None:
        """Answer a request at one of `paths`: the document (GET, HEAD; 304 when its ``ETag``
        matches ``If-None-Match``), a CORS preflight (OPTIONS), else 405; 404 for a ``Host``
        this server does not answer to."""
        if not self.config.host_allowed(headers.get("host")):
            await responder.reply(404, b"", [(b"content-type", b"text/plain")])
            return
        if method == "OPTIONS":
            await responder.reply(204, b"", [*CORS, (b"access-control-max-age", b"86400")])
            return
        if method not in ("GET", "HEAD"):
            await responder.reply(405, b"", [(b"allow", b"GET, HEAD, OPTIONS"), *CORS])
            return
        body = self.document(self.paths[path], headers)
        etag = b'"' + hashlib.blake2b(body, digest_size=12).hexdigest().encode() + b'"'
        out: Headers = [*CORS, CACHE, (b"etag", etag)]
        if _matches(headers.get("if-none-match"), etag):
            await responder.reply(304, b"", out)
            return
        if method == "HEAD":
            await responder.reply(200, b"", [(b"content-type", b"application/json"), *out])
            return
        await responder.reply(200, body, out)


def _matches(if_none_match: str | None, etag: bytes) -> bool:
    """Whether an ``If-None-Match`` header names ``etag`` (or is ``*``)."""
    if not if_none_match:
        return False
    tags = {t.strip().removeprefix("W/") for t in if_none_match.split(",")}
    return "*" in tags or etag.decode() in tags
