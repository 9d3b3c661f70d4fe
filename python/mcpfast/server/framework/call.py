"""One request as the feature handlers see it, whatever the era or transport, and its params
decoded into their Struct."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import msgspec
import trio

from ... import jsonrpc
from ...errors import ProtocolError
from ...protocol.extensions import declared
from ...protocol.methods import METHODS, REACHES, Method, Reach
from ...versions import is_modern
from .context import Emitter, InputSource

_DECODERS: dict[type, msgspec.json.Decoder[Any]] = {}


def decoder_for(tp: type[Any]) -> msgspec.json.Decoder[Any]:
    """The JSON decoder of a params Struct (made once)."""
    decoder = _DECODERS.get(tp)
    if decoder is None:
        decoder = _DECODERS[tp] = msgspec.json.Decoder(tp)
    return decoder


def decode_params(decoder: msgspec.json.Decoder[Any], raw: bytes | None) -> Any:
    """Decode params into their Struct once, with its decoder (`decoder_for`).

    Raises:
        ProtocolError: -32602 naming the path of the mismatch, with HTTP status 400.
    """
    try:
        return decoder.decode(raw or b"{}")
    except msgspec.ValidationError as exc:
        raise ProtocolError(
            jsonrpc.INVALID_PARAMS, f"Invalid params: {exc}", http_status=400
        ) from None


def _routed(method: Method) -> str | None:
    """The kind of the one object ``method`` reaches when its routed member names it (the
    member the codec reads into `Message.name`), else None."""
    if method.name_field is None or len(method.reaches) != 1:
        return None
    reach = method.reaches[0]
    return reach.kind if reach == Reach(reach.kind, (method.name_field,)) else None


_ROUTED = {name: kind for name, kind in ((m.name, _routed(m)) for m in METHODS.values()) if kind}


def reached(method: str, name: str | None, params: bytes | None) -> Sequence[tuple[str, Any]]:
    """The objects a request reaches (its method's `Reach` rows), as ``(kind, key)`` pairs:
    ``name``, the message's routed member, when that alone names them (``tools/call``,
    ``prompts/get``, ``resources/read``: no decode); else read from ``params`` decoded as the
    handler decodes them, so both see the same objects (params that do not decode reach
    nothing: the handler refuses them)."""
    kind = _ROUTED.get(method)
    if kind is not None:
        return ((kind, name),) if name is not None else ()
    reaches = REACHES.get(method)
    if reaches is None:
        return ()
    try:
        typed = decoder_for(METHODS[method].params).decode(params or b"{}")
    except msgspec.DecodeError:
        return ()
    found: list[tuple[str, Any]] = []
    for reach in reaches:
        value = typed
        for member in reach.path:
            value = getattr(value, member)
        if value is not None:
            found.extend((reach.kind, v) for v in (value if reach.many else (value,)))
    return found


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
        self.modern = is_modern(version)
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
