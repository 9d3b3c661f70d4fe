"""A locust suite that speaks MCP to any server URL, in either era.

    locust -f loadtests/locustfile.py --host http://127.0.0.1:8000/mcp
    mcpfast load http://127.0.0.1:8000/mcp            # the same, headless, with a summary

Before any user starts (locust's ``init`` event, once per process) the server is probed with the
client's own rules: the era (`mcpfast.protocol.discovery.judge_http` on a ``server/discover`` probe;
``--mcp-era`` forces one), its capabilities, its tools and resources, a trial legacy session and,
in the legacy era, a trial GET stream. The probe's requests are not part of the load and are not
in locust's statistics. Every user class whose feature the server does not offer is left out of
the run, with one line saying why (`mcpfast.load.offers` holds the rules); when none is left the
process exits with status 3. A server that answers -32601 or HTTP 405 at run time anyway stops
the users that need it (said once), instead of being asked again in a tight loop.

In the modern era (2026-07-28) every request is a stateless POST with ``_meta`` and the mirrored
``MCP-Protocol-Version`` / ``Mcp-Method`` / ``Mcp-Name`` / ``Mcp-Param-*`` headers; in the legacy
era each user keeps a session (``initialize`` + ``notifications/initialized``, ``Mcp-Session-Id``
replaced when re-minted, re-initialized on 404). Every answer is judged
(`mcpfast.load.wire.judge`): a JSON-RPC error in a 200 answer, a result of the wrong shape and a
tool result with ``isError`` are failures, named by HTTP status and JSON-RPC code so locust's
failure table groups them.

User classes (weights in brackets, summing to 10 so that ten users run one of each at least):

* `ToolCallUser` [4]: ``tools/call`` of ``--mcp-tool`` with ``--mcp-arguments`` (JSON); without
  them, the first read-only tool of ``tools/list`` (else the first tool), with arguments built
  from its input schema (`mcpfast.load.arguments`).
* `DiscoverUser` [2]: ``server/discover`` (legacy era: ``ping``) and the list calls the server's
  capabilities offer.
* `ResourceUser` [1]: ``resources/read`` of the listed resources.
* `LegacySessionUser` [2]: always legacy: initialize once, then ``tools/call``, ``tools/list``
  and ``ping`` in the session.
* `ListenUser` [1]: long-lived streams: ``subscriptions/listen`` of what the server advertises
  (modern) or the session's GET stream (legacy, after ``resources/subscribe`` of a resource when
  the server offers subscriptions), held ``--mcp-stream-seconds`` then closed and opened again;
  its latency is the time to the acknowledgement (modern) or to the stream's headers (legacy).

With ``--csv PREFIX``, ``PREFIX_stats.csv``, ``PREFIX_failures.csv`` and
``PREFIX_exceptions.csv`` are written once more when locust quits, from its final statistics
(locust itself last writes them up to a second before the end, before the users' ``on_stop``).

This file runs under gevent (locust's), never inside a Trio process: ``mcpfast load`` starts
locust in a child process.
"""

from __future__ import annotations

import csv
import itertools
import json
import logging
import os
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

import gevent  # type: ignore[import-untyped]
from gevent.lock import Semaphore  # type: ignore[import-untyped]
from locust import FastHttpUser, constant, events, task
from locust.contrib.fasthttp import FastHttpSession
from locust.env import Environment
from locust.event import EventHook
from locust.exception import StopUser
from locust.runners import WorkerRunner
from locust.stats import PERCENTILES_TO_REPORT, StatsCSV

from mcpfast import jsonrpc
from mcpfast.errors import TransportError
from mcpfast.load import EXIT_NOTHING_TO_RUN, NOTE_PREFIX, PROGRESS_PREFIX, wire
from mcpfast.load.arguments import arguments_for
from mcpfast.load.offers import Offer, listen_filter, skip_reasons
from mcpfast.protocol import sse
from mcpfast.protocol.capabilities import unadvertised
from mcpfast.protocol.methods import LIST_KEYS
from mcpfast.versions import LATEST_LEGACY, MODERN

log = logging.getLogger("mcpfast.load")
PROBE_TIMEOUT = 10.0
ERAS = ("auto", "modern", "legacy")


# ------------------------------------------------------------------------------------ options


def _options(parser: Any) -> None:
    parser.add_argument(
        "--mcp-tool",
        default="",
        env_var="MCPFAST_LOAD_TOOL",
        help="the tool ToolCallUser calls (default: one picked from tools/list)",
    )
    parser.add_argument(
        "--mcp-arguments",
        default="",
        env_var="MCPFAST_LOAD_ARGUMENTS",
        help="its arguments as a JSON object (default: built from its input schema)",
    )
    parser.add_argument(
        "--mcp-era",
        default="auto",
        choices=ERAS,
        env_var="MCPFAST_LOAD_ERA",
        help="auto (detect, as the mcpfast client does), modern or legacy",
    )
    parser.add_argument(
        "--mcp-stream-seconds",
        type=float,
        default=10.0,
        env_var="MCPFAST_LOAD_STREAM_SECONDS",
        help="how long ListenUser holds each stream open",
    )
    parser.add_argument(
        "--mcp-progress",
        action="store_true",
        env_var="MCPFAST_LOAD_PROGRESS",
        include_in_web_ui=False,
        help="print a JSON progress line every second and notes as lines (for mcpfast load)",
    )


def _option(environment: Environment, name: str, default: Any) -> Any:
    options = environment.parsed_options
    value = getattr(options, name, None) if options is not None else None
    return default if value in (None, "") else value


# ------------------------------------------------------------------------------ shared state


@dataclass
class Tool:
    name: str
    arguments: dict[str, Any]
    schema: dict[str, Any] | None = None


@dataclass
class Shared:
    """What every user of this process shares: what the server offers, found once by the probe
    (``offer``, ``tool``, ``param_headers``; ``skipped``: user class -> why it cannot run), and
    what the run has learnt since (``stopped``: user class -> the answer that stopped it;
    ``dropped``: request labels the server turned out to lack; ``notes``: what was said).
    """

    lock: Semaphore = field(default_factory=Semaphore)
    ready: bool = False
    offer: Offer = field(default_factory=lambda: Offer("modern", MODERN))
    tool: Tool | None = None
    param_headers: dict[str, Any] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    stopped: dict[str, str] = field(default_factory=dict)
    dropped: set[str] = field(default_factory=set)
    notes: set[str] = field(default_factory=set)
    progress: bool = False
    quiet: bool = False
    """A worker process: its master says what the probe found."""

    @property
    def era(self) -> str:
        return self.offer.era

    @property
    def version(self) -> str:
        return self.offer.version

    @property
    def capabilities(self) -> dict[str, Any]:
        return self.offer.capabilities

    def note(self, text: str) -> None:
        """Say ``text`` once per process: a ``MCPFAST-NOTE`` line on stdout under
        ``--mcp-progress`` (``mcpfast load`` prints it as is), else a warning in locust's log."""
        if text in self.notes:
            return
        self.notes.add(text)
        if self.progress:
            sys.stdout.write(NOTE_PREFIX + text + "\n")
            sys.stdout.flush()
        else:
            log.warning(text)


SHARED = Shared()


class ProbeError(Exception):
    """The probe could not learn what the server offers (its message says why)."""


def _payload(body: bytes) -> Any:
    """A request body as is (geventhttpclient sends bytes; locust's annotation says str)."""
    return body


def _content_type(response: Any) -> str:
    headers = response.headers
    return str(headers.get("content-type", "")) if headers is not None else ""


def _header(response: Any, name: str) -> str | None:
    headers = response.headers
    value = headers.get(name) if headers is not None else None
    return str(value) if value else None


def _no_answer(response: Any) -> str:
    """The failure text of a request that got no HTTP answer."""
    error = getattr(response, "error", None)
    return f"no answer ({error!r})" if error is not None else "no answer"


# ------------------------------------------------------------------------------- connection


class Connection:
    """One user's way of speaking MCP through ``client`` (a locust `FastHttpSession`): stateless
    requests (modern) or a session (legacy). A ``probing`` connection's failures are not said
    (the probe reports what they mean)."""

    def __init__(
        self, client: FastHttpSession, era: str, version: str, *, probing: bool = False
    ) -> None:
        self.client = client
        self.probing = probing
        self.era = era
        self.transport = wire.modern_transport(version if era == "modern" else MODERN)
        self.session: str | None = None
        self.version: str | None = None
        self.initialized = False
        self.subscribed = False
        self.capabilities: dict[str, Any] = {}
        self.problem: str | None = None
        self._ids = itertools.count(1)

    def label(self, name: str) -> str:
        return name if self.era == "modern" else "legacy " + name

    # ------------------------------------------------------------------------------ requests

    def call(
        self, method: str, params: dict[str, Any] | None = None, *, name: str | None = None
    ) -> wire.Answer | None:
        """Send one request and judge its answer (None: no HTTP answer at all, or the legacy
        handshake failed; both already recorded)."""
        if self.era == "modern":
            id_ = next(self._ids)
            body, headers = wire.modern_request(self.transport, id_, method, params)
            return self._post(method, id_, body, headers, name or method)
        if not self.initialized and not self.initialize():
            return None
        answer, expired = self._legacy(method, params, name or method)
        if expired and self.initialize():
            answer, _ = self._legacy(method, params, name or method)
        return answer

    def _post(
        self, method: str, id_: int | str, body: bytes, headers: dict[str, str], name: str
    ) -> wire.Answer | None:
        with self.client.request(
            "POST", "", name=name, data=_payload(body), headers=headers, catch_response=True
        ) as response:
            if response.status_code == 0:
                return None  # no HTTP answer: locust records the connection error itself
            self._remember(response)
            answer = wire.judge(
                method, id_, response.status_code, _content_type(response), response.content or b""
            )
            _settle(response, answer, say=not self.probing)
            return answer

    def _legacy(
        self, method: str, params: dict[str, Any] | None, name: str
    ) -> tuple[wire.Answer | None, bool]:
        """A request in the session; ``True`` second when the session expired (404)."""
        id_ = f"c{next(self._ids)}"
        body = jsonrpc.request(id_, method, params if params is not None else {})
        headers = wire.legacy_headers(self.version, self.session)
        label = self.label(name)
        with self.client.request(
            "POST", "", name=label, data=_payload(body), headers=headers, catch_response=True
        ) as response:
            if response.status_code == 0:
                return None, False
            if response.status_code == 404 and self.session is not None:
                response.request_meta["name"] = label + " (session expired: 404)"
                response.success()
                self.initialized = False
                return None, True
            self._remember(response)
            answer = wire.judge(
                method, id_, response.status_code, _content_type(response), response.content or b""
            )
            _settle(response, answer, say=not self.probing)
            return answer, False

    def _remember(self, response: Any) -> None:
        """Keep the session id, replacing it when the server re-mints it."""
        if self.era == "legacy":
            session = _header(response, "mcp-session-id")
            if session:
                self.session = session

    def initialize(self) -> bool:
        """``initialize`` then ``notifications/initialized``: a new session (False: it failed,
        and ``problem`` says how)."""
        self.session = None
        self.version = None
        self.initialized = False
        self.subscribed = False
        self.problem = None
        id_ = f"c{next(self._ids)}"
        body = jsonrpc.request(id_, "initialize", wire.initialize_params(LATEST_LEGACY))
        with self.client.request(
            "POST",
            "",
            name="legacy initialize",
            data=_payload(body),
            headers=wire.legacy_headers(None, None),
            catch_response=True,
        ) as response:
            if response.status_code == 0:
                self.problem = _no_answer(response)
                return False
            answer = wire.judge(
                "initialize",
                id_,
                response.status_code,
                _content_type(response),
                response.content or b"",
            )
            _settle(response, answer, say=not self.probing)
            if answer.failure is not None:
                self.problem = answer.failure
                return False
            self.session = _header(response, "mcp-session-id")
        self.version = str(answer.result["protocolVersion"])
        self.capabilities = dict(answer.result["capabilities"])
        note = jsonrpc.notification("notifications/initialized")
        with self.client.request(
            "POST",
            "",
            name="legacy notifications/initialized",
            data=_payload(note),
            headers=wire.legacy_headers(self.version, self.session),
            catch_response=True,
        ) as response:
            if response.status_code == 0:
                self.problem = _no_answer(response)
                return False
            if response.status_code not in (200, 202):
                self.problem = f"HTTP {response.status_code}"
                response.failure(self.problem)
                return False
            response.success()
        self.initialized = True
        return True

    def close(self) -> None:
        """End the legacy session (DELETE; 404/405 are fine answers)."""
        if self.era != "legacy" or self.session is None:
            return
        headers = wire.legacy_headers(self.version, self.session)
        with self.client.request(
            "DELETE", "", name="legacy DELETE session", headers=headers, catch_response=True
        ) as response:
            if response.status_code == 0:
                return
            if response.status_code in (200, 202, 204, 404, 405):
                response.success()
            else:
                response.failure(f"HTTP {response.status_code}")
        self.session = None
        self.initialized = False

    # ------------------------------------------------------------------------------- streams

    def listen(self, seconds: float, notifications: dict[str, Any]) -> wire.Answer | None:
        """``subscriptions/listen`` of ``notifications``: the acknowledgement timed, then the
        stream held open for ``seconds``. The judged answer (None: no HTTP answer)."""
        id_ = next(self._ids)
        body, headers = wire.modern_request(
            self.transport, id_, "subscriptions/listen", {"notifications": notifications}
        )
        headers["accept-encoding"] = "identity"
        started = time.perf_counter()
        with self.client.request(
            "POST",
            "",
            name="subscriptions/listen",
            data=_payload(body),
            headers=headers,
            stream=True,
            catch_response=True,
        ) as response:
            if response.status_code == 0:
                return None
            if response.status_code != 200 or not _content_type(response).startswith(
                "text/event-stream"
            ):
                answer = wire.judge(
                    "subscriptions/listen",
                    id_,
                    response.status_code,
                    _content_type(response),
                    response.content or b"",
                )
                if answer.failure is None:
                    answer.failure = f"HTTP {response.status_code} not an event stream"
                _settle(response, answer, say=not self.probing)
                return answer
            reader = _Events(response)
            first = reader.next_message(max(seconds, 5.0))
            response.request_meta["response_time"] = (time.perf_counter() - started) * 1000
            problem = "no acknowledgement" if first is None else wire.check_ack(first)
            answer = wire.Answer(
                None if problem is None else f"HTTP 200 {problem}", first, status=200
            )
            _settle(response, answer, say=not self.probing)
        if problem is None:
            reader.hold(seconds)
        reader.close()
        return answer

    def get_stream(self, seconds: float, *, name: str = "legacy GET stream") -> wire.Answer | None:
        """The legacy session's GET stream: its opening timed, then held open for ``seconds``.
        The judged answer (None: no HTTP answer, or the session could not be opened)."""
        if not self.initialized and not self.initialize():
            return None
        headers = {
            **wire.legacy_headers(self.version, self.session),
            "accept": "text/event-stream",
            "accept-encoding": "identity",
        }
        headers.pop("content-type", None)
        with self.client.request(
            "GET", "", name=name, headers=headers, stream=True, catch_response=True
        ) as response:
            status = response.status_code
            if status == 0:
                return None
            self._remember(response)
            if status == 200 and _content_type(response).startswith("text/event-stream"):
                answer = wire.Answer(None, status=status)
                response.success()
            elif status == 404 and self.session is not None:
                response.request_meta["name"] = name + " (session expired: 404)"
                response.success()
                self.initialized = False
                answer = wire.Answer(None, status=status)
            else:
                text = "HTTP 200 not an event stream" if status == 200 else f"HTTP {status}"
                answer = wire.Answer(text, status=status)
                _settle(response, answer, say=not self.probing)
        reader = _Events(response)
        if answer.failure is None and status == 200 and seconds > 0:
            reader.hold(seconds)
        reader.close()
        return answer


def _settle(response: Any, answer: wire.Answer, *, say: bool = True) -> None:
    """Record ``answer`` as locust's outcome of ``response``; the first failure of each kind is
    said once (unless not ``say``), with the server's words (not one that says the server lacks
    the method: the user that stops or drops it says so)."""
    if answer.failure is None:
        response.success()
        return
    if say and not answer.not_offered:
        name = response.request_meta["name"]
        SHARED.note(f"first {answer.failure} ({name}): {answer.detail or '-'}")
    response.failure(answer.failure)


def _said(answer: wire.Answer) -> str:
    """The failure of ``answer`` with the server's words: ``HTTP 200 JSON-RPC -32601 (Method
    not found)``."""
    return f"{answer.failure} ({answer.detail})" if answer.detail else str(answer.failure)


class _Events:
    """The events of a streamed response, read line by line (a stream never ends by itself)."""

    def __init__(self, response: Any) -> None:
        self.raw = getattr(response, "_response", None)
        self.parser = sse.Parser()
        self.pending: list[dict[str, Any]] = []

    def _feed(self) -> bool:
        line = self.raw.readline(b"\n") if self.raw is not None else b""
        if not line:
            return False
        for event in self.parser.feed(line):
            if event.data:
                loaded = json.loads(event.data)
                self.pending.extend(loaded if isinstance(loaded, list) else [loaded])
        return True

    def next_message(self, timeout: float) -> dict[str, Any] | None:
        with gevent.Timeout(timeout, False):
            while not self.pending:
                if not self._feed():
                    return None
        return self.pending.pop(0) if self.pending else None

    def hold(self, seconds: float) -> None:
        """Read (and drop) whatever comes for ``seconds``, or until the server ends the stream."""
        with gevent.Timeout(seconds, False):
            while self._feed():
                self.pending.clear()

    def close(self) -> None:
        """Close the connection (an unfinished response is never returned to the pool)."""
        if self.raw is not None:
            self.raw.release()
            self.raw = None


# ------------------------------------------------------------------------------------- probe


def _probe_client(host: str) -> FastHttpSession:
    """A session whose requests locust does not count (the probe is not part of the load),
    with bounded timeouts."""
    return FastHttpSession(
        host,
        EventHook(),  # type: ignore[no-untyped-call]
        None,
        connection_timeout=PROBE_TIMEOUT,
        network_timeout=PROBE_TIMEOUT,
    )


def _detect(client: FastHttpSession, forced: str) -> tuple[str, str, dict[str, Any]]:
    """The era, version and (modern) capabilities, by the client's rules: probe
    ``server/discover``; fall back to legacy on HTTP 400/404/405 or JSON-RPC
    -32020/-32021/-32022/-32601 (after one retry with the highest common modern version on
    -32022); anything else is not an MCP server.

    Raises:
        ProbeError: no answer, or not an MCP answer.
    """
    if forced == "legacy":
        return "legacy", LATEST_LEGACY, {}
    version, retried = MODERN, False
    while True:
        transport = wire.modern_transport(version)
        body, headers = wire.modern_request(transport, 0, "server/discover")
        with client.request(
            "POST", "", name="probe", data=_payload(body), headers=headers, catch_response=True
        ) as response:
            response.success()
            if response.status_code == 0:
                raise ProbeError(
                    f"the server did not answer the probe (server/discover): {_no_answer(response)}"
                )
            status, raw = response.status_code, response.content or b""
            content_type = _content_type(response)
        try:
            messages = wire.parse_messages(content_type, raw)
        except ValueError:
            messages = []
        message = messages[0] if messages else None
        if forced == "modern":
            answer = wire.judge("server/discover", 0, status, content_type, raw)
            if answer.failure is not None:
                raise ProbeError(
                    f"the server failed server/discover: {answer.failure}: {answer.detail or '-'}"
                )
            verdict = None
        else:
            try:
                verdict = wire.judge_http(status, raw, message, retried=retried)
            except TransportError as exc:
                raise ProbeError(f"the server's server/discover answer is not MCP: {exc}") from None
        if verdict is None:
            result = (message or {}).get("result") or {}
            return "modern", version, dict(result.get("capabilities") or {})
        if not verdict.retry:
            return "legacy", LATEST_LEGACY, {}
        version, retried = verdict.version, True


def _list(connection: Connection, method: str) -> list[dict[str, Any]]:
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


def _pick_tool(environment: Environment, tools: list[dict[str, Any]]) -> Tool | None:
    """``--mcp-tool`` (with ``--mcp-arguments``), else the first read-only tool that needs no
    task (else the first such tool), with arguments from its schema; None: nothing to call.

    Raises:
        ProbeError: ``--mcp-arguments`` is not a JSON object.
    """
    name = str(_option(environment, "mcp_tool", ""))
    given = str(_option(environment, "mcp_arguments", ""))
    listed = {t["name"]: t for t in tools}
    if name:
        tool = listed.get(name)
        if tool is None:
            SHARED.note(f"tool {name!r} is not in tools/list; calling it anyway")
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


def _probe(environment: Environment, host: str) -> Offer:
    """Learn what the server at ``host`` offers (see `mcpfast.load.offers`) and keep what the
    users need (the tool, the ``Mcp-Param-*`` declarations) in `SHARED`.

    Raises:
        ProbeError: the server did not answer as an MCP server.
    """
    client = _probe_client(host)
    era, version, capabilities = _detect(client, str(_option(environment, "mcp_era", "auto")))
    legacy = Connection(client, "legacy", LATEST_LEGACY, probing=True)
    opened = legacy.initialize()
    if era == "legacy" and not opened:
        raise ProbeError(f"the server failed initialize: {legacy.problem}")
    if era == "legacy":
        version = legacy.version or LATEST_LEGACY
    offer = Offer(era, version, capabilities)
    offer.legacy_version = legacy.version or LATEST_LEGACY
    offer.legacy_capabilities = legacy.capabilities
    offer.legacy_problem = None if opened else legacy.problem
    try:
        connection = legacy if era == "legacy" else Connection(client, era, version, probing=True)
        if era == "legacy":
            offer.capabilities = legacy.capabilities
        if "tools" in offer.capabilities:
            offer.tools = _list(connection, "tools/list")
        if "resources" in offer.capabilities:
            offer.resources = [
                r["uri"]
                for r in _list(connection, "resources/list")
                if isinstance(r.get("uri"), str)
            ]
        SHARED.tool = _pick_tool(environment, offer.tools)
        offer.tool = SHARED.tool.name if SHARED.tool is not None else None
        for tool in offer.tools:
            try:
                wire.remember_tool(connection.transport, tool)
            except ValueError as exc:
                SHARED.note(f"tool {tool['name']!r}: {exc}")
        SHARED.param_headers = connection.transport.param_headers
        if era == "legacy":
            offer.get_stream_problem = _try_get_stream(legacy)
    finally:
        legacy.close()
    return offer


def _try_get_stream(connection: Connection) -> str | None:
    """Open the session's GET stream and close it at once: None when it opened (or did not
    answer within `PROBE_TIMEOUT`: it is not ruled out), else the failure (``HTTP 405``: there
    is no GET stream)."""
    answer = connection.get_stream(0.0, name="probe GET stream")
    return answer.failure if answer is not None else None


def _setup(environment: Environment) -> str | None:
    """Probe the server once per process (see `_probe`); None when done, else why it failed."""
    with SHARED.lock:
        if SHARED.ready:
            return None
        host = environment.host
        if not host:
            return "no host: give --host (or the web UI's Host)"
        try:
            offer = _probe(environment, host)
        except ProbeError as exc:
            return str(exc)
        SHARED.offer = offer
        classes = [c.__name__ for c in environment.user_classes]
        SHARED.skipped = skip_reasons(classes, offer)
        for name, reason in SHARED.skipped.items():
            if not SHARED.quiet:  # a worker's master says it
                SHARED.note(f"skipping {name}: {reason}")
        log.info("era %s (%s); tool %s", offer.era, offer.version, SHARED.tool)
        SHARED.ready = True
        return None


def _on_init(environment: Environment, runner: Any = None, **_: Any) -> None:
    """Probe before any user starts; leave out the user classes the server cannot serve and
    exit with `EXIT_NOTHING_TO_RUN` when none is left (or, headless, when the probe failed).
    Without a host yet (the web UI asks for it) the first user probes."""
    SHARED.progress = bool(_option(environment, "mcp_progress", False))
    SHARED.quiet = isinstance(runner, WorkerRunner)
    if not SHARED.quiet:

        def write_final_stats(**_: Any) -> None:
            _write_final_stats(environment)

        environment.events.quit.add_listener(write_final_stats)  # type: ignore[no-untyped-call]
    if not environment.host:
        return
    problem = _setup(environment)
    if SHARED.quiet:
        return
    headless = bool(getattr(environment.parsed_options, "headless", False))
    if problem is not None:
        SHARED.note(problem)
        if headless:
            raise SystemExit(EXIT_NOTHING_TO_RUN)
        return
    remaining = [c for c in environment.user_classes if c.__name__ not in SHARED.skipped]
    if not remaining:
        names = ", ".join(c.__name__ for c in environment.user_classes)
        SHARED.note(f"nothing to run: every user class of the run ({names}) is skipped")
        raise SystemExit(EXIT_NOTHING_TO_RUN)
    environment.user_classes[:] = remaining


def _write_final_stats(environment: Environment) -> None:
    """Rewrite ``PREFIX_stats.csv``, ``PREFIX_failures.csv`` and ``PREFIX_exceptions.csv`` from
    locust's final statistics (each replaced whole, so locust's own open handles cannot mix in).
    """
    prefix = _option(environment, "csv_prefix", None)
    if not prefix:
        return
    writer = StatsCSV(environment, PERCENTILES_TO_REPORT)
    outputs: tuple[tuple[str, Callable[[Any], None]], ...] = (
        ("_stats.csv", writer.requests_csv),
        ("_failures.csv", writer.failures_csv),
        ("_exceptions.csv", writer.exceptions_csv),
    )
    for suffix, write in outputs:
        path = f"{prefix}{suffix}"
        with open(path + ".final", "w", newline="") as handle:
            write(csv.writer(handle))
        os.replace(path + ".final", path)


# ------------------------------------------------------------------------------------- users


class McpUser(FastHttpUser):
    """The base of the MCP users: a `Connection` in the detected era, made on first use.

    A user whose class was skipped (the server does not offer its feature) or stopped (the server
    answered -32601 or HTTP 405 at run time) stops at its next task without a request.
    """

    abstract = True
    wait_time = constant(0)
    connection: Connection | None = None

    def mcp(self, era: str | None = None) -> Connection | None:
        """This user's connection (None while the server is unknown: the probe failed).

        Raises:
            StopUser: this user's class was skipped or stopped.
        """
        if not SHARED.ready:
            problem = _setup(self.environment)
            if problem is not None:
                SHARED.note(problem)
                gevent.sleep(1.0)
                return None
        name = type(self).__name__
        if name in SHARED.skipped or name in SHARED.stopped:
            raise StopUser()
        if self.connection is None:
            wanted = era or SHARED.era
            version = SHARED.version if wanted == SHARED.era else LATEST_LEGACY
            self.connection = Connection(self.client, wanted, version)
            self.connection.transport.param_headers = SHARED.param_headers
        return self.connection

    def send(
        self,
        connection: Connection,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        name: str | None = None,
    ) -> wire.Answer | None:
        """`Connection.call`, stopping this user's class when the server lacks the method."""
        answer = connection.call(method, params, name=name)
        self.check(connection.label(name or method), answer)
        return answer

    def check(self, label: str, answer: wire.Answer | None) -> None:
        """Stop every user of this class, said once, when ``answer`` says the server lacks what
        ``label`` asked for (JSON-RPC -32601 or HTTP 405): asking again cannot help.

        Raises:
            StopUser: it does.
        """
        if answer is None or not answer.not_offered:
            return
        self.stop_class(f"the server answered {label} with {_said(answer)}")

    def stop_class(self, why: str) -> NoReturn:
        """Stop every user of this class for the rest of the run, said once (`_watch` ends the
        run when no class is left).

        Raises:
            StopUser: always.
        """
        name = type(self).__name__
        SHARED.stopped.setdefault(name, why)
        SHARED.note(f"{name} stops: {SHARED.stopped[name]}")
        raise StopUser()

    def on_stop(self) -> None:
        if self.connection is not None:
            try:
                self.connection.close()
            except Exception:  # the run is ending: a failed DELETE is not worth a traceback
                log.debug("closing the session failed", exc_info=True)

    def stream_seconds(self) -> float:
        return float(_option(self.environment, "mcp_stream_seconds", 10.0))


class ToolCallUser(McpUser):
    """``tools/call``, stateless in the modern era."""

    weight = 4

    @task
    def call_tool(self) -> None:
        connection = self.mcp()
        if connection is None:
            return
        tool = SHARED.tool
        if tool is None:  # skipped up front; this is a class picked in the web UI
            raise StopUser()
        self.send(
            connection,
            "tools/call",
            {"name": tool.name, "arguments": tool.arguments},
            name=f"tools/call {tool.name}",
        )


class DiscoverUser(McpUser):
    """``server/discover`` (``ping`` in the legacy era) and the list calls; a method the server
    turns out to lack (-32601, 405) is dropped, said once."""

    weight = 2

    @task
    def discover_or_list(self) -> None:
        connection = self.mcp()
        if connection is None:
            return
        methods = ["server/discover" if connection.era == "modern" else "ping"]
        methods += [m for m in LIST_KEYS if unadvertised(m, SHARED.capabilities) is None]
        methods = [m for m in methods if connection.label(m) not in SHARED.dropped]
        if not methods:
            self.stop_class("the server lacks every method it calls")
        method = random.choice(methods)
        answer = connection.call(method, {})
        if answer is not None and answer.not_offered:
            label = connection.label(method)
            SHARED.dropped.add(label)
            SHARED.note(f"DiscoverUser drops {label}: the server answered {_said(answer)}")


class ResourceUser(McpUser):
    """``resources/read`` of the listed resources."""

    weight = 1

    @task
    def read_resource(self) -> None:
        connection = self.mcp()
        if connection is None:
            return
        if not SHARED.offer.resources:
            raise StopUser()
        self.send(connection, "resources/read", {"uri": random.choice(SHARED.offer.resources)})


class LegacySessionUser(McpUser):
    """A legacy session whatever the server's newest era: initialize once, then ``tools/call``,
    ``tools/list`` (``ping`` instead when the session offers no tools) and ``ping``."""

    weight = 2

    @task(3)
    def call_tool(self) -> None:
        connection = self.mcp("legacy")
        if connection is None:
            return
        tool = SHARED.tool
        if tool is None or "tools" not in SHARED.offer.legacy_capabilities:
            self.send(connection, "ping", {})
            return
        self.send(
            connection,
            "tools/call",
            {"name": tool.name, "arguments": tool.arguments},
            name=f"tools/call {tool.name}",
        )

    @task(1)
    def list_tools(self) -> None:
        connection = self.mcp("legacy")
        if connection is not None:
            tools = "tools" in SHARED.offer.legacy_capabilities
            self.send(connection, "tools/list" if tools else "ping", {})

    @task(1)
    def ping(self) -> None:
        connection = self.mcp("legacy")
        if connection is not None:
            self.send(connection, "ping", {})


class ListenUser(McpUser):
    """Long-lived streams: ``subscriptions/listen`` (modern) or the GET stream (legacy)."""

    weight = 1

    @task
    def hold_stream(self) -> None:
        connection = self.mcp()
        if connection is None:
            return
        if connection.era == "modern":
            notifications = listen_filter(SHARED.offer)
            if not notifications:  # skipped up front; this is a class picked in the web UI
                raise StopUser()
            answer = connection.listen(self.stream_seconds(), notifications)
            self.check("subscriptions/listen", answer)
            return
        self.subscribe(connection)
        self.check("legacy GET stream", connection.get_stream(self.stream_seconds()))

    def subscribe(self, connection: Connection) -> None:
        """``resources/subscribe`` of the first listed resource, once per session, when the
        server offers subscriptions: the GET stream then carries its updates too."""
        offer = SHARED.offer
        resources = offer.capabilities.get("resources")
        if not (isinstance(resources, dict) and resources.get("subscribe") is True):
            return
        if not offer.resources or "legacy resources/subscribe" in SHARED.dropped:
            return
        if connection.initialized and connection.subscribed:
            return
        answer = connection.call("resources/subscribe", {"uri": offer.resources[0]})
        if answer is not None and answer.not_offered:
            SHARED.dropped.add("legacy resources/subscribe")
            SHARED.note(
                f"ListenUser drops resources/subscribe: the server answered {_said(answer)}"
            )
        connection.subscribed = answer is not None and answer.failure is None


# ----------------------------------------------------------------------- progress and idling


_watchers: list[gevent.Greenlet] = []
WATCH_INTERVAL = 0.25


def _idle(environment: Environment) -> bool:
    """Every user class of the run is skipped or stopped, and its users are gone."""
    runner = environment.runner
    names = {c.__name__ for c in environment.user_classes}
    stopped = names <= SHARED.skipped.keys() | SHARED.stopped.keys()
    return stopped and runner is not None and runner.user_count == 0


def _watch(environment: Environment) -> None:
    """End the run (headless; under the web UI, stop it) once `_idle`: nothing is left to load.
    A worker leaves that to its master (which sees no classes stop, so it runs on)."""
    while not _idle(environment):
        gevent.sleep(WATCH_INTERVAL)
    SHARED.note("every user class has stopped: the run ends")
    runner = environment.runner
    assert runner is not None
    if getattr(environment.parsed_options, "headless", False):
        runner.quit()
    else:
        runner.stop()


def _start_watching(environment: Environment, **_: Any) -> None:
    if isinstance(environment.runner, WorkerRunner):
        return
    _watchers.append(gevent.spawn(_watch, environment))
    if _option(environment, "mcp_progress", False):
        _watchers.append(gevent.spawn(_report_progress, environment))


def _report_progress(environment: Environment) -> None:
    """A ``MCPFAST-PROGRESS`` line every second (for ``mcpfast load``)."""
    started = time.monotonic()
    while True:
        gevent.sleep(1.0)
        total = environment.stats.total
        line = {
            "elapsed": round(time.monotonic() - started, 1),
            "users": environment.runner.user_count if environment.runner is not None else 0,
            "requests": total.num_requests,
            "failures": total.num_failures,
            "rps": round(total.current_rps, 1),
            "p50": total.get_current_response_time_percentile(0.5)
            or total.get_response_time_percentile(0.5),
            "p95": total.get_current_response_time_percentile(0.95)
            or total.get_response_time_percentile(0.95),
        }
        sys.stdout.write(PROGRESS_PREFIX + json.dumps(line) + "\n")
        sys.stdout.flush()


def _stop_watching(**_: Any) -> None:
    current = gevent.getcurrent()
    while _watchers:
        watcher = _watchers.pop()
        if watcher is not current:  # the watcher that is ending the run ends by itself
            watcher.kill(block=False)


# locust's EventHook.add_listener is unannotated
events.init_command_line_parser.add_listener(_options)  # type: ignore[no-untyped-call]
events.init.add_listener(_on_init)  # type: ignore[no-untyped-call]
events.test_start.add_listener(_start_watching)  # type: ignore[no-untyped-call]
events.test_stop.add_listener(_stop_watching)  # type: ignore[no-untyped-call]
