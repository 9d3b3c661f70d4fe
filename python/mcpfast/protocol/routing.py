"""Which params member each method mirrors in the ``Mcp-Name`` header (2026-07-28, SEP-2243;
the tasks extension adds ``taskId``)."""

from __future__ import annotations

NAME_FIELD = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
