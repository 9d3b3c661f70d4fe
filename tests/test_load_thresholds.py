"""``--fail-on`` thresholds (parsed, judged against a summary), the JSON summary's document and
the comparison's pure parts (servers, round order, medians and ratios, the table)."""

from __future__ import annotations

import json

import pytest

from mcpfast.load.compare import (
    Server,
    compare_document,
    format_compare,
    parse_servers,
    round_order,
)
from mcpfast.load.report import ErrorGroup, Row, Summary
from mcpfast.load.summary import summary_document
from mcpfast.load.thresholds import Threshold, ThresholdError, evaluate, format_verdicts, parse


def row(name: str, requests: int, failures: int, **times: float | None) -> Row:
    values: dict[str, float | None] = {"avg": 4.0, "p50": 3.0, "p95": 8.0, "p99": 12.0, "max": 40}
    values.update(times)
    return Row(
        kind="POST" if name != "Aggregated" else "",
        name=name,
        requests=requests,
        failures=failures,
        rps=requests / 10,
        avg=values["avg"] or 0.0,
        p50=values["p50"],
        p95=values["p95"],
        p99=values["p99"],
        max=values["max"] or 0.0,
    )


SUMMARY = Summary(
    rows=[
        row("tools/call echo", 900, 3, p99=25.0),
        row("server/discover", 100, 0, p99=9.0),
        row("resources/read", 0, 0, p50=None, p95=None, p99=None),
    ],
    total=row("Aggregated", 1000, 3, p99=20.0),
    errors=[ErrorGroup("200", "-32602", "", 3, ["tools/call echo"])],
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("p99>50ms", Threshold("p99>50ms", "p99", ">", 50.0)),
        ("p50 > 10", Threshold("p50 > 10", "p50", ">", 10.0)),
        ("avg>=0.5s", Threshold("avg>=0.5s", "avg", ">=", 500.0)),
        ("max<=.25s", Threshold("max<=.25s", "max", "<=", 250.0)),
        ("errors>0.1%", Threshold("errors>0.1%", "errors", ">", 0.1)),
        ("errors>1", Threshold("errors>1", "errors", ">", 1.0)),
        ("failures>0", Threshold("failures>0", "failures", ">", 0.0)),
        ("rps<1000", Threshold("rps<1000", "rps", "<", 1000.0)),
        ("requests<100", Threshold("requests<100", "requests", "<", 100.0)),
        (
            "tools/call echo:p99>20ms",
            Threshold("tools/call echo:p99>20ms", "p99", ">", 20.0, "tools/call echo"),
        ),
        (  # the last colon ends the name
            "legacy a:b:rps<5",
            Threshold("legacy a:b:rps<5", "rps", "<", 5.0, "legacy a:b"),
        ),
    ],
)
def test_parse(text: str, expected: Threshold) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("p99", "is not [NAME:]METRIC OP VALUE"),
        ("p99=5ms", "is not [NAME:]METRIC OP VALUE"),
        ("p99>fast", "is not [NAME:]METRIC OP VALUE"),
        ("p98>5ms", "unknown metric 'p98'"),
        ("p99>5%", "its unit is ms or s, not '%'"),
        ("errors>5ms", "its unit is %, not 'ms'"),
        ("rps<10/s", "takes a plain number, not '/s'"),
        ("failures>1%", "takes a plain number"),
        (" :p99>5ms", "an empty request name"),
    ],
)
def test_parse_errors_say_why(text: str, says: str) -> None:
    with pytest.raises(ThresholdError) as raised:
        parse(text)
    assert says in str(raised.value), str(raised.value)


def test_evaluate_against_the_total_and_a_request_name() -> None:
    texts = [
        "p99>50ms",  # 20: passes
        "p99>15ms",  # fails
        "errors>0.1%",  # 0.3 %: fails
        "errors>=0.5",  # passes
        "failures>0",  # 3: fails
        "rps<50",  # 100: passes
        "requests<1000",  # exactly 1000: passes
        "tools/call echo:p99>20ms",  # 25: fails
        "server/discover:p99>20ms",  # 9: passes
    ]
    verdicts = evaluate([parse(t) for t in texts], SUMMARY)
    failed = {v.threshold.text: v.failed for v in verdicts}
    assert failed == {
        "p99>50ms": False,
        "p99>15ms": True,
        "errors>0.1%": True,
        "errors>=0.5": False,
        "failures>0": True,
        "rps<50": False,
        "requests<1000": False,
        "tools/call echo:p99>20ms": True,
        "server/discover:p99>20ms": False,
    }
    measured = {v.threshold.text: v.measured for v in verdicts}
    assert measured["errors>0.1%"] == pytest.approx(0.3)
    assert measured["tools/call echo:p99>20ms"] == 25.0 and measured["rps<50"] == 100.0


def test_nothing_measured_fails() -> None:
    """A name that recorded nothing, a percentile of no requests: a CI run that measured
    nothing does not pass; counts of nothing are 0."""
    texts = ["resources/read:p99>1s", "nosuch:p50>1s", "nosuch:requests<1", "nosuch:failures>0"]
    verdicts = evaluate([parse(t) for t in texts], SUMMARY)
    assert [(v.measured, v.failed) for v in verdicts] == [
        (None, True),
        (None, True),
        (0.0, True),
        (0.0, False),
    ]
    assert verdicts[0].describe() == "FAIL resources/read:p99>1s: resources/read: no requests"
    empty = evaluate([parse("p99>1s"), parse("requests<1")], Summary([], None, []))
    assert [v.failed for v in empty] == [True, True]


def test_verdict_lines() -> None:
    verdicts = evaluate([parse("p99>50ms"), parse("errors>0.1%"), parse("rps<1000")], SUMMARY)
    assert format_verdicts(verdicts).splitlines() == [
        "thresholds:",
        "  pass p99>50ms: p99 = 20 ms",
        "  FAIL errors>0.1%: errors = 0.3 %",
        "  FAIL rps<1000: rps = 100",
        "2 of 3 thresholds failed: errors>0.1%, rps<1000",
    ]
    assert format_verdicts(verdicts[:1]).splitlines()[-1] == "all 1 thresholds passed"
    assert format_verdicts([]) == ""


def test_summary_document() -> None:
    verdicts = evaluate([parse("tools/call echo:p99>20ms")], SUMMARY)
    document = summary_document(
        SUMMARY,
        parameters={"url": "http://h/mcp", "users": 10},
        era={"era": "modern", "version": "2026-07-28"},
        notes=["skipping ListenUser: no"],
        verdicts=verdicts,
        workers=[{"index": 0, "requests": 600, "failures": 2}],
        exit_status=4,
    )
    document = json.loads(json.dumps(document))  # JSON all through
    assert document["total"]["requests"] == 1000 and document["total"]["p99"] == 20.0
    echo = next(r for r in document["requests"] if r["name"] == "tools/call echo")
    assert {k: echo[k] for k in ("p50", "p95", "p99", "avg", "max", "rps", "failures")} == {
        "p50": 3.0,
        "p95": 8.0,
        "p99": 25.0,
        "avg": 4.0,
        "max": 40,
        "rps": 90.0,
        "failures": 3,
    }
    assert document["errors"] == [
        {"status": "200", "code": "-32602", "problem": "", "count": 3, "names": ["tools/call echo"]}
    ]
    assert document["thresholds"] == [
        {
            "expression": "tools/call echo:p99>20ms",
            "name": "tools/call echo",
            "metric": "p99",
            "op": ">",
            "value": 20.0,
            "unit": "ms",
            "measured": 25.0,
            "failed": True,
        }
    ]
    assert document["era"] == {"era": "modern", "version": "2026-07-28"}
    assert document["exit_status"] == 4 and document["notes"] == ["skipping ListenUser: no"]


# ----------------------------------------------------------------------------------- compare


def test_compare_servers_and_labels() -> None:
    servers = parse_servers(["a=http://h:1/mcp", "http://h:2/mcp", "http://h:3/x?k=v"], [])
    assert [(s.label, s.url) for s in servers] == [
        ("a", "http://h:1/mcp"),
        ("h:2", "http://h:2/mcp"),
        ("h:3/x", "http://h:3/x?k=v"),
    ]
    labelled = parse_servers(["http://h:1/mcp", "http://h:2/mcp"], ["one", "two"])
    assert [s.label for s in labelled] == ["one", "two"]
    for values, labels, says in [
        (["http://h:1/mcp"], [], "at least two"),
        (["http://h:1/mcp", "http://h:2/mcp"], ["x"], "1 --label for 2"),
        (["a=http://h:1/mcp", "a=http://h:2/mcp"], [], "share a name"),
        (["a=h:1", "b=http://h:2/mcp"], [], "is not an http(s) URL"),
    ]:
        with pytest.raises(ValueError) as raised:
            parse_servers(values, labels)
        assert says in str(raised.value)


def test_rounds_alternate_the_order() -> None:
    servers = [Server("a", "u"), Server("b", "v"), Server("c", "w")]
    assert [[s.label for s in round_order(servers, r)] for r in range(3)] == [
        ["a", "b", "c"],
        ["c", "b", "a"],
        ["a", "b", "c"],
    ]


def test_compare_medians_and_ratios() -> None:
    first, second = Server("mcpfast", "u"), Server("sdk", "v")
    rounds: list[tuple[Server, int, int, int | None]] = [
        (first, 1000, 2, 10),
        (first, 900, 3, 14),
        (first, 1100, 2, 12),
        (second, 250, 8, 40),
        (second, 200, 9, 48),
        (second, 300, 7, None),  # no p99 measured: left out of the median
    ]
    for server, rps, p50, p99 in rounds:
        failures = 1 if server is second else 0
        numbers = {"rps": rps, "p50": p50, "p99": p99, "requests": 10, "failures": failures}
        server.rounds.append(numbers)
    document = compare_document([first, second], {"rounds": 3})
    a, b = document["servers"]
    assert (a["rps"], a["p50"], a["p99"], a["rps_ratio"], a["p99_ratio"]) == (1000, 2, 12, 1, 1)
    assert (b["rps"], b["p99"], b["failures"]) == (250, 44, 3)  # a round without p99 left out
    assert b["rps_ratio"] == pytest.approx(0.25) and b["p99_ratio"] == pytest.approx(44 / 12)
    assert format_compare(document).splitlines() == [
        "server    req/s  p50 ms  p99 ms  failures  req/s x  p99 x",
        "-------  ------  ------  ------  --------  -------  -----",
        "mcpfast  1000.0       2      12         0     1.00   1.00",
        "sdk       250.0       8      44         3     0.25   3.67",
        "",
        "req/s, p50 and p99: the median of 3 rounds; failures: their sum; x: the ratio to mcpfast",
    ]
