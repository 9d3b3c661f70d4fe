"""Input rounds of 2026-07-28 (SEP-2322): a request that needs input ends with
``input_required`` (what it waits for, and a signed ``requestState`` of the answers so far);
the client's retry carries the answers, and the handler runs again from the start with them.
A legacy session has no rounds: its input comes over the live session (`live.LiveInput`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ...errors import UrlElicitationRequired
from ...protocol import results
from ...protocol.capabilities import InputRequest, refusal
from ...telemetry import propagation
from ..framework.features import InputRequiredSignal
from ..state import request_state as state
from .turn import Turn


class Replay:
    """The modern input source: answers come from the request; a missing one ends the request
    with ``input_required``."""

    __slots__ = ("answers",)

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers

    async def ask(self, requests: Mapping[str, InputRequest]) -> dict[str, Any]:
        missing = {key: req for key, req in requests.items() if key not in self.answers}
        if missing:
            raise InputRequiredSignal(dict(missing), self.answers)
        return {key: self.answers[key] for key in requests}


NO_INPUT = Replay({})
"""The input source of a request before its rounds start: it has no answers."""


def answers(raw: Any) -> dict[str, Any]:
    """The well-formed answers of ``inputResponses`` (each an object), by key."""
    if not isinstance(raw, dict):
        return {}
    return {key: value for key, value in raw.items() if isinstance(value, dict)}


def _input_required(turn: Turn, bound_to: str, signal: InputRequiredSignal) -> dict[str, Any]:
    """The ``input_required`` result (`protocol.results.input_required`) with its signed
    state; when the request is traced, each entry's params carry the current trace context in
    their ``_meta``, so that the client's answer continues the trace."""
    runtime = turn.runtime
    request_state = state.mint(
        runtime.keys, bound_to, signal.answers, runtime.config.request_state_max_bytes
    )
    carry = propagation.carrying if turn.traced else None
    return results.input_required(signal.requests, request_state, carry)


async def with_input(
    turn: Turn,
    bound_to: str,
    request_state: str | None,
    responses: Any,
    run: Callable[[], Awaitable[Any]],
) -> Any:
    """``run()``'s result, in a legacy session as it is; in 2026-07-28 with the answers of
    ``request_state`` (bound to ``bound_to``, `request_state.binding`) and ``responses``, or
    the ``input_required`` result when the handler asks for input not answered yet (a URL
    elicitation included, when the client declared it).

    ``run`` is the author's handler: the request is started (`Turn.start`).

    Raises:
        ProtocolError: -32602 for a state that does not open; what the handler raises (a
            -32042 the client cannot take as input included).
    """
    turn.start()
    if turn.exchange is not None:
        return await run()
    runtime = turn.runtime
    given: dict[str, Any] = {}
    if request_state is not None:
        given.update(state.open_state(runtime.keys, request_state, bound_to, runtime.config))
    given.update(answers(responses))
    call = turn.call
    call.input = Replay(given)
    try:
        return await runtime.guarded(turn.emission.responder, run)
    except InputRequiredSignal as signal:
        return _input_required(turn, bound_to, signal)
    except UrlElicitationRequired as exc:
        pending = results.url_input_requests(exc)
        missing = {k: r for k, r in pending.items() if k not in given}
        if not missing:
            raise
        refused = refusal(call.version, call.capabilities, missing)
        if refused is not None:  # only kinds the client declared: elicitation.url
            raise refused from None
        return _input_required(turn, bound_to, InputRequiredSignal(missing, given))
