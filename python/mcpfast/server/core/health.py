"""Liveness and readiness probes, off the MCP path (``Config.health_path``, ``ready_path``),
for load balancers and Kubernetes: liveness is 200 while the process serves; readiness is 503
while the server drains at shutdown or while its bus is away (`Bus.ready`), else 200. They
need no token and check no ``Host``: they say nothing but that."""

from __future__ import annotations

from typing import Literal

import msgspec
import trio

from ..config import Config
from ..seams import Responder
from ..state.bus import Bus

Probe = Literal["live", "ready"]


class ProbeAnswer(msgspec.Struct):
    """A probe's JSON body: ``ok``, ``draining`` or ``bus unavailable``."""

    status: str


_OK = msgspec.json.encode(ProbeAnswer("ok"))
_DRAINING = msgspec.json.encode(ProbeAnswer("draining"))
_BUS_AWAY = msgspec.json.encode(ProbeAnswer("bus unavailable"))
NO_STORE = (b"cache-control", b"no-store")


class Probes:
    """The health paths of a server and their answers. ``bus`` is read at every probe (the
    server's bus, as `serve.endpoint_for` left it); ``closing`` is set when it drains."""

    def __init__(self, config: Config, bus: Bus, closing: trio.Event) -> None:
        self.paths: dict[str, Probe] = {}
        if config.health_path is not None:
            self.paths[config.health_path] = "live"
        if config.ready_path is not None:
            self.paths[config.ready_path] = "ready"
        self._bus = bus
        self._closing = closing

    def status(self, path: str) -> tuple[int, bytes]:
        """The HTTP status and JSON body answering a probe at ``path`` (one of `paths`)."""
        if self.paths[path] == "live":
            return 200, _OK
        if self._closing.is_set():
            return 503, _DRAINING
        if not self._bus.ready():
            return 503, _BUS_AWAY
        return 200, _OK

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
