"""One request being served, as a method's feature sees it in either era (`Turn`), and the
registry the features join (`serves`): `dispatch` builds its one table from it.

A feature is ``async def feature(turn, params) -> result``: ``params`` decoded once into the
Struct `protocol.methods.METHODS` names for the method. It returns the result as the era's
own revision sends it before stamping (`dispatch` marks a 2026-07-28 result ``complete`` with
the server's ``_meta``), or None when it answered on the stream itself
(``subscriptions/listen``). It raises `ProtocolError` for a JSON-RPC error."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import msgspec

from ...errors import BusUnavailable, RateLimited
from ...protocol.methods import METHODS
from ..framework.app import Server
from ..framework.call import Call
from ..state import sessions
from ..state.sessions import Session
from .emission import Emission
from .refusal import bus_first
from .runtime import Runtime


class Exchange:
    """What a legacy request carries besides its call: its session, whether the handler changed
    it (to be saved and re-minted into the id sent back), whether the id it came with was minted
    under an old key, and the refusal its error is, when nothing ran (the bus away, a cap or
    shedding: its HTTP status and headers go on the answer)."""

    __slots__ = ("refused", "session", "session_changed", "token_old")

    def __init__(self, session: Session, token_old: bool) -> None:
        self.session = session
        self.session_changed = False
        self.token_old = token_old
        self.refused: BusUnavailable | RateLimited | None = None


class Turn:
    """One request being served: the endpoint's `Runtime`, the `Call`, its reply
    (`Emission`), and, in a legacy session, its `Exchange` (None in 2026-07-28, which has no
    session). ``traced``: a span of this request is recording (the input requests of a
    2026-07-28 ``input_required`` then carry its trace context). ``started``: something with
    effects ran for it (`start`), so the bus being away no longer refuses it (`refusal`)."""

    __slots__ = ("call", "emission", "exchange", "runtime", "started", "traced")

    def __init__(
        self,
        runtime: Runtime,
        call: Call,
        emission: Emission,
        exchange: Exchange | None = None,
        *,
        traced: bool = False,
    ) -> None:
        self.runtime = runtime
        self.call = call
        self.emission = emission
        self.exchange = exchange
        self.traced = traced
        self.started = False

    def start(self) -> None:
        """Say that what runs from here on has effects (the author's handler, a write of the
        session's state): a `BusUnavailable` after this is no "retry later" (`refusal.settled`)."""
        self.started = True

    @property
    def server(self) -> Server:
        return self.runtime.server

    @property
    def legacy(self) -> Exchange:
        """The legacy request's `Exchange`; only features of legacy-only methods ask for it."""
        assert self.exchange is not None, "a legacy-only method served without a session"
        return self.exchange

    async def current_session(self) -> Session:
        """The session with the state the bus holds now (`sessions.current`): what a feature
        bases a change on, so that one made on another worker a moment ago stays.

        Raises:
            BusUnavailable: the bus is away; nothing changed.
        """
        return await sessions.current(self.runtime.bus, self.legacy.session)

    async def change_session(self, session: Session) -> None:
        """Make ``session`` the exchange's state (kept on the bus, minted into the id sent
        back): the one way a feature changes a session, within what its id may carry; a
        change is based on `current_session`. The bus is asked first (`refusal.bus_first`):
        the refusal of a change comes before it is kept.

        Raises:
            ProtocolError: -32602 for a state too large (`sessions.bounded`); nothing changed.
            BusUnavailable: the bus is away; nothing changed.
        """
        exchange = self.legacy
        changed = sessions.bounded(session, self.runtime.config.max_header_bytes)
        await bus_first(self.runtime.bus)
        exchange.session = changed
        exchange.session_changed = True

    async def replace_session(self, **changes: Any) -> None:
        """`change_session` with ``changes`` made to `current_session`."""
        await self.change_session(msgspec.structs.replace(await self.current_session(), **changes))


Feature = Callable[[Turn, Any], Awaitable[Any]]
F = TypeVar("F", bound=Callable[..., Awaitable[Any]])

FEATURES: dict[str, Feature] = {}
"""The feature serving each method, by name (filled by `serves`, read by `dispatch`)."""


def serves(*methods: str) -> Callable[[F], F]:
    """Register the decorated feature as what serves ``methods``, each a row of
    `protocol.methods.METHODS` (which says the eras it is served in).

    Raises:
        KeyError: a method with no row.
        ValueError: a method already served.
    """

    def register(feature: F) -> F:
        for method in methods:
            if method not in METHODS:
                raise KeyError(f"{method} has no row in protocol.methods.METHODS")
            if method in FEATURES:
                raise ValueError(f"{method} is served twice")
            FEATURES[method] = feature
        return feature

    return register
