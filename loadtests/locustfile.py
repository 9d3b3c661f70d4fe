"""The MCP locust suite, as documented: ``locust -f loadtests/locustfile.py --host URL``.

The suite itself lives in the package, `mcpfast/load/locustfile.py`, so that an installed mcpfast
carries it (``mcpfast load URL`` runs that copy); this file re-exports its user classes and its
shape (`McpShape`: ``--mcp-shape``), and importing it registers the suite's options
(``--mcp-*``) and event hooks with locust.
"""

from mcpfast.load.locustfile import (
    DiscoverUser,
    ElicitUser,
    LegacySessionUser,
    ListenUser,
    McpShape,
    NotifyUser,
    ResourceUser,
    ResumeUser,
    SessionChurnUser,
    ToolCallUser,
)

__all__ = [
    "DiscoverUser",
    "ElicitUser",
    "LegacySessionUser",
    "ListenUser",
    "McpShape",
    "NotifyUser",
    "ResourceUser",
    "ResumeUser",
    "SessionChurnUser",
    "ToolCallUser",
]
