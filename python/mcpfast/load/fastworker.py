"""A fast-engine worker, ``mcpfast load --worker --engine fast --master-host H``: it connects to
its master (`mcpfast.load.fastdist`, which tells the conversation), runs the shares it is given
on load processes of this host (`mcpfast.load.fastrun`) and sends their tallies back.

While they run, a thread reads the master's side of the connection (`Watch`): a ``stop`` (Ctrl-C
on the master) stops them early as a SIGTERM here would (each writes its tally so far), and so
does the master going away, after which the worker exits 2 saying so instead of running on.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from .fast import PLAN_TIMEOUT, _say, read_tallies, write_plan
from .fastrun import run_processes
from .fastwire import (
    EXIT_FAILED,
    GRACE,
    HELLO,
    SECRET_ENV,
    SEND_WAIT,
    VERSION,
    WAIT,
    Peer,
    Seal,
    WireError,
    nonce,
    proof,
    proven,
    shared_secret,
)
from .processes import Progress

__all__ = ["CONNECT_WAIT", "Watch", "run_fast_worker"]

CONNECT_WAIT = 60.0
"""Seconds a worker tries to reach its master (which may start after it)."""
CONNECT_RETRY = 0.5
RESTOP = 1.0
"""Seconds a `Watch` waits to learn that a stop came too early, and then to say it again."""


def run_fast_worker(args: Any, stdout: IO[str]) -> int:
    """A fast-engine worker of the master at ``--master-host``: its lines and live progress on
    ``stdout``, its load processes' log and tallies in ``--out``; 0 once the master took its
    tallies, 2 when it could not (the line says why)."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    where = f"{args.master_host}:{args.master_port}"
    started = time.monotonic()
    _say(stdout, f"a fast-engine worker of the master at {where}; its log in {out}/", args.quiet)
    try:
        with _connect(args.master_host, args.master_port) as sock:
            master = Peer(sock, f"the master at {where}")
            welcome = _greeted(master, _processes(args), shared_secret())
            run = master.receive("run", float(welcome["start_within"]) + WAIT)["run"]
            count = _run(args, out, run, master, stdout)
    except WireError as exc:
        _say(stdout, f"the worker failed: {exc}", False)
        return EXIT_FAILED
    took = time.monotonic() - started
    said = f"the master at {where} took the tallies of its {_processes_said(count)}"
    _say(stdout, f"{said}; took {took:.1f}s", args.quiet)
    return 0


def _greeted(master: Peer, processes: int, secret: bytes | None) -> dict[str, Any]:
    """Say hello to ``master`` (this worker runs ``processes`` load processes) and, with
    ``secret``, check its proof and send ours; its welcome.

    Raises:
        WireError: refused, silent, or (with ``secret``) a master that does not prove it
            holds the same secret (nothing of ours is sent to it).
    """
    ours = nonce()
    hello = {"hello": HELLO, "version": VERSION, "processes": processes, "nonce": ours}
    master.send(hello | {"secret": secret is not None})
    welcome: dict[str, Any] = master.receive("welcome", PLAN_TIMEOUT + WAIT)["welcome"]
    if secret is None:
        return welcome
    theirs = welcome.get("nonce")
    if not isinstance(theirs, str) or not proven(
        secret, "master", theirs, ours, welcome.get("proof")
    ):
        raise WireError(f"{master.name} did not prove the shared secret ({SECRET_ENV})")
    master.send({"proof": proof(secret, "worker", ours, theirs)})
    master.sealed(Seal(secret, "worker", theirs, ours))
    return welcome


def _processes(args: Any) -> int:
    """This worker's load processes: ``--processes`` as `_shares` reads it (0: one; -1: one
    per core)."""
    if args.processes > 0:
        return int(args.processes)
    return (os.cpu_count() or 1) if args.processes < 0 else 1


def _connect(host: str, port: int) -> socket.socket:
    """A connection to the master, tried again until `CONNECT_WAIT` (it may not listen yet).

    Raises:
        WireError: not reached by then, or ``host`` is not a host.
    """
    deadline = time.monotonic() + CONNECT_WAIT
    while True:
        try:
            return socket.create_connection((host, port), timeout=WAIT)
        except socket.gaierror as exc:
            raise WireError(f"--master-host {host}: {exc}") from None
        except OSError as exc:
            if time.monotonic() >= deadline:
                raise WireError(
                    f"could not reach the master at {host}:{port} within {CONNECT_WAIT:g}s ({exc})"
                ) from None
            time.sleep(CONNECT_RETRY)


def _run(args: Any, out: Path, run: dict[str, Any], master: Peer, stdout: IO[str]) -> int:
    """Run the shares of ``run`` on this host's load processes, watched (`Watch`), and send
    their tallies (None for one stopped before it wrote any); how many processes ran.

    Raises:
        WireError: the master went away, or a load process failed (the master is told).
    """
    shares = run["shares"]
    plan_path = out / "plan.json"
    write_plan(plan_path, run["plan"])
    count = sum(int(share["count"]) for share in shares)
    seconds = float(shares[0]["duration"])
    said = f"running {count} connections for {seconds:g}s on {_processes_said(len(shares))}"
    _say(stdout, said, args.quiet)
    with Watch(master, seconds + GRACE + WAIT) as watch, (out / "locust.log").open("w") as log:
        progress = Progress(stdout, log, quiet=args.quiet)
        ran = run_processes(plan_path, shares, out, log, progress, count)
    for note in ran.notes:
        _say(stdout, note, False)
    if watch.gone is not None:
        raise WireError(f"{watch.gone}; its load processes were stopped")
    if ran.stopped:
        by = f"the master's {watch.stopped}" if watch.stopped else ran.stopped
        _say(stdout, f"stopped early ({by}): the tallies so far go to the master", False)
    if ran.code != 0 and not ran.stopped:  # stopped: each wrote its tally, or none (None)
        why = f"a load process exited {ran.code} (the worker's log: {out / 'locust.log'})"
        master.send({"failed": why})
        raise WireError(why)
    master.send({"tallies": read_tallies(out, len(shares))}, SEND_WAIT)
    watch.wait_done(WAIT)
    return len(shares)


def _processes_said(count: int) -> str:
    return f"{count} load process" + ("" if count == 1 else "es")


class Watch:
    """The master's side of the connection from the run on, read by a thread of its own (its
    only reader from then on): ``stop``, or the master going away (`gone` says how), stops the
    run (SIGTERM to the main thread, which `mcpfast.load.fastrun.run_processes` passes on to
    the load processes); ``done`` ends the conversation (`wait_done`).

    Within the ``with`` block SIGTERM is this watch's, but while ``run_processes`` holds it: a
    stop that comes before (this watch's handler drops it, and says so) is said again `RESTOP`
    seconds later, until one is taken or the run has ended.
    """

    def __init__(self, master: Peer, seconds: float) -> None:
        self.master = master
        self.seconds = seconds
        self.gone: str | None = None
        self.stopped: str | None = None
        """What stopped the master, when it said ``stop``."""
        self.ended = threading.Event()
        self._ran = threading.Event()
        self._dropped = threading.Event()
        self._lock = threading.Lock()
        self._previous: Any = None

    def __enter__(self) -> Watch:
        self._previous = signal.signal(signal.SIGTERM, lambda *_: self._dropped.set())
        threading.Thread(target=self._read, daemon=True).start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with self._lock:
            self._ran.set()
        signal.signal(signal.SIGTERM, self._previous)

    def _read(self) -> None:
        try:
            said = self.master.receive("done", self.seconds, also=("stop",))
            while "done" not in said:
                self.stopped = str(said["stop"])
                self._stop()
                said = self.master.receive("done", self.seconds, also=("stop",))
        except WireError as exc:
            self.gone = str(exc)
            self._stop()
        finally:
            self.ended.set()

    def _stop(self) -> None:
        main = threading.main_thread().ident
        assert main is not None
        while True:
            with self._lock:
                if self._ran.is_set():
                    return
                self._dropped.clear()
                signal.pthread_kill(main, signal.SIGTERM)
            if not self._dropped.wait(RESTOP) or self._ran.wait(RESTOP):
                return  # taken by run_processes, or the run has ended

    def wait_done(self, seconds: float) -> None:
        """Wait for the master's ``done``.

        Raises:
            WireError: it went away instead, or said nothing within ``seconds``.
        """
        if not self.ended.wait(seconds):
            raise WireError(f"{self.master.name} sent no done within {seconds:g}s")
        if self.gone is not None:
            raise WireError(self.gone)
