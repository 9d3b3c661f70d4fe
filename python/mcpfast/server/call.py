"""One request as the feature handlers see it, whatever the era or transport, and its params
decoded into their Struct."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import trio

from .. import jsonrpc
from ..errors import ProtocolError
from ..protocol.extensions import declared
from .context import Emitter, InputSource

_DECODERS: dict[type, msgspec.json.Decoder[Any]] = {}


def decoder_for(tp: type[Any]) -> msgspec.json.Decoder[Any]:
    """The JSON decoder of a params Struct (made once)."""
    decoder = _DECODERS.get(tp)
    if decoder is None:
        decoder = _DECODERS[tp] = msgspec.json.Decoder(tp)
    return decoder


def decode_params(tp: type[Any], raw: bytes | None) -> Any:
    """Decode params into their Struct once.

    Raises:
        ProtocolError: -32602 naming the path of the mismatch, with HTTP status 400.
    """
    try:
        return decoder_for(tp).decode(raw or b"{}")
    except msgspec.ValidationError as exc:
        raise ProtocolError(
            jsonrpc.INVALID_PARAMS, f"Invalid params: {exc}", http_status=400
        ) from None


class Call:
    """The request being served: who asks, in which revision, and where notifications go."""

    __slots__ = (
        "capabilities",
        "client_info",
        "emitter",
        "id",
        "input",
        "log_level",
        "method",
        "modern",
        "progress_token",
        "session_id",
        "start_task",
        "threads",
        "version",
    )

    def __init__(
        self,
        *,
        id: int | str | None,
        method: str,
        version: str,
        capabilities: dict[str, Any],
        client_info: dict[str, Any] | None = None,
        log_level: str | None = None,
        progress_token: int | str | None = None,
        emitter: Emitter,
        input: InputSource,
        threads: trio.CapacityLimiter | None = None,
    ) -> None:
        self.id = id
        self.method = method
        self.version = version
        self.modern = version >= "2026-07-28"
        self.capabilities = capabilities
        self.client_info = client_info
        self.log_level = log_level
        self.progress_token = progress_token
        self.emitter = emitter
        self.input = input
        self.threads = threads
        """Bounds the plain-``def`` handlers on worker threads (the endpoint's, sized by
        `Config.thread_limit`); None: Trio's default limiter."""
        self.start_task: Callable[[], Awaitable[None]] | None = None
        self.session_id: str | None = None

    def declares_extension(self, extension: str) -> bool:
        """Whether the client declared an extension (its ``extensions`` capability: this
        request's under 2026-07-28, the session's ``initialize`` before)."""
        extensions = self.capabilities.get("extensions")
        return isinstance(extensions, dict) and extension in extensions

    def extension(self, extension: str) -> dict[str, Any] | None:
        """The settings the client declared for an extension; None when it did not."""
        return declared(self.capabilities, extension)
