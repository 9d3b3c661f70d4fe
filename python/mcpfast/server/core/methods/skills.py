"""The Skills extension's methods (SEP-2640) over a `Server`'s `Catalog` of skills, the same
in both eras: ``skills/list``, ``skills/get`` and ``resources/directory/read``. Each answers at
once from memory: a request never touches the filesystem, so no URI (``..`` or otherwise)
reaches a file that was not registered."""

from __future__ import annotations

from typing import Any

from .... import jsonrpc
from ....errors import ProtocolError
from ....protocol.skills import DIRECTORY_READ, SKILLS_EXTENSION, DirectoryReadParams
from ....types import ListParams, UriParams
from ...framework import features
from ...framework.app import Server
from ...framework.call import Call
from ...framework.skills import Catalog
from ..turn import Turn, serves


def _served(server: Server, call: Call, setting: str | None = None) -> Catalog:
    """The server's catalog, when it declares the skills extension (with ``setting`` true).

    Raises:
        ProtocolError: -32601 otherwise.
    """
    declared = server.extensions.get(SKILLS_EXTENSION)
    if (
        declared is None
        or not server.offers_extension(SKILLS_EXTENSION, call.version)
        or (setting is not None and declared.settings.get(setting) is not True)
    ):
        raise ProtocolError(jsonrpc.METHOD_NOT_FOUND, f"Method not found: {call.method}")
    return server.skills if server.skills is not None else Catalog()


@serves("skills/list")
async def list_skills(turn: Turn, params: ListParams) -> dict[str, Any]:
    """``skills/list``: a page of skill entries (whole entries: a page never splits one), with
    ``nextCursor`` and, from 2026-07-28, the cache hints.

    Raises:
        ProtocolError: -32601 when the extension is not declared; -32602 for a bad cursor.
    """
    server, call = turn.server, turn.call
    entries = list(_served(server, call).entries.values())
    return features.list_result(server, call, params, "skills", entries)


@serves("skills/get")
async def get_skill(turn: Turn, params: UriParams) -> dict[str, Any]:
    """``skills/get``: the entry of the skill whose ``SKILL.md`` is ``params.uri`` (no cursor).

    Raises:
        ProtocolError: -32601 when the extension is not declared; -32602 (``data.uri``) when
            no skill is served there.
    """
    server, call = turn.server, turn.call
    entry = _served(server, call).entries.get(params.uri)
    if entry is None:
        raise ProtocolError(jsonrpc.INVALID_PARAMS, "Unknown skill", {"uri": params.uri})
    return features.cache_hints(server, call, {"skill": entry})


@serves("resources/directory/read")
async def read_directory(turn: Turn, params: DirectoryReadParams) -> dict[str, Any]:
    """``resources/directory/read``: a page of a directory's direct children (files with their
    size, subdirectories as ``inode/directory``), paged as ``resources/list`` is.

    Raises:
        ProtocolError: -32601 unless the server declares ``directoryRead: true``; -32602
            (``data.uri``) when ``params.uri`` is not a directory served; -32602 for a bad
            cursor.
    """
    server, call = turn.server, turn.call
    children = _served(server, call, DIRECTORY_READ).directories.get(params.uri)
    if children is None:
        raise ProtocolError(jsonrpc.INVALID_PARAMS, "Not a directory", {"uri": params.uri})
    return features.list_result(server, call, params, "resources", children)
