"""Request/answer correlation for whichever side sends requests (the client, or a server asking
its client): fresh ids, the table of requests waiting for their answer, and who an incoming
message is for.

Theory of operation: the sender takes an id from `Correlator.open` together with a *waker* of
its own (an event, a cancel scope, a channel: this module never touches it) and sends the
request. Every message the transport reads is sorted by `kind_of`; a response goes to
`Correlator.deliver`, which records it on the waiting request (the first answer wins) and hands
the request back so that the transport can wake it. Whatever way the wait ends, the sender calls
`Correlator.close`; a wait given up early is announced with `cancel_params`. When the transport
ends, `Correlator.abandon` lists the requests that will never be answered.
"""

from __future__ import annotations

import itertools
from typing import Any, Generic, Literal, TypeVar

from .. import jsonrpc
from ..errors import MCPError
from .retries import typed

RequestId = int | str
Kind = Literal["request", "notification", "response", "invalid"]
W = TypeVar("W")


def kind_of(message: Any) -> Kind:
    """What a decoded JSON-RPC message is: a request (``method`` and ``id``), a notification
    (``method``, no ``id``), a response (no ``method``), or invalid (not an object)."""
    if not isinstance(message, dict):
        return "invalid"
    if "method" in message:
        return "request" if "id" in message else "notification"
    return "response"


def result_of(message: dict[str, Any]) -> Any:
    """The result of a response message (None when it carries none).

    Raises:
        MCPError: the message is an error response (its code, message and ``data``); a
            -32023 is a `RateLimited` (`retries.typed`).
    """
    if "error" in message:
        error = message["error"] or {}
        raise typed(
            MCPError(
                int(error.get("code", jsonrpc.INTERNAL_ERROR)),
                str(error.get("message", "")),
                error.get("data"),
            )
        )
    return message.get("result")


def cancel_params(request_id: RequestId, reason: str | None = None) -> dict[str, Any]:
    """The params of the ``notifications/cancelled`` that gives up on ``request_id``."""
    params: dict[str, Any] = {"requestId": request_id}
    if reason is not None:
        params["reason"] = reason
    return params


def cancel_target(params: Any) -> RequestId | None:
    """The request a received ``notifications/cancelled`` names (None: it names none)."""
    target = params.get("requestId") if isinstance(params, dict) else None
    return target if isinstance(target, (int, str)) and not isinstance(target, bool) else None


class Pending(Generic[W]):
    """One request waiting for its answer: its ``id``, the sender's ``waker``, and the
    ``answer`` (the response message) once one came."""

    __slots__ = ("answer", "id", "waker")

    def __init__(self, id_: RequestId, waker: W) -> None:
        self.id = id_
        self.waker = waker
        self.answer: dict[str, Any] | None = None


class Correlator(Generic[W]):
    """Ids and the pending table of one sender. Ids count from 1, each prefixed with
    ``prefix`` (``"c"`` gives ``"c1"``); an empty prefix gives bare numbers."""

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self._numbers = itertools.count(1)
        self._pending: dict[RequestId, Pending[W]] = {}

    def next_id(self, *, bare: bool = False) -> RequestId:
        """A fresh id, not registered (for a request whose answer is read where it is sent);
        ``bare`` leaves the prefix out (the same counter)."""
        number = next(self._numbers)
        return number if bare or not self.prefix else f"{self.prefix}{number}"

    def open(self, waker: W) -> Pending[W]:
        """Register a request under a fresh id; `close` it whatever way the wait ends."""
        pending = Pending(self.next_id(), waker)
        self._pending[pending.id] = pending
        return pending

    def get(self, id_: Any) -> Pending[W] | None:
        """The pending request ``id_`` (any JSON value), if it is waiting."""
        return self._pending.get(id_) if isinstance(id_, (int, str)) else None

    def deliver(self, message: dict[str, Any]) -> Pending[W] | None:
        """Record a response on the request it answers and return that request, for the
        caller to wake; None when no request waits for it (unknown id, already answered)."""
        pending = self.get(message.get("id"))
        if pending is None or pending.answer is not None:
            return None
        pending.answer = message
        return pending

    def close(self, pending: Pending[W]) -> None:
        """Forget a request (answered, cancelled or failed); closing twice is harmless."""
        self._pending.pop(pending.id, None)

    def abandon(self) -> list[Pending[W]]:
        """The requests still waiting, which no answer will reach now (the transport ended);
        they stay registered until their senders `close` them."""
        return [p for p in self._pending.values() if p.answer is None]

    def __len__(self) -> int:
        return len(self._pending)
