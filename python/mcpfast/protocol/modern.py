"""2026-07-28 rules both sides share: the ``_meta`` every request carries."""

from __future__ import annotations

from typing import Any

from ..types import CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY, VERSION_KEY


def request_meta(
    version: str,
    capabilities: dict[str, Any],
    client_info: dict[str, Any],
    log_level: str | None = None,
    extensions: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``_meta`` of a 2026-07-28 request (any transport): the revision, the client's
    capabilities (with ``extensions`` inside them), its info, the log level it opts in to, and
    ``extra`` keys (a progress token, trace context)."""
    caps = dict(capabilities)
    if extensions:
        caps["extensions"] = extensions
    meta: dict[str, Any] = {
        VERSION_KEY: version,
        CAPABILITIES_KEY: caps,
        CLIENT_INFO_KEY: client_info,
    }
    if log_level is not None:
        meta[LOG_LEVEL_KEY] = log_level
    if extra:
        meta.update(extra)
    return meta
