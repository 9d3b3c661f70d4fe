"""``mcpfast load URL``: the locust suite headless in a child process, live progress, a summary
and the report files (CSV, HTML, PNG, ``summary.json``); ``--web`` runs locust's web UI instead.

``--processes N`` runs N load processes on this host (locust workers of a local master);
``--master`` / ``--worker --master-host H`` spread them over hosts, the master showing the
progress and writing the reports. ``--fail-on EXPR`` thresholds (`mcpfast.load.thresholds`) end
the run with exit status 4 when one holds; ``--json PATH`` places the JSON summary
(`mcpfast.load.summary`; ``-``: on stdout); ``-q`` leaves out the live progress. ``--compare``
runs the same workload against several servers in interleaved rounds
(`mcpfast.load.compare`). The exit statuses are in `EPILOG`.

locust runs on gevent, which must never be imported into a Trio process: this module only starts
``python -m locust -f <mcpfast/load/locustfile.py>`` and reads what it writes.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from ..versions import ALL_VERSIONS
from . import EXIT_NOTHING_TO_RUN, LOCUSTFILE, NOTE_PREFIX, PROGRESS_PREFIX, shapes
from .compare import run_compare
from .mix import config_users, parse_mix
from .pinning import pinned_era
from .report import Summary, format_summary, read_history, read_summary, write_chart
from .summary import Outcome, summary_document, write_document
from .thresholds import (
    EXIT_THRESHOLDS,
    Threshold,
    ThresholdError,
    Verdict,
    evaluate,
    format_verdicts,
)
from .thresholds import parse as parse_threshold

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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``load`` subcommand's options."""
    parser.add_argument(
        "url",
        nargs="?",
        help="the server's MCP endpoint, e.g. http://127.0.0.1:8000/mcp (not with --compare; "
        "optional with --worker: the master gives it)",
    )
    parser.add_argument("-u", "--users", type=int, default=10, help="concurrent users (default 10)")
    parser.add_argument(
        "-r",
        "--spawn-rate",
        type=float,
        default=None,
        help="users started per second (default: all at once)",
    )
    parser.add_argument(
        "-t", "--run-time", default="30s", help="how long to run, e.g. 30s, 5m (default 30s)"
    )
    parser.add_argument(
        "--tool", default="", help="the tool to call (default: one picked from tools/list)"
    )
    parser.add_argument(
        "--arguments",
        default="",
        metavar="JSON",
        help="its arguments (default: built from its input schema)",
    )
    parser.add_argument(
        "--era",
        choices=("auto", "modern", "legacy"),
        default="auto",
        help="auto detects it as the mcpfast client does",
    )
    parser.add_argument(
        "--protocol-version",
        choices=ALL_VERSIONS,
        default="",
        metavar="VERSION",
        help="pin the protocol revision, its era implied: every legacy initialize offers it "
        "(a server that negotiates another is refused), every modern request carries it "
        f"({', '.join(ALL_VERSIONS)}; default: the era's newest)",
    )
    parser.add_argument(
        "--user-class",
        action="append",
        choices=sorted(USER_CLASSES),
        dest="user_classes",
        help="run only these user classes (repeatable; default all): "
        + ", ".join(f"{k}={v}" for k, v in USER_CLASSES.items()),
    )
    parser.add_argument(
        "--stream-seconds", type=float, default=10.0, help="how long each listen/GET stream is held"
    )
    parser.add_argument(
        "--shape",
        default="steady",
        metavar="SPEC",
        help="the users over time: steady (default), ramp[:over=DURATION] (0 to --users, "
        "default over the whole run) or spike[:base=N,at=DURATION,for=DURATION] (N users, "
        "--users for a while, N again; default a fifth, at a third of the run, for a fifth)",
    )
    parser.add_argument(
        "--mix",
        default="",
        metavar="KEY=WEIGHT,...",
        help="run only these user classes (the --user-class keys), sharing the users by these "
        "weights, e.g. tools=4,churn=1,session=2 (not with --user-class)",
    )
    parser.add_argument(
        "--resume-tool",
        default="",
        help="the tool the resume users call: one that reports progress, e.g. the demo's slow "
        "(default: --tool's)",
    )
    parser.add_argument(
        "--resume-arguments", default="", metavar="JSON", help="its arguments (default: built)"
    )
    add_notify_elicit_arguments(parser)
    parser.add_argument(
        "--processes",
        type=int,
        default=0,
        help="load processes on this host: locust workers of a local master (-1: one per core)",
    )
    parser.add_argument(
        "--out", default="mcpfast-load", help="directory for the reports (default ./mcpfast-load)"
    )
    parser.add_argument(
        "--web", action="store_true", help="open locust's web UI instead of running headless"
    )
    parser.add_argument("--web-port", type=int, default=8089)
    add_run_arguments(parser)
    auth = parser.add_argument_group(
        "authorization",
        "a protected server: a static bearer token, or a client_credentials token that each "
        "worker process gets once for all its users and renews before it expires (and once on "
        "a 401); secrets are read from environment variables, never from the command line",
    )
    auth.add_argument(
        "--bearer-env", metavar="VAR", default="", help="send the bearer token held in $VAR"
    )
    auth.add_argument(
        "--client-id", default="", help="get client_credentials tokens as this client"
    )
    auth.add_argument(
        "--client-secret-env",
        metavar="VAR",
        default="",
        help="the client's secret is in $VAR (with --client-id)",
    )
    auth.add_argument(
        "--scope",
        default="",
        help="scopes to ask for, space-separated (default: the 401 challenge's, else the "
        "resource metadata's scopes_supported)",
    )
    auth.add_argument(
        "--dpop",
        action="store_true",
        help="ask for DPoP-bound tokens (RFC 9449, with --client-id): one key per process, a "
        "fresh proof per request, the server's DPoP-Nonce adopted",
    )
    auth.add_argument(
        "--token-url",
        default="",
        help="the token endpoint (default: discovered: the protected resource metadata, then "
        "the authorization server's)",
    )
    auth.add_argument(
        "--auth-issuer",
        default="",
        metavar="URL",
        help="the authorization server the client's secret is for (needed with --client-id "
        "unless --token-url names the endpoint): a server that names another is refused",
    )


def check_auth(args: Any) -> None:
    """Refuse inconsistent authorization options, or a named environment variable that is unset.

    Raises:
        SystemExit: with the reason.
    """
    bearer = getattr(args, "bearer_env", "")
    client_id = getattr(args, "client_id", "")
    secret = getattr(args, "client_secret_env", "")
    if bearer and client_id:
        raise SystemExit("give --bearer-env or --client-id, not both")
    if not client_id and (
        secret
        or getattr(args, "scope", "")
        or getattr(args, "token_url", "")
        or getattr(args, "auth_issuer", "")
        or getattr(args, "dpop", False)
    ):
        raise SystemExit(
            "--client-secret-env, --scope, --token-url, --auth-issuer and --dpop need --client-id"
        )
    if client_id and not secret:
        raise SystemExit("--client-id needs --client-secret-env VAR (the secret's variable)")
    if client_id and not (getattr(args, "auth_issuer", "") or getattr(args, "token_url", "")):
        raise SystemExit(
            "--client-id needs --auth-issuer URL: the authorization server its secret is for "
            "(or --token-url)"
        )
    for flag, name in (("--bearer-env", bearer), ("--client-secret-env", secret)):
        if name and not os.environ.get(name, "").strip():
            raise SystemExit(f"{flag}: the environment variable {name} is not set")


def auth_options(args: Any) -> list[str]:
    """The suite's authorization options for ``args`` (the names of the variables, never their
    values: the child inherits the environment)."""
    options: list[str] = []
    for flag, attribute in (
        ("--mcp-bearer-env", "bearer_env"),
        ("--mcp-client-id", "client_id"),
        ("--mcp-client-secret-env", "client_secret_env"),
        ("--mcp-scope", "scope"),
        ("--mcp-token-url", "token_url"),
        ("--mcp-auth-issuer", "auth_issuer"),
    ):
        value = getattr(args, attribute, "")
        if value:
            options += [flag, value]
    if getattr(args, "dpop", False):
        options.append("--mcp-dpop")
    return options


def locust_command(args: Any, out: Path) -> list[str]:
    """The locust command line for ``args`` (``--csv``/``--html`` into ``out``)."""
    if args.arguments:
        try:
            parsed = json.loads(args.arguments)
        except ValueError as exc:
            raise SystemExit(f"--arguments is not JSON: {exc}") from None
        if not isinstance(parsed, dict):
            raise SystemExit("--arguments must be a JSON object")
    command = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(LOCUSTFILE),
        "--users",
        str(args.users),
        "--spawn-rate",
        str(args.spawn_rate if args.spawn_rate is not None else args.users),
        "--run-time",
        args.run_time,
        "--mcp-era",
        _era(args),
        "--mcp-stream-seconds",
        str(args.stream_seconds),
    ]
    if args.url:
        command += ["--host", args.url]
    if args.protocol_version:
        command += ["--mcp-version", args.protocol_version]
    if args.tool:
        command += ["--mcp-tool", args.tool]
    if args.arguments:
        command += ["--mcp-arguments", args.arguments]
    command += _flow_options(args)
    command += notify_elicit_options(args)
    check_auth(args)
    command += auth_options(args)
    if args.processes:
        command += ["--processes", str(args.processes)]
    command += distributed_options(args)
    if args.web:
        command += ["--web-host", "127.0.0.1", "--web-port", str(args.web_port), "--class-picker"]
    elif getattr(args, "worker", False):
        command += ["--headless", "--mcp-progress"]
    else:
        command += [
            "--headless",
            "--only-summary",
            "--mcp-progress",
            "--csv",
            str(out / "load"),
            "--csv-full-history",
            "--html",
            str(out / "report.html"),
            "--exit-code-on-error",
            "0",
        ]
    command += _classes(args)
    return command


NOTIFY_ELICIT = (
    ("--notify-tool", "notify_tool"),
    ("--notify-arguments", "notify_arguments"),
    ("--notify-uri", "notify_uri"),
    ("--notify-interval", "notify_interval"),
    ("--notify-timeout", "notify_timeout"),
    ("--elicit-tool", "elicit_tool"),
    ("--elicit-arguments", "elicit_arguments"),
)
"""The options of the notify and elicit users, passed on as ``--mcp-...``."""


def add_notify_elicit_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the notify users (`mcpfast.load.notify`) and the elicit users
    (`mcpfast.load.elicit`)."""
    group = parser.add_argument_group(
        "notifications and elicitation",
        "notify and elicit users join the run when their tool is given (or when named with "
        "--user-class)",
    )
    group.add_argument(
        "--notify-tool",
        default="",
        help="the tool that makes the server send notifications/resources/updated, called by "
        "one trigger per load process, e.g. the demo's touch",
    )
    group.add_argument(
        "--notify-arguments",
        default="",
        metavar="JSON",
        help="its arguments, {uri} standing for the URI listened to (default: built, its uri "
        "argument the URI listened to)",
    )
    group.add_argument(
        "--notify-uri",
        default="",
        help="the resource the notify users listen to, {process} standing for a token unique "
        "to each load process (default: the first listed resource)",
    )
    group.add_argument(
        "--notify-interval", type=float, default=1.0, help="seconds between triggers (default 1)"
    )
    group.add_argument(
        "--notify-timeout",
        type=float,
        default=5.0,
        help="seconds after which a notification counts as lost (default 5)",
    )
    group.add_argument(
        "--elicit-tool",
        default="",
        help="the tool the elicit users call, answering what it asks, e.g. the demo's greet",
    )
    group.add_argument(
        "--elicit-arguments", default="", metavar="JSON", help="its arguments (default: built)"
    )


def notify_elicit_options(args: Any) -> list[str]:
    """The suite's options for the notify and elicit users (`NOTIFY_ELICIT`) given in ``args``."""
    options: list[str] = []
    for flag, attribute in NOTIFY_ELICIT:
        value = getattr(args, attribute, None)
        if value not in (None, ""):
            options += ["--mcp-" + flag[2:], str(value)]
    return options


def _flow_options(args: Any) -> list[str]:
    """The suite's options of ``--shape`` and the resume users (checked: `check_flows`)."""
    options: list[str] = []
    shape = getattr(args, "shape", "steady")
    if shape != "steady":
        options += ["--mcp-shape", shape]
    for flag, value in (
        ("--mcp-resume-tool", getattr(args, "resume_tool", "")),
        ("--mcp-resume-arguments", getattr(args, "resume_arguments", "")),
    ):
        if value:
            options += [flag, value]
    return options


def _classes(args: Any) -> list[str]:
    """The end of the locust command: the user classes to run (none: the default mix), with
    ``--mix``'s weights (locust's ``--config-users``, in its one-argument form so that the class
    names are not taken for more of it); ``--mix`` checked by `check_flows`."""
    if not getattr(args, "mix", ""):
        return [USER_CLASSES[c] for c in args.user_classes or ()]
    weights = parse_mix(args.mix, USER_CLASSES)
    return [f"--config-users={config_users(weights)}", *weights]


def _era(args: Any) -> str:
    """The era ``--era`` and ``--protocol-version`` give (`mcpfast.load.pinning`).

    Raises:
        SystemExit: the pinned revision is of the other era than ``--era`` forces.
    """
    try:
        return pinned_era(args.era, args.protocol_version)
    except ValueError as exc:
        raise SystemExit(f"--protocol-version: {exc}") from None


EPILOG = """\
exit status:
  0  no request failed (with --fail-on: every threshold passed)
  1  some requests failed (without --fail-on; with it, the thresholds decide)
  2  usage error (a bad --fail-on, URL or combination), or locust could not run
  3  nothing could run: the server offers none of the selected user classes' features, or
     did not answer the probe
  4  a --fail-on threshold failed (the lines above say which)

thresholds (--fail-on EXPR, repeatable; the run fails when EXPR holds):
  [NAME:]METRIC OP VALUE[UNIT]: METRIC p50, p95, p99, avg, max (ms or s; default ms),
  errors (failed requests in % of requests), failures, requests (counts), rps; OP >, >=, <, <=;
  NAME: one request name of the summary, e.g. "tools/call echo:p99>20ms" (default: the total).
  e.g. --fail-on "p99>50ms" --fail-on "errors>0.1%" --fail-on "rps<1000"

distributed:
  mcpfast load URL --processes 4                        # 4 load processes on this host
  mcpfast load URL --master --expect-workers 2          # a master (headless, the reports) ...
  mcpfast load --worker --master-host MASTER            # ... and its workers, on any host

compare (the same workload against each server, interleaved in rounds):
  mcpfast load --compare mcpfast=URL1 sdk=URL2 --rounds 3 -t 10s
"""


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of distributed runs, thresholds, the JSON summary and comparisons."""
    parser.description = __doc__
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    distributed = parser.add_argument_group(
        "distributed",
        "locust's master/worker: a headless master gives the workers the URL and the options, "
        "adds up their statistics and writes the reports",
    )
    distributed.add_argument(
        "--master", action="store_true", help="run a master for workers on other hosts"
    )
    distributed.add_argument(
        "--expect-workers", type=int, default=1, metavar="K", help="start once K are connected"
    )
    distributed.add_argument(
        "--expect-workers-max-wait",
        type=int,
        default=60,
        metavar="SECONDS",
        help="give up (exit 2) when they have not connected by then (default 60)",
    )
    distributed.add_argument(
        "--master-bind-host", default="*", metavar="H", help="the master's address (default *)"
    )
    distributed.add_argument(
        "--master-bind-port", type=int, default=5557, metavar="P", help="default 5557"
    )
    distributed.add_argument(
        "--worker", action="store_true", help="run a worker of the master at --master-host"
    )
    distributed.add_argument("--master-host", default="127.0.0.1", metavar="H")
    distributed.add_argument("--master-port", type=int, default=5557, metavar="P")
    ci = parser.add_argument_group("CI")
    ci.add_argument(
        "--fail-on",
        action="append",
        default=[],
        metavar="EXPR",
        help='fail (exit 4) when EXPR holds, e.g. "p99>50ms", "errors>0.1%%", "rps<1000" '
        "(repeatable; see below)",
    )
    ci.add_argument(
        "--json",
        default="",
        metavar="PATH",
        help="where to write the JSON summary (default OUT/summary.json; -: print it on stdout "
        "instead of the table, the other lines go to stderr)",
    )
    ci.add_argument(
        "-q", "--quiet", action="store_true", help="no live progress: the summary and errors only"
    )
    compare = parser.add_argument_group("compare")
    compare.add_argument(
        "--compare",
        nargs="+",
        default=[],
        metavar="[NAME=]URL",
        help="run the same workload against each server, interleaved in rounds; a table of "
        "req/s, p50, p99 and the ratios to the first, compare.json and compare.png in --out",
    )
    compare.add_argument(
        "--rounds", type=int, default=3, metavar="R", help="rounds of --compare (default 3)"
    )
    compare.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="NAME",
        help="the name of each --compare URL, in order (or give NAME=URL)",
    )


def distributed_options(args: Any) -> list[str]:
    """locust's options for ``--master`` or ``--worker`` (none otherwise)."""
    if getattr(args, "master", False):
        return [
            "--master",
            "--expect-workers",
            str(args.expect_workers),
            "--expect-workers-max-wait",
            str(args.expect_workers_max_wait),
            "--master-bind-host",
            args.master_bind_host,
            "--master-bind-port",
            str(args.master_bind_port),
        ]
    if getattr(args, "worker", False):
        return [
            "--worker",
            "--master-host",
            args.master_host,
            "--master-port",
            str(args.master_port),
        ]
    return []


class UsageError(Exception):
    """Options that cannot run together, or a ``--fail-on`` that cannot be parsed."""


def check_usage(args: Any) -> list[Threshold]:
    """The run's thresholds, once its options are known to fit together.

    Raises:
        UsageError: they do not (the message says why).
    """
    try:
        thresholds = [parse_threshold(text) for text in args.fail_on]
    except ThresholdError as exc:
        raise UsageError(f"--fail-on: {exc}") from None
    if args.compare:
        if args.url:
            raise UsageError("give the servers to --compare, not a URL besides")
        if args.master or args.worker or args.web:
            raise UsageError("--compare runs on one host: not with --master, --worker or --web")
        if args.rounds < 1:
            raise UsageError("--rounds must be at least 1")
    elif args.label:
        raise UsageError("--label names --compare URLs")
    elif not args.url and not args.worker:
        raise UsageError("the server's URL is missing")
    if args.master and args.worker:
        raise UsageError("--master or --worker, not both")
    if args.master and args.processes:
        raise UsageError(
            "--processes starts a local master and its workers: not with --master (a --worker "
            "host may run several: --worker --processes N)"
        )
    if args.master and args.expect_workers < 1:
        raise UsageError("--expect-workers must be at least 1")
    if args.worker and (thresholds or args.json):
        raise UsageError("--fail-on and --json belong to the master, not to a worker")
    if args.processes < -1:
        raise UsageError("--processes: a count, or -1 for one per core")
    check_flows(args)
    return thresholds


def check_flows(args: Any) -> None:
    """Refuse a ``--shape``, ``--mix`` or ``--resume-arguments`` that is not one.

    Raises:
        UsageError: with the reason.
    """
    try:
        shapes.parse_shape(getattr(args, "shape", "steady"))
    except ValueError as exc:
        raise UsageError(f"--shape: {exc}") from None
    if getattr(args, "mix", ""):
        if args.user_classes:
            raise UsageError("give --mix or --user-class, not both")
        try:
            parse_mix(args.mix, USER_CLASSES)
        except ValueError as exc:
            raise UsageError(f"--mix: {exc}") from None
    given = getattr(args, "resume_arguments", "")
    try:
        parsed = json.loads(given) if given else {}
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise UsageError("--resume-arguments must be a JSON object")


def child_env() -> dict[str, str]:
    """The environment of the locust process: mcpfast importable from where it is loaded."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        env["PYTHONPATH"] = os.pathsep.join([root, *paths])
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def progress_text(line: dict[str, Any]) -> str:
    def ms(v: Any) -> str:
        return f"{v:.0f}" if isinstance(v, (int, float)) else "-"

    return (
        f"{line.get('elapsed', 0):6.1f}s  users {line.get('users', 0):>4}  "
        f"req/s {line.get('rps', 0):>8.1f}  "
        f"p50 {ms(line.get('p50')):>5} ms  p95 {ms(line.get('p95')):>5} ms  "
        f"requests {line.get('requests', 0):>8}  failures {line.get('failures', 0)}"
    )


_ERA = re.compile(r"/INFO/mcpfast\.load: era (\S+) \((.*?)\); tool ")


class Progress:
    """Turns the locustfile's progress lines into one live status line (a new line each time
    when the output is not a terminal) and its notes into ``mcpfast load: ...`` lines (kept in
    ``notes`` too, each once: every load process of a distributed run says its own); errors are
    shown as ``locust: ...``; everything goes to the log but the progress lines. ``quiet``:
    errors only. The probe's log line gives ``era`` (``{"era", "version"}``)."""

    SHOWN = ("/ERROR/", "/CRITICAL/", "/WARNING/mcpfast.load:")

    def __init__(self, out: IO[str], log: IO[str], *, quiet: bool = False) -> None:
        self.out = out
        self.log = log
        self.quiet = quiet
        self.tty = out.isatty()
        self.last: tuple[float, int] | None = None
        self.shown = False
        self.notes: list[str] = []
        self.era: dict[str, str] | None = None

    def feed(self, raw: str) -> None:
        if raw.startswith(NOTE_PREFIX):
            text = raw[len(NOTE_PREFIX) :].rstrip("\n")
            self.log.write(raw)
            if text in self.notes:
                return
            self.notes.append(text)
            if not self.quiet:
                self.say(f"mcpfast load: {text}\n")
            return
        if not raw.startswith(PROGRESS_PREFIX):
            self.log.write(raw)
            found = _ERA.search(raw)
            if found is not None and self.era is None:
                self.era = {"era": found[1], "version": found[2]}
            if any(mark in raw for mark in self.SHOWN) or raw.startswith("Traceback"):
                self.say("locust: " + raw)
            return
        try:
            line = json.loads(raw[len(PROGRESS_PREFIX) :])
        except ValueError:
            return
        now = float(line.get("elapsed", 0.0))
        requests = int(line.get("requests", 0))
        since = self.last if self.last is not None else (0.0, 0)
        if now > since[0]:
            line["rps"] = (requests - since[1]) / (now - since[0])
        self.last = (now, requests)
        if self.quiet:
            return
        text = progress_text(line)
        if self.tty:
            self.out.write("\r\x1b[2K" + text)
        else:
            self.out.write(text + "\n")
        self.out.flush()
        self.shown = True

    def say(self, text: str) -> None:
        self.end()
        self.out.write(text)
        self.out.flush()

    def end(self) -> None:
        if self.tty and self.shown:
            self.out.write("\n")
            self.out.flush()
            self.shown = False


def run_locust(args: Any, out: Path, stream: IO[str], *, quiet: bool) -> Outcome:
    """Run locust headless for ``args`` into ``out`` (created), its progress and notes on
    ``stream``. Ctrl-C and SIGTERM are passed on to locust, which stops and writes its reports.
    """
    out.mkdir(parents=True, exist_ok=True)
    command = locust_command(args, out)
    started = time.monotonic()
    with (out / "locust.log").open("w") as log:
        # its own session: Ctrl-C reaches this process only, which passes it on once, so locust
        # stops cleanly and still writes its reports
        process = subprocess.Popen(
            command,
            env=child_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            start_new_session=True,
        )
        progress = Progress(stream, log, quiet=quiet)
        assert process.stdout is not None
        threading.Thread(target=_reap_group, args=(process,), daemon=True).start()
        stopped: list[int] = []
        previous = _forward_sigterm(process, stopped)
        try:
            while True:
                try:
                    for raw in process.stdout:
                        progress.feed(raw)
                    break
                except KeyboardInterrupt:
                    stopped.append(signal.SIGINT)
                    process.send_signal(signal.SIGINT)
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
        code = _wait(process)
        progress.end()
    prefix = out / "load"
    summary = read_summary(prefix) if Path(f"{prefix}_stats.csv").exists() else None
    workers_path = Path(f"{prefix}_workers.json")
    workers = json.loads(workers_path.read_text()) if workers_path.exists() else []
    took = time.monotonic() - started
    return Outcome(
        code, summary, progress.notes, progress.era, workers, out, took, interrupted=bool(stopped)
    )


def parameters(args: Any) -> dict[str, Any]:
    """The run's parameters, for the JSON summary."""
    return {
        "url": args.url,
        "users": args.users,
        "spawn_rate": args.spawn_rate if args.spawn_rate is not None else args.users,
        "run_time": args.run_time,
        "era": args.era,
        "user_classes": [USER_CLASSES[c] for c in args.user_classes or ()] or "all",
        "mix": getattr(args, "mix", "") or None,
        "shape": getattr(args, "shape", None),
        "tool": args.tool or None,
        "processes": args.processes,
        "master": args.master,
        "expect_workers": args.expect_workers if args.master else None,
        "fail_on": list(args.fail_on),
    }


def exit_status(outcome: Outcome, verdicts: list[Verdict], thresholds: bool) -> int:
    """0, 1, 2, 3 or `EXIT_THRESHOLDS` (see `EPILOG`)."""
    if outcome.code == EXIT_NOTHING_TO_RUN:
        return EXIT_NOTHING_TO_RUN
    if outcome.summary is None or outcome.code != 0:
        return 2
    if thresholds:
        return EXIT_THRESHOLDS if any(v.failed for v in verdicts) else 0
    return 1 if outcome.summary.failures else 0


def format_workers(workers: list[dict[str, Any]], summary: Summary) -> str:
    """``load processes: 2; worker 0: 5123 requests (2561.5 req/s), worker 1: ...``."""
    total = summary.total
    seconds = total.requests / total.rps if total is not None and total.rps else 0.0
    shares = ", ".join(
        f"worker {w['index']}: {w['requests']} requests"
        + (f" ({w['requests'] / seconds:.1f} req/s)" if seconds else "")
        for w in workers
    )
    return f"load processes: {len(workers)}; {shares}"


def run(args: Any, out_stream: IO[str] | None = None) -> int:
    """Run the load test (or the worker, or the comparison); the exit status of `EPILOG`."""
    stdout = out_stream or sys.stdout
    try:
        thresholds = check_usage(args)
    except UsageError as exc:
        print(f"mcpfast load: error: {exc}", file=sys.stderr)
        return 2
    if importlib.util.find_spec("locust") is None:  # never imported here: it would bring gevent in
        print("mcpfast load needs locust: pip install 'mcpfast[load]'", file=sys.stderr)
        return 2
    if args.compare:
        return run_compare(args, thresholds, stdout, run_locust)
    out = Path(args.out)
    if args.web:
        out.mkdir(parents=True, exist_ok=True)
        print(
            f"mcpfast load: locust's web UI on http://127.0.0.1:{args.web_port} (Ctrl-C to stop)",
            file=stdout,
        )
        return _wait(subprocess.Popen(locust_command(args, out), env=child_env()))
    if args.worker:
        return run_worker(args, stdout)
    human = sys.stderr if args.json == "-" else stdout
    if not args.quiet:
        print(
            f"mcpfast load: {args.url} for {args.run_time} with {args.users} users"
            + (f" on {args.expect_workers} workers" if args.master else "")
            + f"; reports in {out}/",
            file=human,
        )
    outcome = run_locust(args, out, human, quiet=args.quiet)
    verdicts = evaluate(thresholds, outcome.summary) if outcome.summary is not None else []
    status = exit_status(outcome, verdicts, bool(thresholds))
    json_path = args.json or str(out / "summary.json")
    document = summary_document(
        outcome.summary or Summary([], None, []),  # nothing ran: the notes say why
        parameters=parameters(args),
        era=outcome.era,
        notes=outcome.notes,
        verdicts=verdicts,
        workers=outcome.workers,
        exit_status=status,
    )
    write_document(document, json_path, stdout)
    if status == EXIT_NOTHING_TO_RUN:
        if args.quiet:  # the reason, said only in the notes
            print("\n".join(f"mcpfast load: {n}" for n in outcome.notes), file=human)
        print(f"mcpfast load: no load was run; locust's log: {outcome.log_path}", file=human)
        return status
    if outcome.summary is None:
        print(
            f"mcpfast load: locust failed (exit {outcome.code}); its log, {outcome.log_path}:",
            file=human,
        )
        lines = outcome.log_path.read_text().splitlines(keepends=True)
        print("".join(lines[-30:]), file=human)
        return 2
    _print_results(args, outcome, verdicts, human, json_path)
    return status


def _print_results(
    args: Any, outcome: Outcome, verdicts: list[Verdict], human: IO[str], json_path: str
) -> None:
    """The summary (unless it went to stdout as JSON), the thresholds, the reports, the chart."""
    summary = outcome.summary
    assert summary is not None
    if args.json != "-":
        print("", file=human)
        print(format_summary(summary), file=human)
    if outcome.workers:
        print(format_workers(outcome.workers, summary), file=human)
    if verdicts:
        print("", file=human)
        print(format_verdicts(verdicts), file=human)
    prefix, out = outcome.prefix, outcome.out
    chart = out / "chart.png"
    drew = write_chart(
        read_history(f"{prefix}_stats_history.csv"),
        chart,
        title=f"{args.url}: {args.users} users, {args.run_time}",
    )
    if args.quiet:
        return
    written = [
        str(path)
        for path in (
            Path(f"{prefix}_stats.csv"),
            Path(f"{prefix}_stats_history.csv"),
            Path(f"{prefix}_failures.csv"),
            out / "report.html",
            chart,
            Path(json_path),
            outcome.log_path,
        )
        if str(path) != "-" and path.exists()
    ]
    print("", file=human)
    print("reports: " + ", ".join(written), file=human)
    if not drew:
        print("(no chart: matplotlib is not installed; pip install 'mcpfast[load]')", file=human)
    print(f"took {outcome.took:.1f}s", file=human)


def run_worker(args: Any, stdout: IO[str]) -> int:
    """A worker of the master at ``--master-host``: its notes and errors on ``stdout``, its log
    in ``--out``; 0 when it ran until its master quit, 2 when it could not (no master)."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    where = f"{args.master_host}:{args.master_port}"
    if not args.quiet:
        print(f"mcpfast load: a worker of the master at {where}; its log in {out}/", file=stdout)
    outcome = run_locust(args, out, stdout, quiet=args.quiet)
    if outcome.code != 0:
        print(
            f"mcpfast load: the worker failed (exit {outcome.code}); its log: {outcome.log_path}",
            file=stdout,
        )
        return 2
    if not args.quiet:
        print(f"mcpfast load: the master at {where} quit; took {outcome.took:.1f}s", file=stdout)
    return 0


GROUP_GRACE = 5.0
"""How long the processes locust forked (``--processes``) may outlive its main process."""


def _reap_group(process: subprocess.Popen[Any]) -> None:
    """Once locust's main process has exited, kill what is left of its process group after
    `GROUP_GRACE`: the workers of a master that exited early (nothing to run) would otherwise
    hold its output open until their heartbeat times out (60 s)."""
    process.wait()
    time.sleep(GROUP_GRACE)
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # all gone, as after every ordinary run
        pass


def _wait(process: subprocess.Popen[Any]) -> int:
    while True:
        try:
            return process.wait()
        except KeyboardInterrupt:
            process.send_signal(signal.SIGINT)


def _forward_sigterm(process: subprocess.Popen[Any], stopped: list[int]) -> Any:
    """Pass SIGTERM on to locust (which then stops and writes its reports), noted in
    ``stopped``; the previous handler, or None outside the main thread."""

    def forward(*_: Any) -> None:
        stopped.append(signal.SIGTERM)
        process.send_signal(signal.SIGTERM)

    try:
        return signal.signal(signal.SIGTERM, forward)
    except ValueError:
        return None


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m mcpfast.load.runner URL ...`` (the same as ``mcpfast load``)."""
    parser = argparse.ArgumentParser(prog="mcpfast load")
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
