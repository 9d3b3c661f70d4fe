"""The bus losing what it held, and workers dying, through the real stack: two ``mcpfast serve``
processes sharing a ``redis-server`` of the test's own and the signing keys.

* Redis emptied (``FLUSHALL``) or restarted empty: the official SDK client, which keeps the
  session id of its ``initialize`` for the whole session, still has its log level and its
  subscription applied, also by a worker that never saw the session (the workers that did give
  its record back); a session no surviving copy knows is answered 404, never served as new.
* A worker SIGKILLed: its task ends ``failed``, and a stream of it resumed on the other worker
  ends with an error response, each within the lease bound (`WORKER_LEASE_SECONDS` +
  2 × `LEASE_RENEW_SECONDS`), instead of ``working`` until the TTL and a hang.
"""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import trio

from mcpfast.protocol import sse
from mcpfast.server.state.bus import LEASE_RENEW_SECONDS, WORKER_LEASE_SECONDS

from ..helpers import ENGINE, Wire
from ..redis_server import RedisServer
from .peers.harness import Changes
from .processes import free_port, mcpfast_command, started_process
from .round_robin import round_robin

mcp = pytest.importorskip("mcp", reason="the official SDK (pip install mcp) is not installed")
from mcp import Client, types  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

KEYS = "k1:" + base64.urlsafe_b64encode(b"bus-loss-test-key-32-bytes-ok!!!").decode()
LEGACY = "2025-11-25"
TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
WAIT = 15.0
"""The bound of every wait on a server (generous: the machine is shared)."""
LEASE_BOUND = WORKER_LEASE_SECONDS + 2 * LEASE_RENEW_SECONDS
"""How long after a SIGKILL what the worker owned must have ended (documented: 5 s)."""
SLACK = 3.0
"""What a loaded machine may add to that bound here."""

SERVER = """
import trio

import mcpfast
from mcpfast import Context

server = mcpfast.Server("bus-loss")


@server.tool(instant=True)
def add(a: int, b: int) -> int:
    return a + b


@server.tool()
async def chatty(ctx: Context) -> str:
    await ctx.debug("a debug line")
    await ctx.info("an info line")
    await ctx.warning("a warning line")
    return "chatted"


@server.tool()
async def touch(uri: str) -> str:
    await server.resource_updated(uri)
    return f"touched {uri}"


@server.tool()
async def forever(ctx: Context) -> str:
    await ctx.report_progress(0, 1)
    await trio.sleep_forever()
    return "never"


@server.tool(task="optional")
async def slow(seconds: float = 600) -> str:
    await trio.sleep(seconds)
    return "slow done"


@server.resource("test://items/{name}")
def item(name: str) -> str:
    return name
"""


class Worker:
    """One ``mcpfast serve`` process on the bus."""

    def __init__(self, url: str, process: subprocess.Popen[bytes]) -> None:
        self.url = url
        self.process = process

    @property
    def origin(self) -> tuple[str, int]:
        port = int(self.url.rsplit(":", 1)[1].split("/")[0])
        return "127.0.0.1", port

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(5)
        if self.process.stderr is not None:
            self.process.stderr.close()


class Cluster:
    """Start workers of `SERVER` on one bus, each stopped when the test ends."""

    def __init__(self, stack: AsyncExitStack, target: Path, bus: str) -> None:
        self._stack = stack
        self._target = target
        self._bus = bus

    async def start(self) -> Worker:
        port = free_port()
        logs = self._target.parent / f"worker-{port}"
        argv = mcpfast_command(
            "serve", f"{self._target}:server", "--port", str(port), "--engine", ENGINE,
            "--bus", self._bus, "--access-log", f"{logs}.access",
        )  # fmt: skip
        env = {"MCPFAST_KEYS": KEYS}
        started = started_process(argv, port, env, log=Path(f"{logs}.log"))
        url, process = await self._stack.enter_async_context(started)
        return Worker(url, process)

    def logs(self) -> str:
        """What every worker logged (its stderr, its access log), for a failure's report."""
        return "\n".join(
            f"== {path.name}\n{path.read_text(errors='replace')}"
            for path in sorted(self._target.parent.glob("worker-*"))
        )


@asynccontextmanager
async def cluster(tmp_path: Path, bus: str) -> AsyncIterator[Cluster]:
    target = tmp_path / "bus_loss_server.py"
    target.write_text(SERVER)
    async with AsyncExitStack() as stack:
        yield Cluster(stack, target, bus)


@pytest.fixture
async def http() -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(timeout=WAIT) as client:
        yield client


async def _bus_up(http: httpx2.AsyncClient, *workers: Worker) -> None:
    """Wait until every worker's bus is up again (its pub/sub connection back)."""
    for worker in workers:
        busz = worker.url.removesuffix("/mcp") + "/busz"
        while (await http.get(busz)).status_code != 200:
            await trio.sleep(0.05)


# ================================================================================ bus loss


class Peer:
    """What the SDK client received: log messages and resource updates."""

    def __init__(self) -> None:
        self.logs: list[str] = []
        self.updated: list[str] = []
        self.changes = Changes()
        """The SDK runs each callback in a task of its own: one may run after the call it
        belongs to returned."""

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params.level)
        self.changes.notify()

    async def message(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.updated.append(str(message.params.uri))


@pytest.mark.parametrize("fault", ["flushall", "restart"])
async def test_the_sdk_client_keeps_its_log_level_and_subscription_when_redis_loses_them(
    tmp_path: Path, redis_server: RedisServer, http: httpx2.AsyncClient, fault: str
) -> None:
    """Both workers served the session (so both hold a copy of its record); Redis then loses
    everything, and the second worker is replaced by a fresh one (no copy): whichever serves
    the client, its level and subscription hold."""
    peer = Peer()
    uri = f"test://items/{uuid.uuid4().hex}"
    async with (
        cluster(tmp_path, redis_server.url) as workers,
        AsyncExitStack() as stack,
    ):
        first, second = await workers.start(), await workers.start()
        proxy = await stack.enter_async_context(round_robin([first.url, second.url]))
        client = await stack.enter_async_context(
            Client(
                proxy.url + "/mcp",
                mode="legacy",
                logging_callback=peer.log,
                message_handler=peer.message,
                read_timeout_seconds=WAIT,
            )
        )
        with anyio.fail_after(WAIT):
            await client.set_logging_level("warning")
            await client.subscribe_resource(uri)
            for _ in range(4):  # each worker reads the record: each holds a copy
                assert not (await client.call_tool("add", {"a": 1, "b": 1})).is_error
        if fault == "flushall":
            redis_server.flush()
        else:
            redis_server.stop()
            redis_server.start()
        second.kill()
        fresh = await workers.start()
        proxy.backends[1] = fresh.origin
        try:
            with anyio.fail_after(WAIT):
                await _bus_up(http, first, fresh)
                for _ in range(2):  # one call on each worker
                    assert not (await client.call_tool("chatty", {})).is_error
                await peer.changes.until(lambda: len(peer.logs) >= 2, "log of each call", WAIT)
                assert peer.logs == ["warning", "warning"]
                while uri not in peer.updated:
                    assert not (await client.call_tool("touch", {"uri": uri})).is_error
                    await trio.sleep(0.2)
        except BaseException:
            print(workers.logs())  # shown with the failure: which worker served what
            raise


async def test_a_session_whose_state_no_copy_kept_is_answered_404(
    tmp_path: Path, redis_server: RedisServer, http: httpx2.AsyncClient
) -> None:
    """Its workers are gone when Redis loses the record: the session is answered 404
    (``lost``), so the client starts over instead of running without its log level; a session
    of the same time that a live worker read is served."""
    async with cluster(tmp_path, redis_server.url) as workers:
        gone = await workers.start()
        kept = await workers.start()
        wire = Wire(http, gone.url)
        with trio.fail_after(WAIT):
            session, _ = await wire.initialize(LEGACY)
            level = await wire.legacy(
                "logging/setLevel", {"level": "error"}, session=session, version=LEGACY
            )
            assert level.status == 200, level.messages
            plain, _ = await wire.initialize(LEGACY)
            served = await Wire(http, kept.url).legacy("ping", session=plain, version=LEGACY)
            assert served.status == 200, served.messages
        gone.kill()
        await trio.sleep(1.1)  # sessions are dated to the second: these began before the loss
        redis_server.flush()
        other = Wire(http, kept.url)
        with trio.fail_after(WAIT):
            refused = await other.legacy("ping", session=session, version=LEGACY)
            assert refused.status == 404, refused.messages
            assert refused.messages[0]["error"]["data"]["reason"] == "lost"
            still = await other.legacy("ping", session=plain, version=LEGACY)
            assert still.status == 200, still.messages


# ================================================================================== leases


async def test_a_task_of_a_killed_worker_fails_within_the_lease_bound(
    tmp_path: Path, redis_url: str, http: httpx2.AsyncClient
) -> None:
    async with cluster(tmp_path, redis_url) as workers:
        doomed, survivor = await workers.start(), await workers.start()
        one, other = Wire(http, doomed.url), Wire(http, survivor.url)
        with trio.fail_after(WAIT):
            created = await one.modern(
                "tools/call", {"name": "slow", "arguments": {}}, capabilities=TASKS
            )
            task_id = created.result["taskId"]
            seen = await other.modern("tasks/get", {"taskId": task_id}, capabilities=TASKS)
            assert seen.result["status"] == "working", seen.message
        doomed.kill()
        killed = time.monotonic()
        with trio.fail_after(LEASE_BOUND + SLACK):
            while True:
                got = await other.modern("tasks/get", {"taskId": task_id}, capabilities=TASKS)
                if got.result["status"] != "working":
                    break
                await trio.sleep(0.1)
        assert got.result["status"] == "failed", got.message
        assert "stopped" in got.result["statusMessage"]
        assert time.monotonic() - killed < LEASE_BOUND + SLACK


async def test_a_stream_resumed_from_a_killed_worker_ends_with_an_error(
    tmp_path: Path, redis_url: str, http: httpx2.AsyncClient
) -> None:
    """The client lost the stream of its call with the worker that ran it; it resumes it on
    the other one (GET + ``Last-Event-ID``) and gets the call's error, not a stream that never
    ends."""
    async with cluster(tmp_path, redis_url) as workers:
        doomed, survivor = await workers.start(), await workers.start()
        with trio.fail_after(WAIT):
            session, _ = await Wire(http, doomed.url).initialize(LEGACY)
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-session-id": session,
            "mcp-protocol-version": LEGACY,
        }
        body = {
            "jsonrpc": "2.0",
            "id": "long-1",
            "method": "tools/call",
            "params": {"name": "forever", "arguments": {}, "_meta": {"progressToken": "p"}},
        }
        last = ""
        with trio.fail_after(WAIT):
            async with http.stream("POST", doomed.url, json=body, headers=headers) as response:
                parser = sse.Parser()
                async for chunk in response.aiter_bytes():
                    events = [e for e in parser.feed(chunk) if e.data and e.id]
                    if events:
                        last = events[-1].id or ""
                        break
        assert last, "the call's stream carried an event id"
        doomed.kill()
        killed = time.monotonic()
        frames: list[dict[str, Any]] = []
        with trio.fail_after(LEASE_BOUND + SLACK):
            resume = {**headers, "accept": "text/event-stream", "last-event-id": last}
            async with http.stream("GET", survivor.url, headers=resume) as response:
                assert response.status_code == 200
                parser = sse.Parser()
                async for chunk in response.aiter_bytes():
                    frames.extend(json.loads(e.data) for e in parser.feed(chunk) if e.data)
        assert time.monotonic() - killed < LEASE_BOUND + SLACK
        assert frames and frames[-1]["id"] == "long-1", frames
        assert frames[-1]["error"]["code"] == -32603, frames


async def test_live_workers_keep_their_tasks(
    tmp_path: Path, redis_url: str, http: httpx2.AsyncClient
) -> None:
    """Past the lease bound, a task of a live worker is still ``working`` on the other one
    (its worker renews its lease)."""
    async with cluster(tmp_path, redis_url) as workers:
        one = Wire(http, (await workers.start()).url)
        other = Wire(http, (await workers.start()).url)
        with trio.fail_after(WAIT):
            created = await one.modern(
                "tools/call", {"name": "slow", "arguments": {}}, capabilities=TASKS
            )
            task_id = created.result["taskId"]
        await trio.sleep(LEASE_BOUND + 1)
        with trio.fail_after(WAIT):
            got = await other.modern("tasks/get", {"taskId": task_id}, capabilities=TASKS)
        assert got.result["status"] == "working", got.message


# ============================================================================= persistence


async def test_a_bus_without_persistence_is_reported(
    tmp_path: Path, redis_url: str, http: httpx2.AsyncClient
) -> None:
    """The suite's Redis runs with ``--save "" --appendonly no``: the worker says so at start
    (a warning) and in the ``mcpfast.bus.persistent`` gauge (0)."""
    pytest.importorskip("prometheus_client", reason="the metrics extra is not installed")
    from prometheus_client.parser import text_string_to_metric_families

    target = tmp_path / "bus_loss_server.py"
    target.write_text(SERVER)
    port, metrics_port = free_port(), free_port()
    argv = mcpfast_command(
        "serve", f"{target}:server", "--port", str(port), "--engine", ENGINE,
        "--bus", redis_url, "--metrics-port", str(metrics_port),
    )  # fmt: skip
    async with started_process(argv, port, {"MCPFAST_KEYS": KEYS}) as (_, process):
        worker = Worker(f"http://127.0.0.1:{port}/mcp", process)
        with trio.fail_after(WAIT):
            while True:
                try:  # the MCP port listens from its bind, the metrics listener a moment later
                    answer = await http.get(f"http://127.0.0.1:{metrics_port}/metrics")
                except httpx2.ConnectError:
                    await trio.sleep(0.1)
                    continue
                families = text_string_to_metric_families(answer.text)
                found = [
                    sample
                    for family in families
                    if family.name.startswith("mcpfast_bus_persistent")
                    for sample in family.samples
                ]
                if found:
                    break
                await trio.sleep(0.1)
        assert [(s.labels["mcpfast_bus_kind"], s.value) for s in found] == [("redis", 0.0)]
        worker.process.kill()
        worker.process.wait(5)
        assert worker.process.stderr is not None
        assert b"keeps no data across a restart" in worker.process.stderr.read()


async def test_a_frozen_redis_makes_no_live_worker_look_dead(
    tmp_path: Path, redis_server: RedisServer, http: httpx2.AsyncClient
) -> None:
    """Redis frozen past the lease (SIGSTOP): every lease lapses meanwhile, but a worker
    judges others only once its own renewals have succeeded for a lease again, by which time
    the live ones renewed theirs: the task stays ``working``."""
    async with cluster(tmp_path, redis_server.url) as workers:
        one = Wire(http, (await workers.start()).url)
        other = Wire(http, (await workers.start()).url)
        with trio.fail_after(WAIT):
            created = await one.modern(
                "tools/call", {"name": "slow", "arguments": {}}, capabilities=TASKS
            )
            task_id = created.result["taskId"]
        assert redis_server.process is not None
        redis_server.process.send_signal(signal.SIGSTOP)
        try:
            await trio.sleep(WORKER_LEASE_SECONDS + 1)
        finally:
            redis_server.process.send_signal(signal.SIGCONT)
        deadline = trio.current_time() + LEASE_BOUND
        while trio.current_time() < deadline:
            with trio.fail_after(WAIT):
                got = await other.modern("tasks/get", {"taskId": task_id}, capabilities=TASKS)
            if got.status == 200:
                assert got.result["status"] == "working", got.message
            await trio.sleep(0.1)
