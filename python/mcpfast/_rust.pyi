"""Stub for the compiled codec; `mcpfast._codec_py` is its pure-Python twin and specification."""

from collections.abc import Mapping, Sequence
from typing import final

__all__ = [
    "KIND_ERROR",
    "KIND_INVALID",
    "KIND_NOTIFICATION",
    "KIND_REQUEST",
    "KIND_RESULT",
    "Head",
    "Message",
    "check_headers",
    "encode_header_value",
    "frame",
    "mint_token",
    "parse_head",
    "verify_token",
]

KIND_REQUEST: int
KIND_NOTIFICATION: int
KIND_RESULT: int
KIND_ERROR: int
KIND_INVALID: int

@final
class Message:
    """One framed message: a call (`method`, and maybe `name`, `version`, `params`), a response
    (`payload`) or an invalid message (`reason`), as `kind` says; `id` is its readable id."""

    @property
    def kind(self) -> int: ...
    @property
    def id(self) -> int | str | None: ...
    @property
    def method(self) -> str | None: ...
    @property
    def name(self) -> str | None: ...
    @property
    def version(self) -> str | None: ...
    @property
    def params(self) -> bytes | None: ...
    @property
    def payload(self) -> bytes | None: ...
    @property
    def reason(self) -> str | None: ...

Head = tuple[str, str, int, dict[str, str], int | None, bool]

def frame(body: bytes | bytearray, max_depth: int = 64) -> tuple[bool, list[Message]]:
    """Classify a body as one message or a batch; raises `mcpfast.errors.CodecError`."""

def check_headers(
    headers: Mapping[str, str],
    message: Message,
    param_headers: Sequence[tuple[str, Sequence[str]]],
) -> None:
    """Check that the request headers mirror a framed message; raises `CodecError` (-32020)."""

def encode_header_value(value: str | int | bool) -> str:
    """The header text for an argument value."""

def mint_token(key_id: str, key: bytes, payload: bytes, issued_at: int) -> str:
    """Sign a payload as `v1.<kid>.<issued_at>.<payload>.<mac>`."""

def verify_token(
    token: str, keys: Mapping[str, bytes], now: int, max_age: int, max_length: int = 65536
) -> tuple[bytes, int]:
    """Verify a token; returns `(payload, issued_at)`; raises `mcpfast.errors.TokenError`."""

def parse_head(head: bytes) -> Head:
    """An HTTP/1.x request head as ``(method, target, minor version, headers, content length,
    chunked)``; raises `mcpfast.errors.HttpError`."""
