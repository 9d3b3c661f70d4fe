"""What the load users say and how their answers are judged, as pure functions (no gevent, no I/O).

The load users (`mcpfast.load.connection`) build bodies and headers here and hand each answer to
`judge`, which decides success or a failure whose text groups well in locust's failure table:
``HTTP 404``, ``HTTP 200 JSON-RPC -32602``, ``HTTP 200 invalid tools/call result``,
``HTTP 200 tool error (isError)``. The modern ``_meta`` and the mirrored headers come from
`protocol.modern` / `protocol.headers` (``Mcp-Param-*`` included), the legacy session's rules
from `protocol.session`, SSE bodies are read by `protocol.sse`: the load test follows the same
rules as `mcpfast.connect`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .. import jsonrpc
from ..protocol import sse
from ..protocol.headers import ACCEPT, ParamHeaders, header_params, request_headers
from ..protocol.methods import LIST_KEYS
from ..protocol.modern import request_meta
from ..versions import MODERN

__all__ = [
    "ACCEPT",
    "CLIENT_INFO",
    "Answer",
    "judge",
    "modern_transport",
    "parse_messages",
]

CLIENT_INFO = {"name": "mcpfast-load", "version": "0.1.0"}


@dataclass
class ModernRequests:
    """What a load user's stateless requests carry: the revision, and the ``x-mcp-header``
    declarations of the tools it calls (the user sends them with its own HTTP client)."""

    version: str = MODERN
    param_headers: dict[str, ParamHeaders] = field(default_factory=dict)


def modern_transport(version: str = MODERN) -> ModernRequests:
    """A user's stateless requests, in ``version``."""
    return ModernRequests(version)


def modern_request(
    transport: ModernRequests,
    id_: int | str,
    method: str,
    params: dict[str, Any] | None = None,
    capabilities: dict[str, Any] | None = None,
) -> tuple[bytes, dict[str, str]]:
    """The body and headers of a stateless request: ``_meta`` (with the client
    ``capabilities`` declared: none unless given) plus the mirrored headers."""
    params = dict(params or {})
    params["_meta"] = request_meta(transport.version, capabilities or {}, CLIENT_INFO)
    headers = request_headers(transport.version, method, params, transport.param_headers)
    return jsonrpc.request(id_, method, params), headers


def remember_tool(transport: ModernRequests, tool: dict[str, Any]) -> None:
    """Record a tool's ``x-mcp-header`` declarations so its calls carry ``Mcp-Param-*``.

    Raises:
        ValueError: the declarations break the 2026-07-28 rules (the client drops such tools).
    """
    transport.param_headers[tool["name"]] = header_params(tool.get("inputSchema") or {})


def parse_messages(content_type: str, body: bytes) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a body: one JSON value (or batch), or every SSE event's data.

    Raises:
        ValueError: the body is not JSON (or an event's data is not).
    """
    if content_type.startswith("text/event-stream"):
        return sse.messages(body)
    if not body.strip():
        return []
    return _as_list(json.loads(body))


def _as_list(loaded: Any) -> list[dict[str, Any]]:
    items = loaded if isinstance(loaded, list) else [loaded]
    return [m for m in items if isinstance(m, dict)]


@dataclass
class Answer:
    """A judged answer: ``failure`` is None on success; ``message`` is the response found and
    ``status`` the HTTP status (0 when unknown)."""

    failure: str | None
    message: dict[str, Any] | None = None
    detail: str = ""
    status: int = 0
    wait: float = 0.0
    """The seconds its ``Retry-After`` asked for, on a refused stream (0: none)."""

    @property
    def result(self) -> Any:
        return (self.message or {}).get("result")

    @property
    def code(self) -> int | None:
        """The JSON-RPC error code of the answer, if it is an error."""
        error = (self.message or {}).get("error")
        code = error.get("code") if isinstance(error, dict) else None
        return code if isinstance(code, int) else None

    @property
    def tool_error(self) -> bool:
        """A ``tools/call`` result with ``isError``: the tool said it failed."""
        return bool(self.failure and self.failure.endswith("tool error (isError)"))

    @property
    def not_offered(self) -> bool:
        """The server says it lacks the method: JSON-RPC -32601 (whatever the HTTP status) or
        HTTP 405. Retrying cannot help."""
        return self.failure is not None and (
            self.code == jsonrpc.METHOD_NOT_FOUND or self.status == 405
        )


def judge(method: str, id_: int | str, status: int, content_type: str, body: bytes) -> Answer:
    """Success, or a failure text that names the HTTP status and the JSON-RPC code or problem."""
    answer = _judge(method, id_, status, content_type, body)
    answer.status = status
    return answer


def _judge(method: str, id_: int | str, status: int, content_type: str, body: bytes) -> Answer:
    head = f"HTTP {status}"
    try:
        messages = parse_messages(content_type, body)
    except ValueError:
        if status != 200:
            return Answer(head, detail=body[:200].decode("utf-8", "replace"))
        return Answer(f"{head} body is not JSON", detail=body[:200].decode("utf-8", "replace"))
    message = next(
        (m for m in messages if m.get("id") == id_ and ("result" in m or "error" in m)), None
    )
    if message is None:
        message = next((m for m in messages if "error" in m and "method" not in m), None)
    if message is not None and isinstance(message.get("error"), dict):
        error = message["error"]
        return Answer(
            f"{head} JSON-RPC {error.get('code')}", message, str(error.get("message", ""))[:200]
        )
    if status != 200:
        return Answer(head, message, body[:200].decode("utf-8", "replace"))
    if message is None:
        return Answer(
            f"{head} no response for the request", detail=body[:200].decode("utf-8", "replace")
        )
    problem = check_result(method, message.get("result"))
    if problem == "isError":
        return Answer(f"{head} tool error (isError)", message, tool_text(message["result"]))
    if problem is not None:
        return Answer(f"{head} invalid {method} result", message, problem)
    return Answer(None, message)


def tool_text(result: dict[str, Any]) -> str:
    """What an ``isError`` result says: its text blocks, on one line, at most 200 characters."""
    texts = [c["text"] for c in result.get("content", ()) if isinstance(c.get("text"), str)]
    return " ".join(" ".join(texts).split())[:200]


WORDS_RECORDED = 80
"""How much of the server's words a recorded failure keeps (`recorded`)."""
DISTINCT_WORDS = 20
"""How many different texts one kind of failure is recorded with (`recorded`)."""


def recorded(answer: Answer, seen: dict[str, set[str]]) -> str:
    """The failure text locust records, so the report shows what went wrong: a tool error's
    text or a JSON-RPC error's message after ``": "`` (one line, `WORDS_RECORDED` characters
    at most), for the first `DISTINCT_WORDS` texts of its kind in ``seen`` (words that vary,
    an id in each, add no row past them: ``(other words)``); a refusal "not now" and every
    other failure as judged (their words vary)."""
    failure = answer.failure or ""
    said = answer.tool_error or (answer.code is not None and answer.code != jsonrpc.RATE_LIMITED)
    words = " ".join(answer.detail.split())[:WORDS_RECORDED]
    if not said or not words or answer.status == 429:
        return failure
    texts = seen.setdefault(failure, set())
    text = f"{failure}: {words}"
    if text not in texts and len(texts) >= DISTINCT_WORDS:
        return f"{failure}: (other words)"
    texts.add(text)
    return text


def check_result(method: str, result: Any) -> str | None:
    """What is wrong with a result's shape for ``method`` (None: nothing; ``"isError"``: the tool
    reported a failure)."""
    if not isinstance(result, dict):
        return "the result is not an object"
    if result.get("resultType") == "input_required":
        return (
            None
            if isinstance(result.get("inputRequests"), dict)
            else "input_required without inputRequests"
        )
    if method == "tools/call":
        content = result.get("content")
        if not isinstance(content, list) or not all(
            isinstance(c, dict) and isinstance(c.get("type"), str) for c in content
        ):
            return "content is not a list of content blocks"
        if result.get("isError") is True:
            return "isError"
        return None
    if method in LIST_KEYS:
        items = result.get(LIST_KEYS[method])
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            return f"{LIST_KEYS[method]} is not a list of objects"
        if method == "tools/list" and not all(
            isinstance(t.get("name"), str) and isinstance(t.get("inputSchema"), dict) for t in items
        ):
            return "a tool lacks name or inputSchema"
        return None
    if method == "resources/read":
        contents = result.get("contents")
        if not isinstance(contents, list) or not all(
            isinstance(c, dict) and isinstance(c.get("uri"), str) and ("text" in c or "blob" in c)
            for c in contents
        ):
            return "contents is not a list of resource contents"
        return None
    if method == "server/discover":
        if not isinstance(result.get("supportedVersions"), list) or not isinstance(
            result.get("capabilities"), dict
        ):
            return "supportedVersions or capabilities missing"
        return None
    if method == "initialize":
        if not isinstance(result.get("protocolVersion"), str) or not isinstance(
            result.get("capabilities"), dict
        ):
            return "protocolVersion or capabilities missing"
        return None
    return None


def check_ack(message: dict[str, Any]) -> str | None:
    """What is wrong with the first message of a ``subscriptions/listen`` stream."""
    if "error" in message and isinstance(message["error"], dict):
        return f"JSON-RPC {message['error'].get('code')}"
    if message.get("method") != "notifications/subscriptions/acknowledged":
        return "the stream did not begin with notifications/subscriptions/acknowledged"
    return None


def rate_limited(status: str, code: str) -> bool:
    """Whether a failure grouped under HTTP ``status`` and JSON-RPC ``code`` (`error_group`)
    is a refusal "not now" (`protocol.retries`): a 429, or -32023 (a shed 503 carries it)."""
    return status == "429" or code == str(jsonrpc.RATE_LIMITED)


_HTTP = re.compile(r"HTTP (\d{3})")
_CODE = re.compile(r"JSON-RPC (-?\d+)")


def error_group(text: str) -> tuple[str, str, str]:
    """(HTTP status, JSON-RPC code, problem) of a failure text as locust recorded it (a failure
    without an HTTP answer is grouped by its exception class)."""
    http = _HTTP.search(text)
    code = _CODE.search(text)
    if http is None:
        kind = re.match(r"\s*([A-Za-z_][\w.]*)\(", text)
        return "-", "-", kind.group(1) if kind else text[:60]
    rest = text[http.end() :]
    rest = _CODE.sub("", rest).strip(" '\")").removeprefix(": ")
    return http.group(1), code.group(1) if code else "-", rest
