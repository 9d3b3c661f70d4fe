"""Framing a POST body into messages (the mirror of ``rust/frame.rs``).

Order of checks: the nesting pre-scan (brackets outside strings; deeper than ``max_depth`` ->
-32600), UTF-8 validity and JSON syntax (-32700), top-level type (object or array, else -32600),
empty batch (-32600). Each message becomes a frozen `Message`.
"""

from __future__ import annotations

import enum
from typing import Any, cast

import msgspec

from ..errors import CodecError
from ..protocol.methods import NAME_FIELD
from .json import string_or_none, too_deep


class Kind(enum.IntEnum):
    """What a framed message is; `Message.kind` holds its int value."""

    REQUEST = 0
    NOTIFICATION = 1
    RESULT = 2
    ERROR = 3
    INVALID = 4


KIND_REQUEST = Kind.REQUEST
KIND_NOTIFICATION = Kind.NOTIFICATION
KIND_RESULT = Kind.RESULT
KIND_ERROR = Kind.ERROR
KIND_INVALID = Kind.INVALID


class Message(msgspec.Struct, frozen=True, eq=False):
    """One framed message. ``kind`` says which members are set: a call (request or
    notification) has ``method`` and maybe ``name`` (the routed `Mcp-Name` value), ``version``
    (the ``_meta`` protocol version) and raw ``params``; a response (result or error) has the
    raw ``payload``; an invalid message has the ``reason``. ``id`` is the readable id, if any."""

    kind: int
    id: int | str | None = None
    method: str | None = None
    name: str | None = None
    version: str | None = None
    params: bytes | None = None
    payload: bytes | None = None
    reason: str | None = None


# Which params member a routed method's `Mcp-Name` mirrors.
ROUTING_FIELD = NAME_FIELD
_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"


class _Envelope(msgspec.Struct):
    jsonrpc: object = msgspec.UNSET
    id: object = msgspec.UNSET
    method: object = msgspec.UNSET
    params: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    result: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    error: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


class _Peek(msgspec.Struct):
    name: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    uri: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    taskId: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    meta: msgspec.Raw | msgspec.UnsetType = msgspec.field(default=msgspec.UNSET, name="_meta")


class _MetaPeek(msgspec.Struct):
    version: msgspec.Raw | msgspec.UnsetType = msgspec.field(
        default=msgspec.UNSET, name=_VERSION_KEY
    )


_top_decoder = msgspec.json.Decoder(_Envelope | list[msgspec.Raw])
_envelope_decoder = msgspec.json.Decoder(_Envelope)
_peek_decoder = msgspec.json.Decoder(_Peek)
_meta_peek_decoder = msgspec.json.Decoder(_MetaPeek)
_DEPTH_ERROR = "nesting too deep"


def _invalid_request(reason: str, **extra: Any) -> CodecError:
    return CodecError(-32600, "Invalid Request", {"reason": reason, **extra})


def frame(body: bytes | bytearray, max_depth: int = 64) -> tuple[bool, list[Message]]:
    """Classify a body as one message or a batch and describe each message.

    Raises:
        CodecError: -32700 for bytes that are not UTF-8 JSON; -32600 for nesting deeper than
            ``max_depth``, a top level that is not an object or array, or an empty batch.
    """
    if too_deep(body, max_depth):
        raise _invalid_request(_DEPTH_ERROR, maxDepth=max_depth)
    if not body.isascii():
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            raise CodecError(-32700, "Parse error") from None
    try:
        top = _top_decoder.decode(body)
    except msgspec.ValidationError:
        raise _invalid_request("not a JSON-RPC message") from None
    except msgspec.DecodeError:
        raise CodecError(-32700, "Parse error") from None
    if isinstance(top, _Envelope):
        return False, [_describe(top)]
    if not top:
        raise _invalid_request("empty batch")
    messages = []
    for raw in top:
        try:
            item = _envelope_decoder.decode(raw)
        except msgspec.ValidationError:
            messages.append(_invalid(None, "message must be an object"))
            continue
        messages.append(_describe(item))
    return True, messages


def _invalid(id_: int | str | None, reason: str) -> Message:
    return Message(Kind.INVALID.value, id_, reason=reason)


def _valid_id(value: object) -> bool:
    return type(value) is int or type(value) is str


def _describe(env: _Envelope) -> Message:
    id_ = env.id
    readable = cast("int | str | None", id_ if _valid_id(id_) else None)
    if env.jsonrpc != "2.0":
        return _invalid(readable, 'jsonrpc must be "2.0"')
    method = env.method
    if method is not msgspec.UNSET:
        if type(method) is not str:
            return _invalid(readable, "method must be a string")
        if id_ is not msgspec.UNSET and readable is None:
            return _invalid(None, "id must be a string or an integer")
        params = env.params
        name = version = None
        raw_params = None
        if params is not msgspec.UNSET:
            raw_params = bytes(params)
            if raw_params[:1] != b"{":
                return _invalid(readable, "params must be an object")
            name, version = _routing(method, raw_params)
        kind = Kind.NOTIFICATION if id_ is msgspec.UNSET else Kind.REQUEST
        return Message(kind.value, readable, method, name, version, raw_params)
    if env.result is not msgspec.UNSET:
        if env.error is not msgspec.UNSET:
            return _invalid(readable, "response has both result and error")
        if readable is None:
            return _invalid(None, "id must be a string or an integer")
        return Message(Kind.RESULT.value, readable, payload=bytes(env.result))
    if env.error is not msgspec.UNSET:
        if id_ is not msgspec.UNSET and id_ is not None and readable is None:
            return _invalid(None, "id must be a string or an integer")
        payload = bytes(env.error)
        if payload[:1] != b"{":
            return _invalid(readable, "error must be an object")
        return Message(Kind.ERROR.value, readable, payload=payload)
    return _invalid(readable, "not a request, notification or response")


def _routing(method: str, raw_params: bytes) -> tuple[str | None, str | None]:
    # The peeked members stay raw JSON (the last duplicate wins) and only strings are decoded, so
    # that no number is converted: 1e400 or a 5000-digit integer in `_meta` is just not a string.
    peek = _peek_decoder.decode(raw_params)
    field = ROUTING_FIELD.get(method)
    name = string_or_none(getattr(peek, field)) if field else None
    version = None
    if peek.meta is not msgspec.UNSET:
        try:
            version = string_or_none(_meta_peek_decoder.decode(peek.meta).version)
        except msgspec.ValidationError:  # `_meta` is not an object
            pass
    return name, version
