"""The load tester's options, in one table (`OPTIONS`) that `mcpfast.load.command` renders twice:
as ``mcpfast load``'s command line and as the locust suite's ``--mcp-*`` options, so the two
cannot drift.

A row with ``flags`` is an option of ``mcpfast load``; a row with ``suite`` is one of the suite
(read there as ``mcp_*`` from locust's parsed options, `mcpfast.load.shared.option`); a row with
both is given to ``mcpfast load`` and passed on under the suite's name. Pure: no locust here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from ..versions import ALL_VERSIONS

__all__ = ["FAST_WORKLOADS", "GROUPS", "OPTIONS", "USER_CLASSES", "Option"]

USER_CLASSES = {
    "tools": "ToolCallUser",
    "lists": "DiscoverUser",
    "resources": "ResourceUser",
    "session": "LegacySessionUser",
    "listen": "ListenUser",
    "churn": "SessionChurnUser",
    "resume": "ResumeUser",
    "notify": "NotifyUser",
    "elicit": "ElicitUser",
}
"""``--user-class`` and ``--mix`` keys -> the suite's user classes."""
FAST_WORKLOADS = ("tools", "lists", "session")
"""The ``--user-class`` and ``--mix`` keys ``--engine fast`` runs (`mcpfast.load.fastplan`)."""


class Option(msgspec.Struct, frozen=True, kw_only=True):
    """One option: its argparse spelling (``default`` … ``dest``) and where it applies.

    ``flags``: ``mcpfast load``'s (none: the suite's only); ``suite``: the suite's ``--mcp-*``
    (empty: ``mcpfast load``'s only); ``group``: its section of ``mcpfast load --help``;
    ``env``: the suite reads it from ``MCPFAST_LOAD_<NAME>`` too; ``web_ui``: locust's web UI
    shows it (not the names of secrets' variables)."""

    help: str | None
    flags: tuple[str, ...] = ()
    suite: str = ""
    group: str = ""
    default: Any = ""
    type: Callable[[str], Any] | None = None
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    action: str | None = None
    nargs: str | None = None
    dest: str | None = None
    env: bool = True
    web_ui: bool = True

    @property
    def name(self) -> str:
        """Its attribute in ``mcpfast load``'s parsed arguments."""
        return self.dest or self.flags[-1].lstrip("-").replace("-", "_")


GROUPS = {
    "notifications and elicitation": "notify and elicit users join the run when their tool is "
    "given (or when named with --user-class)",
    "distributed": "a headless master gives the workers the URL and the options, adds up their "
    "statistics and writes the reports: locust's master/worker, or with --engine fast its own "
    "(its workers too need --engine fast; locust's port is unauthenticated: bind it to a "
    "private interface; the fast engine's master and workers prove a secret shared in "
    "MCPFAST_LOAD_SECRET, and without one its master binds to loopback only)",
    "CI": None,
    "compare": None,
    "authorization": "a protected server: a static bearer token, or a client_credentials token "
    "that each worker process gets once for all its users and renews before it expires (and "
    "once on a 401; with --engine fast, one token for the whole run, which must outlast it); "
    "secrets are read from environment variables, never from the command line",
}
"""``mcpfast load --help``'s sections, in order, and what each says."""

_NOTIFY = "notifications and elicitation"
_AUTH = "authorization"
_DISTRIBUTED = "distributed"

OPTIONS: tuple[Option, ...] = (
    Option(
        flags=("url",),
        default=None,
        nargs="?",
        help="the server's MCP endpoint, e.g. http://127.0.0.1:8000/mcp (not with --compare; "
        "optional with --worker: the master gives it)",
    ),
    Option(flags=("-u", "--users"), type=int, default=10, help="concurrent users (default 10)"),
    Option(
        flags=("-r", "--spawn-rate"),
        type=float,
        default=None,
        help="users started per second (default: all at once)",
    ),
    Option(
        flags=("-t", "--run-time"),
        default="30s",
        help="how long to run, e.g. 30s, 5m (default 30s)",
    ),
    Option(
        flags=("--tool",),
        suite="--mcp-tool",
        help="the tool to call (default: one picked from tools/list)",
    ),
    Option(
        flags=("--arguments",),
        suite="--mcp-arguments",
        metavar="JSON",
        help="its arguments (default: built from its input schema)",
    ),
    Option(
        flags=("--era",),
        suite="--mcp-era",
        choices=("auto", "modern", "legacy"),
        default="auto",
        help="auto detects it as the mcpfast client does",
    ),
    Option(
        flags=("--protocol-version",),
        suite="--mcp-version",
        choices=ALL_VERSIONS,
        metavar="VERSION",
        help="pin the protocol revision, its era implied: every legacy initialize offers it "
        "(a server that negotiates another is refused), every modern request carries it "
        f"({', '.join(ALL_VERSIONS)}; default: the era's newest)",
    ),
    Option(
        flags=("--user-class",),
        action="append",
        default=None,
        choices=tuple(sorted(USER_CLASSES)),
        dest="user_classes",
        help="run only these user classes (repeatable; default all): "
        + ", ".join(f"{k}={v}" for k, v in USER_CLASSES.items()),
    ),
    Option(
        flags=("--stream-seconds",),
        suite="--mcp-stream-seconds",
        type=float,
        default=10.0,
        help="how long each listen/GET stream is held",
    ),
    Option(
        flags=("--shape",),
        suite="--mcp-shape",
        default="steady",
        metavar="SPEC",
        help="the users over time: steady (default), ramp[:over=DURATION] (0 to --users, "
        "default over the whole run) or spike[:base=N,at=DURATION,for=DURATION] (N users, "
        "--users for a while, N again; default a fifth, at a third of the run, for a fifth); "
        "with --engine fast, the arrival rate over time: --rate N scaled as --users would be",
    ),
    Option(
        flags=("--mix",),
        metavar="KEY=WEIGHT,...",
        help="run only these user classes (the --user-class keys), sharing the users by these "
        "weights, e.g. tools=4,churn=1,session=2 (not with --user-class); with --engine fast, "
        "its workloads sharing the connections",
    ),
    Option(
        flags=("--resume-tool",),
        suite="--mcp-resume-tool",
        help="the tool the resume users call: one that reports progress, e.g. the demo's slow "
        "(default: --tool's)",
    ),
    Option(
        flags=("--resume-arguments",),
        suite="--mcp-resume-arguments",
        metavar="JSON",
        help="its arguments (default: built)",
    ),
    Option(
        flags=("--notify-tool",),
        suite="--mcp-notify-tool",
        group=_NOTIFY,
        help="the tool that makes the server send notifications/resources/updated, called by "
        "one trigger per load process, e.g. the demo's touch",
    ),
    Option(
        flags=("--notify-arguments",),
        suite="--mcp-notify-arguments",
        group=_NOTIFY,
        metavar="JSON",
        help="its arguments, {uri} standing for the URI listened to (default: built, its uri "
        "argument the URI listened to)",
    ),
    Option(
        flags=("--notify-uri",),
        suite="--mcp-notify-uri",
        group=_NOTIFY,
        help="the resource the notify users listen to, {process} standing for a token unique "
        "to each load process (default: the first listed resource)",
    ),
    Option(
        flags=("--notify-interval",),
        suite="--mcp-notify-interval",
        group=_NOTIFY,
        type=float,
        default=1.0,
        help="seconds between triggers (default 1)",
    ),
    Option(
        flags=("--notify-timeout",),
        suite="--mcp-notify-timeout",
        group=_NOTIFY,
        type=float,
        default=5.0,
        help="seconds after which a notification counts as lost (default 5)",
    ),
    Option(
        flags=("--elicit-tool",),
        suite="--mcp-elicit-tool",
        group=_NOTIFY,
        help="the tool the elicit users call, answering what it asks, e.g. the demo's greet",
    ),
    Option(
        flags=("--elicit-arguments",),
        suite="--mcp-elicit-arguments",
        group=_NOTIFY,
        metavar="JSON",
        help="its arguments (default: built)",
    ),
    Option(
        flags=("--processes",),
        type=int,
        default=0,
        help="load processes on this host: locust workers of a local master, or the fast "
        "engine's processes (-1: one per core)",
    ),
    Option(
        flags=("--engine",),
        choices=("locust", "fast"),
        default="locust",
        help="locust (default: every user class and flow) or fast: request-per-exchange "
        "workloads (--user-class or --mix of tools, lists and session) from prebuilt requests "
        "on keep-alive connections (--users of them), in Rust",
    ),
    Option(
        flags=("--rate",),
        metavar="SPEC",
        help="with --engine fast, an open loop: N requests per second, or stages "
        "N:DURATION,M:DURATION,... (the last held to the end); latency is measured from each "
        "request's scheduled time, and the report says when the generator fell behind",
    ),
    Option(
        flags=("--out",),
        default="mcpfast-load",
        help="directory for the reports (default ./mcpfast-load)",
    ),
    Option(
        flags=("--web",),
        action="store_true",
        default=False,
        help="open locust's web UI instead of running headless",
    ),
    Option(flags=("--web-port",), type=int, default=8089, help="--web: its port (default 8089)"),
    Option(
        flags=("--master",),
        group=_DISTRIBUTED,
        action="store_true",
        default=False,
        help="run a master for workers on other hosts",
    ),
    Option(
        flags=("--expect-workers",),
        group=_DISTRIBUTED,
        type=int,
        default=1,
        metavar="K",
        help="start once K are connected",
    ),
    Option(
        flags=("--expect-workers-max-wait",),
        group=_DISTRIBUTED,
        type=int,
        default=60,
        metavar="SECONDS",
        help="give up (exit 2) when they have not connected by then (default 60)",
    ),
    Option(
        flags=("--master-bind-host",),
        group=_DISTRIBUTED,
        default="*",
        metavar="H",
        help="the master's address (default *)",
    ),
    Option(
        flags=("--master-bind-port",),
        group=_DISTRIBUTED,
        type=int,
        default=5557,
        metavar="P",
        help="default 5557",
    ),
    Option(
        flags=("--worker",),
        group=_DISTRIBUTED,
        action="store_true",
        default=False,
        help="run a worker of the master at --master-host",
    ),
    Option(
        flags=("--master-host",),
        group=_DISTRIBUTED,
        default="127.0.0.1",
        metavar="H",
        help="--worker: the master's host (default 127.0.0.1)",
    ),
    Option(
        flags=("--master-port",),
        group=_DISTRIBUTED,
        type=int,
        default=5557,
        metavar="P",
        help="the master's port (default 5557)",
    ),
    Option(
        flags=("--fail-on",),
        group="CI",
        action="append",
        default=[],
        metavar="EXPR",
        help='fail (exit 4) when EXPR holds, e.g. "p99>50ms", "errors>0.1%%", "rps<1000" '
        "(repeatable; see below)",
    ),
    Option(
        flags=("--json",),
        group="CI",
        metavar="PATH",
        help="where to write the JSON summary (default OUT/summary.json; -: print it on stdout "
        "instead of the table, the other lines go to stderr)",
    ),
    Option(
        flags=("-q", "--quiet"),
        group="CI",
        action="store_true",
        default=False,
        help="no live progress: the summary and errors only",
    ),
    Option(
        flags=("--compare",),
        group="compare",
        nargs="+",
        default=[],
        metavar="[NAME=]URL",
        help="run the same workload against each server, interleaved in rounds; a table of "
        "req/s, p50, p99 and the ratios to the first, compare.json and compare.png in --out",
    ),
    Option(
        flags=("--rounds",),
        group="compare",
        type=int,
        default=3,
        metavar="R",
        help="rounds of --compare (default 3)",
    ),
    Option(
        flags=("--label",),
        group="compare",
        action="append",
        default=[],
        metavar="NAME",
        help="the name of each --compare URL, in order (or give NAME=URL)",
    ),
    Option(
        flags=("--bearer-env",),
        suite="--mcp-bearer-env",
        group=_AUTH,
        metavar="VAR",
        env=False,
        web_ui=False,
        help="send the bearer token held in $VAR",
    ),
    Option(
        flags=("--client-id",),
        suite="--mcp-client-id",
        group=_AUTH,
        env=False,
        web_ui=False,
        help="get client_credentials tokens as this client",
    ),
    Option(
        flags=("--client-secret-env",),
        suite="--mcp-client-secret-env",
        group=_AUTH,
        metavar="VAR",
        env=False,
        web_ui=False,
        help="the client's secret is in $VAR (with --client-id)",
    ),
    Option(
        flags=("--scope",),
        suite="--mcp-scope",
        group=_AUTH,
        env=False,
        web_ui=False,
        help="scopes to ask for, space-separated (default: the 401 challenge's, else the "
        "resource metadata's scopes_supported)",
    ),
    Option(
        flags=("--dpop",),
        suite="--mcp-dpop",
        group=_AUTH,
        action="store_true",
        default=False,
        env=False,
        web_ui=False,
        help="ask for DPoP-bound tokens (RFC 9449, with --client-id): one key per process, a "
        "fresh proof per request, the server's DPoP-Nonce adopted",
    ),
    Option(
        flags=("--token-url",),
        suite="--mcp-token-url",
        group=_AUTH,
        env=False,
        web_ui=False,
        help="the token endpoint (default: discovered: the protected resource metadata, then "
        "the authorization server's)",
    ),
    Option(
        flags=("--auth-issuer",),
        suite="--mcp-auth-issuer",
        group=_AUTH,
        metavar="URL",
        env=False,
        web_ui=False,
        help="the authorization server the client's secret is for (needed with --client-id "
        "unless --token-url names the endpoint): a server that names another is refused",
    ),
    Option(
        suite="--mcp-progress",
        action="store_true",
        default=False,
        web_ui=False,
        help="print a JSON progress line every second and notes as lines (for mcpfast load)",
    ),
)
