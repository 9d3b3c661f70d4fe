"""Test helpers: the shared spec bundle, schema validation, a running server (and one behind an
authorization server), a raw wire client, a loopback ASGI app."""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import cache
from pathlib import Path
from typing import Any, cast

import httpx2
import pytest
import trio
from joserfc import jwt
from joserfc.jwk import ECKey

import mcpfast
from mcpfast import Context
from mcpfast.auth._asgi import serve_asgi
from mcpfast.client.legacy import LegacyHttp
from mcpfast.protocol import sse
from mcpfast.protocol.methods import METHODS, NAME_FIELD
from mcpfast.server.config import AuthConfig
from mcpfast.server.state.keys import KeyRing

REPO = Path(__file__).resolve().parent.parent
ROUTED_METHODS = tuple(NAME_FIELD)
MODERN = "2026-07-28"
TEST_KEYS = KeyRing(keys={"k1": b"0123456789abcdef0123456789abcdef"}, signing="k1")


def shared_dir() -> Path | None:
    """The shared bundle: ``$MCPFAST_SHARED`` when set (and only it), else ``../shared``
    beside the repository; None when it is not there."""
    candidate = Path(os.environ.get("MCPFAST_SHARED") or REPO.parent / "shared")
    return candidate if (candidate / "spec").is_dir() else None


SHARED_MISSING = "the shared spec bundle (../shared or $MCPFAST_SHARED) is not present"
SKIPPED_VALIDATIONS: list[str] = []
"""Schema validations passed over for want of the shared bundle (the summary reports them)."""


def require_shared() -> Path:
    """The shared bundle; skips the test when absent, except under ``CI=true`` (a failure)."""
    found = shared_dir()
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail(SHARED_MISSING + " and CI=true requires it")
        pytest.skip(SHARED_MISSING)
    return found


@cache
def _schema(revision: str) -> dict[str, Any] | None:
    """A revision's official schema; None when the shared bundle is absent (outside CI)."""
    if shared_dir() is None and os.environ.get("CI") != "true":
        return None
    path = require_shared() / "spec" / "schema" / revision / "schema.json"
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def validate(revision: str, definition: str, instance: Any) -> None:
    """Validate ``instance`` against ``definition`` of a revision's official schema. Without
    the shared bundle the check is passed over (and counted), so the test's own assertions
    still run; under ``CI=true`` its absence fails the test."""
    import jsonschema

    root = _schema(revision)
    if root is None:
        SKIPPED_VALIDATIONS.append(f"{revision} {definition}")
        return
    defs_key = "$defs" if "$defs" in root else "definitions"
    schema = {**root, "$ref": f"#/{defs_key}/{definition}"}
    cls = jsonschema.validators.validator_for(root)
    cls(schema).validate(instance)


RESULT_DEFS = {m.name: m.result for m in METHODS.values() if m.result != "Result"}
NOTIFICATION_DEFS = {
    "notifications/progress": "ProgressNotification",
    "notifications/message": "LoggingMessageNotification",
    "notifications/tools/list_changed": "ToolListChangedNotification",
    "notifications/prompts/list_changed": "PromptListChangedNotification",
    "notifications/resources/list_changed": "ResourceListChangedNotification",
    "notifications/resources/updated": "ResourceUpdatedNotification",
    "notifications/subscriptions/acknowledged": "SubscriptionsAcknowledgedNotification",
}


def validate_message(revision: str, method: str, message: dict[str, Any]) -> None:
    """Validate a server message for a request of ``method`` against the revision's schema."""
    if "error" in message:
        error_def = "JSONRPCErrorResponse" if revision >= "2025-11-25" else "JSONRPCError"
        validate(revision, error_def, message)
    elif "result" in message:
        result = message["result"]
        definition = RESULT_DEFS[method]
        if result.get("resultType") == "input_required":
            definition = "InputRequiredResult"
        validate(revision, definition, result)
    elif "id" in message:
        validate(revision, "JSONRPCRequest", message)
    else:
        validate(revision, NOTIFICATION_DEFS.get(message["method"], "JSONRPCNotification"), message)


class Reply:
    """An HTTP reply with its JSON-RPC messages (one for JSON, each event for SSE)."""

    def __init__(self, response: httpx2.Response, messages: list[dict[str, Any]]) -> None:
        self.response = response
        self.status = response.status_code
        self.headers = response.headers
        self.messages = messages

    @property
    def message(self) -> dict[str, Any]:
        return self.messages[-1]

    @property
    def result(self) -> Any:
        return self.message["result"]

    @property
    def error(self) -> Any:
        return self.message["error"]


def meta(capabilities: dict[str, Any] | None = None, /, **extra: Any) -> dict[str, Any]:
    """A 2026-07-28 request ``_meta``."""
    out = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"},
    }
    out.update(extra)
    return out


def session_of(client: mcpfast.Client) -> str | None:
    """The session id of a legacy HTTP ``client`` (None: none yet, or the server keeps none)."""
    connection = client.connection
    assert isinstance(connection, LegacyHttp), f"not a legacy HTTP connection: {connection!r}"
    return connection.session


class Requests:
    """How a client builds MCP requests: ids, a 2026-07-28 request with its ``_meta`` and
    mirrored headers, legacy bodies, ``initialize``. Both wires (raw HTTP here, the in-memory
    one of ``tests/server``) build them so; each says how one is sent."""

    def __init__(self) -> None:
        self._ids = 0

    def next_id(self) -> int:
        self._ids += 1
        return self._ids

    def modern_body(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        capabilities: dict[str, Any] | None = None,
        headers: dict[str, str | None] | None = None,
        name: str | None = None,
        id: int | str | None = None,
    ) -> tuple[dict[str, Any], dict[str, str | None]]:
        """A well-formed 2026-07-28 request and its mirrored headers (``Mcp-Name`` from
        ``name``, else the params); ``headers`` override them (None drops one)."""
        params = dict(params or {})
        params.setdefault("_meta", meta(capabilities))
        body = {
            "jsonrpc": "2.0",
            "id": self.next_id() if id is None else id,
            "method": method,
            "params": params,
        }
        mirrored: dict[str, str | None] = {"mcp-protocol-version": MODERN, "mcp-method": method}
        routing = name or params.get("name") or params.get("uri") or params.get("taskId")
        if routing is not None and method in NAME_FIELD:
            mirrored["mcp-name"] = mcpfast.codec.encode_header_value(routing)
        mirrored.update(headers or {})
        return body, mirrored

    def legacy_body(
        self, method: str, params: dict[str, Any] | None = None, *, notification: bool = False
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if not notification:
            body["id"] = self.next_id()
        if params is not None:
            body["params"] = params
        return body

    def initialize_body(
        self, version: str, capabilities: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        params = {
            "protocolVersion": version,
            "capabilities": capabilities or {},
            "clientInfo": {"name": "tests", "version": "1"},
        }
        return self.legacy_body("initialize", params)


class Wire(Requests):
    """Raw HTTP access to an MCP endpoint: builds bodies and headers, parses JSON or SSE."""

    def __init__(self, client: httpx2.AsyncClient, url: str) -> None:
        super().__init__()
        self.client = client
        self.url = url

    async def post(
        self, body: Any, headers: dict[str, str] | None = None, *, raw: bytes | None = None
    ) -> Reply:
        base = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        base.update(headers or {})
        content = raw if raw is not None else json.dumps(body).encode()
        response = await self.client.post(self.url, content=content, headers=base)
        return Reply(response, parse_body(response))

    async def modern(self, method: str, params: dict[str, Any] | None = None, **kw: Any) -> Reply:
        """`Requests.modern_body` sent."""
        body, mirrored = self.modern_body(method, params, **kw)
        return await self.post(body, {k: v for k, v in mirrored.items() if v is not None})

    async def legacy(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session: str | None,
        version: str,
        notification: bool = False,
    ) -> Reply:
        body = self.legacy_body(method, params, notification=notification)
        headers = {"mcp-protocol-version": version}
        if session is not None:
            headers["mcp-session-id"] = session
        return await self.post(body, headers)

    async def initialize(
        self, version: str, capabilities: dict[str, Any] | None = None
    ) -> tuple[str, Reply]:
        reply = await self.post(self.initialize_body(version, capabilities))
        session = reply.headers["mcp-session-id"]
        await self.legacy(
            "notifications/initialized", session=session, version=version, notification=True
        )
        return session, reply


def parse_body(response: httpx2.Response) -> list[dict[str, Any]]:
    kind = response.headers.get("content-type", "")
    if kind.startswith("text/event-stream"):
        return sse.messages(response.content)
    if response.content:
        loaded = json.loads(response.content)
        return loaded if isinstance(loaded, list) else [loaded]
    return []


ENGINE = os.environ.get("MCPFAST_TEST_ENGINE", "hypercorn")

DEMO_TOOLS = {"echo", "add", "slow", "greet", "touch", "clock"}
"""The tools of the demo server (`mcpfast.demo`), as its lists name them."""
"""The HTTP engine the end-to-end tests serve with (the suite runs once per engine)."""


@asynccontextmanager
async def running(server: mcpfast.Server, **config: Any) -> AsyncIterator[str]:
    """Serve ``server`` on 127.0.0.1 (a free port) with the engine under test (`ENGINE`);
    yields the endpoint URL."""
    config.setdefault("engine", ENGINE)
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(
            lambda task_status: mcpfast.serve(
                server, mcpfast.Config(port=0, **config), keys=TEST_KEYS, task_status=task_status
            )
        )
        yield urls[0] + "/mcp"
        nursery.cancel_scope.cancel()


async def raw_http(url: str, request: bytes, *, read_limit: int = 1 << 20) -> bytes:
    """Send raw bytes to the server of ``url`` and read the whole reply (the connection closes)."""
    rest = url.split("://", 1)[1]
    hostport = rest.split("/", 1)[0]
    host, port = hostport.rsplit(":", 1)
    stream = await trio.open_tcp_stream(host, int(port))
    async with stream:
        await stream.send_all(request)
        chunks = []
        size = 0
        with trio.move_on_after(5):
            while size < read_limit:
                chunk = await stream.receive_some()
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if b"\r\n0\r\n\r\n" in chunk or (
                    b"content-length" in b"".join(chunks).lower() and _complete(b"".join(chunks))
                ):
                    break
    return b"".join(chunks)


def _complete(data: bytes) -> bool:
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value.strip())
    return False


def whoami_server(name: str) -> mcpfast.Server:
    """A server with one tool, ``whoami``: the caller's subject and client id."""
    server = mcpfast.Server(name, "1.0")

    @server.tool()
    async def whoami(ctx: Context) -> dict[str, Any]:
        assert ctx.auth is not None
        return {"subject": ctx.auth.subject, "client_id": ctx.auth.client_id}

    return server


@asynccontextmanager
async def guarded(
    server: mcpfast.Server, issuer: str, engine: str = ENGINE, **auth: Any
) -> AsyncIterator[str]:
    """Serve ``server`` on 127.0.0.1 (a free port) with ``engine``, its resource its own URL,
    needing ``issuer``'s tokens with scope ``mcp`` (``auth``: further `AuthConfig` fields);
    yields the URL."""
    from .e2e.processes import free_port  # (it imports this module)

    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    fields: dict[str, Any] = {"issuer": issuer, "resource": url, "scopes": ["mcp"], **auth}
    config = mcpfast.Config(port=port, auth=AuthConfig(**fields), engine=cast(Any, engine))
    async with trio.open_nursery() as nursery:
        await nursery.start(
            lambda task_status: mcpfast.serve(
                server, config, keys=TEST_KEYS, task_status=task_status
            )
        )
        yield url
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """Serve the ASGI ``app`` with Hypercorn on 127.0.0.1 (a free port) while the block runs;
    yields its base URL. The app answers the lifespan protocol itself (`mcpfast.auth._asgi.lifespan`)."""
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(serve_asgi, app, "127.0.0.1", 0)
        yield urls[0]
        nursery.cancel_scope.cancel()


async def read_body(receive: Any) -> bytes:
    """The whole body of an ASGI HTTP request."""
    body = b""
    while True:
        message = await receive()
        body += bytes(message.get("body", b""))
        if not message.get("more_body"):
            return body


def client_assertion(key: ECKey, client_id: str, audience: str, **claims: Any) -> str:
    """An RFC 7523 client assertion of ``client_id`` for ``audience``, signed with ``key``
    (valid for 60 s, a fresh ``jti``); ``claims`` override, a None one is left out."""
    now = int(time.time())
    body: dict[str, Any] = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + 60,
        "jti": secrets.token_urlsafe(8),
    }
    body.update(claims)
    body = {name: value for name, value in body.items() if value is not None}
    return jwt.encode({"alg": "ES256", "kid": key.kid}, body, key, algorithms=["ES256"])


def replay(
    body: bytes, then: Callable[[], Awaitable[dict[str, Any]]] | None = None
) -> Callable[[], Awaitable[dict[str, Any]]]:
    """An ASGI ``receive`` giving ``body`` (already read by a wrapping app) once, then what
    ``then`` gives (the next event: a disconnect), or nothing ever."""
    given = False

    async def receive() -> dict[str, Any]:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        if then is not None:
            return dict(await then())
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    return receive
