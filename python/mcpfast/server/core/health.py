"""Liveness, readiness and the bus's health, off the MCP path (``Config.health_path``,
``ready_path``, ``bus_health_path``), for load balancers and Kubernetes. Three questions, three
answers:

- liveness: 200 while the process serves;
- readiness: 503 while the server drains at shutdown, else 200. A worker whose bus is away
  still serves what needs no bus (and refuses the rest: 503 with ``Retry-After``), so it stays
  ready and says ``degraded`` in the body (and in the ``mcpfast.bus.available`` gauge);
  ``Config.ready_needs_bus`` makes it 503 instead;
- the bus: 200 while it serves (`Bus.ready`), else 503.

They need no token and check no ``Host``: they say nothing but that."""

from __future__ import annotations

from typing import Literal

import msgspec
import trio

from ...telemetry import current
from ..config import Config
from ..seams import Responder
from ..state.bus import Bus

Probe = Literal["live", "ready", "bus"]


class ProbeAnswer(msgspec.Struct, omit_defaults=True):
    """A probe's JSON body: ``ok``, ``draining``, ``degraded`` (with ``bus``) or ``bus
    unavailable``."""

    status: str
    bus: str | None = None


_OK = msgspec.json.encode(ProbeAnswer("ok"))
_DRAINING = msgspec.json.encode(ProbeAnswer("draining"))
_DEGRADED = msgspec.json.encode(ProbeAnswer("degraded", bus="unavailable"))
_BUS_AWAY = msgspec.json.encode(ProbeAnswer("bus unavailable"))
NO_STORE = (b"cache-control", b"no-store")


class Probes:
    """The health paths of a server and their answers. ``bus`` is read at every probe (the
    server's bus, as `serve.endpoint_for` left it); ``closing`` is set when it drains."""

    def __init__(self, config: Config, bus: Bus, closing: trio.Event) -> None:
        self.paths: dict[str, Probe] = {}
        wanted: tuple[tuple[str | None, Probe], ...] = (
            (config.health_path, "live"),
            (config.ready_path, "ready"),
            (config.bus_health_path, "bus"),
        )
        for path, probe in wanted:
            if path is not None:
                self.paths[path] = probe
        self._strict = config.ready_needs_bus
        self._bus = bus
        self._closing = closing
        telemetry = current()
        if telemetry is not None and telemetry.instruments is not None:
            telemetry.instruments.buses.add(bus)

    def status(self, path: str) -> tuple[int, bytes]:
        """The HTTP status and JSON body answering a probe at ``path`` (one of `paths`)."""
        probe = self.paths[path]
        if probe == "live":
            return 200, _OK
        if probe == "bus":
            return (200, _OK) if self._bus.ready() else (503, _BUS_AWAY)
        if self._closing.is_set():
            return 503, _DRAINING
        if self._bus.ready():
            return 200, _OK
        return (503, _BUS_AWAY) if self._strict else (200, _DEGRADED)

    async def answer(self, path: str, method: str, responder: Responder) -> None:
        """Answer a request at one of `paths`: GET (and HEAD, no body) probe; else 405."""
        if method not in ("GET", "HEAD"):
            await responder.reply(405, b"", [(b"allow", b"GET, HEAD")])
            return
        status, body = self.status(path)
        if method == "HEAD":
            await responder.reply(status, b"", [(b"content-type", b"application/json"), NO_STORE])
            return
        await responder.reply(status, body, [NO_STORE])
