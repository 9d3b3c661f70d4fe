"""JSON-RPC batches, which only a 2025-03-26 session may send (over HTTP and over lines alike):
the one routine serving a batch's members."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

import trio

from ... import codec, jsonrpc
from ...errors import MCPError

BATCH_REFUSED = jsonrpc.invalid_request(None, "batches need 2025-03-26")
"""The answer to a batch outside a 2025-03-26 session."""


async def answers(
    messages: list[codec.Message],
    request: Callable[[codec.Message], Awaitable[bytes | None]],
    other: Callable[[codec.Message], Awaitable[None]],
    refused: Mapping[int, MCPError] | None = None,
) -> list[bytes]:
    """The answers to a batch's members, served side by side (HTTP and lines alike): an
    invalid member gets -32600, ``initialize`` is refused (it cannot be batched), a member
    ``refused`` (by index: a rate limit's -32023) gets its error, a request is ``request``'s
    (None: cancelled, no answer), and a notification or response is ``other``'s (no answer)."""
    replies: list[bytes] = []

    async def one(index: int, message: codec.Message) -> None:
        kind = message.kind
        error = refused.get(index) if refused else None
        if error is not None:
            replies.append(jsonrpc.error(message.id, error.code, error.message, error.data))
        elif kind == codec.KIND_INVALID:
            replies.append(jsonrpc.invalid_request(message.id, message.reason or ""))
        elif kind != codec.KIND_REQUEST:
            await other(message)
        elif message.method == "initialize":
            replies.append(
                jsonrpc.error(
                    message.id, jsonrpc.INVALID_REQUEST, "initialize cannot be part of a batch"
                )
            )
        else:
            out = await request(message)
            if out is not None:
                replies.append(out)

    async with trio.open_nursery() as nursery:
        for index, message in enumerate(messages):
            nursery.start_soon(one, index, message)
    return replies
