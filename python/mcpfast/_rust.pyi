"""Stub for the compiled codec; `mcpfast._codec_py` is its pure-Python twin and specification."""

from collections.abc import Mapping, Sequence

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

Message = tuple[
    int, int | str | None, str | None, str | None, str | None, bytes | None, bytes | None
]

Head = tuple[str, str, int, dict[str, str], int | None, bool]

def frame(body: bytes, max_depth: int = 64) -> tuple[bool, list[Message]]:
    """Classify a body as one message or a batch; raises `mcpfast.errors.CodecError`."""

def check_headers(
    headers: Mapping[str, str],
    method: str,
    name: str | None,
    version: str | None,
    params: bytes | None,
    param_headers: Sequence[tuple[str, Sequence[str]]],
) -> None:
    """Check that the request headers mirror the body; raises `CodecError` (-32020)."""

def encode_header_value(value: str | int | bool) -> str:
    """The header text for an argument value."""

def mint_token(key_id: str, key: bytes, payload: bytes, issued_at: int) -> str:
    """Sign a payload as `v1.<kid>.<issued_at>.<payload>.<mac>`."""

def verify_token(
    token: str, keys: Mapping[str, bytes], now: int, max_age: int
) -> tuple[bytes, int]:
    """Verify a token; returns `(payload, issued_at)`; raises `mcpfast.errors.TokenError`."""

def parse_head(head: bytes) -> Head:
    """An HTTP/1.x request head as ``(method, target, minor version, headers, content length,
    chunked)``; raises `mcpfast.errors.HttpError`."""
