"""The codec facade: the Rust extension when it is built, else the pure-Python twin.

``MCPFAST_NO_EXTENSIONS=1`` forces the twin. ``BACKEND`` says which one is active and
``BACKEND_REASON`` why (with the cost, when it is the twin). Both raise the exceptions of
`mcpfast.errors` and behave identically (the differential tests prove it).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Literal

from ._fallback import COST, REMEDY

if TYPE_CHECKING or os.environ.get("MCPFAST_NO_EXTENSIONS", "") not in ("", "0"):
    from . import _codec_py as _backend

    BACKEND: Literal["rust", "python"] = "python"
    BACKEND_REASON = f"MCPFAST_NO_EXTENSIONS is set: {COST}"
else:
    try:
        from . import _rust as _backend

        BACKEND = "rust"
        BACKEND_REASON = "the Rust extension mcpfast._rust is installed"
    except ImportError:
        from . import _codec_py as _backend

        BACKEND = "python"
        BACKEND_REASON = (
            "the Rust extension mcpfast._rust is not installed (built without a Rust "
            f"toolchain, or a source checkout without `make setup`): {COST}; {REMEDY}"
        )

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
take_head = _backend.take_head
response = _backend.response
scope_head = _backend.scope_head
Head = _backend.Head

__all__ = [
    "BACKEND",
    "BACKEND_REASON",
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
    "response",
    "scope_head",
    "take_head",
    "verify_token",
]
