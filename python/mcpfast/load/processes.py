"""The locust process of a run: started with its environment (`child_env`), its output read live
into a status line and notes (`Progress`), Ctrl-C and SIGTERM passed on so that it still writes
its reports, and what it leaves behind reaped (`run_locust`).

locust runs on gevent, which must never be imported into a Trio process: this module only starts
``python -m locust -f <mcpfast/load/locustfile.py>`` and reads what it writes.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any

from . import NOTE_PREFIX, PROGRESS_PREFIX
from .command import locust_command
from .report import read_summary
from .summary import Outcome

__all__ = ["Progress", "child_env", "run_locust", "wait"]


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
    """One progress line (the suite's JSON, with ``rps`` over the last interval) as text; the
    failures that were refusals for now (429, -32023) are said apart when there are some."""

    def ms(v: Any) -> str:
        return f"{v:.0f}" if isinstance(v, (int, float)) else "-"

    limited = line.get("rate_limited") or 0
    return (
        f"{line.get('elapsed', 0):6.1f}s  users {line.get('users', 0):>4}  "
        f"req/s {line.get('rps', 0):>8.1f}  "
        f"p50 {ms(line.get('p50')):>5} ms  p95 {ms(line.get('p95')):>5} ms  "
        f"requests {line.get('requests', 0):>8}  failures {line.get('failures', 0)}"
        + (f" (rate limited {limited})" if limited else "")
    )


_ERA = re.compile(r"/INFO/mcpfast\.load: era (\S+) \((.*?)\); tool ")
_GREENLET = re.compile(r"Unhandled exception in greenlet: .*?<bound method (\w+\.\w+) ")
_FRAME = re.compile(r'^\s+File "(?:.*/)?([^/"]+)", line (\d+), in (\S+)')


def traceback_line(lines: list[str], where: str | None) -> str | None:
    """What a traceback of locust's output says, in one line: its last line (the exception), the
    innermost frame, and the greenlet it ended (``where``, when locust named it). None for
    locust's own race at exit with ``--processes`` (its CSV writer greenlet writes to the file
    that was just closed after the final reports were written): nothing is lost."""
    exception = lines[-1].strip()
    frames = [m for m in (_FRAME.match(line) for line in lines) if m is not None]
    if exception.startswith("ValueError: I/O operation on closed file") and any(
        m[3] == "stats_writer" for m in frames
    ):
        return None
    at = f" at {frames[-1][1]}:{frames[-1][2]} in {frames[-1][3]}" if frames else ""
    ended = f" (greenlet {where})" if where else ""
    return f"{exception}{at}{ended}; the traceback is in locust.log\n"


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
        self.traceback: list[str] | None = None
        """The lines of a traceback being read (said in one line once it ends)."""
        self.greenlet: str | None = None
        """The greenlet locust said ended with the exception whose traceback follows."""

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
            self._show(raw)
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

    def _show(self, raw: str) -> None:
        """Errors as ``locust: ...`` lines; a traceback as one (`traceback_line`)."""
        if self.traceback is not None:
            self.traceback.append(raw)
            if raw[:1].isspace():  # its frames (a chained traceback is said as two)
                return
            lines, self.traceback = self.traceback, None
            said = traceback_line(lines, self.greenlet)
            self.greenlet = None
            if said is not None:
                self.say("locust: " + said)
        elif raw.startswith("Traceback"):
            self.traceback = [raw]
        elif "Unhandled exception in greenlet" in raw:
            found = _GREENLET.search(raw)
            self.greenlet = found[1] if found is not None else "?"
        elif any(mark in raw for mark in self.SHOWN):
            self.say("locust: " + raw)

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
        code = wait(process)
        progress.end()
    prefix = out / "load"
    summary = read_summary(prefix) if Path(f"{prefix}_stats.csv").exists() else None
    workers_path = Path(f"{prefix}_workers.json")
    workers = json.loads(workers_path.read_text()) if workers_path.exists() else []
    took = time.monotonic() - started
    return Outcome(
        code, summary, progress.notes, progress.era, workers, out, took, interrupted=bool(stopped)
    )


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


def wait(process: subprocess.Popen[Any]) -> int:
    """``process``'s exit status, Ctrl-C passed on to it meanwhile (as SIGINT)."""
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
