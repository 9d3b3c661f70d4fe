"""MCP Server Cards (SEP-2127, a draft: experimental), both sides: the static document that
describes a remote server before any connection (identity, Streamable HTTP endpoint, protocol
versions, the headers a connection needs; never its tools, resources or prompts, nor its
capabilities and extensions, which stay with live negotiation), and the AI Catalog that lists
the cards of a domain at ``/.well-known/ai-catalog.json``. Shapes as the extension repository's
``schema.ts`` and ``docs/discovery.md`` have them (experimental-ext-server-card ``8924e08``)."""

from __future__ import annotations

import re
from typing import Any, Literal

import msgspec
from msgspec import UNSET, Struct, UnsetType, field

from ..types import Icon

SCHEMA = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
CARD_MEDIA_TYPE = "application/mcp-server-card+json"
CATALOG_MEDIA_TYPE = "application/ai-catalog+json"
CARD_SUFFIX = "/server-card"
"""Appended to the Streamable HTTP URL: the card's reserved location."""
CATALOG_PATH = "/.well-known/ai-catalog.json"
NAME = re.compile(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+\Z")
"""A card's ``name``: reverse-DNS namespace, one ``/``, server name (3 to 200 characters)."""


def check_name(name: str) -> str:
    """``name`` when it is a valid card name (`NAME`, 3 to 200 characters).

    Raises:
        ValueError: naming the rule.
    """
    if not 3 <= len(name) <= 200 or NAME.match(name) is None:
        raise ValueError(
            f"server card name {name!r} must be namespace/name in reverse-DNS form, e.g. "
            "'com.example/weather' (3 to 200 of letters, digits, '.', '-', '_', one '/')"
        )
    return name


class Input(Struct, kw_only=True, omit_defaults=True):
    """A header's value the client supplies or that is preset."""

    description: str | UnsetType = UNSET
    isRequired: bool | UnsetType = UNSET
    isSecret: bool | UnsetType = UNSET
    format: Literal["string", "number", "boolean", "filepath"] | UnsetType = UNSET
    default: str | UnsetType = UNSET
    placeholder: str | UnsetType = UNSET
    value: str | UnsetType = UNSET
    choices: list[str] | UnsetType = UNSET


class KeyValueInput(Input, kw_only=True, omit_defaults=True):
    """An HTTP header a connection sends."""

    name: str
    variables: dict[str, Input] | UnsetType = UNSET


class Remote(Struct, kw_only=True, omit_defaults=True):
    """One remote endpoint of the server."""

    type: Literal["streamable-http", "sse"]
    url: str
    headers: list[KeyValueInput] | UnsetType = UNSET
    variables: dict[str, Input] | UnsetType = UNSET
    supportedProtocolVersions: list[str] | UnsetType = UNSET


class ServerCard(Struct, kw_only=True, omit_defaults=True):
    """A Server Card (``application/mcp-server-card+json``)."""

    schema: str = field(name="$schema")
    name: str
    version: str
    description: str
    title: str | UnsetType = UNSET
    websiteUrl: str | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET
    remotes: list[Remote] | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = field(default=UNSET, name="_meta")


class CatalogEntry(Struct, kw_only=True, omit_defaults=True):
    """An AI Catalog entry: a card by ``url`` or inline as ``data``."""

    identifier: str
    type: str
    url: str | UnsetType = UNSET
    data: ServerCard | UnsetType = UNSET


class Catalog(Struct, kw_only=True, omit_defaults=True):
    """An AI Catalog (``/.well-known/ai-catalog.json``)."""

    specVersion: str
    entries: list[CatalogEntry] = msgspec.field(default_factory=list)


def catalog_identifier(host: str, name: str) -> str:
    """The catalog identifier of a card on ``host``: ``urn:air:{host}:mcp:{server name}``."""
    return f"urn:air:{host}:mcp:{name.rpartition('/')[2]}"
