"""``mcpfast load --engine fast`` over several hosts, through the real CLI on loopback: a
``--master`` and two ``--worker --engine fast`` processes against the demo server, on the Rust
engine and on its Trio twin (``MCPFAST_NO_EXTENSIONS=1``): one summary whose totals are the
workers' rows added up (and each row its own tallies' count), nothing failed; a worker killed
mid-run fails the master at once, naming it, while the other still runs; and the wire's
refusals with real bytes (a worker of another version, a locust master's ZeroMQ greeting); and the
shared secret: impostor workers refused before any plan, a worker leaving a master that cannot
prove it, a master without one listening on loopback only, and the plan and tallies sealed on
the wire (a relay between a worker and its master sees neither, nor the run's token)."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import re
import signal
import socket
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import trio

from mcpfast.load import fastwire
from mcpfast.load.fastdist import RunFailed, Worker, _accept, _merge, _per_worker
from mcpfast.load.fastwire import (
    HELLO,
    HELLO_LIMIT,
    MAX_MESSAGE,
    SECRET_ENV,
    VERSION,
    Frames,
    Peer,
    Seal,
    WireError,
    frame,
    proof,
)
from mcpfast.load.fastworker import _connect, run_fast_worker

from ..helpers import REPO
from .processes import demo_process, free_port, mcpfast_command

BACKENDS = pytest.mark.parametrize("backend", ["rust", "python"])
SLOW = pytest.mark.timeout(180)
"""A demo server, a master, two workers and their load processes on a busy machine: above
pytest's 60 s, above each test's own bound (at most 150 s)."""


@dataclass
class Child:
    """A CLI process in a session of its own (with its load processes), its output read as it
    comes; ``running`` is set once it says it runs its share, ``progress`` at its first line of
    progress (its load processes run, Ctrl-C taken over)."""

    process: trio.Process
    lines: list[str] = field(default_factory=list)
    running: trio.Event = field(default_factory=trio.Event)
    progress: trio.Event = field(default_factory=trio.Event)
    ended: trio.Event = field(default_factory=trio.Event)

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    async def read(self) -> None:
        assert self.process.stdout is not None
        buffer = b""
        async for chunk in self.process.stdout:
            *whole, buffer = (buffer + chunk).split(b"\n")
            for raw in whole:
                self.lines.append(raw.decode())
                if self.lines[-1].startswith("mcpfast load: running "):
                    self.running.set()
                if " req/s " in self.lines[-1]:
                    self.progress.set()
        await self.process.wait()
        self.ended.set()

    def kill(self) -> None:
        """Kill it and its load processes (a host gone)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)


Start = Callable[[list[str]], Awaitable[Child]]


@asynccontextmanager
async def _children(backend: str, env: dict[str, str] | None = None) -> AsyncIterator[Start]:
    """Start CLI processes on ``backend`` (``env`` added to their environment); every one (and
    its load processes) killed at the end, whatever happened."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "python"), **(env or {})}
    env["MCPFAST_NO_EXTENSIONS"] = "1" if backend == "python" else ""
    started: list[Child] = []
    async with trio.open_nursery() as nursery:

        async def start(argv: list[str]) -> Child:
            process = await trio.lowlevel.open_process(
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
            started.append(Child(process))
            nursery.start_soon(started[-1].read)
            return started[-1]

        try:
            yield start
        finally:
            for child in started:
                child.kill()


def _master(url: str, port: int, out: Path, *extra: str, workers: int = 2) -> list[str]:
    return mcpfast_command(
        "load", url, "--engine", "fast", "--master", "--expect-workers", str(workers),
        "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port),
        "-u", "6", "--out", str(out), *extra,
    )  # fmt: skip


def _worker(port: int, out: Path, *extra: str) -> list[str]:
    argv = ["load", "--worker", "--engine", "fast", "--master-port", str(port), "--out", str(out)]
    return mcpfast_command(*argv, *extra)


def _requests(worker_out: Path) -> int:
    """Every request a worker's load processes counted (answers and errors), from its tallies."""
    total = 0
    for path in worker_out.glob("tally-*.json"):
        for kind in json.loads(path.read_text())["kinds"]:
            total += sum(a[3] for a in kind["answers"]) + sum(kind["errors"].values())
    return total


@BACKENDS
@SLOW
async def test_a_master_and_two_workers(backend: str, tmp_path: Path) -> None:
    """The master's summary is the two workers' tallies merged (a mix: stateless calls and
    legacy sessions, each worker its own connections): its totals are their rows added up, each
    row what that worker's load processes counted; nothing failed; its ``--fail-on`` judged;
    every process exits 0."""
    port = free_port()
    async with demo_process() as url, _children(backend) as start:
        one = await start(_worker(port, tmp_path / "one", "--processes", "2"))
        two = await start(_worker(port, tmp_path / "two"))
        master = await start(
            _master(url, port, tmp_path / "master", "-t", "3s", "--fail-on", "failures>0",
                    "--mix", "tools=1,session=1")
        )  # fmt: skip
        with trio.fail_after(150):  # a busy machine: the probe, three processes, the run
            for child in (master, one, two):
                await child.ended.wait()
    for child in (master, one, two):
        assert child.process.returncode == 0, child.output
    document = json.loads((tmp_path / "master" / "summary.json").read_text())
    rows = {row["processes"]: row for row in document["workers"]}
    assert sorted(rows) == [1, 2], document["workers"]
    assert rows[2]["requests"] == _requests(tmp_path / "one") > 0
    assert rows[1]["requests"] == _requests(tmp_path / "two") > 0
    for worker in ("one", "two"):  # its requests may carry a token
        assert (tmp_path / worker / "plan.json").stat().st_mode & 0o777 == 0o600
    total = document["total"]
    assert total["requests"] == rows[1]["requests"] + rows[2]["requests"]
    assert total["failures"] == 0 == rows[1]["failures"] + rows[2]["failures"], document["errors"]
    names = {row["name"]: row["requests"] for row in document["requests"]}
    assert set(names) == {"tools/call echo", "legacy tools/call echo"}, names
    assert all(names.values()), names
    histogram = document["latency"]["total"]["histogram"]["counts"]
    assert sum(histogram.values()) == total["requests"]
    assert document["engine"]["backend"] == backend
    assert [(t["expression"], t["failed"]) for t in document["thresholds"]] == [
        ("failures>0", False)
    ]
    assert document["exit_status"] == 0
    assert "mcpfast load: 2 workers connected (worker 0 at 127.0.0.1:" in master.output
    index = next(r["index"] for r in document["workers"] if r["processes"] == 2)
    shown = f"worker {index} (2 load processes): {rows[2]['requests']} requests ("
    assert any(line.startswith("workers: 2; ") and shown in line for line in master.lines)
    ran = [
        re.search(r"running (\d+) connections for 3s on (\d+) load process", c.output)
        for c in (one, two)
    ]
    assert all(ran) and [m[2] for m in ran if m] == ["2", "1"], (one.output, two.output)
    assert sum(int(m[1]) for m in ran if m) == 6
    for child in (one, two):
        assert f"the master at 127.0.0.1:{port} took the tallies of its " in child.output


def _stopped_early(worker_out: Path) -> bool:
    """Every load process of a worker (of a 120 s run) wrote a tally stopped within 60 s."""
    tallies = [json.loads(path.read_text()) for path in worker_out.glob("tally-*.json")]
    return bool(tallies) and all(t["stopped"] and t["elapsed"] < 60 for t in tallies)


Interrupt = Callable[[Child, Child, Child], list[Child]]


async def _a_long_run(
    backend: str, tmp_path: Path, port: int, interrupt: Interrupt
) -> tuple[Child, Child, Child]:
    """A master on ``port`` and two workers (``one``, ``two``) starting a 120 s run on
    ``backend``; once both workers' load processes run (a progress line each),
    ``interrupt(master, one, two)``, then the children it returns waited for until they end
    (90 s in all). Every process is killed on the way out. Returns (master, one, two)."""
    async with demo_process() as url, _children(backend) as start:
        one = await start(_worker(port, tmp_path / "one"))
        two = await start(_worker(port, tmp_path / "two"))
        master = await start(_master(url, port, tmp_path / "master", "-t", "120s"))
        with trio.fail_after(90):
            await one.progress.wait()  # its load processes run
            await two.progress.wait()
            for child in interrupt(master, one, two):
                await child.ended.wait()
    return master, one, two


@BACKENDS
@SLOW
async def test_a_worker_gone_mid_run_fails_the_run_at_once(backend: str, tmp_path: Path) -> None:
    """A worker killed (with its load processes) while both run a 120 s share: the master fails
    the run naming the worker, exit 2; the other worker, its master gone, stops its load
    processes early (their tallies say so) and exits 2 saying why."""
    port = free_port()

    def kill_one(master: Child, one: Child, two: Child) -> list[Child]:
        one.kill()
        return [master, two]

    master, _, two = await _a_long_run(backend, tmp_path, port, kill_one)
    assert master.process.returncode == 2, master.output
    said = "mcpfast load: the distributed run failed: worker "
    line = next((line for line in master.lines if line.startswith(said)), master.output)
    assert "closed the connection before its tallies" in line or "connection failed" in line
    document = json.loads((tmp_path / "master" / "summary.json").read_text())
    assert document["exit_status"] == 2 and document["total"] is None
    assert line.removeprefix("mcpfast load: ") in document["notes"]
    assert two.process.returncode == 2, two.output
    assert (
        f"mcpfast load: the worker failed: the master at 127.0.0.1:{port} closed the connection "
        "before its done; its load processes were stopped"
    ) in two.lines, two.output
    assert _stopped_early(tmp_path / "two")


def _children_of(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                children.append(int(stat.parent.name))
    return children


@SLOW
async def test_a_load_process_crashing_fails_the_run(tmp_path: Path) -> None:
    """A worker's load process killed (SIGKILL: a crash) mid-run: the worker tells the master
    which exit it saw and exits 2; the master fails the run saying so, exit 2; the other
    worker, its master gone, stops its own load processes early."""
    port = free_port()

    def crash_a_load_process(master: Child, one: Child, two: Child) -> list[Child]:
        pids = _children_of(one.process.pid)
        assert pids, "the worker runs its share in load processes of its own"
        os.kill(pids[0], signal.SIGKILL)
        return [master, one, two]

    master, one, two = await _a_long_run("rust", tmp_path, port, crash_a_load_process)
    assert one.process.returncode == 2, one.output
    assert master.process.returncode == 2, master.output
    said = "mcpfast load: the distributed run failed: worker "
    line = next((line for line in master.lines if line.startswith(said)), master.output)
    assert "a load process exited -9" in line, line
    document = json.loads((tmp_path / "master" / "summary.json").read_text())
    assert document["exit_status"] == 2 and document["total"] is None
    assert two.process.returncode == 2, two.output
    assert _stopped_early(tmp_path / "two")


@BACKENDS
@SLOW
async def test_ctrl_c_on_the_master_stops_the_workers(backend: str, tmp_path: Path) -> None:
    """Ctrl-C on the master of a 120 s run: its workers stop their load processes and send the
    tallies so far, which the master reports as a partial run (nothing failed: exit 0)."""

    def ctrl_c(master: Child, one: Child, two: Child) -> list[Child]:
        master.process.send_signal(signal.SIGINT)
        return [master, one, two]

    master, one, two = await _a_long_run(backend, tmp_path, free_port(), ctrl_c)
    for child in (master, one, two):
        assert child.process.returncode == 0, child.output
    document = json.loads((tmp_path / "master" / "summary.json").read_text())
    stopped = [note for note in document["notes"] if note.startswith("stopped early (Ctrl-C)")]
    assert len(stopped) == 1 and stopped[0].endswith(": a partial run"), document["notes"]
    rows = document["workers"]
    assert sum(r["requests"] for r in rows) == document["total"]["requests"] > 0
    assert document["total"]["failures"] == 0, document["errors"]
    assert _stopped_early(tmp_path / "one") and _stopped_early(tmp_path / "two")
    said = "mcpfast load: stopped early (the master's Ctrl-C): the tallies so far go to the master"
    assert said in one.lines and said in two.lines, (one.output, two.output)


@SLOW
async def test_ctrl_c_on_a_worker_stops_its_share(tmp_path: Path) -> None:
    """Ctrl-C on one worker once its load processes run: it sends the tallies so far, the other
    runs its share to the end, and the master reports a partial run naming the worker that
    stopped; nothing failed, every process exits 0."""
    port = free_port()
    async with demo_process() as url, _children("rust") as start:
        one = await start(_worker(port, tmp_path / "one"))
        two = await start(_worker(port, tmp_path / "two"))
        master = await start(_master(url, port, tmp_path / "master", "-t", "8s"))
        with trio.fail_after(150):
            await one.progress.wait()
            one.process.send_signal(signal.SIGINT)
            for child in (master, one, two):
                await child.ended.wait()
    for child in (master, one, two):
        assert child.process.returncode == 0, child.output
    document = json.loads((tmp_path / "master" / "summary.json").read_text())
    said = r"stopped early \(worker \d at 127\.0\.0\.1:\d+ stopped\) after [\d.]+ s: a partial run"
    assert [n for n in document["notes"] if re.fullmatch(said, n)], document["notes"]
    assert _stopped_early(tmp_path / "one")
    assert "mcpfast load: stopped early (Ctrl-C): the tallies so far go to the master" in one.lines
    assert not any(
        json.loads(path.read_text())["stopped"] for path in (tmp_path / "two").glob("tally-*.json")
    )
    assert document["total"]["failures"] == 0, document["errors"]


def _tally(count: int, *, stopped: bool = False) -> dict[str, Any]:
    """A load process's tally of ``count`` answers of one kind."""
    kind = {
        "answers": [[200, "application/json", "e30=", count]],
        "counts": {"1": count},
        "sum_us": count,
        "max_us": 1,
        "errors": {},
    }
    return {"kinds": [kind], "late": 0, "max_lag_us": 0, "elapsed": 1.0, "stopped": stopped}


def test_the_master_merges_what_its_workers_sent() -> None:
    """Tallies placed by their shares' first kind, a process that wrote none (None) skipped,
    each worker's row its merged tallies' rows, the first worker stopped on its own named;
    tallies that are not its shares' fail the run naming the worker."""
    with socket.socket() as a, socket.socket() as b:
        one = Worker(Peer(a, "worker 0 at h:1"), 2, [{"first_kind": 0}, {"first_kind": 1}])
        two = Worker(Peer(b, "worker 1 at h:2"), 1, [{"first_kind": 1}])
        merged, stopped = _merge([one, two], [[None, _tally(3)], [_tally(4, stopped=True)]], 2)
        assert merged.answers == [{}, {(200, "application/json", "e30="): 7}]
        assert merged.histograms[1].counts == {1: 7}
        assert (one.merged, two.merged) == (1, 1)
        assert stopped == "worker 1 at h:2 stopped"
        rows = [{"requests": 3, "failures": 0}, {"requests": 4, "failures": 1}]
        assert _per_worker(rows, [one, two]) == [
            {"index": 0, "worker": "worker 0 at h:1", "processes": 2, "requests": 3, "failures": 0},
            {"index": 1, "worker": "worker 1 at h:2", "processes": 1, "requests": 4, "failures": 1},
        ]
        with pytest.raises(RunFailed, match="worker 0 at h:1 sent tallies that are not its share"):
            _merge([one], [[_tally(1)]], 2)


# ------------------------------------------------------------------------- the wire's refusals


def test_frames_cut_bytes_into_messages() -> None:
    """Messages fed a byte at a time come out whole and in order; a length over the limit (a
    ZeroMQ greeting's first bytes) or a body that is no JSON object is refused."""
    frames, first, data = Frames(), frame({"a": 1}), frame({"a": 1}) + frame({"b": [2]})
    got = []
    for at in range(len(data)):
        frames.feed(data[at : at + 1])
        while (message := frames.next()) is not None:
            got.append((at + 1, message))
    assert got == [(len(first), {"a": 1}), (len(data), {"b": [2]})]
    for bad, says in [
        (b"\xff\x00\x00\x00\x00\x00\x00\x00\x01\x7f", "not the fast engine's wire"),
        (b"\x00\x00\x00\x02[]", "not a JSON object"),
        (b"\x00\x00\x00\x02{]", "not JSON"),
        (frame({"hello": "x" * 5000}), "5013 bytes \\(over 4096\\)"),
    ]:
        frames = Frames(HELLO_LIMIT)
        frames.feed(bad)
        with pytest.raises(WireError, match=says):
            frames.next()


def test_a_message_past_the_limit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A greeted peer's message may have `MAX_MESSAGE` bytes: one announced at the limit waits
    for its body, one past it is refused from its length alone; `frame` refuses to send one
    past it."""
    frames = Frames()
    frames.feed(MAX_MESSAGE.to_bytes(4, "big"))
    assert frames.next() is None
    frames = Frames()
    frames.feed((MAX_MESSAGE + 1).to_bytes(4, "big"))
    with pytest.raises(WireError, match=f"of {MAX_MESSAGE + 1} bytes \\(over {MAX_MESSAGE}\\)"):
        frames.next()
    monkeypatch.setattr(fastwire, "MAX_MESSAGE", 20)
    assert len(frame({"a": "x" * 11})) == 4 + 20
    with pytest.raises(WireError, match="a message of 21 bytes, over the limit of 20"):
        frame({"a": "x" * 12})


async def test_a_master_refuses_another_version_and_gives_up_in_time() -> None:
    """Over loopback: a peer saying another version is told why and not counted; a good hello
    is welcomed as worker 0; the second worker never comes, so the wait ends saying so."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    args = SimpleNamespace(expect_workers=2, expect_workers_max_wait=5)
    workers: list[Worker] = []
    said: list[str] = []
    peers: list[Peer] = []
    failed: list[str] = []

    def accept() -> None:
        with pytest.raises(RunFailed) as raised:
            _accept(listener, workers, args, said.append, None)
        failed.append(str(raised.value))

    def hello(version: int) -> dict[str, Any]:
        peers.append(Peer(socket.create_connection(("127.0.0.1", port), timeout=10), "master"))
        said = {"hello": HELLO, "version": version, "processes": 3, "nonce": "0" * 32}
        peers[-1].send(said | {"secret": False})
        try:
            return peers[-1].receive("welcome", 10)
        except WireError as exc:
            return {"error": str(exc)}

    with listener:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.to_thread.run_sync, accept)
            refused = await trio.to_thread.run_sync(hello, VERSION - 1)
            welcomed = await trio.to_thread.run_sync(hello, VERSION)
    for peer in peers + [w.peer for w in workers]:
        peer.close()
    speaks = f"refused: this master speaks 'mcpfast fast load' version {VERSION}, not "
    assert speaks in refused["error"]
    assert welcomed["welcome"]["index"] == 0
    assert [w.processes for w in workers] == [3]
    assert failed == [
        "1 of 2 workers connected within 5s (--expect-workers-max-wait); start them with: "
        "mcpfast load --worker --engine fast --master-host THIS_HOST"
    ]
    assert len(said) == 1 and said[0].startswith("refused a peer at 127.0.0.1:"), said


def _worker_args(listener: socket.socket, tmp_path: Path) -> SimpleNamespace:
    """`run_fast_worker`'s arguments for one load process of the master on ``listener``."""
    port = listener.getsockname()[1]
    return SimpleNamespace(
        out=str(tmp_path), master_host="127.0.0.1", master_port=port, quiet=True, processes=1
    )


ZMTP_GREETING = b"\xff" + bytes(8) + b"\x7f\x03"
"""What a ZeroMQ peer (a locust master) sends first: the ZMTP signature and major version."""


async def test_a_worker_of_a_locust_master_says_so(tmp_path: Path) -> None:
    """A fast-engine worker whose master speaks ZeroMQ (locust's) exits 2 saying what to do,
    instead of waiting."""
    listener = socket.create_server(("127.0.0.1", 0))
    args = _worker_args(listener, tmp_path)
    said = io.StringIO()

    def locust_master() -> None:
        sock, _ = listener.accept()
        with sock:
            sock.sendall(ZMTP_GREETING)
            sock.settimeout(10)
            sock.recv(1 << 16)  # the hello, then the worker's close

    with listener:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.to_thread.run_sync, locust_master)
            code = await trio.to_thread.run_sync(run_fast_worker, args, said)
    assert code == 2
    assert "not the fast engine's wire (a locust master or worker? give both --engine fast)" in (
        said.getvalue()
    )


# ---------------------------------------------------------------------------- the shared secret

SECRET = "the secret of this test"


def _everything_said(sock: socket.socket) -> list[dict[str, Any]]:
    """Every message read from ``sock`` until the peer closes it (60 s at most: a master greets
    once its plan is built)."""
    frames, said = Frames(), []
    sock.settimeout(60)
    with contextlib.suppress(OSError):
        while data := sock.recv(1 << 16):
            frames.feed(data)
    while (message := frames.next()) is not None:
        said.append(message)
    return said


def _first_message(sock: socket.socket) -> dict[str, Any]:
    """The first message read from ``sock`` (60 s at most for each read).

    Raises:
        ConnectionError: the peer closed the connection before a whole message.
    """
    frames = Frames()
    sock.settimeout(60)
    while (message := frames.next()) is None:
        if not (data := sock.recv(1 << 16)):
            raise ConnectionError("closed before a whole message")
        frames.feed(data)
    return message


def _impostor(port: int, secret: bool) -> list[dict[str, Any]]:
    """A peer of the master on ``port`` saying it has (``secret``) or has not a secret, sending
    a proof made with another secret when asked; every message the master sent it."""
    with _connect("127.0.0.1", port) as sock:
        hello = {"hello": HELLO, "version": VERSION, "processes": 1, "nonce": "1" * 32}
        sock.sendall(frame(hello | {"secret": secret}))
        if secret:
            welcome = _first_message(sock)
            forged = proof(b"a guess", "worker", "1" * 32, welcome["welcome"]["nonce"])
            sock.sendall(frame({"proof": forged}))
            return [welcome, *_everything_said(sock)]
        return _everything_said(sock)


@SLOW
async def test_the_secret_admits_workers_and_refuses_impostors(tmp_path: Path) -> None:
    """A master and a worker sharing ``MCPFAST_LOAD_SECRET`` run as without one; before the
    worker, two impostors reach the master: one without the secret is refused at its hello, one
    with a forged proof after its welcome; neither is sent a plan nor counted."""
    port = free_port()
    async with demo_process() as url, _children("rust", {SECRET_ENV: SECRET}) as start:
        master = await start(_master(url, port, tmp_path / "master", "-t", "2s", workers=1))
        without = await trio.to_thread.run_sync(_impostor, port, False)
        forged = await trio.to_thread.run_sync(_impostor, port, True)
        worker = await start(_worker(port, tmp_path / "worker"))
        with trio.fail_after(150):
            for child in (master, worker):
                await child.ended.wait()
    assert [sorted(m) for m in without] == [["refused"]]
    assert "this master has shared secret (MCPFAST_LOAD_SECRET)" in without[0]["refused"]
    assert [sorted(m) for m in forged] == [["welcome"], ["refused"]]
    assert (
        forged[1]["refused"] == "a wrong proof of the shared secret (MCPFAST_LOAD_SECRET differs)"
    )
    assert master.process.returncode == 0 == worker.process.returncode, master.output
    refusals = [line for line in master.lines if "refused a peer at 127.0.0.1:" in line]
    assert len(refusals) == 1 and "this master has shared secret" in refusals[0], master.output
    document = json.loads((tmp_path / "master" / "summary.json").read_text())
    assert [row["index"] for row in document["workers"]] == [0]
    assert document["workers"][0]["requests"] == _requests(tmp_path / "worker") > 0


async def test_a_master_without_a_secret_listens_on_loopback_only(tmp_path: Path) -> None:
    """Bound to every interface with no shared secret, the master exits 2 saying what to do,
    and nothing listens on its port."""
    port = free_port()
    async with _children("rust", {SECRET_ENV: ""}) as start:
        argv = _master("http://127.0.0.1:9/mcp", port, tmp_path, workers=1)
        argv[argv.index("--master-bind-host") + 1] = "0.0.0.0"
        master = await start(argv)
        with trio.fail_after(60):
            await master.ended.wait()
    assert master.process.returncode == 2, master.output
    assert "--master-bind-host 0.0.0.0 without a shared secret" in master.output
    assert "set MCPFAST_LOAD_SECRET to the same secret on the master and every worker" in (
        master.output
    )
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=10).close()


@pytest.mark.parametrize("proves", ["nothing", "another secret"])
async def test_a_worker_leaves_a_master_that_cannot_prove_the_secret(
    proves: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker with a secret whose master welcomes it without a proof, or with one of another
    secret, exits 2 saying so, having sent its hello and nothing more (no proof of its own)."""
    monkeypatch.setenv(SECRET_ENV, SECRET)
    listener = socket.create_server(("127.0.0.1", 0))
    args = _worker_args(listener, tmp_path)
    said = io.StringIO()
    heard: list[dict[str, Any]] = []

    def false_master() -> None:
        sock, _ = listener.accept()
        with sock:
            hello = _first_message(sock)
            welcome: dict[str, Any] = {"index": 0, "start_within": 5.0}
            if proves == "another secret":
                ours = "2" * 32
                welcome |= {
                    "nonce": ours,
                    "proof": proof(b"another", "master", ours, hello["nonce"]),
                }
            sock.sendall(frame({"welcome": welcome}))
            heard.extend([hello, *_everything_said(sock)])

    with listener:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.to_thread.run_sync, false_master)
            code = await trio.to_thread.run_sync(run_fast_worker, args, said)
    assert code == 2
    assert f"the master at 127.0.0.1:{args.master_port} did not prove the shared secret" in (
        said.getvalue()
    )
    assert [sorted(m) for m in heard] == [["hello", "nonce", "processes", "secret", "version"]]
    assert heard[0]["secret"] is True


# ------------------------------------------------------------------------------------ sealing

MASTER_NONCE, WORKER_NONCE = "m" * 32, "w" * 32


def _pair(secret: bytes = b"s", other: bytes = b"s") -> tuple[Seal, Seal]:
    """The master's seal (with ``secret``) and the worker's (with ``other``) of one connection."""
    return (
        Seal(secret, "master", MASTER_NONCE, WORKER_NONCE),
        Seal(other, "worker", MASTER_NONCE, WORKER_NONCE),
    )


def _opened(seal: Seal, data: bytes) -> dict[str, Any] | None:
    frames = Frames()
    frames.seal = seal
    frames.feed(data)
    return frames.next()


def test_a_sealed_message_opens_only_for_its_peer_in_its_place() -> None:
    """Sealed messages open both ways, in order, and carry nothing of their text in the clear;
    a message changed by a bit, replayed, taken out of order, sent back to its sender, or sealed
    under another secret or for another connection is refused, and so is a clear one."""
    master, worker = _pair()
    plan = {"run": {"plan": "Bearer the-token tools/call"}}
    first, second = frame(plan, master), frame({"n": 2}, master)
    assert b"the-token" not in first and b"run" not in first
    assert len(first) == len(frame(plan)) + fastwire.TAG_BYTES
    assert _opened(worker, first) == plan
    assert _opened(worker, second) == {"n": 2}
    assert _opened(master, frame({"tallies": []}, worker)) == {"tallies": []}
    changed = bytearray(frame({"n": 3}, master))
    changed[-1] ^= 1
    replayed = first
    master2, worker2 = _pair()
    skipped = (frame({"n": 1}, master2), frame({"n": 2}, master2))[1]
    back_to_sender = frame({"n": 1}, _pair()[0])
    other_secret = frame({"n": 1}, _pair(b"another")[0])
    other_nonces = frame({"n": 1}, Seal(b"s", "master", "x" * 32, WORKER_NONCE))
    for bad, receiver in [
        (bytes(changed), worker),
        (replayed, worker),
        (skipped, worker2),
        (back_to_sender, _pair()[0]),
        (other_secret, _pair()[1]),
        (other_nonces, _pair()[1]),
        (frame({"n": 1}), _pair()[1]),
    ]:
        with pytest.raises(WireError, match="not the peer's, sealed, in its place"):
            _opened(receiver, bad)


@asynccontextmanager
async def _recording_relay(port: int) -> AsyncIterator[tuple[int, list[bytes], list[bytes]]]:
    """A relay on loopback to the master's ``port`` for one connection; its port, and what it
    carried to the master and from it, as it comes."""
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    to_master: list[bytes] = []
    from_master: list[bytes] = []

    async def copy(source: trio.SocketStream, sink: trio.SocketStream, into: list[bytes]) -> None:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            while data := await source.receive_some():
                into.append(data)
                await sink.send_all(data)
        await source.aclose()
        await sink.aclose()

    async def relay() -> None:
        async with listener:
            worker = await listener.accept()
        with trio.fail_after(60):  # the master listens once its plan is built
            while True:
                try:
                    master = await trio.open_tcp_stream("127.0.0.1", port)
                    break
                except OSError:
                    await trio.sleep(0.2)
        async with trio.open_nursery() as both:
            both.start_soon(copy, worker, master, to_master)
            both.start_soon(copy, master, worker, from_master)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(relay)
        yield listener.socket.getsockname()[1], to_master, from_master
        nursery.cancel_scope.cancel()


@SLOW
async def test_the_plan_and_the_tallies_cross_the_wire_sealed(tmp_path: Path) -> None:
    """A master and a worker sharing the secret, the worker reaching it through a relay that
    records every byte: the run works, the worker's plan holds the run's bearer token, and the
    relay saw the hello in the clear but neither the token, nor the plan's requests, nor the
    tallies."""
    port, token = free_port(), "a-token-of-this-test-0123456789"
    env = {SECRET_ENV: SECRET, "LOAD_TOKEN": token}
    async with demo_process() as url, _children("rust", env) as start:
        master = await start(
            _master(url, port, tmp_path / "master", "-t", "2s", "--bearer-env", "LOAD_TOKEN",
                    workers=1)
        )  # fmt: skip
        async with _recording_relay(port) as (relay_port, to_master, from_master):
            worker = await start(_worker(relay_port, tmp_path / "worker"))
            with trio.fail_after(150):
                for child in (master, worker):
                    await child.ended.wait()
    assert master.process.returncode == 0 == worker.process.returncode, master.output
    requests = _encoded_requests(json.loads((tmp_path / "worker" / "plan.json").read_text()))
    assert requests and all(token.encode() in base64.b64decode(r) for r in requests)
    document = json.loads((tmp_path / "master" / "summary.json").read_text())
    assert document["total"]["requests"] == _requests(tmp_path / "worker") > 0
    sent, received = b"".join(to_master), b"".join(from_master)
    assert b'"hello": "mcpfast fast load"' in sent and b'"welcome"' in received
    for seen in (token.encode(), b"tools/call", b'"run"', b'"plan"', *requests):
        assert seen not in received
    assert b'"tallies"' not in sent and b'"kinds"' not in sent


def _encoded_requests(plan: Any) -> list[bytes]:
    """Every request of a plan (base64 strings of whole HTTP requests)."""
    if isinstance(plan, dict):
        return [r for value in plan.values() for r in _encoded_requests(value)]
    if isinstance(plan, list):
        return [r for value in plan for r in _encoded_requests(value)]
    if isinstance(plan, str) and len(plan) > 64:
        with contextlib.suppress(ValueError):
            if base64.b64decode(plan, validate=True).startswith(b"POST "):
                return [plan.encode()]
    return []
