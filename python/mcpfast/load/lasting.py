"""A load user's stream held for its seconds whatever happens to it (gevent, no Trio): a stream
that ends early, or an attempt refused with what another may change, is opened again, waiting
as the client does (`protocol.backoff`: capped exponential backoff with full jitter, at least
the refusal's ``Retry-After``), until the seconds are up. Each attempt is a request locust
records (`Connection.listen`, `Connection.get_stream`): a refusal is a failure in the run's
numbers, a reconnection a request of its own."""

from __future__ import annotations

import random as _random
import time
from collections.abc import Callable

import gevent  # type: ignore[import-untyped]

from ..protocol.backoff import Backoff, retryable
from . import wire

Attempt = Callable[[float], "wire.Answer | None"]
"""One attempt at the stream, held at most the seconds given: its judged answer (None: no
HTTP answer)."""


def held(
    seconds: float,
    attempt: Attempt,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], object] = gevent.sleep,
    random: Callable[[], float] = _random.random,
) -> wire.Answer | None:
    """Hold a stream for ``seconds`` through as many ``attempt``s as it takes (each given the
    seconds left); the last one's answer. It is given up before the seconds are up only on an
    answer no later attempt would change (`protocol.backoff.retryable`: a 4xx but 408, 425,
    429; a JSON-RPC error with a 200), which the caller judges (`McpUser.check`)."""
    deadline = clock() + seconds
    backoff = Backoff()
    while True:
        answer = attempt(max(0.0, deadline - clock()))
        if answer is not None and answer.failure is None:
            backoff.reset()  # it was open: it ended early, or the session expired (404)
            floor = 0.0
        elif answer is None or retryable(answer.status):
            floor = answer.wait if answer is not None else 0.0
        else:
            return answer
        left = deadline - clock()
        if left <= 0:
            return answer
        wait = backoff.delay(random(), floor)
        if wait >= left:
            sleep(left)
            return answer
        sleep(wait)
