"""The load tester counts the server's refusals "not now" (HTTP 429, -32023) apart from other
failures: in its summary, its text, ``summary.json``, its live line, and ``--fail-on``
(pure: no locust run; `tests/e2e/test_load_refusals.py` runs one)."""

from __future__ import annotations

import pytest

from mcpfast.load.processes import progress_text
from mcpfast.load.report import ErrorGroup, Row, Summary, format_summary
from mcpfast.load.summary import summary_document
from mcpfast.load.thresholds import ThresholdError, evaluate, parse
from mcpfast.load.wire import error_group, judge


def _row(name: str, requests: int, failures: int) -> Row:
    return Row("POST" if name else "", name, requests, failures, 10.0, 4.0, 3.0, 8.0, 12.0, 40)


SUMMARY = Summary(
    rows=[_row("tools/call limited", 200, 130)],
    total=_row("", 200, 130),
    errors=[
        ErrorGroup("429", "-32023", "(Rate limit exceeded)", 100, ["tools/call limited"]),
        ErrorGroup("503", "-32023", "(overloaded)", 20, ["tools/call limited"]),
        ErrorGroup("401", "-", "", 4, ["tools/call limited"]),
        ErrorGroup("200", "-32602", "", 6, ["tools/call limited"]),
    ],
)


def test_a_refused_answer_groups_under_429_and_32023() -> None:
    body = b'{"jsonrpc":"2.0","id":1,"error":{"code":-32023,"message":"Rate limit exceeded"}}'
    answer = judge("tools/call", 1, 429, "application/json", body)
    assert answer.failure is not None
    assert error_group(f"{answer.failure} ({answer.detail})")[:2] == ("429", "-32023")


def test_the_summary_counts_them_apart() -> None:
    assert SUMMARY.rate_limited == 120  # the 429s and the shed 503s (-32023)
    text = format_summary(SUMMARY)
    assert "unauthorized: 4, forbidden: 0, rate limited: 120, other failures: 6" in text
    only = Summary(SUMMARY.rows, SUMMARY.total, SUMMARY.errors[:1])
    assert "rate limited: 100, other failures: 30" in format_summary(only)
    none = Summary(SUMMARY.rows, SUMMARY.total, SUMMARY.errors[3:])
    assert "rate limited" not in format_summary(none) and "other failures" not in format_summary(
        none
    )


def test_summary_json_has_the_count() -> None:
    document = summary_document(
        SUMMARY, parameters={}, era=None, notes=[], verdicts=[], workers=[], exit_status=0
    )
    assert document["rate_limited"] == 120


def test_the_live_line_says_them_apart() -> None:
    line = {"elapsed": 3.0, "users": 8, "requests": 90, "failures": 40, "rate_limited": 35}
    assert progress_text(line).endswith("failures 40 (rate limited 35)")
    assert progress_text({**line, "rate_limited": 0}).endswith("failures 40")


@pytest.mark.parametrize(
    ("text", "measured", "failed"),
    [
        ("rate_limited>0", 120.0, True),
        ("rate_limited>=121", 120.0, False),
        ("rate_limited>50%", 60.0, True),
        ("rate_limited<70%", 60.0, True),
        ("rate_limited>60.5%", 60.0, False),
    ],
)
def test_fail_on_gates_on_them(text: str, measured: float, failed: bool) -> None:
    (verdict,) = evaluate([parse(text)], SUMMARY)
    assert (verdict.measured, verdict.failed) == (measured, failed)
    assert verdict.describe().startswith("FAIL" if failed else "pass")


def test_fail_on_rate_limited_of_a_run_with_none_passes() -> None:
    clean = Summary(SUMMARY.rows, SUMMARY.total, [])
    (verdict,) = evaluate([parse("rate_limited>0")], clean)
    assert (verdict.measured, verdict.failed) == (0.0, False)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("rate_limited>5ms", "plain number"),
        ("tools/call x:rate_limited>0", "total only"),
    ],
)
def test_fail_on_rate_limited_misuse_says_why(text: str, says: str) -> None:
    with pytest.raises(ThresholdError, match=says):
        parse(text)
