"""Pure-Python twin of the Rust codec (`mcpfast._rust`), one module per ``rust/*.rs`` file.

Every function here has the same signature, results and errors as its Rust counterpart; the
differential tests feed both the same inputs. Parity holds for arguments of the types the stub
(`mcpfast._rust`) declares; an argument of another type is refused with ``TypeError`` by both, in
words that may differ. The twin is also the readable specification:

* `frame` (``frame.py``): classify a POST body as one message or a batch of `Message`.
* `check_headers` / `encode_header_value` (``headers.py``): the 2026-07-28 rule that headers
  mirror the body of a framed message (-32020), and its client side.
* `mint_token` / `verify_token` (``token.py``): HMAC-SHA256 signed, URL-safe tokens
  ``v1.<kid>.<issued_at>.<payload>.<mac>``.
* `parse_head` / `take_head` (``http.py``): an HTTP/1.x request head (RFC 9112) as a `Head`,
  from its bytes or off a connection's buffer; refusals raise `mcpfast.errors.HttpError` (400,
  431, 501, 505) with a fixed reason; `scope_head`: the same limits and framing rules for a head
  an ASGI server parsed. `response`: a response head and its body, in one buffer.
* ``json.py``: the raw-JSON readers the others share (``rust/json.rs``).
"""

from .frame import (
    KIND_ERROR,
    KIND_INVALID,
    KIND_NOTIFICATION,
    KIND_REQUEST,
    KIND_RESULT,
    Kind,
    Message,
    frame,
)
from .headers import check_headers, encode_header_value
from .http import Head, parse_head, response, scope_head, take_head
from .token import mint_token, verify_token

__all__ = [
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
