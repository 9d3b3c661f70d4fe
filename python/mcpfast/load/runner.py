"""``mcpfast load URL``: the locust suite headless in a child process, live progress, a summary
and the report files (CSV, HTML, PNG); ``--web`` runs locust's web UI instead.

locust runs on gevent, which must never be imported into a Trio process: this module only starts
``python -m locust -f <mcpfast/load/locustfile.py>`` and reads what it writes.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from . import EXIT_NOTHING_TO_RUN, LOCUSTFILE, NOTE_PREFIX, PROGRESS_PREFIX
from .report import format_summary, read_history, read_summary, write_chart

USER_CLASSES = {
    "tools": "ToolCallUser",
    "lists": "DiscoverUser",
    "resources": "ResourceUser",
    "session": "LegacySessionUser",
    "listen": "ListenUser",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``load`` subcommand's options."""
    parser.add_argument("url", help="the server's MCP endpoint, e.g. http://127.0.0.1:8000/mcp")
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
        "--processes", type=int, default=0, help="locust worker processes (-1: one per core)"
    )
    parser.add_argument(
        "--out", default="mcpfast-load", help="directory for the reports (default ./mcpfast-load)"
    )
    parser.add_argument(
        "--web", action="store_true", help="open locust's web UI instead of running headless"
    )
    parser.add_argument("--web-port", type=int, default=8089)
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
        or getattr(args, "dpop", False)
    ):
        raise SystemExit("--client-secret-env, --scope, --token-url and --dpop need --client-id")
    if client_id and not secret:
        raise SystemExit("--client-id needs --client-secret-env VAR (the secret's variable)")
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
        "--host",
        args.url,
        "--users",
        str(args.users),
        "--spawn-rate",
        str(args.spawn_rate if args.spawn_rate is not None else args.users),
        "--run-time",
        args.run_time,
        "--mcp-era",
        args.era,
        "--mcp-stream-seconds",
        str(args.stream_seconds),
    ]
    if args.tool:
        command += ["--mcp-tool", args.tool]
    if args.arguments:
        command += ["--mcp-arguments", args.arguments]
    check_auth(args)
    command += auth_options(args)
    if args.processes:
        command += ["--processes", str(args.processes)]
    if args.web:
        command += ["--web-host", "127.0.0.1", "--web-port", str(args.web_port), "--class-picker"]
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
    command += [USER_CLASSES[c] for c in args.user_classes or ()]
    return command


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


class Progress:
    """Turns the locustfile's progress lines into one live status line (a new line each time
    when the output is not a terminal) and its notes into ``mcpfast load: ...`` lines (kept in
    ``notes`` too); errors are shown as ``locust: ...``; everything goes to the log but the
    progress lines."""

    SHOWN = ("/ERROR/", "/CRITICAL/", "/WARNING/mcpfast.load:")

    def __init__(self, out: IO[str], log: IO[str]) -> None:
        self.out = out
        self.log = log
        self.tty = out.isatty()
        self.last: tuple[float, int] | None = None
        self.shown = False
        self.notes: list[str] = []

    def feed(self, raw: str) -> None:
        if raw.startswith(NOTE_PREFIX):
            text = raw[len(NOTE_PREFIX) :].rstrip("\n")
            self.notes.append(text)
            self.log.write(raw)
            self.end()
            self.out.write(f"mcpfast load: {text}\n")
            self.out.flush()
            return
        if not raw.startswith(PROGRESS_PREFIX):
            self.log.write(raw)
            if any(mark in raw for mark in self.SHOWN) or raw.startswith("Traceback"):
                self.end()
                self.out.write("locust: " + raw)
                self.out.flush()
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
        text = progress_text(line)
        if self.tty:
            self.out.write("\r\x1b[2K" + text)
        else:
            self.out.write(text + "\n")
        self.out.flush()
        self.shown = True

    def end(self) -> None:
        if self.tty and self.shown:
            self.out.write("\n")
            self.out.flush()
            self.shown = False


def run(args: Any, out_stream: IO[str] | None = None) -> int:
    """Run the load test; 0 when no request failed, 1 when some did, 2 when locust could not run,
    3 when nothing could run (the server offers none of the selected user classes' features, or
    did not answer the probe: the lines above say why)."""
    stdout = out_stream or sys.stdout
    if importlib.util.find_spec("locust") is None:  # never imported here: it would bring gevent in
        print("mcpfast load needs locust: pip install 'mcpfast[load]'", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    command = locust_command(args, out)
    if args.web:
        print(
            f"mcpfast load: locust's web UI on http://127.0.0.1:{args.web_port} (Ctrl-C to stop)",
            file=stdout,
        )
        return _wait(subprocess.Popen(command, env=child_env()))
    print(
        f"mcpfast load: {args.url} for {args.run_time} with {args.users} users; reports in {out}/",
        file=stdout,
    )
    log_path = out / "locust.log"
    started = time.monotonic()
    with log_path.open("w") as log:
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
        progress = Progress(stdout, log)
        assert process.stdout is not None
        previous = _forward_sigterm(process)
        try:
            while True:
                try:
                    for raw in process.stdout:
                        progress.feed(raw)
                    break
                except KeyboardInterrupt:
                    process.send_signal(signal.SIGINT)
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
        code = _wait(process)
        progress.end()
    if code == EXIT_NOTHING_TO_RUN:
        print(f"mcpfast load: no load was run; locust's log: {log_path}", file=stdout)
        return EXIT_NOTHING_TO_RUN
    prefix = out / "load"
    if not Path(str(prefix) + "_stats.csv").exists():
        print(f"mcpfast load: locust failed (exit {code}); its log, {log_path}:", file=stdout)
        print("".join(log_path.read_text().splitlines(keepends=True)[-30:]), file=stdout)
        return 2
    summary = read_summary(prefix)
    print("", file=stdout)
    print(format_summary(summary), file=stdout)
    chart = out / "chart.png"
    drew = write_chart(
        read_history(str(prefix) + "_stats_history.csv"),
        chart,
        title=f"{args.url}: {args.users} users, {args.run_time}",
    )
    written = [
        str(path)
        for path in (
            Path(f"{prefix}_stats.csv"),
            Path(f"{prefix}_stats_history.csv"),
            Path(f"{prefix}_failures.csv"),
            out / "report.html",
            chart,
            log_path,
        )
        if path.exists()
    ]
    print("", file=stdout)
    print("reports: " + ", ".join(written), file=stdout)
    if not drew:
        print("(no chart: matplotlib is not installed; pip install 'mcpfast[load]')", file=stdout)
    print(f"took {time.monotonic() - started:.1f}s", file=stdout)
    if code != 0:
        return 2
    return 1 if summary.failures else 0


def _wait(process: subprocess.Popen[Any]) -> int:
    while True:
        try:
            return process.wait()
        except KeyboardInterrupt:
            process.send_signal(signal.SIGINT)


def _forward_sigterm(process: subprocess.Popen[Any]) -> Any:
    """Pass SIGTERM on to locust (which then stops and writes its reports); the previous handler,
    or None outside the main thread."""
    try:
        return signal.signal(signal.SIGTERM, lambda *_: process.send_signal(signal.SIGTERM))
    except ValueError:
        return None


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m mcpfast.load.runner URL ...`` (the same as ``mcpfast load``)."""
    parser = argparse.ArgumentParser(prog="mcpfast load", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
