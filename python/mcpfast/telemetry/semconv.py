"""The names of the OpenTelemetry semantic conventions for MCP, and the span-name rule.

Followed: open-telemetry/semantic-conventions-genai ``docs/gen-ai/mcp.md`` (Development): the
client span (kind CLIENT) and server span (kind SERVER) are named ``{mcp.method.name}
{target}``, the target being ``gen_ai.tool.name`` or ``gen_ai.prompt.name``, else the method
alone (``mcp.resource.uri`` is not put in the name by default: high cardinality); span status
ERROR when ``error.type`` is set, its description the JSON-RPC error message; ``error.type`` is
the JSON-RPC error code as a string, or ``tool_error`` for a ``CallToolResult`` with
``isError``; ``rpc.response.status_code`` is the JSON-RPC error code; ``jsonrpc.request.id``
only when the message has an id; ``gen_ai.operation.name`` is ``execute_tool`` on tool calls
only; ``network.transport`` is ``tcp`` over HTTP and ``pipe`` over stdio. The metrics
``mcp.{client,server}.operation.duration`` and ``mcp.{client,server}.session.duration`` are
histograms in seconds with the explicit bucket boundaries below; their attributes leave out
the high-cardinality ones (request id, session id, resource URI: opt-in there).
Trace context travels in ``params._meta`` under the unprefixed W3C keys (SEP-414).
"""

from __future__ import annotations

from urllib.parse import urlsplit

METHOD = "mcp.method.name"
PROTOCOL_VERSION = "mcp.protocol.version"
SESSION_ID = "mcp.session.id"
RESOURCE_URI = "mcp.resource.uri"
REQUEST_ID = "jsonrpc.request.id"
TOOL_NAME = "gen_ai.tool.name"
PROMPT_NAME = "gen_ai.prompt.name"
OPERATION_NAME = "gen_ai.operation.name"
ERROR_TYPE = "error.type"
STATUS_CODE = "rpc.response.status_code"
TRANSPORT = "network.transport"
PROTOCOL_NAME = "network.protocol.name"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"

EXECUTE_TOOL = "execute_tool"
TOOL_ERROR = "tool_error"
TCP = "tcp"
PIPE = "pipe"
HTTP = "http"

SERVER_OPERATION_DURATION = "mcp.server.operation.duration"
CLIENT_OPERATION_DURATION = "mcp.client.operation.duration"
SERVER_SESSION_DURATION = "mcp.server.session.duration"
CLIENT_SESSION_DURATION = "mcp.client.session.duration"
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
"""The explicit bucket boundaries the convention gives every MCP duration histogram (s)."""

METRIC_KEYS = frozenset(
    {
        METHOD,
        PROTOCOL_VERSION,
        TOOL_NAME,
        PROMPT_NAME,
        OPERATION_NAME,
        ERROR_TYPE,
        STATUS_CODE,
        TRANSPORT,
        PROTOCOL_NAME,
        SERVER_ADDRESS,
        SERVER_PORT,
    }
)
"""The span attributes the operation-duration histograms carry too."""

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
CONTEXT_KEYS = (TRACEPARENT, TRACESTATE)
"""The ``_meta`` keys (and HTTP headers) of W3C trace context (SEP-414)."""

_TARGET_KEY = {"tools/call": TOOL_NAME, "prompts/get": PROMPT_NAME}
_URI_METHODS = frozenset(
    {
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "notifications/resources/updated",
    }
)


def span_name(method: str, name: str | None) -> str:
    """``{mcp.method.name} {target}``: the tool's or prompt's name, else the method alone."""
    if name is not None and method in _TARGET_KEY:
        return f"{method} {name}"
    return method


def attributes(
    method: str, name: str | None, id_: int | str | None, version: str | None
) -> dict[str, str]:
    """The attributes a message gives its span: method, target, request id, version."""
    attrs = {METHOD: method}
    if name is not None:
        key = _TARGET_KEY.get(method)
        if key is not None:
            attrs[key] = name
        elif method in _URI_METHODS:
            attrs[RESOURCE_URI] = name
    if method == "tools/call":
        attrs[OPERATION_NAME] = EXECUTE_TOOL
    if id_ is not None:
        attrs[REQUEST_ID] = str(id_)
    if version is not None:
        attrs[PROTOCOL_VERSION] = version
    return attrs


def transport(http: bool) -> dict[str, str]:
    """``network.transport`` (and ``network.protocol.name`` over HTTP)."""
    return {TRANSPORT: TCP, PROTOCOL_NAME: HTTP} if http else {TRANSPORT: PIPE}


def http_transport(url: str) -> dict[str, str | int]:
    """The network attributes of a request to ``url``: HTTP, with the server's address and
    port (the scheme's default when the URL has none)."""
    parts = urlsplit(url)
    attrs: dict[str, str | int] = {**transport(True)}
    if parts.hostname:
        attrs[SERVER_ADDRESS] = parts.hostname
        attrs[SERVER_PORT] = parts.port or (443 if parts.scheme == "https" else 80)
    return attrs
