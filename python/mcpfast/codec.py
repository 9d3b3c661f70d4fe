"""The codec facade: the Rust extension when it is built, else the pure-Python twin.

``MCPFAST_NO_EXTENSIONS=1`` forces the twin. ``BACKEND`` says which one is active. Both raise the
exceptions of `mcpfast.errors` and behave identically (the differential tests prove it).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING or os.environ.get("MCPFAST_NO_EXTENSIONS", "") not in ("", "0"):
    from . import _codec_py as _backend

    BACKEND: Literal["rust", "python"] = "python"
else:
    try:
        from . import _rust as _backend

        BACKEND = "rust"
    except ImportError:  # a source checkout without a built extension
        from . import _codec_py as _backend

        BACKEND = "python"

KIND_REQUEST = _backend.KIND_REQUEST
KIND_NOTIFICATION = _backend.KIND_NOTIFICATION
KIND_RESULT = _backend.KIND_RESULT
KIND_ERROR = _backend.KIND_ERROR
KIND_INVALID = _backend.KIND_INVALID
Kind = _backend.Kind
Message = _backend.Message
frame = _backend.frame
check_headers = _backend.check_headers
encode_header_value = _backend.encode_header_value
mint_token = _backend.mint_token
verify_token = _backend.verify_token
parse_head = _backend.parse_head
Head = _backend.Head

__all__ = [
    "BACKEND",
    "KIND_ERROR",
    "KIND_INVALID",
    "KIND_NOTIFICATION",
    "KIND_REQUEST",
    "KIND_RESULT",
    "Head",
    "Kind",
    "Message",
    "check_headers",
    "encode_header_value",
    "frame",
    "mint_token",
    "parse_head",
    "verify_token",
]
