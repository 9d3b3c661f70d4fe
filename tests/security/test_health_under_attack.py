"""The metrics/health listener (`mcpfast serve --metrics-port`, where Kubernetes probes point)
under a connection-exhaustion attack: hundreds of idle connections and byte-a-second heads,
re-opened as soon as they are closed. The probes must still answer, each within a bound;
``/metrics`` answers only the names the listener's bind answers (no DNS-rebinding page reads
it); the listener binds loopback unless told otherwise."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import httpx2
import pytest
import trio

from mcpfast.server.config import Config
from mcpfast.server.core.health import Probes
from mcpfast.server.ops import metrics_listener
from mcpfast.server.ops.metrics_listener import serve_metrics
from mcpfast.server.state.local_bus import LocalBus

from ..e2e.processes import free_port, mcpfast_command, started_process

IDLE = 300
"""Idle connections held open: more than the listener takes at once."""
SLOW = 64
"""Connections sending their head a byte a second."""
PROBE_SECONDS = 2.0
"""How long a probe may take while the attack goes on (a kubelet's default timeout is 1 s;
the bound leaves room for a loaded 2-core test machine)."""

SERVER = """
import mcpfast
server = mcpfast.Server("probed")
"""


async def hold(port: int, *, slow: bool) -> None:
    """Keep a connection open without a whole request head; re-open it once it is closed."""
    while True:
        try:
            stream = await trio.open_tcp_stream("127.0.0.1", port)
        except OSError:
            await trio.sleep(0.05)
            continue
        async with stream:
            try:
                if slow:
                    await stream.send_all(b"GET /healthz HTTP/1.1\r\n")
                    while True:
                        await stream.send_all(b"x")
                        await trio.sleep(1)  # real time: a byte a second to the server process
                else:
                    await stream.receive_some()  # until the listener closes it
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass


async def probe(port: int, path: str, host: str | None = None) -> tuple[int, bytes]:
    """One probe on a fresh connection, as a kubelet sends it: its status and body."""
    host = host or f"127.0.0.1:{port}"
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(f"GET {path} HTTP/1.1\r\nhost: {host}\r\n\r\n".encode())
        data = b""
        while chunk := await stream.receive_some():
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


async def test_probes_answer_while_idle_and_slow_connections_pile_up(tmp_path: Path) -> None:
    target = tmp_path / "probed.py"
    target.write_text(SERVER)
    port, metrics = free_port(), free_port()
    argv = mcpfast_command(
        "serve", f"{target}:server", "--port", str(port), "--metrics-port", str(metrics)
    )
    async with started_process(argv, port), trio.open_nursery() as attack:
        for index in range(IDLE + SLOW):
            attack.start_soon(partial(hold, metrics, slow=index >= IDLE))
        await trio.sleep(1)  # real time: the server process's listener fills up
        for _ in range(4):  # over several head deadlines: the attackers re-open meanwhile
            for path in ("/healthz", "/readyz"):
                with trio.fail_after(PROBE_SECONDS):
                    status, body = await probe(metrics, path)
                assert status == 200, body
            await trio.sleep(0.5)  # real time: the server process's head deadlines pass
        with trio.fail_after(PROBE_SECONDS):
            status, _ = await probe(metrics, "/metrics")
        assert status == 200
        attack.cancel_scope.cancel()


@pytest.fixture
def no_global_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    """The listener served in this process leaves OpenTelemetry's global meter provider as it
    is: it can be set once per process, and the telemetry tests sharing this worker need it
    unset. What these tests check (connections, Host) does not depend on it."""
    monkeypatch.setattr(metrics_listener, "install_meter_provider", lambda: False)


@pytest.mark.usefixtures("no_global_provider")
async def test_metrics_answer_only_the_listeners_names() -> None:
    """A DNS-rebinding page (``Host: attacker.example``) cannot read ``/metrics``; the probes
    answer whatever the ``Host`` (a kubelet names the pod's address); the listener binds
    loopback even when the server binds every interface."""
    config = Config(host="0.0.0.0", metrics_port=0)
    probes = Probes(config, LocalBus(), trio.Event())
    async with trio.open_nursery() as nursery:
        url = await nursery.start(serve_metrics, config, probes)
        assert url.startswith("http://127.0.0.1:")
        port = int(url.rsplit(":", 1)[1])
        status, _ = await probe(port, "/metrics", f"attacker.example:{port}")
        assert status == 403
        status, _ = await probe(port, "/metrics", f"[::1]x.attacker.example:{port}")
        assert status == 403
        assert (await probe(port, "/metrics", f"localhost:{port}"))[0] == 200
        assert (await probe(port, "/healthz", f"10.1.2.3:{port}"))[0] == 200
        async with httpx2.AsyncClient(timeout=5) as http:
            assert (await http.get(url + "/metrics")).status_code == 200
        nursery.cancel_scope.cancel()


@pytest.mark.usefixtures("no_global_provider")
@pytest.mark.parametrize("metrics_host", ["127.0.0.1", "0.0.0.0"])
async def test_metrics_answer_any_host_when_allowed(metrics_host: str) -> None:
    config = Config(metrics_port=0, metrics_host=metrics_host, allowed_hosts=["*"])
    probes = Probes(config, LocalBus(), trio.Event())
    async with trio.open_nursery() as nursery:
        url = await nursery.start(serve_metrics, config, probes)
        port = int(url.rsplit(":", 1)[1])
        assert (await probe(port, "/metrics", "scraper.example"))[0] == 200
        nursery.cancel_scope.cancel()
