"""``mcpfast load --engine fast`` over several hosts. ``--master --expect-workers N`` builds the
plan once (`mcpfast.load.fast.planned`), waits for N ``--worker --engine fast`` processes, gives
each its load processes' shares of the connections and of the rate (`_shares`, the local
rule, over every worker's ``--processes``), and merges the tallies they send back as a local
run merges its load processes' (`_Merged`, `conclude`): one summary, one ``summary.json``,
``--fail-on`` judged once, a row per worker.

The conversation, on `mcpfast.load.fastwire`::

    worker -> master   {"hello": HELLO, "version": VERSION, "processes": K, "nonce": NW,
                        "secret": HAS_ONE}
    master -> worker   {"welcome": {"index": I, "start_within": SECONDS[, "nonce": NM,
                                    "proof": PROOF]}} or {"refused": WHY}
    worker -> master   {"proof": PROOF}   (with a shared secret; every message after it,
                                          either way, sealed: `fastwire.Seal`)
    master -> worker   {"run": {"plan": PLAN (its connections only), "shares": [SHARE, ...]}}
    master -> worker   {"stop": WHY}      (Ctrl-C or SIGTERM on the master: the tallies so far)
    worker -> master   {"tallies": [TALLY or null, ...]} or {"failed": WHY}
    master -> worker   {"done": true}

A worker whose connection closes, that fails, or that is silent past the run's end and `GRACE`
fails the run: the master says which, closes every connection (the other workers then stop
their load processes: `mcpfast.load.fastworker`) and exits 2. The legacy sessions the plan
opened are closed at the end (`close_sessions`), whatever happened. A worker knows the engine
from its own ``--engine fast``, not from its master: a locust master or worker speaks ZeroMQ,
whose first bytes read as a length over the limit (`Frames`), said as such.

With a shared secret (`fastwire.SECRET_ENV` on the master and every worker) each end proves it
holds it before the plan is sent (`fastwire.proof`): a peer without it is refused and never
counted, and a worker leaves a master that cannot prove it; the plan (which carries the run's
token, if any) and everything after it are sealed. A master without one listens on a loopback
address only (`_listen`).
"""

from __future__ import annotations

import argparse
import ipaddress
import queue
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from . import EXIT_NOTHING_TO_RUN
from .fast import _Merged, _say, _shares, begin_run, conclude, planned
from .fastclose import close_sessions
from .fastmix import apportion
from .fastrun import _signals
from .fastwire import (
    EXIT_FAILED,
    GRACE,
    HELLO,
    HELLO_LIMIT,
    MAX_MESSAGE,
    SECRET_ENV,
    SEND_WAIT,
    VERSION,
    WAIT,
    Frames,
    Peer,
    Seal,
    WireError,
    nonce,
    proof,
    proven,
    shared_secret,
)
from .shapes import parse_duration
from .summary import Outcome

__all__ = ["RunFailed", "Worker", "run_fast_master"]


class RunFailed(Exception):
    """The distributed run cannot go on (the message says why, and which worker)."""


@dataclass
class Worker:
    """A worker as its master sees it: the wire to it, its load processes, their shares, and
    how many of their tallies were merged (one stopped early may have none)."""

    peer: Peer
    processes: int
    shares: list[dict[str, Any]] = field(default_factory=list)
    merged: int = 0


Say = Callable[..., None]
"""Says a line on the console and in the log (``note=True``: in the run's notes too)."""


def run_fast_master(args: Any, out: Path, stream: IO[str], *, quiet: bool) -> Outcome:
    """`mcpfast.load.fast.run_fast`'s contract, the load run by ``--expect-workers`` workers:
    exit status 2, a note saying why, when they do not all connect within
    ``--expect-workers-max-wait`` seconds or one fails or goes away before its tallies; Ctrl-C
    stops them early, the tallies so far reported as a partial run."""
    started, _, stages, notes = begin_run(args, out)
    with (out / "locust.log").open("w") as log:

        def say(text: str, *, note: bool = False) -> None:
            notes.extend([text] if note else [])
            log.write(f"mcpfast load: {text}\n")
            _say(stream, text, quiet)

        try:
            secret = shared_secret()
            with _listen(args, secret) as listener:
                plan = planned(args, log, notes, stream, quiet=quiet)
                if plan is None:
                    return Outcome(EXIT_NOTHING_TO_RUN, None, notes, None, [], out, 0.0)
                merged, stopped, workers = _distribute(listener, args, plan, stages, say, secret)
        except (RunFailed, WireError) as exc:
            say(f"the distributed run failed: {exc}", note=True)
            return Outcome(EXIT_FAILED, None, notes, None, [], out, time.monotonic() - started)
        if stopped:
            say(f"stopped early ({stopped}) after {merged.elapsed:.1f} s: a partial run", note=True)
    summary, rows, extra = conclude(args, plan, merged, stages, notes, stream, quiet=quiet)
    shares = _per_worker(rows, workers)
    took = time.monotonic() - started
    return Outcome(
        0, summary, notes, plan["era"], shares, out, took, extra=extra, interrupted=bool(stopped)
    )


def _distribute(
    listener: socket.socket,
    args: Any,
    plan: dict[str, Any],
    stages: list[tuple[float, float]],
    say: Say,
    secret: bytes | None,
) -> tuple[_Merged, str | None, list[Worker]]:
    """The workers accepted, the run given to them and their tallies merged; what stopped it
    early (None: it ran its course). Every worker's connection and the plan's sessions are
    closed at the end, whatever happened.

    Raises:
        RunFailed: as `_accept` and `_run`.
        WireError: a plan could not be sent.
    """
    workers: list[Worker] = []
    try:
        _accept(listener, workers, args, say, secret)
        listener.close()
        said = ", ".join(w.peer.name for w in workers)
        say(f"{len(workers)} workers connected ({said}); the run starts")
        merged, stopped = _run(workers, args, plan, stages, say)
        return merged, stopped, workers
    finally:
        for worker in workers:
            worker.peer.close()
        if (closed := close_sessions(plan)) is not None:
            say(closed, note=True)


def _listen(args: Any, secret: bytes | None) -> socket.socket:
    """The master's listening socket at ``--master-bind-host`` (``*``: every interface).

    Raises:
        RunFailed: it cannot listen there, or it is not a loopback address and there is no
            shared secret (any peer that reached it would be given the plan).
    """
    host = "" if args.master_bind_host == "*" else args.master_bind_host
    if secret is None and not _loopback(host):
        raise RunFailed(
            f"--master-bind-host {args.master_bind_host} without a shared secret: any peer "
            "that reached the port would be given the plan (the run's token in its requests); "
            f"set {SECRET_ENV} to the same secret on the master and every worker, or bind "
            "the master to 127.0.0.1"
        )
    try:
        return socket.create_server((host, args.master_bind_port), backlog=args.expect_workers)
    except OSError as exc:
        where = f"{args.master_bind_host}:{args.master_bind_port}"
        raise RunFailed(f"cannot listen on {where} ({exc})") from None


def _loopback(host: str) -> bool:
    """Whether ``host`` (an address, ``localhost``, or ``""``: every interface) is loopback."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # "" or a name: it may resolve to anything
        return False


def _accept(
    listener: socket.socket, workers: list[Worker], args: Any, say: Say, secret: bytes | None
) -> None:
    """Add ``--expect-workers`` workers to ``workers``, each welcomed with its index, within
    ``--expect-workers-max-wait`` seconds; a peer that is not one (or, with ``secret``, cannot
    prove it holds it) is refused, said once per host (a locust worker reconnects and is
    refused again).

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
        peer = Peer(sock, f"worker {len(workers)} at {host}:{port}", Frames(HELLO_LIMIT))
        try:
            processes = _greet(peer, len(workers), deadline, secret)
        except WireError as exc:
            if host not in refused:
                refused.add(host)
                say(f"refused a peer at {host}:{port}: {exc}")
            peer.close()
            continue
        workers.append(Worker(peer, processes))


def _greet(peer: Peer, index: int, deadline: float, secret: bytes | None) -> int:
    """Read ``peer``'s hello and welcome it as worker ``index`` (or refuse it); with
    ``secret``, prove it and take the worker's proof; its number of load processes.

    Raises:
        WireError: no hello, one of another version, without a number of processes or a
            nonce, not saying the secret this master has, or a wrong proof (the peer is told
            why).
    """
    hello = peer.receive("hello", WAIT)
    why = _refusal(hello, secret)
    if why is not None:
        peer.send({"refused": why})
        raise WireError(why)
    welcome: dict[str, Any] = {
        "index": index,
        "start_within": max(deadline - time.monotonic(), 0.0),
    }
    if secret is not None:
        ours, theirs = nonce(), hello["nonce"]
        welcome |= {"nonce": ours, "proof": proof(secret, "master", ours, theirs)}
        peer.send({"welcome": welcome})
        said = peer.receive("proof", WAIT)["proof"]
        if not proven(secret, "worker", theirs, ours, said):
            why = f"a wrong proof of the shared secret ({SECRET_ENV} differs)"
            peer.send({"refused": why})
            raise WireError(why)
        peer.sealed(Seal(secret, "master", ours, theirs))
    else:
        peer.send({"welcome": welcome})
    peer.frames.limit = MAX_MESSAGE
    return int(hello["processes"])


def _refusal(hello: dict[str, Any], secret: bytes | None) -> str | None:
    """Why ``hello`` is not one of a worker this master can run, or None."""
    if hello["hello"] != HELLO or hello.get("version") != VERSION:
        theirs = f"{hello['hello']!r} version {hello.get('version')!r}"
        return f"this master speaks {HELLO!r} version {VERSION}, not {theirs}"
    processes = hello.get("processes")
    if not isinstance(processes, int) or processes < 1:
        return f"a worker runs at least 1 load process, not {processes!r}"
    said = hello.get("nonce")
    if not isinstance(said, str) or not 16 <= len(said) <= 128:
        return f"a hello's nonce is 16 to 128 characters, not {said!r}"
    if hello.get("secret") is not (secret is not None):
        has = "has" if secret is not None else "has no"
        return f"this master {has} shared secret ({SECRET_ENV}); the worker must match"
    return None


def _run(
    workers: list[Worker],
    args: Any,
    plan: dict[str, Any],
    stages: list[tuple[float, float]],
    say: Say,
) -> tuple[_Merged, str | None]:
    """Share the run's load processes among the workers (`_shares` over all of theirs, then
    `apportion` by each one's number), send each its connections and shares, and merge the
    tallies they send back; what stopped the run early (None: it ran its course).

    Raises:
        RunFailed: a worker went away, failed, sent nothing within the run time and `GRACE`,
            or sent tallies that are not its shares'.
        WireError: a plan could not be sent.
    """
    every = argparse.Namespace(**{**vars(args), "processes": sum(w.processes for w in workers)})
    shares = _shares(every, plan["groups"], stages, parse_duration(args.run_time))
    counts = apportion(len(shares), [w.processes for w in workers])
    results: queue.SimpleQueue[Any] = queue.SimpleQueue()
    with _signals(results):  # Ctrl-C and SIGTERM from now on: (-1, name) on ``results``
        at = 0
        for worker, count in zip(workers, counts, strict=True):
            worker.shares, at = shares[at : at + count], at + count
            base = int(worker.shares[0]["first"])
            end = int(worker.shares[-1]["first"]) + int(worker.shares[-1]["count"])
            mine = {**plan, "cycles": plan["cycles"][base:end]}
            local = [{**share, "first": int(share["first"]) - base} for share in worker.shares]
            worker.peer.send({"run": {"plan": mine, "shares": local}}, SEND_WAIT)
        seconds = float(shares[0]["duration"]) + GRACE
        tallies, stopped = _collect(workers, results, seconds, say)
    merged, alone = _merge(workers, tallies, len(plan["kinds"]))
    return merged, stopped or alone


def _merge(workers: list[Worker], tallies: list[Any], kinds: int) -> tuple[_Merged, str | None]:
    """Every worker's tallies added up, in order (None: a process stopped before it wrote
    one); the first worker stopped early on its own (Ctrl-C there: its tallies say so).

    Raises:
        RunFailed: a worker's tallies are not its shares'.
    """
    merged, stopped = _Merged(kinds), None
    for worker, theirs in zip(workers, tallies, strict=True):
        try:
            for share, tally in zip(worker.shares, theirs, strict=True):
                if tally is None:
                    continue
                merged.add(tally, int(share["first_kind"]))
                worker.merged += 1
                if tally.get("stopped") and stopped is None:
                    stopped = f"{worker.peer.name} stopped"
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            why = f"{worker.peer.name} sent tallies that are not its shares' ({exc!r})"
            raise RunFailed(why) from None
    return merged, stopped


def _collect(
    workers: list[Worker], results: queue.SimpleQueue[Any], seconds: float, say: Say
) -> tuple[list[Any], str | None]:
    """Each worker's tallies, read side by side onto ``results`` (the first that fails ends
    the wait), each worker told ``done`` once its are in; a signal on ``results`` (Ctrl-C,
    SIGTERM) tells every worker to ``stop`` (its name: the second value).

    Raises:
        RunFailed: a worker went away, failed, or sent nothing within ``seconds``; or a second
            signal.
    """

    def read(index: int) -> None:
        try:
            results.put((index, workers[index].peer.receive("tallies", seconds)))
        except WireError as exc:
            results.put((index, exc))

    for index in range(len(workers)):
        threading.Thread(target=read, args=(index,), daemon=True).start()
    tallies: dict[int, Any] = {}
    stopped: str | None = None
    while len(tallies) < len(workers):
        index, got = results.get()  # each read ends within ``seconds``
        if index < 0 and stopped is not None:
            raise RunFailed(f"{got} again: the tallies were not waited for")
        if index < 0:
            stopped = str(got)
            say(f"{got}: the workers stop and send their tallies so far (again: give up)")
            for i in set(range(len(workers))) - set(tallies):
                workers[i].peer.send({"stop": stopped})
        elif isinstance(got, WireError):
            raise RunFailed(str(got))
        else:
            tallies[index] = got["tallies"]
            workers[index].peer.send({"done": True})
    return [tallies[i] for i in range(len(workers))], stopped


def _per_worker(rows: list[dict[str, Any]], workers: list[Worker]) -> list[dict[str, Any]]:
    """Each worker's row: its name, load processes, requests and failures (its merged
    tallies' ``rows``, in order, added up)."""
    shares, at = [], 0
    for index, worker in enumerate(workers):
        part, at = rows[at : at + worker.merged], at + worker.merged
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
