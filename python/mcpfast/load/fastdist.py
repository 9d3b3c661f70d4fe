"""``mcpfast load --engine fast`` over several hosts. ``--master --expect-workers N`` builds the
plan once (`mcpfast.load.fast.planned`), waits for N ``--worker --engine fast`` processes, gives
each its load processes' shares of the connections and of the rate (`_shares`, the local
rule, over every worker's ``--processes``), and merges the tallies they send back as a local
run merges its load processes' (`_Merged`, `conclude`): one summary, one ``summary.json``,
``--fail-on`` judged once, a row per worker.

The conversation, on `mcpfast.load.fastwire` (unauthenticated: bind the master to a private
interface)::

    worker -> master   {"hello": HELLO, "version": VERSION, "processes": K}
    master -> worker   {"welcome": {"index": I, "start_within": SECONDS}} or {"refused": WHY}
    master -> worker   {"run": {"plan": PLAN (its connections only), "shares": [SHARE, ...]}}
    worker -> master   {"tallies": [TALLY, ...]} or {"failed": WHY}
    master -> worker   {"done": true}

A worker whose connection closes, that fails, or that is silent past the run's end and `GRACE`
fails the run: the master says which, closes every connection and exits 2. A worker knows the
engine from its own ``--engine fast``, not from its master: a locust master speaks ZeroMQ, whose
first bytes read as a length over `MAX_MESSAGE` (said as such).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from . import EXIT_NOTHING_TO_RUN
from .fast import (
    PLAN_TIMEOUT,
    _Merged,
    _run_processes,
    _say,
    _shares,
    conclude,
    planned,
    rate_stages,
    read_tallies,
)
from .fastmix import apportion
from .fastwire import HELLO, VERSION, WAIT, Peer, WireError
from .shapes import parse_duration
from .summary import Outcome

__all__ = ["GRACE", "run_fast_master", "run_fast_worker"]

GRACE = 120.0
"""Seconds past the run time a worker has to send its tallies (its load processes start, the
last requests time out)."""
SEND_WAIT = 60.0
"""Seconds a plan or a worker's tallies may take to send."""
CONNECT_WAIT = 60.0
"""Seconds a worker tries to reach its master (which may start after it)."""
CONNECT_RETRY = 0.5
EXIT_FAILED = 2


class RunFailed(Exception):
    """The distributed run cannot go on (the message says why, and which worker)."""


@dataclass
class Worker:
    """A worker as its master sees it: the wire to it, its load processes, and their shares."""

    peer: Peer
    processes: int
    shares: list[dict[str, Any]] = field(default_factory=list)


# ------------------------------------------------------------------------------ the master


def run_fast_master(args: Any, out: Path, stream: IO[str], *, quiet: bool) -> Outcome:
    """`mcpfast.load.fast.run_fast`'s contract, the load run by ``--expect-workers`` workers:
    exit status 2, a note saying why, when they do not all connect within
    ``--expect-workers-max-wait`` seconds or one fails or goes away before its tallies."""
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    seconds = parse_duration(args.run_time)
    stages = rate_stages(args, seconds)
    notes: list[str] = []
    workers: list[Worker] = []
    with (out / "locust.log").open("w") as log:

        def say(text: str) -> None:
            log.write(f"mcpfast load: {text}\n")
            _say(stream, text, quiet)

        try:
            with _listen(args) as listener:
                plan = planned(args, log, notes, stream, quiet=quiet)
                if plan is None:
                    return Outcome(EXIT_NOTHING_TO_RUN, None, notes, None, [], out, 0.0)
                _accept(listener, workers, args, say)
            said = ", ".join(w.peer.name for w in workers)
            say(f"{len(workers)} workers connected ({said}); the run starts")
            merged = _run(workers, args, plan, stages, seconds)
        except (RunFailed, WireError) as exc:
            notes.append(f"the distributed run failed: {exc}")
            say(notes[-1])
            took = time.monotonic() - started
            return Outcome(EXIT_FAILED, None, notes, None, [], out, took)
        finally:
            for worker in workers:
                worker.peer.close()
    summary, rows, extra = conclude(args, plan, merged, stages, notes, stream, quiet=quiet)
    took = time.monotonic() - started
    return Outcome(
        0, summary, notes, plan["era"], _per_worker(rows, workers), out, took, extra=extra
    )


def _listen(args: Any) -> socket.socket:
    """The master's listening socket at ``--master-bind-host`` (``*``: every interface).

    Raises:
        RunFailed: it cannot listen there.
    """
    host = "" if args.master_bind_host == "*" else args.master_bind_host
    try:
        return socket.create_server((host, args.master_bind_port), backlog=args.expect_workers)
    except OSError as exc:
        where = f"{args.master_bind_host}:{args.master_bind_port}"
        raise RunFailed(f"cannot listen on {where} ({exc})") from None


def _accept(
    listener: socket.socket, workers: list[Worker], args: Any, say: Callable[[str], None]
) -> None:
    """Add ``--expect-workers`` workers to ``workers``, each welcomed with its index, within
    ``--expect-workers-max-wait`` seconds; a peer that is not one is refused, said once per
    host (a locust worker reconnects and is refused again).

    Raises:
        RunFailed: fewer connected in time.
    """
    wait = float(args.expect_workers_max_wait)
    deadline = time.monotonic() + wait
    refused: set[str] = set()
    while len(workers) < args.expect_workers:
        listener.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            sock, (host, port, *_) = listener.accept()
        except TimeoutError:
            raise RunFailed(
                f"{len(workers)} of {args.expect_workers} workers connected within {wait:g}s "
                "(--expect-workers-max-wait); start them with: mcpfast load --worker "
                "--engine fast --master-host THIS_HOST"
            ) from None
        peer = Peer(sock, f"worker {len(workers)} at {host}:{port}")
        try:
            processes = _greet(peer, len(workers), deadline)
        except WireError as exc:
            if host not in refused:
                refused.add(host)
                say(f"refused a peer at {host}:{port}: {exc}")
            peer.close()
            continue
        workers.append(Worker(peer, processes))


def _greet(peer: Peer, index: int, deadline: float) -> int:
    """Read ``peer``'s hello and welcome it as worker ``index`` (or refuse it); its number of
    load processes.

    Raises:
        WireError: no hello, or one of another version or without a number of processes (the
            peer is told why).
    """
    hello = peer.receive("hello", WAIT)
    why = _refusal(hello)
    if why is not None:
        peer.send({"refused": why})
        raise WireError(why)
    start_within = max(deadline - time.monotonic(), 0.0)
    peer.send({"welcome": {"index": index, "start_within": start_within}})
    return int(hello["processes"])


def _refusal(hello: dict[str, Any]) -> str | None:
    """Why ``hello`` is not one of a worker this master can run, or None."""
    if hello["hello"] != HELLO or hello.get("version") != VERSION:
        theirs = f"{hello['hello']!r} version {hello.get('version')!r}"
        return f"this master speaks {HELLO!r} version {VERSION}, not {theirs}"
    processes = hello.get("processes")
    if not isinstance(processes, int) or processes < 1:
        return f"a worker runs at least 1 load process, not {processes!r}"
    return None


def _run(
    workers: list[Worker],
    args: Any,
    plan: dict[str, Any],
    stages: list[tuple[float, float]],
    seconds: float,
) -> _Merged:
    """Share the run's load processes among the workers (`_shares` over all of theirs, then
    `apportion` by each one's number), send each its connections and shares, and merge the
    tallies they send back.

    Raises:
        RunFailed: a worker went away, failed, sent nothing within the run time and `GRACE`,
            or sent tallies that are not its shares'.
        WireError: a plan could not be sent.
    """
    every = argparse.Namespace(**{**vars(args), "processes": sum(w.processes for w in workers)})
    shares = _shares(every, plan["groups"], stages, seconds)
    counts = apportion(len(shares), [w.processes for w in workers])
    at = 0
    for worker, count in zip(workers, counts, strict=True):
        worker.shares, at = shares[at : at + count], at + count
        base = int(worker.shares[0]["first"])
        end = int(worker.shares[-1]["first"]) + int(worker.shares[-1]["count"])
        mine = {**plan, "cycles": plan["cycles"][base:end]}
        local = [{**share, "first": int(share["first"]) - base} for share in worker.shares]
        worker.peer.send({"run": {"plan": mine, "shares": local}}, SEND_WAIT)
    merged = _Merged(len(plan["kinds"]))
    for worker, tallies in zip(workers, _collect(workers, seconds + GRACE), strict=True):
        try:
            for share, tally in zip(worker.shares, tallies, strict=True):
                merged.add(tally, int(share["first_kind"]))
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            why = f"{worker.peer.name} sent tallies that are not its shares' ({exc!r})"
            raise RunFailed(why) from None
    return merged


def _collect(workers: list[Worker], seconds: float) -> list[list[dict[str, Any]]]:
    """Each worker's tallies, read side by side (the first that fails ends the wait), each
    worker told ``done`` once its are in.

    Raises:
        RunFailed: a worker went away, failed, or sent nothing within ``seconds``.
    """
    results: queue.Queue[tuple[int, dict[str, Any] | WireError]] = queue.Queue()

    def read(index: int) -> None:
        try:
            results.put((index, workers[index].peer.receive("tallies", seconds)))
        except WireError as exc:
            results.put((index, exc))

    for index in range(len(workers)):
        threading.Thread(target=read, args=(index,), daemon=True).start()
    tallies: dict[int, list[dict[str, Any]]] = {}
    while len(tallies) < len(workers):
        index, got = results.get()  # each read ends within ``seconds``
        if isinstance(got, WireError):
            raise RunFailed(str(got))
        tallies[index] = got["tallies"]
        workers[index].peer.send({"done": True})
    return [tallies[i] for i in range(len(workers))]


def _per_worker(rows: list[dict[str, Any]], workers: list[Worker]) -> list[dict[str, Any]]:
    """Each worker's row: its name, load processes, requests and failures (its processes'
    ``rows``, in share order, added up)."""
    shares, at = [], 0
    for index, worker in enumerate(workers):
        part, at = rows[at : at + len(worker.shares)], at + len(worker.shares)
        shares.append(
            {
                "index": index,
                "worker": worker.peer.name,
                "processes": len(worker.shares),
                "requests": sum(r["requests"] for r in part),
                "failures": sum(r["failures"] for r in part),
            }
        )
    return shares


# ------------------------------------------------------------------------------ the worker


def run_fast_worker(args: Any, stdout: IO[str]) -> int:
    """A fast-engine worker of the master at ``--master-host``: its lines on ``stdout``, its
    load processes' log and tallies in ``--out``; 0 once the master took its tallies, 2 when
    it could not (the line says why)."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    where = f"{args.master_host}:{args.master_port}"
    started = time.monotonic()
    _say(stdout, f"a fast-engine worker of the master at {where}; its log in {out}/", args.quiet)
    try:
        with _connect(args.master_host, args.master_port) as sock:
            master = Peer(sock, f"the master at {where}")
            hello = {"hello": HELLO, "version": VERSION, "processes": _processes(args)}
            master.send(hello)
            welcome = master.receive("welcome", PLAN_TIMEOUT + WAIT)["welcome"]
            run = master.receive("run", float(welcome["start_within"]) + WAIT)["run"]
            tallies = _work(args, out, run, stdout)
            if isinstance(tallies, str):
                master.send({"failed": tallies})
                raise WireError(tallies)
            master.send({"tallies": tallies}, SEND_WAIT)
            master.receive("done", WAIT)
    except WireError as exc:
        _say(stdout, f"the worker failed: {exc}", False)
        return EXIT_FAILED
    took = time.monotonic() - started
    said = f"the master at {where} took the tallies of its {_processes_said(len(tallies))}"
    _say(stdout, f"{said}; took {took:.1f}s", args.quiet)
    return 0


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


def _work(args: Any, out: Path, run: dict[str, Any], stdout: IO[str]) -> list[Any] | str:
    """Run the shares the master gave this worker on its load processes: their tallies, or
    why not."""
    shares = run["shares"]
    plan_path = out / "plan.json"
    plan_path.write_text(json.dumps(run["plan"]))
    count = sum(int(share["count"]) for share in shares)
    seconds = float(shares[0]["duration"])
    said = f"running {count} connections for {seconds:g}s on {_processes_said(len(shares))}"
    _say(stdout, said, args.quiet)
    with (out / "locust.log").open("w") as log:
        code = _run_processes(plan_path, shares, out, log)
    if code != 0:
        return f"a load process exited {code} (the worker's log: {out / 'locust.log'})"
    return read_tallies(out, len(shares))


def _processes_said(count: int) -> str:
    return f"{count} load process" + ("" if count == 1 else "es")
