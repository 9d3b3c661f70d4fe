"""The pieces of the deployment test, each a real process: a host (`Host`: ``mcpfast serve
--workers 2 --bus redis://...`` on a loopback address of its own), a proxy (`Proxy`: nginx or
haproxy, from the configurations in ``deploy/``), and what clients saw (`Outcomes`)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
import trio

from ..e2e.processes import free_port, mcpfast_command
from ..helpers import REPO

HOST_ADDRESSES = ("127.0.0.2", "127.0.0.3")
"""One loopback address per host: each binds its own, as two machines would."""
APP = Path(__file__).with_name("app.py")
BOUND = 30.0
"""The bound of every start and stop (generous: the machine may be busy)."""


def binary(name: str) -> str:
    """The path of ``name`` (nginx, haproxy); skips without it (fails under ``CI=true``)."""
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
    if found is None:
        reason = f"{name} is not installed (apt-get install {name})"
        if os.environ.get("CI") == "true":
            pytest.fail(reason + " and CI=true requires it (.ci/run installs it)")
        pytest.skip(reason)
    return found


async def wait_listening(address: str, port: int, process: subprocess.Popen[bytes]) -> None:
    """Until something accepts on ``address:port``.

    Raises:
        RuntimeError: ``process`` exited first; TooSlowError past `BOUND`.
    """
    with trio.fail_after(BOUND):
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{process.args!r} exited with {process.returncode}")
            try:
                socket.create_connection((address, port), timeout=0.5).close()
                return
            except OSError:
                await trio.sleep(0.05)


class Host:
    """One host: ``mcpfast serve --workers 2`` on its own loopback address, in a process group
    of its own (a whole-host SIGKILL kills the parent and its workers at once)."""

    def __init__(self, address: str, engine: str, bus: str, env: dict[str, str]) -> None:
        self.address = address
        self.port = free_port()
        self.engine = engine
        self.bus = bus
        self.env = env
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def upstream(self) -> str:
        return f"{self.address}:{self.port}"

    async def start(self) -> None:
        argv = mcpfast_command(
            "serve", f"{APP}:server", "--host", self.address, "--port", str(self.port),
            "--workers", "2", "--bus", self.bus, "--engine", self.engine, "--allowed-host", "*",
        )  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(REPO / "python"), **self.env}
        self.process = subprocess.Popen(
            argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        await wait_listening(self.address, self.port, self.process)

    def resources(self) -> tuple[int, int]:
        """The open descriptors and resident KiB of the host's processes (the parent and its
        workers: its process group), read from ``/proc``."""
        assert self.process is not None
        fds = rss = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
                if int(fields[2]) != self.process.pid:  # the process group
                    continue
                fds += len(list((stat.parent / "fd").iterdir()))
                status = (stat.parent / "status").read_text()
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
            rss += next(
                int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")
            )
        return fds, rss

    def signal(self, number: int) -> None:
        """Send ``number`` to the parent (SIGTERM: a drain) or, for SIGKILL, the whole group."""
        assert self.process is not None
        if number == signal.SIGKILL:
            os.killpg(self.process.pid, signal.SIGKILL)
        else:
            self.process.send_signal(number)

    async def exited(self) -> float:
        """How long until the host's process exits (at most `BOUND` seconds); its workers are
        killed if any is left behind."""
        assert self.process is not None
        start = time.monotonic()
        with trio.fail_after(BOUND):
            while self.process.poll() is None:
                await trio.sleep(0.05)
        self._reap_group()
        return time.monotonic() - start

    def stop(self) -> None:
        """Kill whatever is left of the host (the test's end, passed or not)."""
        if self.process is not None:
            self._reap_group()
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait(BOUND)

    def _reap_group(self) -> None:
        assert self.process is not None
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class Proxy:
    """nginx or haproxy on 127.0.0.1, configured from ``deploy/<kind>`` for ``hosts``."""

    def __init__(self, kind: str, hosts: list[Host], directory: Path) -> None:
        self.kind = kind
        self.port = free_port()
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        if kind == "nginx":
            lines = [f"        server {h.upstream} max_fails=1 fail_timeout=2s;" for h in hosts]
            template = (REPO / "deploy" / "nginx.conf").read_text()
        else:
            lines = [f"    server host{i} {h.upstream} check" for i, h in enumerate(hosts)]
            template = (REPO / "deploy" / "haproxy.cfg").read_text()
        self.config = directory / ("nginx.conf" if kind == "nginx" else "haproxy.cfg")
        self.config.write_text(
            template.replace("@@PREFIX@@", str(directory))
            .replace("@@PORT@@", str(self.port))
            .replace("@@SERVERS@@", "\n".join(lines))
        )
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    async def start(self) -> None:
        if self.kind == "nginx":
            argv = [binary("nginx"), "-p", str(self.directory), "-c", str(self.config)]
        else:
            argv = [binary("haproxy"), "-db", "-f", str(self.config)]
        with (self.directory / "proxy.log").open("wb") as log:
            self.process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        await wait_listening("127.0.0.1", self.port, self.process)

    def stop(self) -> None:
        """Kill the proxy's whole process group: nginx's workers outlive a killed master."""
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait(BOUND)


class Outcomes:
    """What the clients saw of each ``record`` request, by its key, and the ledger's count."""

    def __init__(self, ledger: Path) -> None:
        self.ledger = ledger
        self.seen: dict[str, str] = {}
        """key -> ``ok`` (answered with its result), ``refused`` (mcpfast's 503: not done),
        ``proxy <status>`` (the proxy's own error: unknown whether it ran), ``error <what>``."""
        self.when: dict[str, float] = {}
        """key -> when it was sent (monotonic)."""
        self.done: dict[str, float] = {}
        """key -> when its outcome came (a request in flight when a fault began is the fault's)."""
        self.faults: list[tuple[float, float]] = []
        """Each fault's window: from its start until the service is whole again (monotonic)."""

    def runs(self) -> Counter[str]:
        text = self.ledger.read_text() if self.ledger.exists() else ""
        return Counter(text.split())

    def failed_outside_faults(self, grace: float = 2.0) -> dict[str, str]:
        """The requests not answered ``ok`` that were sent outside every fault's window (and
        ``grace`` seconds after it: the proxy sees a host whole again a check later than the
        host is, haproxy after two checks 0.5 s apart, nginx after ``fail_timeout=2s``), with
        their outcome."""
        return {
            key: outcome
            for key, outcome in self.seen.items()
            if outcome != "ok"
            and not any(
                self.when[key] <= b + grace and self.done.get(key, self.when[key]) >= a
                for a, b in self.faults
            )
        }

    def describe(self, keys: dict[str, str] | None = None) -> str:
        """The outcomes other than ``ok`` (of ``keys``, else all), each with its count and when
        its first was sent relative to the nearest fault's end (negative: inside or before)."""
        failed = keys if keys is not None else {k: o for k, o in self.seen.items() if o != "ok"}
        counts = Counter(failed.values())
        ends = [b for _, b in self.faults] or [0.0]
        parts = []
        for outcome, count in counts.most_common(5):
            first = min(self.when[k] for k, o in failed.items() if o == outcome)
            nearest = min(ends, key=lambda end: abs(first - end))
            parts.append(f"{outcome} x{count} (first {first - nearest:+.1f}s from a fault's end)")
        return "; ".join(parts)

    def tally(self) -> Counter[str]:
        return Counter(outcome.split(" ")[0] for outcome in self.seen.values())
