"""A locust suite that speaks MCP to any server URL, in either era.

    locust -f loadtests/locustfile.py --host http://127.0.0.1:8000/mcp
    mcpfast load http://127.0.0.1:8000/mcp            # the same, headless, with a summary

The era is detected once per process with the client's own rules
(`mcpfast.client.eras.judge_http` on a ``server/discover`` probe; ``--mcp-era`` forces one). In
the modern era (2026-07-28) every request is a stateless POST with ``_meta`` and the mirrored
``MCP-Protocol-Version`` / ``Mcp-Method`` / ``Mcp-Name`` / ``Mcp-Param-*`` headers; in the
legacy era each user keeps a session (``initialize`` + ``notifications/initialized``,
``Mcp-Session-Id`` replaced when re-minted, re-initialized on 404). Every answer is judged
(`mcpfast.load.wire.judge`): a JSON-RPC error in a 200 answer, a result of the wrong shape and a
tool result with ``isError`` are failures, named by HTTP status and JSON-RPC code so locust's
failure table groups them.

User classes (weights in brackets, summing to 10 so that ten users run one of each at least):

* `ToolCallUser` [4]: ``tools/call`` of ``--mcp-tool`` with ``--mcp-arguments`` (JSON); without
  them, the first read-only tool of ``tools/list`` (else the first tool), with arguments built
  from its input schema (`mcpfast.load.arguments`).
* `DiscoverUser` [2]: ``server/discover`` (legacy era: ``ping``) and the list calls the server's
  capabilities offer.
* `ResourceUser` [1]: ``resources/read`` of the listed resources (stops when there are none).
* `LegacySessionUser` [2]: always legacy: initialize once, then ``tools/call``, ``tools/list``
  and ``ping`` in the session.
* `ListenUser` [1]: long-lived streams: ``subscriptions/listen`` (modern) or the session's GET
  stream (legacy), held ``--mcp-stream-seconds`` then closed and opened again; its latency is the
  time to the acknowledgement (modern) or to the stream's headers (legacy).

This file runs under gevent (locust's), never inside a Trio process: ``mcpfast load`` starts
locust in a child process.
"""

from __future__ import annotations

import itertools
import json
import logging
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import gevent  # type: ignore[import-untyped]
from gevent.lock import Semaphore  # type: ignore[import-untyped]
from locust import FastHttpUser, constant, events, task
from locust.env import Environment
from locust.exception import StopUser
from locust.runners import WorkerRunner

from mcpfast import jsonrpc
from mcpfast.errors import TransportError
from mcpfast.load import wire
from mcpfast.load.arguments import arguments_for
from mcpfast.protocol import sse
from mcpfast.versions import LATEST_LEGACY, MODERN

log = logging.getLogger("mcpfast.load")
PROGRESS_PREFIX = "MCPFAST-PROGRESS "
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
        help="print a JSON progress line every second (for mcpfast load)",
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
    """What every user of this process shares: the era and what the server offers, found once."""

    lock: Semaphore = field(default_factory=Semaphore)
    ready: bool = False
    era: str = "modern"
    version: str = MODERN
    capabilities: dict[str, Any] = field(default_factory=dict)
    tool: Tool | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    resources: list[str] = field(default_factory=list)
    param_headers: dict[str, Any] = field(default_factory=dict)
    notes: set[str] = field(default_factory=set)

    def note(self, text: str) -> None:
        """Log ``text`` once per process."""
        if text not in self.notes:
            self.notes.add(text)
            log.warning(text)


SHARED = Shared()


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


# ------------------------------------------------------------------------------- connection


class Connection:
    """One user's way of speaking MCP: stateless requests (modern) or a session (legacy)."""

    def __init__(self, user: FastHttpUser, era: str, version: str) -> None:
        self.user = user
        self.client = user.client
        self.era = era
        self.transport = wire.modern_transport(version if era == "modern" else MODERN)
        self.session: str | None = None
        self.version: str | None = None
        self.initialized = False
        self.capabilities: dict[str, Any] = {}
        self.no_get_stream = False
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
            _settle(response, answer)
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
            _settle(response, answer)
            return answer, False

    def _remember(self, response: Any) -> None:
        """Keep the session id, replacing it when the server re-mints it."""
        if self.era == "legacy":
            session = _header(response, "mcp-session-id")
            if session:
                self.session = session

    def initialize(self) -> bool:
        """``initialize`` then ``notifications/initialized``: a new session."""
        self.session = None
        self.version = None
        self.initialized = False
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
                return False
            answer = wire.judge(
                "initialize",
                id_,
                response.status_code,
                _content_type(response),
                response.content or b"",
            )
            _settle(response, answer)
            if answer.failure is not None:
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
                return False
            if response.status_code in (200, 202):
                response.success()
            else:
                response.failure(f"HTTP {response.status_code}")
                return False
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

    def listen(self, seconds: float) -> None:
        """``subscriptions/listen``: the acknowledgement timed, then the stream held open."""
        notifications = {"toolsListChanged": True}
        if "prompts" in SHARED.capabilities:
            notifications["promptsListChanged"] = True
        if "resources" in SHARED.capabilities:
            notifications["resourcesListChanged"] = True
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
                return
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
                response.failure(
                    answer.failure or f"HTTP {response.status_code} not an event stream"
                )
                return
            reader = _Events(response)
            first = reader.next_message(max(seconds, 5.0))
            response.request_meta["response_time"] = (time.perf_counter() - started) * 1000
            problem = "no acknowledgement" if first is None else wire.check_ack(first)
            if problem is None:
                response.success()
            else:
                response.failure(f"HTTP 200 {problem}")
        if problem is None:
            reader.hold(seconds)
        reader.close()

    def get_stream(self, seconds: float) -> None:
        """The legacy session's GET stream: its opening timed, then held open."""
        if not self.initialized and not self.initialize():
            return
        headers = {
            **wire.legacy_headers(self.version, self.session),
            "accept": "text/event-stream",
            "accept-encoding": "identity",
        }
        headers.pop("content-type", None)
        opened = False
        with self.client.request(
            "GET", "", name="legacy GET stream", headers=headers, stream=True, catch_response=True
        ) as response:
            status = response.status_code
            if status == 0:
                return
            self._remember(response)
            if status == 200 and _content_type(response).startswith("text/event-stream"):
                response.success()
                opened = True
            elif status == 405:
                response.request_meta["name"] = "legacy GET stream (405: not offered)"
                response.success()
                self.no_get_stream = True
            elif status == 404 and self.session is not None:
                response.request_meta["name"] = "legacy GET stream (session expired: 404)"
                response.success()
                self.initialized = False
            else:
                response.failure(f"HTTP {status}")
        reader = _Events(response)
        if opened:
            reader.hold(seconds)
        reader.close()


def _settle(response: Any, answer: wire.Answer) -> None:
    if answer.failure is None:
        response.success()
        return
    if answer.failure not in SHARED.notes:  # the first of each kind, with the server's words
        SHARED.notes.add(answer.failure)
        log.warning("%s: %s", answer.failure, answer.detail or "-")
    response.failure(answer.failure)


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


# ------------------------------------------------------------------------------------- setup


def _detect(connection: Connection, forced: str) -> bool:
    """Era detection by the client's rules: probe ``server/discover``; fall back to legacy on
    HTTP 400/404/405 or JSON-RPC -32020/-32021/-32022/-32601 (after one retry with the highest
    common modern version on -32022); anything else is not an MCP server."""
    if forced == "legacy":
        SHARED.era, SHARED.version = "legacy", LATEST_LEGACY
        return True
    version, retried = MODERN, False
    while True:
        transport = wire.modern_transport(version)
        body, headers = wire.modern_request(transport, 0, "server/discover")
        with connection.client.request(
            "POST",
            "",
            name="era probe (server/discover)",
            data=_payload(body),
            headers=headers,
            catch_response=True,
        ) as response:
            if response.status_code == 0:
                return False
            raw = response.content or b""
            try:
                messages = wire.parse_messages(_content_type(response), raw)
            except ValueError:
                messages = []
            message = messages[0] if messages else None
            if forced == "modern":
                answer = wire.judge(
                    "server/discover", 0, response.status_code, _content_type(response), raw
                )
                _settle(response, answer)
                if answer.failure is not None:
                    return False
                verdict = None
            else:
                try:
                    verdict = wire.judge_http(response.status_code, raw, message, retried=retried)
                except TransportError as exc:
                    response.failure(f"HTTP {response.status_code} era probe: not an MCP answer")
                    SHARED.note(f"era probe: {exc}")
                    return False
                response.success()
        if verdict is None:
            SHARED.era, SHARED.version = "modern", version
            result = (message or {}).get("result") or {}
            SHARED.capabilities = dict(result.get("capabilities") or {})
            return True
        if verdict.retry:
            version, retried = verdict.version, True
            continue
        SHARED.era, SHARED.version = "legacy", LATEST_LEGACY
        return True


def _list(connection: Connection, method: str) -> list[dict[str, Any]]:
    key = wire.LIST_KEYS[method]
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


def _pick_tool(environment: Environment) -> Tool | None:
    name = str(_option(environment, "mcp_tool", ""))
    given = str(_option(environment, "mcp_arguments", ""))
    listed = {t["name"]: t for t in SHARED.tools}
    if name:
        tool = listed.get(name)
        if tool is None:
            SHARED.note(f"tool {name!r} is not in tools/list; calling it anyway")
    else:
        usable = [
            t for t in SHARED.tools if (t.get("execution") or {}).get("taskSupport") != "required"
        ]
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
            log.error("--mcp-arguments must be a JSON object, got %r: stopping", given)
            if environment.runner is not None:
                gevent.spawn(environment.runner.quit)
            raise StopUser()
    else:
        arguments = arguments_for(schema)
    return Tool(name, arguments, schema if isinstance(schema, dict) else None)


def _setup(user: McpUser) -> Connection | None:
    """Detect the era and learn the server (once per process); the connection used for it."""
    with SHARED.lock:
        if SHARED.ready:
            return None
        forced = str(_option(user.environment, "mcp_era", "auto"))
        connection = Connection(user, "modern", MODERN)
        if not _detect(connection, forced):
            return None
        connection = Connection(user, SHARED.era, SHARED.version)
        if SHARED.era == "legacy":
            if not connection.initialize():
                return None
            SHARED.capabilities = connection.capabilities
        if "tools" in SHARED.capabilities:
            SHARED.tools = _list(connection, "tools/list")
        if "resources" in SHARED.capabilities:
            SHARED.resources = [
                r["uri"]
                for r in _list(connection, "resources/list")
                if isinstance(r.get("uri"), str)
            ]
        SHARED.tool = _pick_tool(user.environment)
        for tool in SHARED.tools:
            try:
                wire.remember_tool(connection.transport, tool)
            except ValueError as exc:
                SHARED.note(f"tool {tool['name']!r}: {exc}")
        SHARED.param_headers = connection.transport.param_headers
        log.info("era %s (%s); tool %s", SHARED.era, SHARED.version, SHARED.tool)
        SHARED.ready = True
        return connection


# ------------------------------------------------------------------------------------- users


class McpUser(FastHttpUser):
    """The base of the MCP users: a `Connection` in the detected era, made on first use."""

    abstract = True
    wait_time = constant(0)
    connection: Connection | None = None

    def mcp(self, era: str | None = None) -> Connection | None:
        """This user's connection (None while the era is unknown: the probe failed)."""
        if self.connection is None:
            first = _setup(self) if not SHARED.ready else None
            if not SHARED.ready:
                gevent.sleep(1.0)
                return None
            wanted = era or SHARED.era
            if first is not None and first.era == wanted:
                self.connection = first
            else:
                self.connection = Connection(
                    self, wanted, SHARED.version if wanted == SHARED.era else LATEST_LEGACY
                )
            self.connection.transport.param_headers = SHARED.param_headers
        return self.connection

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
        if tool is None:
            SHARED.note("the server lists no tool to call: ToolCallUser stops")
            raise StopUser()
        connection.call(
            "tools/call",
            {"name": tool.name, "arguments": tool.arguments},
            name=f"tools/call {tool.name}",
        )


class DiscoverUser(McpUser):
    """``server/discover`` (``ping`` in the legacy era) and the list calls."""

    weight = 2

    @task
    def discover_or_list(self) -> None:
        connection = self.mcp()
        if connection is None:
            return
        methods = ["server/discover" if connection.era == "modern" else "ping"]
        methods += [
            m for m, capability in wire.LIST_CAPABILITY.items() if capability in SHARED.capabilities
        ]
        connection.call(random.choice(methods), {})


class ResourceUser(McpUser):
    """``resources/read`` of the listed resources."""

    weight = 1

    @task
    def read_resource(self) -> None:
        connection = self.mcp()
        if connection is None:
            return
        if not SHARED.resources:
            SHARED.note("the server lists no resources: ResourceUser stops")
            raise StopUser()
        connection.call("resources/read", {"uri": random.choice(SHARED.resources)})


class LegacySessionUser(McpUser):
    """A legacy session whatever the server's newest era: initialize once, then calls."""

    weight = 2

    def on_start(self) -> None:
        connection = self.mcp("legacy")
        if connection is not None and not connection.initialized:
            connection.initialize()

    @task(3)
    def call_tool(self) -> None:
        connection = self.mcp("legacy")
        if connection is None:
            return
        if SHARED.tool is None:
            connection.call("ping", {})
            return
        tool = SHARED.tool
        connection.call(
            "tools/call",
            {"name": tool.name, "arguments": tool.arguments},
            name=f"tools/call {tool.name}",
        )

    @task(1)
    def list_tools(self) -> None:
        connection = self.mcp("legacy")
        if connection is not None:
            connection.call("tools/list", {})

    @task(1)
    def ping(self) -> None:
        connection = self.mcp("legacy")
        if connection is not None:
            connection.call("ping", {})


class ListenUser(McpUser):
    """Long-lived streams: ``subscriptions/listen`` (modern) or the GET stream (legacy)."""

    weight = 1

    @task
    def hold_stream(self) -> None:
        connection = self.mcp()
        if connection is None:
            return
        if connection.era == "modern":
            connection.listen(self.stream_seconds())
            return
        connection.get_stream(self.stream_seconds())
        if connection.no_get_stream:
            SHARED.note("the server offers no GET stream (405): ListenUser stops")
            raise StopUser()


# ---------------------------------------------------------------------------------- progress


_progress: list[gevent.Greenlet] = []


def _start_progress(environment: Environment, **_: Any) -> None:
    if not _option(environment, "mcp_progress", False) or isinstance(
        environment.runner, WorkerRunner
    ):
        return

    def report() -> None:
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

    _progress.append(gevent.spawn(report))


def _stop_progress(**_: Any) -> None:
    while _progress:
        _progress.pop().kill(block=False)


# locust's EventHook.add_listener is unannotated
events.init_command_line_parser.add_listener(_options)  # type: ignore[no-untyped-call]
events.test_start.add_listener(_start_progress)  # type: ignore[no-untyped-call]
events.test_stop.add_listener(_stop_progress)  # type: ignore[no-untyped-call]
