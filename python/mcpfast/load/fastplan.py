"""The fast engine's plan: the suite's own probe (`mcpfast.load.probe`: the era, the tool, its
arguments, ``Mcp-Param-*``), then every request of the run built once as raw HTTP/1.1 bytes, from
the same `mcpfast.load.wire` and `protocol.session` rules as the locust users.

Workloads (``--user-class``): ``tools`` (the default: ``tools/call`` of the picked tool, stateless
in the modern era, in a session opened beforehand per connection in the legacy era), ``lists``
(``server/discover`` or ``ping``, and the advertised lists, in turn) and ``session`` (legacy
session ``tools/call`` whatever the server's newest era), each on its share of the connections
(`mcpfast.load.fastmix`). Requests are named as the locust users name them, so ``--fail-on
NAME:...`` reads the same.

Credentials (`mcpfast.load.auth`): a ``--bearer-env`` token, or one ``client_credentials`` token
obtained here, before the probe; every request is built with it, so a token that expires before
the run's end (`START_ALLOWANCE` included) is refused: nothing renews it (``--engine locust``
does).

The probe, the legacy sessions' ``initialize`` and the token requests go through one
`mcpfast.load.blocking.BlockingSession` (httpx2: no locust, no gevent, so the fast engine runs on
mcpfast's base install). This module runs in a process of its own: ``python -m
mcpfast.load.fastplan`` reads the options (JSON) on stdin and writes the `Plan` (JSON) on
stdout; a ProbeError or AuthError is written as ``{"error": ...}``.
"""

from __future__ import annotations

import base64
import json
import math
import sys
import time
from typing import Any
from urllib.parse import urlsplit

from .. import jsonrpc
from ..protocol.capabilities import unadvertised
from ..protocol.methods import LIST_KEYS
from . import wire
from .auth import AuthError, ClientCredentialsToken, Credentials, credentials_from_options
from .blocking import BlockingSession
from .connection import Connection
from .probe import PROBE_TIMEOUT, Probed, ProbeError, probe

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
    session: BlockingSession,
    calls: list[tuple[str, str, dict[str, Any]]],
    version: str,
    auth: Credentials | None,
) -> list[bytes]:
    """A legacy session opened now (``initialize``, ``notifications/initialized``) and its
    requests.

    Raises:
        ProbeError: the session could not be opened.
    """
    url = session.base_url
    connection = Connection(session, "legacy", version, auth=auth)
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


START_ALLOWANCE = 10.0
"""Seconds a token must outlast ``--run-time`` by: the load processes' start, and the run's
last answers."""


def _credentials(
    options: dict[str, Any], notes: list[str], session: BlockingSession
) -> tuple[Credentials | None, float]:
    """The run's credentials, their token obtained now, and when (``time.monotonic``) it
    expires (inf: never, or a static token).

    Raises:
        AuthError: no token could be had.
    """
    auth = credentials_from_options(
        options["url"],
        bearer_env=options.get("bearer_env") or "",
        client_id=options.get("client_id") or "",
        client_secret_env=options.get("client_secret_env") or "",
        scope=options.get("scope") or "",
        token_url=options.get("token_url") or "",
        issuer=options.get("auth_issuer") or "",
        note=notes.append,
        session=session,
    )
    if auth is None:
        return None, math.inf
    auth.start()
    return auth, auth.expires if isinstance(auth, ClientCredentialsToken) else math.inf


def _outlasts(expires: float, run_seconds: float) -> None:
    """Refuse a token that expires before the run ends: every request is built with it once.

    Raises:
        AuthError: it does.
    """
    left = expires - time.monotonic()
    if left < run_seconds + START_ALLOWANCE:
        raise AuthError(
            f"the access token expires in {max(left, 0.0):.0f} s, before the run ends "
            f"({run_seconds:g} s, and up to {START_ALLOWANCE:g} s to start): the fast engine "
            "builds every request once, with one token, and cannot renew it; give a shorter "
            "--run-time, a longer-lived token, or --engine locust (which renews tokens)"
        )


def _workload(
    workload: str, count: int, session: BlockingSession, probed: Probed, auth: Credentials | None
) -> tuple[list[dict[str, Any]], list[list[bytes]]]:
    """``workload``'s request kinds (name, method, id, workload) and ``count`` connections'
    cycles.

    Raises:
        ProbeError: the server offers nothing the workload calls, or refused a session.
    """
    era = "legacy" if workload == "session" else probed.offer.era
    version = probed.offer.version if probed.offer.era == era else probed.offer.legacy_version
    calls = _calls(workload, probed, era)
    prefix = "legacy " if era == "legacy" else ""
    if era == "legacy":
        cycles = [_legacy_cycle(session, calls, version, auth) for _ in range(count)]
    else:
        cycles = [_modern_cycle(session.base_url, calls, probed, auth)] * count
    kinds = [
        {"name": prefix + name, "method": method, "id": i + 1, "workload": workload}
        for i, (name, method, _) in enumerate(calls)
    ]
    return kinds, cycles


def build_plan(options: dict[str, Any]) -> dict[str, Any]:
    """The plan of a run: ``kinds`` (name, method, id, workload of each request kind),
    ``cycles`` (per connection, its requests, base64), ``groups`` (per workload of
    ``options["workloads"]``, ``[key, connections]`` pairs: its ``first`` connection and
    ``count``, its ``first_kind`` and number of ``kinds``), ``host``, ``port``, ``era`` (the
    server's, or legacy when every workload is ``session``) and ``notes``.

    Raises:
        ProbeError: the server could not be probed, or offers nothing a workload calls.
        AuthError: no token could be had, or it expires before the run's end.
    """
    url = options["url"]
    notes: list[str] = []
    session = BlockingSession(url, PROBE_TIMEOUT)
    auth, expires = _credentials(options, notes, session)
    run_seconds = float(options.get("run_seconds") or 0.0)
    _outlasts(expires, run_seconds)  # before the probe, and again once every request is built
    probed = probe(
        url,
        options.get("era") or "auto",
        options.get("tool") or "",
        options.get("arguments") or "",
        notes.append,
        auth,
        options.get("protocol_version") or "",
        session,
    )
    kinds: list[dict[str, Any]] = []
    cycles: list[list[bytes]] = []
    groups = []
    for workload, count in options["workloads"]:
        more_kinds, more_cycles = _workload(workload, int(count), session, probed, auth)
        groups.append(
            {
                "workload": workload,
                "first": len(cycles),
                "count": len(more_cycles),
                "first_kind": len(kinds),
                "kinds": len(more_kinds),
            }
        )
        kinds += more_kinds
        cycles += more_cycles
    _outlasts(expires, run_seconds)
    if len(groups) > 1:
        shares = ", ".join(f"{g['workload']} {g['count']}" for g in groups)
        notes.append(f"the connections by workload: {shares}")
    legacy = all(g["workload"] == "session" for g in groups)
    era = "legacy" if legacy else probed.offer.era
    version = probed.offer.version if probed.offer.era == era else probed.offer.legacy_version
    parts = urlsplit(url)
    return {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or (443 if parts.scheme == "https" else 80),
        "era": {"era": era, "version": version or ""},
        "kinds": kinds,
        "groups": groups,
        "cycles": [[base64.b64encode(r).decode() for r in cycle] for cycle in cycles],
        "notes": notes,
    }


def main() -> int:
    """Read the options on stdin, write the plan (or ``{"error": ...}``) on stdout."""
    options = json.loads(sys.stdin.read())
    try:
        plan = build_plan(options)
    except (ProbeError, AuthError, ValueError) as exc:
        plan = {"error": str(exc)}
    sys.stdout.write(json.dumps(plan))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
