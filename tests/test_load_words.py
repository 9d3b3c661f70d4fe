"""What a load run records of the server's words (`wire.recorded`): a tool error's text and a
JSON-RPC error's message, one line, bounded in length and in variety; never a refusal's."""

from __future__ import annotations

import json

from mcpfast.load.wire import DISTINCT_WORDS, WORDS_RECORDED, Answer, error_group, judge, recorded


def _tool_error(text: str) -> bytes:
    result = {"content": [{"type": "text", "text": text}], "isError": True}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "result": result}).encode()


def _error(code: int, message: str, status: int = 200) -> tuple[int, bytes]:
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": message}}
    return status, json.dumps(error).encode()


def _judged(status: int, body: bytes) -> Answer:
    return judge("tools/call", 1, status, "application/json", body)


def test_the_words_are_recorded_and_grouped() -> None:
    seen: dict[str, set[str]] = {}
    text = recorded(judge("tools/call", 1, 200, "application/json", _tool_error("no\nunits")), seen)
    assert text == "HTTP 200 tool error (isError): no units"
    assert error_group(f"CatchResponseError({text!r})") == (
        "200",
        "-",
        "tool error (isError): no units",
    )
    rpc = recorded(_judged(*_error(-32602, "Unknown tool: x")), seen)
    assert rpc == "HTTP 200 JSON-RPC -32602: Unknown tool: x"
    assert error_group(f"CatchResponseError({rpc!r})") == ("200", "-32602", "Unknown tool: x")


def test_the_words_are_bounded() -> None:
    seen: dict[str, set[str]] = {}
    long = recorded(judge("tools/call", 1, 200, "application/json", _tool_error("x" * 500)), seen)
    assert long.endswith(": " + "x" * WORDS_RECORDED)
    seen.clear()
    texts = {
        recorded(judge("tools/call", 1, 200, "application/json", _tool_error(f"id {n}")), seen)
        for n in range(DISTINCT_WORDS * 3)
    }
    assert len(texts) == DISTINCT_WORDS + 1  # the first ones, then one row for the rest
    assert "HTTP 200 tool error (isError): (other words)" in texts


def test_a_refusal_for_now_keeps_its_words_out() -> None:
    seen: dict[str, set[str]] = {}
    wait = _judged(*_error(-32023, "retry after 2 s"))
    assert recorded(wait, seen) == "HTTP 200 JSON-RPC -32023"
    busy = _judged(*_error(-32603, "busy", status=429))
    assert recorded(busy, seen) == "HTTP 429 JSON-RPC -32603"
