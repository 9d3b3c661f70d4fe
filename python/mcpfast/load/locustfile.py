"""A locust suite that speaks MCP to any server URL, in either era.

    locust -f loadtests/locustfile.py --host http://127.0.0.1:8000/mcp
    mcpfast load http://127.0.0.1:8000/mcp            # the same, headless, with a summary

This module registers the suite with locust: its options (`mcpfast.load.options`), its event
hooks (`mcpfast.load.lifecycle`), its users (`mcpfast.load.users`) and its shape. Before any user
starts (locust's ``init``
event, once per process) the server is probed (`mcpfast.load.probe`) with the client's own
rules: the era (`mcpfast.protocol.discovery.Negotiation` on ``server/discover`` probes;
``--mcp-era`` forces one), its capabilities, its tools and resources, a trial legacy session and,
in the legacy era, a trial GET stream. The probe's requests are not part of the load and are not
in locust's statistics. Every user class whose feature the server does not offer is left out of
the run, with one line saying why (`mcpfast.load.offers` holds the rules); when none is left the
process exits with status 3. A server that answers -32601 or HTTP 405 at run time anyway stops
the users that need it (said once), instead of being asked again in a tight loop.

In the modern era (2026-07-28) every request is a stateless POST with ``_meta`` and the mirrored
``MCP-Protocol-Version`` / ``Mcp-Method`` / ``Mcp-Name`` / ``Mcp-Param-*`` headers; in the legacy
era each user keeps a session (``initialize`` + ``notifications/initialized``, ``Mcp-Session-Id``
replaced when re-minted, re-initialized on 404: `mcpfast.protocol.session`), through its
`mcpfast.load.connection.Connection`. ``--mcp-version`` pins the revision (and so the era:
`mcpfast.load.pinning`): every ``initialize`` offers a pinned legacy one, and the probe refuses
a server that negotiates another; said once (``protocol version 2025-06-18 pinned (legacy
era)``). With ``--mcp-bearer-env`` or ``--mcp-client-id`` every
request is authorized (`mcpfast.load.auth`: one token per process, shared by its users).
Every answer is judged
(`mcpfast.load.wire.judge`): a JSON-RPC error in a 200 answer, a result of the wrong shape and a
tool result with ``isError`` are failures, named by HTTP status and JSON-RPC code so locust's
failure table groups them.

User classes (weights in brackets, summing to 10 so that ten users run one of each at least):

* `ToolCallUser` [4]: ``tools/call`` of ``--mcp-tool`` with ``--mcp-arguments`` (JSON); without
  them, the first read-only tool of ``tools/list`` (else the first tool), with arguments built
  from its input schema (`mcpfast.load.arguments`).
* `DiscoverUser` [2]: ``server/discover`` (legacy era: ``ping``) and the list calls the server's
  capabilities offer.
* `ResourceUser` [1]: ``resources/read`` of the listed resources.
* `LegacySessionUser` [2]: always legacy: initialize once, then ``tools/call``, ``tools/list``
  and ``ping`` in the session.
* `ListenUser` [1]: long-lived streams: ``subscriptions/listen`` of what the server advertises
  (modern) or the session's GET stream (legacy, after ``resources/subscribe`` of a resource when
  the server offers subscriptions), held ``--mcp-stream-seconds`` then closed and opened again;
  its latency is the time to the acknowledgement (modern) or to the stream's headers (legacy).

Two classes join the run only when their tool is given (``--mcp-notify-tool``,
``--mcp-elicit-tool``) or they are named (`mcpfast.load.offers.FLOW_TOOLS`):

* `NotifyUser` [1]: streams of one resource's updates held while the process's trigger calls
  the tool; each notification timed from its trigger, the late ones lost (`mcpfast.load.notify`).
* `ElicitUser` [1]: calls the tool and answers what it asks, in either era
  (`mcpfast.load.elicit`).

Two more run only when named (`mcpfast.load.offers.OPT_IN`), both in legacy sessions:

* `SessionChurnUser` [1]: a session per iteration: ``initialize``, ``tools/call``, ``DELETE``
  (`mcpfast.load.churn`).
* `ResumeUser` [1]: a call's stream dropped after its first message and resumed with GET +
  ``Last-Event-ID``, nothing replayed (`mcpfast.load.resume`; ``--mcp-resume-tool``).

``--mcp-shape`` (`McpShape`, `mcpfast.load.shapes`) ramps or spikes the users; the default,
``steady``, runs as locust does without a shape.

With ``--csv PREFIX``, ``PREFIX_stats.csv``, ``PREFIX_failures.csv`` and
``PREFIX_exceptions.csv`` are written once more when locust quits, from its final statistics
(locust itself last writes them up to a second before the end, before the users' ``on_stop``).

This file runs under gevent (locust's), never inside a Trio process: ``mcpfast load`` starts
locust in a child process.
"""

from __future__ import annotations

from locust import events
from locust import runners as locust_runners

from mcpfast.load import users
from mcpfast.load.command import add_suite_options
from mcpfast.load.lifecycle import McpShape, on_init, start_watching, stop_watching

# locust runs the user classes it finds here, in this order
ToolCallUser = users.ToolCallUser
DiscoverUser = users.DiscoverUser
ResourceUser = users.ResourceUser
LegacySessionUser = users.LegacySessionUser
ListenUser = users.ListenUser
SessionChurnUser = users.SessionChurnUser
ResumeUser = users.ResumeUser
NotifyUser = users.NotifyUser
ElicitUser = users.ElicitUser

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

# a worker reports its statistics to its master every second (locust's default is 3 s), so that
# the master's live progress moves as smoothly as a single process's
locust_runners.WORKER_REPORT_INTERVAL = 1.0
# locust's EventHook.add_listener is unannotated
events.init_command_line_parser.add_listener(add_suite_options)  # type: ignore[no-untyped-call]
events.init.add_listener(on_init)  # type: ignore[no-untyped-call]
events.test_start.add_listener(start_watching)  # type: ignore[no-untyped-call]
events.test_stop.add_listener(stop_watching)  # type: ignore[no-untyped-call]
