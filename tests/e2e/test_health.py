"""Liveness, readiness and the bus's health, both engines: on the main listener beside the MCP
path (configurable, or off); while the Redis bus is away readiness stays 200 (``degraded``,
or 503 in strict mode) and the bus path is 503; readiness 503 on the metrics listener while a
real ``mcpfast serve`` drains after SIGTERM."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx2
import pytest
import trio

import mcpfast
from mcpfast.demo import server as demo_server

from ..helpers import running
from ..redis_server import RedisServer
from .processes import free_port, mcpfast_command, server_process, started_process
from .test_shutdown import HEADERS, SLOW_SERVER, _call, call_running

ENGINES = pytest.mark.parametrize("engine", ["hypercorn", "native"])


@ENGINES
async def test_the_probes_beside_the_mcp_path(engine: str) -> None:
    async with running(demo_server, engine=engine) as url, httpx2.AsyncClient() as http:
        base = url.removesuffix("/mcp")
        for path in ("/healthz", "/readyz"):
            answer = await http.get(base + path)
            assert answer.status_code == 200
            assert answer.json() == {"status": "ok"}
            assert answer.headers["cache-control"] == "no-store"
            assert (await http.head(base + path)).status_code == 200
            refused = await http.post(base + path)
            assert refused.status_code in (404, 405)  # a body: the native engine says 404
        assert (await http.delete(base + "/readyz")).status_code == 405
        assert (await http.get(base + "/nothing")).status_code == 404


@ENGINES
async def test_probe_paths_are_configurable_or_off(engine: str) -> None:
    config = {"engine": engine, "health_path": "/live", "ready_path": None}
    async with running(mcpfast.Server("s"), **config) as url, httpx2.AsyncClient() as http:
        base = url.removesuffix("/mcp")
        assert (await http.get(base + "/live")).status_code == 200
        assert (await http.get(base + "/healthz")).status_code == 404
        assert (await http.get(base + "/readyz")).status_code == 404


def test_a_probe_path_never_clashes_with_the_mcp_path() -> None:
    with pytest.raises(ValueError, match="health path"):
        mcpfast.Config(health_path="/mcp")
    with pytest.raises(ValueError, match="health path"):
        mcpfast.Config(path="/readyz")
    with pytest.raises(ValueError, match="differ"):
        mcpfast.Config(health_path="/probe", ready_path="/probe")


async def _status_becomes(http: httpx2.AsyncClient, url: str, status: int) -> None:
    with trio.fail_after(15):
        while (await http.get(url)).status_code != status:
            await trio.sleep(0.05)


@ENGINES
async def test_a_worker_whose_bus_is_away_stays_ready(
    engine: str, redis_server: RedisServer
) -> None:
    """Readiness is not the bus's health: while Redis is away the worker serves what needs no
    bus, so ``/readyz`` stays 200 and says ``degraded``; ``/busz`` is 503 until it is back."""
    server = mcpfast.Server("bused")
    async with running(server, engine=engine, bus=redis_server.url) as url:
        base = url.removesuffix("/mcp")
        async with httpx2.AsyncClient(timeout=5) as http:
            await _status_becomes(http, base + "/busz", 200)
            assert (await http.get(base + "/readyz")).json() == {"status": "ok"}
            redis_server.stop()
            await _status_becomes(http, base + "/busz", 503)
            assert (await http.get(base + "/busz")).json() == {"status": "bus unavailable"}
            ready = await http.get(base + "/readyz")
            assert ready.status_code == 200
            assert ready.json() == {"status": "degraded", "bus": "unavailable"}
            assert (await http.get(base + "/healthz")).status_code == 200  # alive all along
            redis_server.start()
            await _status_becomes(http, base + "/busz", 200)
            assert (await http.get(base + "/readyz")).json() == {"status": "ok"}


@ENGINES
async def test_strict_readiness_follows_the_redis_bus(
    engine: str, redis_server: RedisServer
) -> None:
    """``mcpfast serve --ready-needs-bus`` (``ready_needs_bus``): readiness 503 while the bus
    is away."""
    port = free_port()
    argv = mcpfast_command(
        "serve", "--port", str(port), "--engine", engine, "--bus", redis_server.url,
        "--ready-needs-bus",
    )  # fmt: skip
    async with server_process(argv, port) as url:
        base = url.removesuffix("/mcp")
        async with httpx2.AsyncClient(timeout=5) as http:
            await _status_becomes(http, base + "/readyz", 200)
            redis_server.stop()
            await _status_becomes(http, base + "/readyz", 503)
            away = await http.get(base + "/readyz")
            assert away.json() == {"status": "bus unavailable"}
            assert (await http.get(base + "/healthz")).status_code == 200
            redis_server.start()
            await _status_becomes(http, base + "/readyz", 200)


@ENGINES
async def test_readiness_fails_while_draining(tmp_path: Path, engine: str) -> None:
    """SIGTERM closes the main listener at once; the metrics listener answers until the
    process is done: ``/readyz`` 503 while the call in flight finishes, ``/healthz`` 200."""
    target = tmp_path / "slow.py"
    target.write_text(SLOW_SERVER)
    port, metrics = free_port(), free_port()
    argv = mcpfast_command(
        "serve", f"{target}:server", "--port", str(port), "--engine", engine,
        "--metrics-port", str(metrics),
    )  # fmt: skip
    probes = f"http://127.0.0.1:{metrics}"
    async with started_process(argv, port) as (url, process):
        answers: list[httpx2.Response] = []
        async with httpx2.AsyncClient(timeout=10) as http:
            await _status_becomes(http, probes + "/readyz", 200)

            async def slow_call() -> None:
                answers.append(await http.post(url, json=_call(3.0, started), headers=HEADERS))

            started = tmp_path / "started"
            with trio.fail_after(20):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(slow_call)
                    await call_running(started)
                    process.send_signal(signal.SIGTERM)
                    await _status_becomes(http, probes + "/readyz", 503)
                    assert not answers, "draining while the call still runs"
                    draining = await http.get(probes + "/readyz")
                    assert draining.json() == {"status": "draining"}
                    assert (await http.get(probes + "/healthz")).status_code == 200
        assert answers[0].status_code == 200
        with trio.fail_after(10):
            await trio.to_thread.run_sync(process.wait, abandon_on_cancel=True)
        assert process.returncode == 0
