"""The load reports (summary, grouped errors, chart) from small locust CSV files, and the pure
judging of answers the locust users rely on."""

from __future__ import annotations

import argparse
import csv
import importlib.util
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcpfast.load import LOCUSTFILE
from mcpfast.load.command import locust_command
from mcpfast.load.offers import Offer, listen_filter, skip_reasons
from mcpfast.load.processes import Progress
from mcpfast.load.report import format_summary, read_history, read_summary, write_chart
from mcpfast.load.runner import UsageError, add_arguments, check_usage
from mcpfast.load.wire import error_group, judge, modern_request, modern_transport, remember_tool

from .helpers import REPO

PERCENTILES = ["50%", "66%", "75%", "80%", "90%", "95%", "98%", "99%", "99.9%", "99.99%", "100%"]
STATS_COLUMNS = [
    "Type", "Name", "Request Count", "Failure Count", "Median Response Time",
    "Average Response Time", "Min Response Time", "Max Response Time", "Average Content Size",
    "Requests/s", "Failures/s", *PERCENTILES,
]  # fmt: skip
ECHO_PCT = [4, 4, 5, 5, 6, 8, 12, 16, 69, 70, 70]
DISCOVER_PCT = [3, 3, 3, 4, 4, 5, 9, 12, 20, 20, 20]
STATS = [
    ["POST", "tools/call echo", 900, 3, 4, 4.5, 1.2, 70.1, 250.0, 300.0, 1.0, *ECHO_PCT],
    ["POST", "server/discover", 100, 0, 3, 3.1, 1.0, 20.0, 600.0, 33.3, 0.0, *DISCOVER_PCT],
    ["POST", "resources/read", 0, 0, 0, 0.0, 0, 0, 0, 0.0, 0.0, *["N/A"] * 11],
    ["", "Aggregated", 1000, 5, 4, 4.4, 1.0, 70.1, 290.0, 333.3, 1.7, *ECHO_PCT],
]
FAILURE_COLUMNS = ["Method", "Name", "Error", "Occurrences", "First Seen", "Last Seen"]
SEEN = ["2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z"]
FAILURES = [
    ["POST", "tools/call echo", "CatchResponseError('HTTP 200 JSON-RPC -32602')", 2, *SEEN],
    ["POST", "legacy tools/call echo", "CatchResponseError('HTTP 200 JSON-RPC -32602')", 1, *SEEN],
    ["POST", "tools/call echo", "CatchResponseError('HTTP 404')", 1, *SEEN],
    ["POST", "server/discover", "ConnectionRefusedError(111, 'Connection refused')", 1, *SEEN],
]
HISTORY_COLUMNS = [
    "Timestamp", "User Count", "Type", "Name", "Requests/s", "Failures/s", *PERCENTILES,
    "Total Request Count", "Total Failure Count", "Total Median Response Time",
    "Total Average Response Time", "Total Min Response Time", "Total Max Response Time",
    "Total Average Content Size",
]  # fmt: skip
LATER_PCT = [4, 4, 5, 5, 6, 9, 12, 16, 69, 70, 70]
HISTORY = [
    [1000, 0, "", "Aggregated", 0, 0, *["N/A"] * 11, 0, 0, 0, 0.0, 0, 0, 0],
    [1001, 4, "POST", "tools/call echo", 0, 0, *[0] * 11, 300, 0, 4, 4.0, 1, 9, 250],
    [1001, 4, "", "Aggregated", 0, 0, *[0] * 11, 300, 0, 4, 4.0, 1, 9, 250],
    [1002, 4, "", "Aggregated", 0, 0, *ECHO_PCT, 650, 2, 4, 4.1, 1, 20, 250],
    [1003, 4, "", "Aggregated", 340, 1, *LATER_PCT, 1000, 5, 4, 4.4, 1, 70, 250],
]


def write_csv(path: Path, columns: list[str], rows: list[list[object]]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        writer.writerows(rows)


def write_run(tmp_path: Path) -> Path:
    prefix = tmp_path / "load"
    write_csv(Path(f"{prefix}_stats.csv"), STATS_COLUMNS, STATS)
    write_csv(Path(f"{prefix}_failures.csv"), FAILURE_COLUMNS, FAILURES)
    write_csv(Path(f"{prefix}_stats_history.csv"), HISTORY_COLUMNS, HISTORY)
    return prefix


def test_summary_rows_total_and_grouped_errors(tmp_path: Path) -> None:
    summary = read_summary(write_run(tmp_path))
    assert summary.requests == 1000 and summary.failures == 5
    assert [r.name for r in summary.rows] == [
        "tools/call echo",
        "server/discover",
        "resources/read",
    ]
    echo = summary.rows[0]
    assert (echo.requests, echo.failures, echo.rps, echo.p50, echo.p95, echo.p99) == (
        900,
        3,
        300.0,
        4,
        8,
        16,
    )
    assert summary.rows[2].p50 is None  # N/A when a name saw no request
    groups = {(g.status, g.code, g.problem): g for g in summary.errors}
    invalid = groups[("200", "-32602", "")]
    assert invalid.count == 3 and invalid.names == ["tools/call echo", "legacy tools/call echo"]
    assert groups[("404", "-", "")].count == 1
    assert groups[("-", "-", "ConnectionRefusedError")].count == 1
    assert summary.errors[0] is invalid  # largest group first


def test_summary_text(tmp_path: Path) -> None:
    text = format_summary(read_summary(write_run(tmp_path)))
    lines = text.splitlines()
    assert lines[0].split() == [
        "request",
        "reqs",
        "fails",
        "req/s",
        "p50",
        "ms",
        "p95",
        "ms",
        "p99",
        "ms",
        "max",
        "ms",
    ]
    assert lines[2].split() == ["tools/call", "echo", "900", "3", "300.0", "4", "8", "16", "70"]
    assert "resources/read" in text and "total" in text
    assert "1000 requests, 5 failures (0.50%), 333.3 req/s, p50 4 ms, p95 8 ms, p99 16 ms" in text
    assert "errors by HTTP status and JSON-RPC code:" in text
    error_lines = [
        line.split()
        for line in lines[lines.index("errors by HTTP status and JSON-RPC code:") + 3 :]
    ]
    assert error_lines[0][:4] == ["200", "-32602", "-", "3"]


def test_summary_of_an_empty_run(tmp_path: Path) -> None:
    summary = read_summary(tmp_path / "missing")
    assert summary.requests == 0 and summary.rows == [] and summary.errors == []
    assert "no requests were recorded" in format_summary(summary)


def test_history_points(tmp_path: Path) -> None:
    points = read_history(f"{write_run(tmp_path)}_stats_history.csv")
    assert [p.t for p in points] == [0, 1, 2, 3]  # per-name rows are left out
    assert [p.rps for p in points] == [0, 300, 350, 350]  # from the growth of the request count
    assert [p.fps for p in points] == [0, 0, 2, 3]
    assert [p.p50 for p in points] == [None, None, 4, 4]  # the window had no data yet
    assert points[3].p95 == 9 and points[1].users == 4


@pytest.mark.slow  # matplotlib lists the machine's fonts (fc-list) the first time it runs there
def test_chart_png(tmp_path: Path) -> None:
    if importlib.util.find_spec("matplotlib") is None:
        pytest.skip("matplotlib (the load extra) is not installed")
    png = tmp_path / "out" / "chart.png"
    assert write_chart(read_history(f"{write_run(tmp_path)}_stats_history.csv"), png, title="test")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert write_chart([], tmp_path / "empty.png")  # an empty run still gets a (blank) chart


# ------------------------------------------------------------------------------------ judging


def test_judge_success_and_failures() -> None:
    ok = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}'
    assert judge("tools/call", 1, 200, "application/json", ok).failure is None
    tool_error = b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}'
    assert (
        judge("tools/call", 1, 200, "application/json", tool_error).failure
        == "HTTP 200 tool error (isError)"
    )
    rpc = b'{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unknown tool: x"}}'
    answer = judge("tools/call", 1, 200, "application/json", rpc)
    assert answer.failure == "HTTP 200 JSON-RPC -32602" and answer.detail == "Unknown tool: x"
    header = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32020,"message":"Mcp-Name differs"}}'
    assert (
        judge("tools/call", 1, 400, "application/json", header).failure
        == "HTTP 400 JSON-RPC -32020"
    )
    assert judge("tools/call", 1, 404, "text/plain", b"Not Found").failure == "HTTP 404"
    assert (
        judge("tools/call", 1, 200, "application/json", b"<html>").failure
        == "HTTP 200 body is not JSON"
    )
    shape = b'{"jsonrpc":"2.0","id":1,"result":{"tools":"nope"}}'
    assert (
        judge("tools/list", 1, 200, "application/json", shape).failure
        == "HTTP 200 invalid tools/list result"
    )
    other = b'{"jsonrpc":"2.0","id":2,"result":{}}'
    assert (
        judge("ping", 1, 200, "application/json", other).failure
        == "HTTP 200 no response for the request"
    )


def test_judge_reads_sse_answers() -> None:
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
    result = {"jsonrpc": "2.0", "id": "c3", "result": {"contents": [{"uri": "a://b", "text": "x"}]}}
    body = f"event: message\ndata: {json.dumps(progress)}\n\n".encode()
    body += f"id: 7\ndata: {json.dumps(result)}\n\n".encode()
    answer = judge("resources/read", "c3", 200, "text/event-stream", body)
    assert answer.failure is None and answer.result["contents"][0]["uri"] == "a://b"


def test_answers_that_say_the_server_lacks_the_method() -> None:
    missing = b'{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}'
    for status in (200, 404):
        answer = judge("subscriptions/listen", 1, status, "application/json", missing)
        assert answer.not_offered and answer.code == -32601 and answer.status == status
    assert judge("x", 1, 405, "text/plain", b"Method Not Allowed").not_offered
    invalid = b'{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unknown tool"}}'
    assert not judge("tools/call", 1, 200, "application/json", invalid).not_offered
    assert not judge(
        "ping", 1, 200, "application/json", b'{"jsonrpc":"2.0","id":1,"result":{}}'
    ).not_offered


def test_error_groups_parse_failure_texts() -> None:
    assert error_group("CatchResponseError('HTTP 200 JSON-RPC -32601')") == ("200", "-32601", "")
    assert error_group("CatchResponseError('HTTP 200 invalid tools/call result')") == (
        "200",
        "-",
        "invalid tools/call result",
    )
    assert error_group("CatchResponseError('HTTP 503')") == ("503", "-", "")
    assert error_group("ConnectionResetError(104, 'reset')") == ("-", "-", "ConnectionResetError")


def test_modern_requests_carry_meta_and_mirrored_headers() -> None:
    transport = modern_transport()
    schema = {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
    }
    remember_tool(transport, {"name": "weather", "inputSchema": schema})
    body, headers = modern_request(
        transport, 5, "tools/call", {"name": "weather", "arguments": {"region": "eu west"}}
    )
    message = json.loads(body)
    meta = message["params"]["_meta"]
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert meta["io.modelcontextprotocol/clientInfo"]["name"] == "mcpfast-load"
    assert "io.modelcontextprotocol/clientCapabilities" in meta
    assert headers["mcp-protocol-version"] == "2026-07-28"
    assert headers["mcp-method"] == "tools/call" and headers["mcp-name"] == "weather"
    assert headers["mcp-param-region"] == "eu west"
    _, headers = modern_request(
        transport, 6, "tools/call", {"name": "weather", "arguments": {"region": "zürich"}}
    )
    assert headers["mcp-param-region"].startswith("=?base64?")  # encoded as the client encodes it


# ------------------------------------------------------------------------------------- offers

CLASSES = ["ToolCallUser", "DiscoverUser", "ResourceUser", "LegacySessionUser", "ListenUser"]
ECHO = {"name": "echo", "inputSchema": {"type": "object"}}


def test_a_server_that_offers_everything_skips_nothing() -> None:
    caps = {
        "tools": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "prompts": {"listChanged": True},
    }
    offer = Offer("modern", "2026-07-28", caps, [ECHO], "echo", ["demo://a", "demo://b"])
    assert skip_reasons(CLASSES, offer) == {}
    assert listen_filter(offer) == {
        "toolsListChanged": True,
        "promptsListChanged": True,
        "resourcesListChanged": True,
        "resourceSubscriptions": ["demo://a"],
    }


def test_fastmcp_in_the_modern_era_offers_no_listen_and_no_resources() -> None:
    caps = {
        "tools": {"listChanged": False},
        "resources": {"subscribe": False, "listChanged": False},
        "prompts": {"listChanged": False},
    }
    offer = Offer("modern", "2026-07-28", caps, [ECHO], "echo")
    assert skip_reasons(CLASSES, offer) == {
        "ResourceUser": "the server lists no resources (2026-07-28)",
        "ListenUser": "the server does not advertise subscriptions: no listChanged, "
        "no resources.subscribe (2026-07-28)",
    }
    caps["resources"]["subscribe"] = True  # something to subscribe to, but nothing listed
    assert skip_reasons(["ListenUser"], offer) == {
        "ListenUser": "the server advertises no listChanged, and lists no resource to subscribe "
        "to (2026-07-28)"
    }
    offer.resources = ["r://1"]
    assert listen_filter(offer) == {"resourceSubscriptions": ["r://1"]}
    assert skip_reasons(["ListenUser"], offer) == {}


def test_legacy_skips_name_the_session_version() -> None:
    offer = Offer(
        "legacy", "2025-06-18", {"tools": {}}, [ECHO], "echo", legacy_version="2025-06-18"
    )
    offer.get_stream_problem = "HTTP 405"
    assert skip_reasons(CLASSES, offer) == {
        "ResourceUser": "the server does not advertise resources (2025-06-18 session)",
        "ListenUser": "the server offers no GET stream: it answered HTTP 405 (2025-06-18 session)",
    }
    offer.get_stream_problem = None
    assert "ListenUser" not in skip_reasons(CLASSES, offer)  # listChanged is no matter here


def test_tools_and_a_legacy_session_must_be_there() -> None:
    offer = Offer("modern", "2026-07-28", {}, legacy_problem="HTTP 400 JSON-RPC -32022")
    assert skip_reasons(["ToolCallUser", "LegacySessionUser", "DiscoverUser"], offer) == {
        "ToolCallUser": "the server does not advertise tools (2026-07-28)",
        "LegacySessionUser": "the server opens no legacy session: initialize got "
        "HTTP 400 JSON-RPC -32022 (2025-11-25 session)",
    }
    offer.capabilities = {"tools": {}}
    assert skip_reasons(["ToolCallUser"], offer) == {
        "ToolCallUser": "the server lists no tools (2026-07-28)"
    }
    offer.tools = [{**ECHO, "execution": {"taskSupport": "required"}}]  # listed, not callable
    assert skip_reasons(["ToolCallUser"], offer) == {
        "ToolCallUser": "the server lists no tool that runs without a task (2026-07-28)"
    }


# ------------------------------------------------------------------------------------- runner


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


def test_locust_command(tmp_path: Path) -> None:
    args = parse(
        "http://h/mcp",
        "-u",
        "4",
        "-t",
        "5s",
        "--tool",
        "add",
        "--arguments",
        '{"a":1,"b":2}',
        "--user-class",
        "tools",
        "--user-class",
        "listen",
    )
    command = locust_command(args, tmp_path)
    assert command[command.index("-f") + 1] == str(LOCUSTFILE) and LOCUSTFILE.exists()
    assert command[command.index("--host") + 1] == "http://h/mcp"
    assert command[command.index("--spawn-rate") + 1] == "4"
    assert "--headless" in command and command[command.index("--csv") + 1] == str(tmp_path / "load")
    assert command[command.index("--mcp-arguments") + 1] == '{"a":1,"b":2}'
    assert command[-2:] == ["ToolCallUser", "ListenUser"]
    web = locust_command(parse("http://h/mcp", "--web"), tmp_path)
    assert "--headless" not in web and "--web-port" in web
    with pytest.raises(SystemExit):
        locust_command(parse("http://h/mcp", "--arguments", "[1]"), tmp_path)


def test_progress_lines(tmp_path: Path) -> None:
    out, log = io.StringIO(), io.StringIO()
    progress = Progress(out, log)
    progress.feed("[2026] vm/INFO/locust.main: Starting\n")
    first = {"elapsed": 1.0, "users": 4, "requests": 500, "failures": 0, "p50": 3, "p95": 9}
    second = {"elapsed": 2.0, "users": 4, "requests": 1200, "failures": 1, "p50": 4, "p95": None}
    progress.feed(f"MCPFAST-PROGRESS {json.dumps(first)}\n")
    progress.feed(f"MCPFAST-PROGRESS {json.dumps(second)}\n")
    progress.feed("[2026] vm/ERROR/locust.user: boom\n")
    progress.feed("MCPFAST-NOTE ListenUser stops: the server answered subscriptions/listen\n")
    shown = out.getvalue().splitlines()
    assert "req/s    500.0" in shown[0] and "p95     9 ms" in shown[0]
    assert "req/s    700.0" in shown[1] and "p95     - ms" in shown[1] and "failures 1" in shown[1]
    assert shown[2] == "locust: [2026] vm/ERROR/locust.user: boom"
    assert shown[3] == "mcpfast load: ListenUser stops: the server answered subscriptions/listen"
    assert progress.notes == ["ListenUser stops: the server answered subscriptions/listen"]
    assert "Starting" in log.getvalue() and "MCPFAST-PROGRESS" not in log.getvalue()
    assert "MCPFAST-NOTE ListenUser stops" in log.getvalue()


def test_distributed_commands(tmp_path: Path) -> None:
    master = locust_command(
        parse("http://h/mcp", "--master", "--expect-workers", "3", "--master-bind-port", "6000"),
        tmp_path,
    )
    assert master[master.index("--expect-workers") + 1] == "3" and "--master" in master
    assert master[master.index("--master-bind-port") + 1] == "6000"
    assert "--csv" in master and "--headless" in master  # the master writes the reports
    worker = locust_command(parse("--worker", "--master-host", "10.0.0.2"), tmp_path)
    assert worker[worker.index("--master-host") + 1] == "10.0.0.2" and "--worker" in worker
    assert "--host" not in worker and "--csv" not in worker  # both come from the master
    local = locust_command(parse("http://h/mcp", "--processes", "2"), tmp_path)
    assert local[local.index("--processes") + 1] == "2" and "--master" not in local


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["http://h/mcp", "--fail-on", "p99>fast"], "--fail-on: 'p99>fast' is not"),
        ([], "the server's URL is missing"),
        (["http://h/mcp", "--master", "--worker"], "--master or --worker, not both"),
        (["http://h/mcp", "--master", "--processes", "2"], "--processes starts a local master"),
        (["--worker", "--fail-on", "p99>1s"], "belong to the master"),
        (["http://h/mcp", "--compare", "http://a/mcp", "http://b/mcp"], "not a URL besides"),
        (["--compare", "http://a/mcp", "http://b/mcp", "--master"], "runs on one host"),
        (["http://h/mcp", "--label", "x"], "--label names --compare URLs"),
    ],
)
def test_usage_errors(argv: list[str], says: str) -> None:
    with pytest.raises(UsageError) as raised:
        check_usage(parse(*argv))
    assert says in str(raised.value)


@pytest.mark.slow
def test_thresholds_are_parsed_before_anything_runs(tmp_path: Path) -> None:
    """A bad --fail-on: exit 2 with the reason, no locust, no report directory."""
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    argv = ["http://127.0.0.1:9/mcp", "--fail-on", "p99>5ms", "--fail-on", "p42>1s"]
    done = subprocess.run(
        [sys.executable, "-m", "mcpfast", "load", *argv, "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2, done
    assert "mcpfast load: error: --fail-on: 'p42>1s': unknown metric 'p42'" in done.stderr
    assert not out.exists() and done.stdout == ""


def test_progress_quiet_notes_once_and_the_era(tmp_path: Path) -> None:
    """Quiet: errors only. Each note once (every load process of a distributed run says its
    own). The probe's log line gives the era."""
    out, log = io.StringIO(), io.StringIO()
    progress = Progress(out, log, quiet=True)
    line = {"elapsed": 1.0, "users": 4, "requests": 500, "failures": 0, "p50": 3, "p95": 9}
    progress.feed(f"MCPFAST-PROGRESS {json.dumps(line)}\n")
    progress.feed("[2026] vm/INFO/mcpfast.load: era legacy (2025-11-25); tool Tool(name='x')\n")
    progress.feed("MCPFAST-NOTE skipping ResourceUser: no resources\n")
    progress.feed("MCPFAST-NOTE skipping ResourceUser: no resources\n")
    progress.feed("[2026] vm/ERROR/locust.user: boom\n")
    assert out.getvalue() == "locust: [2026] vm/ERROR/locust.user: boom\n"
    assert progress.notes == ["skipping ResourceUser: no resources"]
    assert progress.era == {"era": "legacy", "version": "2025-11-25"}
    loud = io.StringIO()
    progress = Progress(loud, io.StringIO())
    for _ in range(2):
        progress.feed("MCPFAST-NOTE skipping ResourceUser: no resources\n")
    assert loud.getvalue() == "mcpfast load: skipping ResourceUser: no resources\n"


@pytest.mark.slow
def test_the_trio_side_never_imports_gevent() -> None:
    code = (
        "import sys, mcpfast.cli, mcpfast.load.runner, mcpfast.load.report, mcpfast.load.compare\n"
        "assert not {'gevent', 'locust'} & set(sys.modules), sorted(sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=30)
