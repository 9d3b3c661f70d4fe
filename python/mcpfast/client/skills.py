"""The Skills calls of a `Client` (SEP-2640): the skills a server lists, one skill's entry by
URI, and a directory's children. Each is sent only to a server that declared the extension
(and ``directoryRead: true``, for a directory read), as SEP-2640 requires of clients."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from .. import jsonrpc
from ..errors import MCPError
from ..protocol.methods import METHODS
from ..protocol.skills import SkillEntry
from ..types import Resource

MAX_PAGES = 10_000
"""The most pages one listing is followed through."""


class SkillCalls:
    """The Skills methods `Client` has (it provides what they call)."""

    if TYPE_CHECKING:

        @property
        def server_extensions(self) -> dict[str, dict[str, Any]]: ...

        async def _cached(self, method: str, params: dict[str, Any]) -> Any: ...

    async def list_skills(self) -> list[SkillEntry]:
        """Every skill the server lists (all pages). A server may list only some of its skills,
        or none: `get_skill` answers for any it serves.

        Raises:
            MCPError: -32601 (nothing sent) when the server did not declare the extension; the
                server's error.
        """
        return [msgspec.convert(raw, SkillEntry) for raw in await self._pages("skills/list", {})]

    async def get_skill(self, uri: str) -> SkillEntry:
        """The entry of the skill whose ``SKILL.md`` is at ``uri``.

        Raises:
            MCPError: -32602 when the server serves no skill there; -32601 (nothing sent) when
                it did not declare the extension.
        """
        result = await self._skills_request("skills/get", {"uri": uri})
        return msgspec.convert(result.get("skill"), SkillEntry)

    async def read_directory(self, uri: str) -> list[Resource]:
        """The direct children of the directory resource at ``uri`` (all pages): files, and
        subdirectories with ``mimeType`` ``inode/directory``.

        Raises:
            MCPError: -32602 when ``uri`` is not a directory the server serves; -32601 (nothing
                sent) when the server did not declare ``directoryRead: true``.
        """
        pages = await self._pages("resources/directory/read", {"uri": uri})
        return [msgspec.convert(raw, Resource) for raw in pages]

    async def _pages(self, method: str, params: dict[str, Any]) -> list[Any]:
        key = "skills" if method == "skills/list" else "resources"
        items: list[Any] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = {**params, "cursor": cursor} if cursor is not None else params
            result = await self._skills_request(method, page)
            items.extend(result.get(key) or [])
            cursor = result.get("nextCursor")
            if cursor is None:
                return items
        raise MCPError(jsonrpc.INTERNAL_ERROR, f"{method}: too many pages")

    async def _skills_request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        needed = METHODS[method].extension
        if needed is not None:
            identifier, setting = needed
            settings = self.server_extensions.get(identifier)
            if settings is None or (setting is not None and settings.get(setting) is not True):
                wanted = identifier if setting is None else f"{identifier} {setting}: true"
                raise MCPError(
                    jsonrpc.METHOD_NOT_FOUND,
                    f"The server does not declare {wanted}: {method} was not sent",
                )
        result = await self._cached(method, params)
        return result if isinstance(result, dict) else {}
