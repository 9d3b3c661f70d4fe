"""What the server offers, the same in both eras: ``server/discover`` (2026-07-28), the lists
of tools, resources, templates and prompts, ``resources/read``, ``prompts/get`` (with input
rounds in 2026-07-28) and ``completion/complete``."""

from __future__ import annotations

from typing import Any

from ....protocol.methods import METHODS
from ....types import CompleteParams, GetPromptParams, ListParams, Params, ReadResourceParams
from ....versions import ALL_VERSIONS
from ...framework import features
from ...state import request_state as state
from ..rounds import with_input
from ..turn import Turn, serves


@serves("server/discover")
async def discover(turn: Turn, params: Params) -> Any:
    """``server/discover``: the versions, capabilities and identity of the server, with its
    cache hints and instructions."""
    server, call = turn.server, turn.call
    result: dict[str, Any] = {
        "supportedVersions": list(ALL_VERSIONS),
        "capabilities": server.capabilities(call.version),
        "serverInfo": server.info,
    }
    features.cache_hints(server, call, result)
    if server.instructions:
        result["instructions"] = server.instructions
    return result


def _lister(method: str) -> None:
    """Serve the list method ``method`` (its page under `Method.list_key`)."""
    key = METHODS[method].list_key
    assert key is not None

    @serves(method)
    async def list_items(turn: Turn, params: ListParams) -> Any:
        items = features.LISTS[key](turn.server)
        return features.list_result(turn.server, turn.call, params, key, items)


for _method in ("tools/list", "resources/list", "resources/templates/list", "prompts/list"):
    _lister(_method)


@serves("resources/read")
async def read(turn: Turn, p: ReadResourceParams) -> Any:
    return await with_input(
        turn,
        state.binding("resources/read", p.uri, None),
        p.requestState,
        p.inputResponses,
        lambda: features.read_resource(turn.server, turn.call, p),
    )


@serves("prompts/get")
async def get_prompt(turn: Turn, p: GetPromptParams) -> Any:
    return await with_input(
        turn,
        state.binding("prompts/get", p.name, p.arguments),
        p.requestState,
        p.inputResponses,
        lambda: features.get_prompt(turn.server, turn.call, p),
    )


@serves("completion/complete")
async def complete(turn: Turn, p: CompleteParams) -> Any:
    turn.start()
    return await features.complete(turn.server, p, turn.call)
