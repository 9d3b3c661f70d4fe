"""``mcpfast serve --metrics-port``, both engines: the OpenTelemetry metrics scraped over HTTP
in Prometheus text format and parsed with `prometheus_client`'s parser (a metric the served
module records through the OpenTelemetry API, and the server's own MCP operation histogram),
the probes on the metrics listener, and the refusal without the extra."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
import trio
from prometheus_client.parser import text_string_to_metric_families

from ..helpers import REPO, meta
from .processes import free_port, mcpfast_command, started_process

COUNTING_SERVER = """
import mcpfast
from opentelemetry import metrics
server = mcpfast.Server("counting")
calls = metrics.get_meter("tests").create_counter("test_calls", description="calls counted")
@server.tool()
def count(secret: str) -> str:
    calls.add(1, {"tool": "count"})
    return "counted"
"""


HEADERS = {
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "count",
}


@pytest.mark.parametrize("engine", ["hypercorn", "native"])
async def test_the_metrics_are_scraped_in_prometheus_format(tmp_path: Path, engine: str) -> None:
    target = tmp_path / "counting.py"
    target.write_text(COUNTING_SERVER)
    port, metrics_port = free_port(), free_port()
    argv = mcpfast_command(
        "serve", f"{target}:server", "--port", str(port), "--engine", engine,
        "--metrics-port", str(metrics_port),
    )  # fmt: skip
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "count", "arguments": {"secret": "s"}, "_meta": meta()},
    }
    scrape = f"http://127.0.0.1:{metrics_port}"
    async with started_process(argv, port) as (url, _), httpx2.AsyncClient(timeout=10) as http:
        for _ in range(3):
            reply = await http.post(url, json=body, headers=HEADERS)
            assert reply.status_code == 200, reply.text
        # the server records an operation once its reply is sent, so a scrape right after the
        # last reply may come before the last record: scrape until it is there (bounded)
        with trio.fail_after(10):
            while True:
                answer = await http.get(scrape + "/metrics")
                assert answer.status_code == 200
                assert answer.headers["content-type"].startswith("text/plain; version=")
                families = {f.name: f for f in text_string_to_metric_families(answer.text)}
                duration = families.get("mcp_server_operation_duration_seconds")  # the server's
                counts = (
                    [s for s in duration.samples if s.name.endswith("_count")] if duration else []
                )
                if [s.value for s in counts] == [3.0]:
                    break
                await trio.sleep(0.05)
        assert [(s.labels["mcp_method_name"], s.value) for s in counts] == [("tools/call", 3.0)]
        counted = [s for s in families["test_calls"].samples if s.name == "test_calls_total"]
        assert [(s.labels["tool"], s.value) for s in counted] == [("count", 3.0)]
        assert (await http.get(scrape + "/healthz")).json() == {"status": "ok"}
        assert (await http.get(scrape + "/readyz")).status_code == 200
        assert (await http.get(scrape + "/elsewhere")).status_code == 404
        assert (await http.post(scrape + "/metrics")).status_code == 405


def test_without_the_metrics_extra_metrics_port_is_a_usage_error() -> None:
    code = (
        "import sys; sys.modules['prometheus_client'] = None\n"
        "from mcpfast.cli import main\n"
        "sys.exit(main(['serve', '--metrics-port', '9464']))"
    )
    env = {"PYTHONPATH": str(REPO / "python")}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert "pip install 'mcpfast[metrics]'" in done.stderr
