"""`protocol.discovery`: the era verdicts of `shared/seeds/002_*` as a table, the `Negotiation`
both the client and the load tester drive, and the cache."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcpfast.errors import TransportError
from mcpfast.protocol.discovery import (
    EraCache,
    Negotiation,
    Verdict,
    judge_http,
    judge_stdio,
    pick_version,
)

MODERN = Verdict("modern", "2026-07-28", retry=True)
LEGACY = Verdict("legacy", "")


def error(code: int, data: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": "no"}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": 0, "error": body}


RESULT = {"jsonrpc": "2.0", "id": 0, "result": {"supportedVersions": ["2026-07-28"]}}


@pytest.mark.parametrize(
    ("status", "message", "retried", "verdict"),
    [
        (200, RESULT, False, None),
        (400, None, False, LEGACY),
        (404, None, False, LEGACY),
        (405, None, False, LEGACY),
        (200, error(-32601), False, LEGACY),
        (400, error(-32020), False, LEGACY),
        (400, error(-32021), False, LEGACY),
        (400, error(-32022, {"supported": ["2026-07-28", "2025-11-25"]}), False, MODERN),
        (400, error(-32022, {"supported": ["2026-07-28"]}), True, LEGACY),
        (400, error(-32022, {"supported": ["2025-11-25"]}), False, LEGACY),
        (400, error(-32022), False, LEGACY),
    ],
)
def test_http_verdicts(status: int, message: Any, retried: bool, verdict: Verdict | None) -> None:
    raw = json.dumps(message).encode() if message is not None else b""
    assert judge_http(status, raw, message, retried=retried) == verdict


@pytest.mark.parametrize(
    ("status", "raw"),
    [(401, b"unauthorized"), (403, b"x" * 400), (500, b"boom"), (503, b""), (200, b"not json")],
)
def test_http_answers_that_never_fall_back(status: int, raw: bytes) -> None:
    with pytest.raises(TransportError) as raised:
        judge_http(status, raw, None, retried=False)
    text = str(raised.value)
    assert text.startswith(f"HTTP {status}")
    assert len(text) <= len(f"HTTP {status}: ") + 200


@pytest.mark.parametrize(
    ("message", "verdict"),
    [
        (RESULT, None),
        (error(-32601), LEGACY),
        (error(-32020), LEGACY),
        (error(-32021), LEGACY),
        (error(-32022, {"supported": ["2026-07-28"]}), MODERN),
        (error(-32022, {"supported": ["2025-06-18"]}), LEGACY),
    ],
)
def test_stdio_verdicts(message: Any, verdict: Verdict | None) -> None:
    assert judge_stdio(message) == verdict


@pytest.mark.parametrize(
    ("supported", "picked"),
    [
        (["2025-06-18", "2026-07-28"], "2026-07-28"),
        (["2025-03-26", "1999-01-01"], "2025-03-26"),
        (["1999-01-01"], None),
        ("2026-07-28", None),
        (None, None),
    ],
)
def test_pick_version(supported: Any, picked: str | None) -> None:
    assert pick_version(supported) == picked


def test_the_cache_keeps_a_verdict_for_its_ttl() -> None:
    cache = EraCache(ttl=3600)
    cache.put("http://x/mcp", "legacy", "2025-11-25")
    assert cache.get("http://x/mcp") == ("legacy", "2025-11-25")
    cache.forget("http://x/mcp")
    assert cache.get("http://x/mcp") is None
    stale = EraCache(ttl=-1)
    stale.put("cmd", "modern", "2026-07-28")
    assert stale.get("cmd") is None


BOTH_LEGACY = error(-32022, {"supported": ["2025-06-18", "2025-03-26"], "requested": "2026-07-28"})
BOTH_MODERN = error(-32022, {"supported": ["2026-07-28", "2025-11-25"]})
Step = tuple[int, Any]
"""A probe's answer: HTTP status and decoded message."""


@pytest.mark.parametrize(
    ("answers", "legacy", "probes", "outcome"),
    [
        ([(200, RESULT)], "2025-11-25", ["2026-07-28"], ("modern", "2026-07-28")),
        ([(404, None)], "2025-11-25", ["2026-07-28"], ("legacy", "2025-11-25")),
        ([(200, error(-32601))], "2025-06-18", ["2026-07-28"], ("legacy", "2025-06-18")),
        ([(400, BOTH_LEGACY)], "2025-11-25", ["2026-07-28"], ("legacy", "2025-06-18")),
        ([(400, BOTH_LEGACY)], "2025-03-26", ["2026-07-28"], ("legacy", "2025-03-26")),
        (
            [(400, BOTH_MODERN), (200, RESULT)],
            "2025-11-25",
            ["2026-07-28", "2026-07-28"],
            ("modern", "2026-07-28"),
        ),
        (
            [(400, BOTH_MODERN), (400, BOTH_LEGACY)],
            "2025-11-25",
            ["2026-07-28", "2026-07-28"],
            ("legacy", "2025-06-18"),
        ),
        (
            [(400, BOTH_MODERN), (400, BOTH_MODERN)],
            "2025-11-25",
            ["2026-07-28", "2026-07-28"],
            ("legacy", "2025-11-25"),
        ),
    ],
)
def test_negotiation_over_http(
    answers: list[Step], legacy: str, probes: list[str], outcome: tuple[str, str]
) -> None:
    negotiation = Negotiation(legacy=legacy)
    sent = []
    for status, message in answers:
        assert negotiation.probe is not None
        sent.append(negotiation.probe)
        raw = json.dumps(message).encode() if message is not None else b""
        negotiation.http(status, raw, message)
    assert negotiation.probe is None
    assert sent == probes
    assert (negotiation.era, negotiation.version) == outcome
    assert negotiation.answer == answers[-1][1]


@pytest.mark.parametrize(
    ("answers", "outcome"),
    [
        ([RESULT], ("modern", "2026-07-28")),
        ([None], ("legacy", "2025-11-25")),
        ([error(-32020)], ("legacy", "2025-11-25")),
        ([BOTH_LEGACY], ("legacy", "2025-06-18")),
        ([BOTH_MODERN, RESULT], ("modern", "2026-07-28")),
        ([BOTH_MODERN, BOTH_MODERN], ("legacy", "2025-11-25")),
        ([BOTH_MODERN, None], ("legacy", "2025-11-25")),
    ],
)
def test_negotiation_over_stdio(answers: list[Any], outcome: tuple[str, str]) -> None:
    negotiation = Negotiation()
    for message in answers:
        assert negotiation.probe == "2026-07-28"
        negotiation.stdio(message)
    assert negotiation.probe is None
    assert (negotiation.era, negotiation.version) == outcome


@pytest.mark.parametrize(
    ("status", "message"), [(401, None), (500, None), (200, None), (200, error(-32603))]
)
def test_negotiation_over_http_refuses_what_is_not_mcp(status: int, message: Any) -> None:
    negotiation = Negotiation()
    with pytest.raises(TransportError):
        negotiation.http(status, b"", message)
    assert negotiation.era is None


def test_negotiation_over_stdio_refuses_other_errors() -> None:
    with pytest.raises(TransportError, match="-32603"):
        Negotiation().stdio(error(-32603))
