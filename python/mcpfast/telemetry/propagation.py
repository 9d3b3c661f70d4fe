"""W3C trace context in ``params._meta`` (SEP-414) and in HTTP headers, through the global
propagator (`opentelemetry.propagate`); ``_meta`` wins when a message has both."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
from opentelemetry import propagate
from opentelemetry.context import Context

from .semconv import CONTEXT_KEYS


class _Carrier(msgspec.Struct):
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


_carrier = msgspec.json.Decoder(_Carrier)


def meta_of(params: bytes | None) -> dict[str, Any] | None:
    """The ``_meta`` of raw params, None when there is none (or they are not an object)."""
    if not params:
        return None
    try:
        return _carrier.decode(params).meta
    except msgspec.DecodeError:
        return None


def extract(meta: Mapping[str, Any] | None, headers: Mapping[str, str] | None) -> Context | None:
    """The remote parent: from ``_meta`` when it carries a ``traceparent``, else from the
    headers when they do; None when neither does."""
    if meta and isinstance(meta.get("traceparent"), str):
        return propagate.extract({k: v for k, v in meta.items() if isinstance(v, str)})
    if headers is not None and "traceparent" in headers:
        return propagate.extract(headers)
    return None


def inject(meta: dict[str, Any] | None) -> dict[str, Any]:
    """``meta`` (a copy) with the current trace context injected into it."""
    carrier: dict[str, Any] = dict(meta) if meta else {}
    propagate.inject(carrier)
    return carrier


def headers_of(params: Mapping[str, Any]) -> dict[str, str]:
    """The trace-context headers that mirror a request's ``_meta`` (none without them)."""
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        return {}
    return {key: meta[key] for key in CONTEXT_KEYS if isinstance(meta.get(key), str)}


def carrying(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` (a copy) with the current trace context in their ``_meta``."""
    meta = params.get("_meta")
    return {**params, "_meta": inject(meta if isinstance(meta, dict) else None)}
