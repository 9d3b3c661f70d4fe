"""What a legacy session asks of itself: ``ping`` and ``logging/setLevel``."""

from __future__ import annotations

from typing import Any

from .... import jsonrpc
from ....errors import ProtocolError
from ....types import LOG_LEVELS, Params, SetLevelParams
from ..turn import Turn, serves


@serves("ping")
async def ping(turn: Turn, p: Params) -> Any:
    return {}


@serves("logging/setLevel")
async def set_level(turn: Turn, p: SetLevelParams) -> Any:
    """The session's log level from now on.

    Raises:
        ProtocolError: -32602 for a level RFC 5424 does not name.
        BusUnavailable: the bus is away (asked first: nothing changed).
    """
    if p.level not in LOG_LEVELS:
        raise ProtocolError(jsonrpc.INVALID_PARAMS, f"Invalid log level: {p.level}")
    await turn.replace_session(log_level=p.level)
    return {}
