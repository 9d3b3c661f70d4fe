"""Session churn (gevent, no Trio): one legacy session per iteration, the cross-SDK benchmark's
pattern that makes a server mint, keep and end sessions as fast as it answers calls.

`iterate` is the locustfile's ``SessionChurnUser`` task: ``initialize`` and
``notifications/initialized`` (`Connection.initialize`: `protocol.session` rules), one
``tools/call``, then ``DELETE`` of the session, each recorded under its own name (``churn
initialize``, ``churn notifications/initialized``, ``churn tools/call echo``, ``churn DELETE
session``). A server may refuse DELETE (HTTP 405: its sessions end by expiry): that is no
failure, and said once.
"""

from __future__ import annotations

from .connection import Connection, Say
from .probe import Tool
from .wire import Answer

PREFIX = "churn "
"""What the names of the churn requests begin with."""
NO_DELETE = "SessionChurnUser: the server refuses DELETE (HTTP 405); its sessions end by expiry"


def iterate(connection: Connection, tool: Tool, say: Say) -> Answer | None:
    """One iteration: a new session, one ``tools/call`` of ``tool`` in it, its DELETE. The
    call's judged answer (None: the session did not open, or the call got no HTTP answer; both
    recorded). A 404 to the call (the session expired at once) opens another, as
    `Connection.call` does."""
    if not connection.initialize():
        return None
    answer = connection.call(
        "tools/call",
        {"name": tool.name, "arguments": tool.arguments},
        name=f"tools/call {tool.name}",
    )
    if connection.close() == 405:
        say(NO_DELETE)
    return answer
