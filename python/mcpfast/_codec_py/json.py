"""The raw-JSON readers the twin shares (the mirror of ``rust/json.rs``).

Values stay raw JSON (`msgspec.Raw`) until a string is needed, so that no number is ever
converted: 1e400 or a 5000-digit integer is just a value that is not a string.
"""

from __future__ import annotations

import re

import msgspec

# A string token (greedy: escapes consume the next byte, an unterminated string runs to the end) or
# one bracket. Only brackets outside strings count toward the nesting depth.
_DEPTH_TOKENS = re.compile(rb'"(?:[^"\\]|\\.?)*"?|[\[\]{}]', re.DOTALL)

_str_decoder = msgspec.json.Decoder(str)
_members_decoder = msgspec.json.Decoder(dict[str, msgspec.Raw])


def too_deep(body: bytes | bytearray, max_depth: int) -> bool:
    """Whether brackets outside strings nest deeper than ``max_depth`` anywhere in ``body``."""
    if body.count(b"[") + body.count(b"{") <= max_depth:
        return False
    depth = 0
    for match in _DEPTH_TOKENS.finditer(body):
        char = match.group()
        if char == b"[" or char == b"{":
            depth += 1
            if depth > max_depth:
                return True
        elif char == b"]" or char == b"}":
            depth -= 1
    return False


def string(raw: msgspec.Raw | bytes) -> str:
    """The str of a raw JSON string.

    Raises:
        msgspec.ValidationError: when ``raw`` is another JSON value.
    """
    return _str_decoder.decode(raw)


def string_or_none(raw: msgspec.Raw | msgspec.UnsetType) -> str | None:
    """The string a raw JSON value holds, or None when it is absent or not a string."""
    if raw is msgspec.UNSET:
        return None
    try:
        return string(raw)
    except msgspec.ValidationError:
        return None


def member(value: bytes, key: str) -> bytes | None:
    """The raw JSON of the last ``key`` member of the raw JSON object ``value``, or None."""
    found = _members_decoder.decode(value).get(key)
    return None if found is None else bytes(found)
