"""The cost of telemetry on the native engine's ``tools/call`` (2026-07-28), driven by wrk:
server CPU µs per request, in interleaved rounds.

Rows: ``baseline`` (with ``--baseline REV``: the ``python/`` tree of that revision, e.g. the
last one before telemetry landed, 7429fec), ``api`` (this tree, opentelemetry-api without an
SDK: telemetry off), ``sdk`` (the SDK with an in-memory span exporter and an in-memory metric
reader). Each row: the lowest server CPU µs per request of its rounds, and its ratio to the first.

    .venv/bin/python benches/bench_telemetry.py [--rounds 5] [--seconds 4] [--baseline 7429fec]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_http import cpu_seconds, free_port, pinned, request_for, run_wrk

REPO = Path(__file__).resolve().parent.parent
SERVE = """
import sys, trio, runpy
if sys.argv[1] == "sdk":
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
import mcpfast
echo = runpy.run_path(sys.argv[3])["server"]
trio.run(mcpfast.serve, echo, mcpfast.Config(port=int(sys.argv[2]), engine="native"))
"""


def baseline_tree(revision: str) -> Path:
    """The ``python/`` tree of ``revision`` (and the extension built here beside it), unpacked."""
    root = Path(tempfile.mkdtemp(prefix="mcpfast-base-"))
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", revision, "python"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(root, filter="data")
    for built in (REPO / "python" / "mcpfast").glob("_rust*.so"):
        shutil.copy(built, root / "python" / "mcpfast" / built.name)
    return root / "python"


def measure(mode: str, path: Path, seconds: float) -> float:
    """Server CPU µs per request for one run."""
    port = free_port()
    echo = REPO / "benches" / "servers" / "mcpfast_echo.py"
    env = {**os.environ, "PYTHONPATH": str(path), "MCPFAST_STATE_DIR": tempfile.mkdtemp()}
    argv = [sys.executable, "-c", SERVE, mode, str(port), str(echo)]
    process = subprocess.Popen(pinned(argv, 0), env=env, stdout=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 30
        while True:
            try:
                body, headers = request_for("modern", url)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        run_wrk(url, body, headers, 8, 1)  # warm up
        before = cpu_seconds(process.pid)
        result = run_wrk(url, body, headers, 8, seconds)
        used = cpu_seconds(process.pid) - before
        return float(used / result["requests"] * 1e6)
    finally:
        process.kill()
        process.wait()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=4)
    parser.add_argument("--baseline", metavar="REV", help="a revision to compare with")
    args = parser.parse_args()
    here = REPO / "python"
    rows = [("api", "api", here), ("sdk", "sdk", here)]
    if args.baseline:
        rows.insert(0, ("baseline", "api", baseline_tree(args.baseline)))
    samples: dict[str, list[float]] = {name: [] for name, _, _ in rows}
    for _ in range(args.rounds):
        for name, mode, path in rows:
            samples[name].append(measure(mode, path, args.seconds))
    first = min(samples[rows[0][0]])
    print(f"{'row':10} {'µs/req (best)':>14} {'all rounds':>30} {'ratio':>7}")
    for name, values in samples.items():
        shown = " ".join(f"{v:.1f}" for v in values)
        print(f"{name:10} {min(values):14.1f} {shown:>30} {min(values) / first:7.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
