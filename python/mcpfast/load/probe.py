"""The load test's up-front probe (gevent, once per process, before any user starts; without
gevent in the fast engine's plan process, through its `mcpfast.load.blocking.BlockingSession`):
what the server offers, found with the client's own rules, outside locust's statistics.

`probe` detects the era (driving `protocol.discovery.Negotiation` with ``server/discover``
probes, as `mcpfast.connect` does, unless one is forced, or implied by a pinned revision:
`mcpfast.load.pinning`), opens a trial legacy session (in the revision the detection chose),
lists the tools and resources, picks the tool to call (`pick_tool`) and, in the legacy era,
tries the GET stream. What that rules out is decided by `mcpfast.load.offers`.

With credentials (`mcpfast.load.auth`) the probe's requests carry them too. A server that refuses
the probe's ``server/discover`` with 401 or 403 is not ruled out: the run goes on in the forced
era (else modern) with the ``tools`` capability assumed, and its report counts the refusals
(`Refused`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import TransportError
from ..protocol.discovery import Negotiation
from ..protocol.methods import LIST_KEYS
from . import wire
from .arguments import arguments_for
from .auth import Credentials
from .connection import Connection, Say, content_type, no_answer, payload
from .offers import Offer
from .pinning import legacy_offer, modern_offer, pinned_era

if TYPE_CHECKING:
    from locust.contrib.fasthttp import FastHttpSession

    from .blocking import BlockingSession

    Session = FastHttpSession | BlockingSession
PROBE_TIMEOUT = 10.0


class ProbeError(Exception):
    """The probe could not learn what the server offers (its message says why)."""


class Refused(ProbeError):
    """The server answered the probe 401 (unauthorized) or 403 (forbidden)."""

    def __init__(self, status: int, detail: str) -> None:
        kind = "unauthorized" if status == 401 else "forbidden"
        super().__init__(f"the server answered server/discover HTTP {status} ({kind}): {detail}")
        self.status = status


@dataclass
class Tool:
    """The tool the users call, with its arguments (and input schema, when listed)."""

    name: str
    arguments: dict[str, Any]
    schema: dict[str, Any] | None = None


@dataclass
class Probed:
    """What the probe found: the `Offer`, the tool to call (None: none), and the
    ``x-mcp-header`` declarations of the listed tools (for ``Mcp-Param-*``)."""

    offer: Offer
    tool: Tool | None = None
    param_headers: dict[str, Any] = field(default_factory=dict)


def probe_client(host: str) -> FastHttpSession:
    """A session whose requests locust does not count (the probe is not part of the load),
    with bounded timeouts. In locust's processes only (it imports locust, and so gevent)."""
    from locust.contrib.fasthttp import FastHttpSession
    from locust.event import EventHook

    return FastHttpSession(
        host,
        EventHook(),  # type: ignore[no-untyped-call]
        None,
        connection_timeout=PROBE_TIMEOUT,
        network_timeout=PROBE_TIMEOUT,
    )


def _discover(
    client: Session, version: str, auth: Credentials | None = None
) -> tuple[int, bytes, str]:
    """POST ``server/discover`` in ``version``: the status, body and content type.

    Raises:
        ProbeError: no HTTP answer.
        Refused: HTTP 401 or 403.
    """
    body, headers = wire.modern_request(wire.modern_transport(version), 0, "server/discover")
    for retry in (True, False):
        used = auth.sign(headers, "POST", client.base_url or "") if auth is not None else ""
        with client.request(
            "POST", "", name="probe", data=payload(body), headers=headers, catch_response=True
        ) as response:
            response.success()
            if response.status_code == 0:
                raise ProbeError(
                    f"the server did not answer the probe (server/discover): {no_answer(response)}"
                )
            if auth is not None:
                auth.answered(response.headers)
                if (
                    retry
                    and response.status_code == 401
                    and auth.unauthorized(used, response.headers) is not None
                ):
                    continue  # a newer token, or the server's DPoP nonce: once more
            return _refused_or(response)
    raise AssertionError("unreachable")  # pragma: no cover


def _refused_or(response: Any) -> tuple[int, bytes, str]:
    """The probe's answer: status, body and content type.

    Raises:
        Refused: HTTP 401 or 403.
    """
    if response.status_code in (401, 403):
        answer = wire.judge(
            "server/discover",
            0,
            response.status_code,
            content_type(response),
            response.content or b"",
        )
        raise Refused(response.status_code, answer.detail or "-")
    return response.status_code, response.content or b"", content_type(response)


def detect(
    client: Session, forced: str, auth: Credentials | None = None, pinned: str = ""
) -> tuple[str, str, dict[str, Any]]:
    """The era, version and (modern) capabilities, by the client's rules (the same
    `Negotiation`): probe ``server/discover``; fall back to legacy on HTTP 400/404/405 or
    JSON-RPC -32020/-32021/-32022/-32601 (after one retry with the highest common modern version
    on -32022; a legacy version is the one ``initialize`` asks for: after a -32022 listing only
    legacy revisions, the highest common one); anything else is not an MCP server. A ``forced``
    era speaks the ``pinned`` revision (`mcpfast.load.pinning`; "": that era's newest).

    Raises:
        ProbeError: no answer, or not an MCP answer.
        Refused: HTTP 401 or 403.
    """
    if forced == "legacy":
        return "legacy", legacy_offer(pinned), {}
    if forced == "modern":
        return _forced_modern(client, modern_offer(pinned), auth)
    negotiation = Negotiation(modern_offer(pinned), legacy_offer(pinned))
    while negotiation.probe is not None:
        status, raw, kind = _discover(client, negotiation.probe, auth)
        try:
            negotiation.http(status, raw, _first_message(kind, raw))
        except TransportError as exc:
            raise ProbeError(f"the server's server/discover answer is not MCP: {exc}") from None
    if negotiation.era == "legacy":
        return "legacy", negotiation.version, {}
    return "modern", negotiation.version, _capabilities(negotiation.answer)


def _forced_modern(
    client: Session, version: str, auth: Credentials | None
) -> tuple[str, str, dict[str, Any]]:
    """A forced modern run's ``server/discover`` (no fallback): its capabilities.

    Raises:
        ProbeError: no answer, or a failed one.
        Refused: HTTP 401 or 403.
    """
    status, raw, kind = _discover(client, version, auth)
    answer = wire.judge("server/discover", 0, status, kind, raw)
    if answer.failure is not None:
        raise ProbeError(
            f"the server failed server/discover: {answer.failure}: {answer.detail or '-'}"
        )
    return "modern", version, _capabilities(_first_message(kind, raw))


def _first_message(kind: str, raw: bytes) -> Any:
    """The first JSON-RPC message of a probe's answer (None: none, or not JSON)."""
    try:
        messages = wire.parse_messages(kind, raw)
    except ValueError:
        return None
    return messages[0] if messages else None


def _capabilities(message: Any) -> dict[str, Any]:
    result = (message or {}).get("result") or {}
    return dict(result.get("capabilities") or {})


def list_all(connection: Connection, method: str) -> list[dict[str, Any]]:
    """Every item of a list method (at most 100 pages; a failed page ends the list)."""
    key = LIST_KEYS[method]
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(100):
        answer = connection.call(method, {"cursor": cursor} if cursor is not None else {})
        if answer is None or answer.failure is not None:
            break
        items.extend(answer.result.get(key) or [])
        cursor = answer.result.get("nextCursor")
        if not isinstance(cursor, str):
            break
    return items


def pick_tool(name: str, given: str, tools: list[dict[str, Any]], note: Say) -> Tool | None:
    """``name`` (``--mcp-tool``, with ``given``: ``--mcp-arguments``), else the first read-only
    tool that needs no task (else the first such tool), with arguments from its schema; None:
    nothing to call.

    Raises:
        ProbeError: ``given`` is not a JSON object.
    """
    listed = {t["name"]: t for t in tools}
    if name:
        tool = listed.get(name)
        if tool is None:
            note(f"tool {name!r} is not in tools/list; calling it anyway")
    else:
        usable = [t for t in tools if (t.get("execution") or {}).get("taskSupport") != "required"]
        read_only = [t for t in usable if (t.get("annotations") or {}).get("readOnlyHint") is True]
        candidates = read_only or usable
        if not candidates:
            return None
        tool = candidates[0]
        name = tool["name"]
    schema = tool.get("inputSchema") if tool is not None else None
    if given:
        try:
            arguments = json.loads(given)
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):
            raise ProbeError(f"--mcp-arguments must be a JSON object, got {given!r}")
    else:
        arguments = arguments_for(schema)
    return Tool(name, arguments, schema if isinstance(schema, dict) else None)


def probe(
    host: str,
    era: str,
    tool: str,
    arguments: str,
    note: Say,
    auth: Credentials | None = None,
    pinned: str = "",
    client: Session | None = None,
) -> Probed:
    """Learn what the server at ``host`` offers (see `mcpfast.load.offers`), in ``era``
    (``auto`` detects), and the tool to call (``tool``/``arguments``: the options), with
    ``auth``'s credentials; ``pinned`` (``--mcp-version``) is the revision the run speaks
    (its era implied, `mcpfast.load.pinning`); through ``client`` (None: `probe_client`'s).

    Raises:
        ProbeError: the server did not answer as an MCP server, the pin is not a revision of
            ``era`` mcpfast speaks, or the server's ``initialize`` negotiated another revision.
    """
    try:
        era = pinned_era(era, pinned)
    except ValueError as exc:
        raise ProbeError(f"--mcp-version: {exc}") from None
    client = client if client is not None else probe_client(host)
    try:
        era, version, capabilities = detect(client, era, auth, pinned)
    except Refused as exc:
        hint = "" if auth is not None else " (give --bearer-env or --client-id)"
        note(f"{exc}{hint}; the run goes on and counts the refusals")
        era = "legacy" if era == "legacy" else "modern"
        version = legacy_offer(pinned) if era == "legacy" else modern_offer(pinned)
        capabilities = {"tools": {}}
    asked = version if era == "legacy" else legacy_offer(pinned)
    legacy = Connection(client, "legacy", asked, auth=auth)
    opened = legacy.initialize()
    if era == "legacy" and not opened:
        raise ProbeError(f"the server failed initialize: {legacy.problem}")
    if era == "legacy":
        version = _negotiated(legacy, pinned)
    offer = Offer(era, version, capabilities)
    offer.legacy_version = legacy.version or legacy_offer(pinned)
    offer.legacy_capabilities = legacy.capabilities
    offer.legacy_problem = None if opened else legacy.problem
    try:
        connection = legacy if era == "legacy" else Connection(client, era, version, auth=auth)
        if era == "legacy":
            offer.capabilities = legacy.capabilities
        return _listed(connection, offer, tool, arguments, note)
    finally:
        legacy.close()


def _negotiated(legacy: Connection, pinned: str) -> str:
    """The revision the trial legacy session speaks.

    Raises:
        ProbeError: it is not the ``pinned`` one (the session is then closed).
    """
    version = legacy.version or legacy_offer(pinned)
    if pinned and version != pinned:
        legacy.close()
        raise ProbeError(
            f"the server's initialize negotiated protocol version {version}, not the pinned "
            f"{pinned}"
        )
    return version


def _listed(connection: Connection, offer: Offer, tool: str, arguments: str, note: Say) -> Probed:
    """Fill ``offer`` from the lists ``connection`` gets, pick the tool, and (legacy) try the
    GET stream."""
    if "tools" in offer.capabilities:
        offer.tools = list_all(connection, "tools/list")
    if "resources" in offer.capabilities:
        offer.resources = [
            r["uri"]
            for r in list_all(connection, "resources/list")
            if isinstance(r.get("uri"), str)
        ]
    picked = pick_tool(tool, arguments, offer.tools, note)
    offer.tool = picked.name if picked is not None else None
    for listed in offer.tools:
        try:
            wire.remember_tool(connection.transport, listed)
        except ValueError as exc:
            note(f"tool {listed['name']!r}: {exc}")
    if offer.era == "legacy":
        offer.get_stream_problem = try_get_stream(connection)
    return Probed(offer, picked, connection.transport.param_headers)


def try_get_stream(connection: Connection) -> str | None:
    """Open the session's GET stream and close it at once: None when it opened (or did not
    answer within `PROBE_TIMEOUT`: it is not ruled out), else the failure (``HTTP 405``: there
    is no GET stream)."""
    answer = connection.get_stream(0.0, name="probe GET stream")
    return answer.failure if answer is not None else None
