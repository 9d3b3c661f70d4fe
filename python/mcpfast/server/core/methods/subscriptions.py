"""Resource subscriptions: a legacy session's (``resources/subscribe``,
``resources/unsubscribe``, kept in the session and announced to its GET streams) and
2026-07-28's ``subscriptions/listen`` (the stream is the answer, `streams.listen`)."""

from __future__ import annotations

from typing import Any

import msgspec

from .... import jsonrpc
from ....errors import ProtocolError
from ....types import ListenParams, UriParams
from ...state import sessions
from ...state.sessions import Session
from .. import streams
from ..refusal import best_effort
from ..turn import Turn, serves


async def _subscriptions(turn: Turn, session: Session) -> None:
    """Make ``session``'s subscriptions the exchange's, kept on the bus *before* the news goes
    to the session's GET streams: a stream opening meanwhile, which missed the news, reads them
    there once subscribed (`streams.standalone`). Once the change is made, the bus going away
    loses only what `refusal.best_effort` says (the re-minted id carries the subscriptions).

    Raises:
        BusUnavailable: the bus is away (asked first: nothing changed).
    """
    await turn.change_session(session)
    turn.start()
    runtime = turn.runtime
    lost = f"session {session.id[:8]}: subscriptions not "
    saved = sessions.save_state(runtime.bus, turn.legacy.session, runtime.config)
    await best_effort(saved, lost + "kept on the bus")
    news = {"method": "session", "params": msgspec.to_builtins(session)}
    await best_effort(turn.server.publish("session/" + session.id, news), lost + "announced")


@serves("resources/subscribe")
async def subscribe(turn: Turn, p: UriParams) -> Any:
    """Subscribe to a resource the server serves (a fixed one or a template's match), within
    the session's bounds (`sessions.subscribed`).

    Raises:
        ProtocolError: -32602 past a bound; -32002 for a URI no resource serves.
    """
    session = sessions.subscribed(await turn.current_session(), p.uri)
    if turn.server.resource_for(p.uri) is None:
        raise ProtocolError(jsonrpc.RESOURCE_NOT_FOUND_LEGACY, "Resource not found", {"uri": p.uri})
    await _subscriptions(turn, session)
    return {}


@serves("resources/unsubscribe")
async def unsubscribe(turn: Turn, p: UriParams) -> Any:
    session = await turn.current_session()
    uris = [u for u in session.subscriptions if u != p.uri]
    await _subscriptions(turn, msgspec.structs.replace(session, subscriptions=uris))
    return {}


@serves("subscriptions/listen")
async def listen(turn: Turn, p: ListenParams) -> None:
    await streams.listen(turn.runtime, turn.call, p, turn.emission.responder)
