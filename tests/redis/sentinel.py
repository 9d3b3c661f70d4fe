"""Redis as production runs it, on loopback: a primary, a replica and three sentinels
(`SentinelGroup`), or a Cluster of three primaries (`RedisCluster`), each process started and
reaped by its fixture (killed on exit, even when the test fails).

The binaries are Debian's ``redis-server``, ``redis-sentinel`` and ``redis-cli`` (`.ci/run`
installs them); without them the test is skipped, except under ``CI=true``, where it fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import pytest

from ..redis_server import _free_port, redis_binary

SERVICE = "mymaster"
WAIT = 20.0
"""The bound of every wait on the group (generous: the machine is shared)."""


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        reason = f"{name} is not installed (apt-get install redis-server redis-sentinel)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason + " and CI=true requires it")
        pytest.skip(reason)
    return found


def cli(port: int, *command: str) -> str:
    """``redis-cli -p port command…``: its output, stripped (bounded to 10 s)."""
    done = subprocess.run(
        [_binary("redis-cli"), "-p", str(port), *command],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )
    return done.stdout.strip()


def _until(what: str, check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except (subprocess.SubprocessError, OSError):
            pass
        time.sleep(0.05)
    raise RuntimeError(f"not within {WAIT} s: {what}")


class Processes:
    """The processes of one fixture: each `start`ed one is killed at `close`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.running: dict[int, subprocess.Popen[bytes]] = {}

    def start(self, argv: list[str], port: int) -> None:
        """Start ``argv`` (listening on ``port``) and wait until it answers PING."""
        process = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self.directory
        )
        self.running[port] = process

        def answers() -> bool:
            if process.poll() is not None:
                raise RuntimeError(f"{argv} exited with {process.returncode}")
            return cli(port, "PING") == "PONG"

        _until(f"{argv[0]} on {port} answers", answers)

    def kill(self, port: int) -> None:
        process = self.running.pop(port)
        process.kill()
        process.wait(5)

    def close(self) -> None:
        while self.running:
            self.kill(next(iter(self.running)))


def _server(port: int, *extra: str) -> list[str]:
    return [
        redis_binary(),
        "--port", str(port),
        "--bind", "127.0.0.1",
        "--save", "",
        "--appendonly", "no",
        "--protected-mode", "no",
        *extra,
    ]  # fmt: skip


class SentinelGroup:
    """A primary, a replica and three sentinels (quorum 2) watching them as `SERVICE`."""

    def __init__(self, processes: Processes) -> None:
        self.processes = processes
        self.data = [_free_port(), _free_port()]
        self.sentinels = [_free_port() for _ in range(3)]

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{port}" for port in self.sentinels)
        return f"redis+sentinel://{hosts}/{SERVICE}"

    def start(self) -> None:
        primary, replica = self.data
        self.processes.start(_server(primary), primary)
        self.processes.start(_server(replica, "--replicaof", "127.0.0.1", str(primary)), replica)
        _until("the replica is in sync", lambda: "master_link_status:up" in cli(replica, "INFO"))
        for port in self.sentinels:
            config = self.processes.directory / f"sentinel-{port}.conf"
            config.write_text(
                f"port {port}\nbind 127.0.0.1\nprotected-mode no\n"
                f"sentinel monitor {SERVICE} 127.0.0.1 {primary} 2\n"
                f"sentinel down-after-milliseconds {SERVICE} 1000\n"
                f"sentinel failover-timeout {SERVICE} 10000\n"
            )
            self.processes.start([_binary("redis-sentinel"), str(config)], port)
        for port in self.sentinels:
            _until(f"sentinel {port} knows the replica and its peers", partial(self._knows, port))

    def _knows(self, sentinel: int) -> bool:
        master = cli(sentinel, "SENTINEL", "MASTER", SERVICE).split("\n")
        fields = dict(zip(master[::2], master[1::2], strict=False))
        return fields.get("num-slaves") == "1" and fields.get("num-other-sentinels") == "2"

    def primary(self) -> int:
        """The port of the primary the first sentinel names."""
        return int(
            cli(self.sentinels[0], "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE).split()[1]
        )

    def failover(self) -> int:
        """``SENTINEL FAILOVER``: returns the port of the primary it replaced."""
        old = self.primary()
        assert cli(self.sentinels[0], "SENTINEL", "FAILOVER", SERVICE) == "OK"
        return old


@pytest.fixture
def sentinel_group(tmp_path: Path) -> Iterator[SentinelGroup]:
    """A running `SentinelGroup` of this test's own."""
    processes = Processes(tmp_path)
    try:
        group = SentinelGroup(processes)
        group.start()
        yield group
    finally:
        processes.close()


class Cluster:
    """A running Redis Cluster: its primaries' ports and ``redis+cluster://`` URL."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.url = "redis+cluster://" + ",".join(f"127.0.0.1:{port}" for port in ports)

    def flush(self) -> None:
        for port in self.ports:
            cli(port, "FLUSHALL")


@contextmanager
def started_cluster(directory: Path) -> Iterator[Cluster]:
    """A Redis Cluster of three primaries (no replicas) with its files in ``directory``,
    killed on exit."""
    processes = Processes(directory)
    try:
        ports = [_free_port() for _ in range(3)]
        for port in ports:
            config = str(directory / f"nodes-{port}.conf")
            argv = _server(
                port, "--cluster-enabled", "yes", "--cluster-config-file", config,
                "--cluster-port", str(_free_port()),  # not port + 10000: it may be past 65535
            )  # fmt: skip
            processes.start(argv, port)
        cli(ports[0], "--cluster", "create", *(f"127.0.0.1:{p}" for p in ports), "--cluster-yes")
        for port in ports:
            _until(f"{port} sees the cluster ok", partial(_cluster_ok, port))
        yield Cluster(ports)
    finally:
        processes.close()


def _cluster_ok(port: int) -> bool:
    return "cluster_state:ok" in cli(port, "CLUSTER", "INFO")


@pytest.fixture(scope="session")
def redis_cluster_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One Redis Cluster for the tests of this process (`started_cluster`)."""
    with started_cluster(tmp_path_factory.mktemp("cluster")) as cluster:
        yield cluster


@pytest.fixture
def redis_cluster(redis_cluster_session: Cluster) -> str:
    """The ``redis+cluster://`` URL of a running, empty Redis Cluster."""
    redis_cluster_session.flush()
    return redis_cluster_session.url
