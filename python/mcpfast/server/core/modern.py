"""The 2026-07-28 (stateless) era: every request describes itself; nothing is remembered.

The checks a request passes before it is served, and their order, are
`mcpfast.protocol.modern.check`'s; `ModernEra.validate` applies them and builds the `Call`.
The feature serving the method is `dispatch`'s; its result is stamped here (``complete``
unless it says how it ended, with the server's ``_meta``: `protocol.results.stamped`); its
input rounds are `rounds`'.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import msgspec

from ... import codec, jsonrpc
from ...errors import BusUnavailable, ProtocolError, RateLimited
from ...protocol import results
from ...protocol.http import prefers_event_stream
from ...protocol.methods import MODERN_ERA
from ...protocol.modern import check
from ...telemetry import current
from ...telemetry.tracing import Operation, recording, serving
from ...types import Params
from ..framework.call import Call
from ..seams import Responder, error_reply
from . import dispatch
from .emission import Emission
from .refusal import settled
from .rounds import NO_INPUT
from .runtime import Runtime
from .turn import Feature, Turn

_meta_decoder = msgspec.json.Decoder(Params)

Serve = Callable[[Mapping[str, str] | None, codec.Message, Responder], Awaitable[None]]


class ModernEra:
    """Serves requests of the stateless era for one endpoint's `Runtime`."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.server = runtime.server
        self.telemetry = current()
        """Spans and metrics of the requests served; None (nothing recorded) when no SDK was
        configured before the server was built (`mcpfast.telemetry.state`)."""
        self.server_meta = results.server_meta(self.server.info.name, self.server.info.version)
        self.handlers = dispatch.TABLES[MODERN_ERA]
        """The feature serving each method of the era (`dispatch`)."""
        self.serve: Serve = self._serve if self.telemetry is None else self._traced
        """Answer one request (the caller has framed it and checked Origin/Host), in its own
        SERVER span when telemetry is live: ``serve(headers, message, responder)``."""

    # ------------------------------------------------------------------------------ validation

    def validate(
        self, headers: Mapping[str, str] | None, message: codec.Message
    ) -> tuple[Call, Feature, Any]:
        """Apply `mcpfast.protocol.modern.check`; ``headers`` is None off HTTP (stdio),
        where the header checks do not apply. Returns the call, its feature and its params,
        decoded once into the method's Struct.

        Raises:
            ProtocolError: with the code and HTTP status of the failed check.
        """
        method = message.method
        assert method is not None
        feature = self.handlers.get(method)
        raw = message.params or b"{}"
        invalid: msgspec.ValidationError | None = None
        try:
            decoder = dispatch.DECODERS[method] if feature is not None else _meta_decoder
            typed = decoder.decode(raw)
        except msgspec.ValidationError as exc:  # just ``_meta``, for the checks before params
            typed, invalid = _meta_only(raw), exc
        param_headers: Any = ()
        if headers is not None and message.name is not None and method == "tools/call":
            tool = self.server.tools.get(message.name)
            if tool is not None:
                param_headers = tool.headers
        requested, meta = check(
            headers,
            message,
            typed.meta,
            param_headers,
            served_methods=self.handlers,
            invalid=invalid,
        )
        assert feature is not None
        call = Call(
            id=message.id,
            method=method,
            version=requested,
            capabilities=meta.client_capabilities,
            client_info=meta.client_info if type(meta.client_info) is dict else None,
            log_level=meta.log_level,
            progress_token=meta.progress_token,
            emitter=_NO_EMITTER,
            input=NO_INPUT,
            threads=self.runtime.threads,
        )
        return call, feature, typed

    # -------------------------------------------------------------------------------- serving

    async def _traced(
        self, headers: Mapping[str, str] | None, message: codec.Message, responder: Responder
    ) -> None:
        """`serve` in a SERVER span."""
        assert self.telemetry is not None
        with serving(
            self.telemetry,
            method=message.method or "",
            name=message.name,
            id_=message.id,
            version=message.version,
            era="modern",
            params=message.params,
            headers=headers,
        ) as op:
            await self._serve(headers, message, responder, op)

    async def _serve(
        self,
        headers: Mapping[str, str] | None,
        message: codec.Message,
        responder: Responder,
        op: Operation | None = None,
    ) -> None:
        try:
            call, feature, params = self.validate(headers, message)
        except ProtocolError as exc:
            if op is not None:
                op.fail(exc.code, exc.message)
            await responder.reply(*error_reply(message.id, exc))
            return
        emission = Emission(
            responder,
            prefer_stream=headers is not None and prefers_event_stream(headers.get("accept")),
        )
        call.emitter = emission
        turn = Turn(self.runtime, call, emission, traced=op is not None and recording())
        try:
            result = await feature(turn, params)
            if result is None:
                return
            result = results.stamped(result, self.server_meta)
        except ProtocolError as exc:
            exc = settled(exc, turn.started)
            if op is not None:
                op.fail(exc.code, exc.message)
            status, body = error_reply(call.id, exc)
            if isinstance(exc, BusUnavailable | RateLimited):
                emission.extra_headers = exc.headers
            await emission.finish(body, status)  # a stream's status went out already
            return
        if op is not None:
            op.result(result)
        await emission.finish(jsonrpc.result(call.id, result))


def _meta_only(raw: bytes) -> Params:
    """The ``_meta`` of params that do not fit their method's Struct (empty when it does not
    decode either)."""
    try:
        return _meta_decoder.decode(raw)
    except msgspec.ValidationError:
        return Params()


class _NoEmitter:
    async def emit(self, message: bytes) -> None:
        return None


_NO_EMITTER = _NoEmitter()
