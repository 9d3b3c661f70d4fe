"""Rate limits at admission (issue 27): whether a request may run, decided before its params are
decoded, from its method, its tool's name and who sends it. Experimental, as the draft SEP's
-32023 it answers with (`errors.RateLimited`: HTTP 429, ``Retry-After`` and ``RateLimit-*``).

A request takes one token from each bucket that applies to it, all or none (`take_tokens`):

- the server's, per principal (``Server(rate_limit=)``, ``Config.rate_limit``);
- its method's, per principal (``method_rate_limits``);
- a ``tools/call``'s tool's, per principal (``@server.tool(rate_limit=)``,
  ``Config.tool_rate_limits``, which wins).

The principal (`access.principal`) is the access token's subject and client id on a protected
server, else the connection's remote address (`access.current_peer`; behind
``trusted_proxy_hops`` proxies, the address they appended to ``X-Forwarded-For``), else (stdio)
one local caller.

The buckets live on the endpoint's bus (`Bus.take_tokens`): in this worker with `LocalBus` (or with
``Config.rate_limit_scope="worker"``), shared by every worker and host with `RedisBus`. Redis
away: admitted (``rate_limit_failure="open"``) or refused 503 before anything runs
(``"closed"``: `BusUnavailable`, as `refusal` says). With no limit at all the endpoint has no
`Limiter` (its one check is that attribute)."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping

from ... import codec
from ...errors import BusUnavailable, ProtocolError, RateLimited
from ...protocol.limits import Rate, Verdict, parse_rate
from ...telemetry import current, metrics
from ...telemetry.tracing import serving
from ..access import principal
from ..config import Config
from ..framework.app import Server
from ..state.buckets import LocalBuckets
from ..state.bus import Bus

log = logging.getLogger("mcpfast.limits")

SERVER_BUCKET = "*"
"""The bucket of the server-wide rate (per principal)."""
KINDS = {"m": "method", "t": "tool"}
"""The key kind of a bucket by its name's first letter (``m:tools/list``, ``t:search``)."""
WARN_SECONDS = 10.0
"""At most one warning this often while fail-open admits without limits."""


class Limiter:
    """The rate limits of one endpoint's server; `refusals` applies them."""

    def __init__(
        self, server: Server, config: Config, bus: Bus, rate: Rate | None, methods: dict[str, Rate]
    ) -> None:
        self.server = server
        self.bus = bus
        self.config = config
        self.rate = rate
        self.methods = methods
        self.tools = {name: parse_rate(text) for name, text in config.tool_rate_limits.items()}
        self.fail_open = config.rate_limit_failure == "open"
        self.worker = LocalBuckets() if config.rate_limit_scope == "worker" else None
        """The buckets of this worker when they are not the bus's."""
        self.telemetry = current()
        """Where refusals are counted and traced (None: telemetry is off)."""
        self._warned = -math.inf

    def limits_of(self, method: str, name: str | None) -> tuple[list[str], list[Rate]]:
        """The buckets (names) and their rates that a ``method`` request (of tool ``name``)
        takes from."""
        names: list[str] = []
        rates: list[Rate] = []
        if self.rate is not None:
            names.append(SERVER_BUCKET)
            rates.append(self.rate)
        rate = self.methods.get(method)
        if rate is not None:
            names.append("m:" + method)
            rates.append(rate)
        if method == "tools/call" and name is not None:
            rate = self.tools.get(name)
            if rate is None:
                tool = self.server.tools.get(name)
                rate = tool.limits.rate if tool is not None else None
            if rate is not None:
                names.append("t:" + name)
                rates.append(rate)
        return names, rates

    async def refusals(
        self, messages: list[codec.Message], headers: Mapping[str, str] | None
    ) -> dict[int, RateLimited]:
        """The refusals of the requests among ``messages`` that a limit refuses, by index
        (the others, and notifications and responses, are admitted).

        Raises:
            BusUnavailable: the shared buckets cannot be read, with ``rate_limit_failure``
                ``"closed"`` (nothing was run; with ``"open"`` the request is admitted).
        """
        refused: dict[int, RateLimited] = {}
        caller: str | None = None
        for index, message in enumerate(messages):
            if message.kind != codec.KIND_REQUEST or message.method is None:
                continue
            names, rates = self.limits_of(message.method, message.name)
            if not names:
                continue
            if caller is None:
                caller = principal()
            try:
                verdict = await self._take(caller, names, rates)
            except BusUnavailable as exc:
                self._observe(message, headers, "unavailable", "store", exc)
                raise
            if not verdict.admitted:
                bucket = names[verdict.which]
                kind = "principal" if bucket == SERVER_BUCKET else KINDS[bucket[0]]
                refused[index] = error = _refusal(kind, bucket[2:], verdict)
                self._observe(message, headers, "rate", kind, error)
        return refused

    async def _take(self, principal: str, names: list[str], rates: list[Rate]) -> Verdict:
        if self.worker is not None:
            return self.worker.take([f"{principal} {name}" for name in names], rates)
        try:
            verdict = await self.bus.take_tokens(principal, names, rates)
        except BusUnavailable as exc:
            if not self.fail_open:
                raise
            now = time.monotonic()
            if now - self._warned > WARN_SECONDS:
                self._warned = now
                log.warning("rate limits not applied (fail-open): %s", exc.message)
            return Verdict(True, 0, 0, 0, -1)
        return verdict

    def _observe(
        self,
        message: codec.Message,
        headers: Mapping[str, str] | None,
        reason: str,
        kind: str,
        error: ProtocolError,
    ) -> None:
        """Count a refusal (`metrics.RATE_LIMITED`, by reason and key kind) and record the
        refused request's SERVER span, failed with its code and marked with both."""
        telemetry = self.telemetry
        if telemetry is None:
            return
        marks = {metrics.LIMIT_REASON: reason, metrics.LIMIT_KEY: kind}
        if telemetry.instruments is not None:
            telemetry.instruments.rate_limited.add(1, marks)
        with serving(
            telemetry,
            method=message.method or "",
            name=message.name,
            id_=message.id,
            version=message.version,
            era=None,
            params=message.params,
            headers=headers,
        ) as op:
            for key, value in marks.items():
                op.set(key, value)
            op.fail(error.code, error.message)


def _refusal(kind: str, name: str, verdict: Verdict) -> RateLimited:
    what = "" if kind == "principal" else f" of {kind} {name}"
    return RateLimited(
        f"Rate limit exceeded{what}: retry after {verdict.retry_after_ms} ms",
        retry_after_ms=verdict.retry_after_ms,
        limit=verdict.limit,
        remaining=verdict.remaining,
        reason="rate",
    )


def limiter_for(server: Server, config: Config, bus: Bus) -> Limiter | None:
    """The endpoint's `Limiter`, or None when no limit is set anywhere (the server's, the
    config's, a method's, a tool's, as registered by now).

    Raises:
        ValueError: a rate `protocol.limits.parse_rate` refuses.
    """
    rate = parse_rate(config.rate_limit) if config.rate_limit is not None else server.rate_limit
    methods = server.method_rate_limits | {
        method: parse_rate(text) for method, text in config.method_rate_limits.items()
    }
    tools = any(entry.limits.rate is not None for entry in server.tools.values())
    if rate is None and not methods and not config.tool_rate_limits and not tools:
        return None
    return Limiter(server, config, bus, rate, methods)
