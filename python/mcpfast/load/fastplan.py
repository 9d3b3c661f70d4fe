"""The fast engine's plan: the suite's own probe (`mcpfast.load.probe`: the era, the tool, its
arguments, ``Mcp-Param-*``), then every request of the run built once as raw HTTP/1.1 bytes, from
the same `mcpfast.load.wire` and `protocol.session` rules as the locust users.

Workloads (``--user-class``): ``tools`` (the default: ``tools/call`` of the picked tool, stateless
in the modern era, in a session opened beforehand per connection in the legacy era), ``lists``
(``server/discover`` or ``ping``, and the advertised lists, in turn) and ``session`` (legacy
session ``tools/call`` whatever the server's newest era). Requests are named as the locust
users name them, so ``--fail-on NAME:...`` reads the same.

The probe runs on locust's HTTP client (gevent), so this module runs in a process of its own:
``python -m mcpfast.load.fastplan`` reads the options (JSON) on stdin and writes the `Plan`
(JSON) on stdout; a ProbeError is written as ``{"error": ...}``.
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any
from urllib.parse import urlsplit

from .. import jsonrpc
from ..protocol.capabilities import unadvertised
from ..protocol.methods import LIST_KEYS
from . import wire
from .auth import Credentials, credentials_from_options
from .connection import Connection
from .probe import Probed, ProbeError, probe, probe_client

__all__ = ["build_plan"]


def _raw(url: str, headers: dict[str, str], body: bytes) -> bytes:
    """``body`` POSTed to ``url`` with ``headers``, as HTTP/1.1 bytes (keep-alive)."""
    parts = urlsplit(url)
    lines = [f"POST {parts.path or '/'}{'?' + parts.query if parts.query else ''} HTTP/1.1"]
    lines.append(f"host: {parts.netloc}")
    lines.append(f"content-length: {len(body)}")
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _calls(workload: str, probed: Probed, era: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(name, method, params) of each request kind of ``workload`` in ``era``."""
    tool = probed.tool
    if workload in ("tools", "session"):
        if tool is None:
            raise ProbeError("the server offers no tool to call")
        params = {"name": tool.name, "arguments": tool.arguments}
        return [(f"tools/call {tool.name}", "tools/call", params)]
    first = "server/discover" if era == "modern" else "ping"
    capabilities = probed.offer.capabilities
    methods = [first] + [m for m in LIST_KEYS if unadvertised(m, capabilities) is None]
    return [(m, m, {}) for m in methods]


def _legacy_cycle(
    url: str, calls: list[tuple[str, str, dict[str, Any]]], version: str, auth: Credentials | None
) -> list[bytes]:
    """A legacy session opened now (``initialize``, ``notifications/initialized``) and its
    requests.

    Raises:
        ProbeError: the session could not be opened.
    """
    connection = Connection(probe_client(url), "legacy", version, auth=auth)
    if not connection.initialize():
        raise ProbeError(f"the server failed initialize: {connection.problem}")
    cycle = []
    for index, (_, method, params) in enumerate(calls):
        headers = connection.state.headers()
        connection.authorize(headers)
        cycle.append(_raw(url, headers, jsonrpc.request(index + 1, method, params)))
    return cycle


def _modern_cycle(
    url: str, calls: list[tuple[str, str, dict[str, Any]]], probed: Probed, auth: Credentials | None
) -> list[bytes]:
    transport = wire.modern_transport(probed.offer.version)
    transport.param_headers = dict(probed.param_headers)
    cycle = []
    for index, (_, method, params) in enumerate(calls):
        body, headers = wire.modern_request(transport, index + 1, method, params)
        if auth is not None:
            auth.sign(headers, "POST", url)
        cycle.append(_raw(url, headers, body))
    return cycle


def build_plan(options: dict[str, Any]) -> dict[str, Any]:
    """The plan of a run: ``kinds`` (name, method, id of each request kind), ``cycles`` (per
    connection, its requests, base64), ``host``, ``port``, ``era`` and ``notes``.

    Raises:
        ProbeError: the server could not be probed, or offers nothing the workload calls.
    """
    url = options["url"]
    notes: list[str] = []
    auth = credentials_from_options(url, bearer_env=options.get("bearer_env") or "")
    probed = probe(
        url,
        options.get("era") or "auto",
        options.get("tool") or "",
        options.get("arguments") or "",
        notes.append,
        auth,
        options.get("protocol_version") or "",
    )
    workload = options.get("workload") or "tools"
    era = "legacy" if workload == "session" else probed.offer.era
    version = probed.offer.version if probed.offer.era == era else probed.offer.legacy_version
    calls = _calls(workload, probed, era)
    prefix = "legacy " if era == "legacy" else ""
    connections = int(options["connections"])
    if era == "legacy":
        cycles = [_legacy_cycle(url, calls, version, auth) for _ in range(connections)]
    else:
        cycles = [_modern_cycle(url, calls, probed, auth)] * connections
    parts = urlsplit(url)
    return {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or (443 if parts.scheme == "https" else 80),
        "era": {"era": era, "version": version or ""},
        "kinds": [
            {"name": prefix + name, "method": method, "id": i + 1}
            for i, (name, method, _) in enumerate(calls)
        ],
        "cycles": [[base64.b64encode(r).decode() for r in cycle] for cycle in cycles],
        "notes": notes,
    }


def main() -> int:
    """Read the options on stdin, write the plan (or ``{"error": ...}``) on stdout."""
    options = json.loads(sys.stdin.read())
    try:
        plan = build_plan(options)
    except (ProbeError, ValueError) as exc:
        plan = {"error": str(exc)}
    sys.stdout.write(json.dumps(plan))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
